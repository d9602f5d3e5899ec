"""The names the in-cell review's page and the kernel agree on: the comm target and the version
of the plan message. Kept apart so that ``%load_ext planbook`` registers the target without
loading the channel."""

from __future__ import annotations

#: The comm target both sides open.
TARGET = "planbook"
#: Version of the message shapes (comm/view.py); the page ignores a plan it does not understand.
PROTOCOL = 1
