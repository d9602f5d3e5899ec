"""The workspace floor: files and shell confined to one root, the OS sandbox, overlays and the
settings guard."""
