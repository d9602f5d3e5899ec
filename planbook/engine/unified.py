"""A unified diff as text, cut to a number of lines: what a file step's review and a shell
step's preview both show (present/text.py, engine/preview.py).

Lines both texts start and end with are set aside before anything is matched (as GNU diff
and git do): a typical step edits a few lines of a cell, so the matcher (difflib's) only sees
the lines that changed, or nothing at all when lines were only added, only removed, or
replaced by lines none of which was there before. The
hunks are then grouped here with ``CONTEXT`` lines around each change. Where repeated lines
make two alignments equally short, this may choose another one than difflib over the whole
texts would: the same lines added and removed, placed differently.
"""

from __future__ import annotations

import difflib

__all__ = ["unified_diff"]

#: Unchanged lines shown around each change (like ``diff -U3``).
CONTEXT = 3

#: (tag, a from, a to, b from, b to), as difflib's opcodes.
Opcode = tuple[str, int, int, int, int]


def unified_diff(before: str, after: str, name: str, *, most: int, more: str) -> str:
    """``before`` -> ``after`` of file ``name``; past ``most`` lines, one line saying how many
    more (``more`` is added to it: where to see them). Empty when nothing changed."""
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    if a == b:
        return ""
    lines = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    for hunk in _hunks(_opcodes(a, b)):
        first, last = hunk[0], hunk[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in hunk:
            if tag == "equal":
                lines += (" " + line for line in a[i1:i2])
                continue
            lines += ("-" + line for line in a[i1:i2])
            lines += ("+" + line for line in b[j1:j2])
    if len(lines) > most:
        lines = [*lines[:most], f"... {len(lines) - most} more diff lines{more}\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """How ``a`` becomes ``b``: the common first and last lines as they are, the lines
    between them matched by difflib (or simply added or removed when one side has none)."""
    top, most = 0, min(len(a), len(b))
    while top < most and a[top] == b[top]:
        top += 1
    tail = 0
    while tail < most - top and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    out: list[Opcode] = [("equal", 0, top, 0, top)] if top else []
    if top == a_end:
        out.append(("insert", top, top, top, b_end))
    elif top == b_end:
        out.append(("delete", top, a_end, top, top))
    elif set(a[top:a_end]).isdisjoint(b[top:b_end]):  # no line in common: all replaced
        out.append(("replace", top, a_end, top, b_end))
    else:
        matcher = difflib.SequenceMatcher(None, a[top:a_end], b[top:b_end], autojunk=False)
        out += [
            (tag, i1 + top, i2 + top, j1 + top, j2 + top)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    if tail:
        out.append(("equal", a_end, len(a), b_end, len(b)))
    return out


def _hunks(codes: list[Opcode]) -> list[list[Opcode]]:
    """The changes with ``CONTEXT`` equal lines around each; changes closer than twice that
    share a hunk. ``codes`` holds at least one change."""
    hunks: list[list[Opcode]] = []
    current: list[Opcode] = []
    for k, (tag, i1, i2, j1, j2) in enumerate(codes):
        if tag != "equal":
            current.append((tag, i1, i2, j1, j2))
            continue
        lead = k == 0
        trail = k == len(codes) - 1
        if lead:  # only the context before the first change
            current.append((tag, max(i1, i2 - CONTEXT), i2, max(j1, j2 - CONTEXT), j2))
        elif trail:
            current.append((tag, i1, min(i2, i1 + CONTEXT), j1, min(j2, j1 + CONTEXT)))
        elif i2 - i1 > 2 * CONTEXT:  # a long run of equal lines ends one hunk, opens the next
            current.append((tag, i1, i1 + CONTEXT, j1, j1 + CONTEXT))
            hunks.append(current)
            current = [(tag, i2 - CONTEXT, i2, j2 - CONTEXT, j2)]
        else:
            current.append((tag, i1, i2, j1, j2))
    hunks.append(current)
    return hunks


def _range(start: int, stop: int) -> str:
    """A hunk's line range as ``diff -u`` writes it: ``first,count``, the first line alone
    when it is one line, and the line before when the range is empty."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"
