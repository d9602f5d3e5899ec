"""A unified diff as text, cut to a number of lines: what a file step's review and a shell
step's preview both show (present/text.py, engine/preview.py)."""

from __future__ import annotations

import difflib

__all__ = ["unified_diff"]


def unified_diff(before: str, after: str, name: str, *, most: int, more: str) -> str:
    """``before`` -> ``after`` of file ``name``; past ``most`` lines, one line saying how many
    more (``more`` is added to it: where to see them)."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
            n=3,
        )
    )
    if len(lines) > most:
        lines = [*lines[:most], f"... {len(lines) - most} more diff lines{more}\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
