"""The session floor: the Session that wires the floors below, and the ways a surface opens one."""
