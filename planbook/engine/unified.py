"""A unified diff as text, cut to a number of lines: what a file step's review and a shell
step's preview both show (present/text.py, engine/preview.py).

Lines both texts start and end with are set aside before anything is matched (as GNU diff
and git do): a typical step edits a few lines of a cell, so the matcher (difflib's) only sees
the lines that changed, or nothing at all when lines were only added, only removed, or
replaced by lines none of which was there before: that one change is written as its hunk
directly. Otherwise the hunks are grouped here with ``CONTEXT`` lines around each change.
Where repeated lines make two alignments equally short, this may choose another one than
difflib over the whole texts would: the same lines added and removed, placed differently.
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
    top, a_end, b_end = _common_ends(a, b)
    if top in (a_end, b_end) or set(a[top:a_end]).isdisjoint(b[top:b_end]):
        # one run of lines only added, only removed, or all replaced: nothing to match (the
        # usual step, so it is written directly, without opcodes to group)
        text, count = _one_change_text(a, b, top, a_end, b_end, name)
    else:
        text, count = _hunks_text(a, b, _matched(a, b, top, a_end, b_end), name)
    if count <= most:
        return text
    lines = text.splitlines(keepends=True)
    return "".join(lines[:most]) + f"... {count - most} more diff lines{more}\n"


def _common_ends(a: list[str], b: list[str]) -> tuple[int, int, int]:
    """How many first lines ``a`` and ``b`` share, and where the lines they end with start in
    each (the lines between are what changed)."""
    top, most = 0, min(len(a), len(b))
    while top < most and a[top] == b[top]:
        top += 1
    tail = 0
    while tail < most - top and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return top, len(a) - tail, len(b) - tail


def _one_change_text(
    a: list[str], b: list[str], top: int, a_end: int, b_end: int, name: str
) -> tuple[str, int]:
    """The diff of one change (``a[top:a_end]`` became ``b[top:b_end]``) in one hunk, and
    its number of lines: what ``_hunks_text`` writes for it."""
    _end_lines(a, b)
    start = top - CONTEXT if top > CONTEXT else 0
    around = min(CONTEXT, len(a) - a_end)  # the equal lines shown after the change
    text = (
        f"--- a/{name}\n+++ b/{name}\n"
        f"@@ -{_range(start, a_end + around)} +{_range(start, b_end + around)} @@\n"
    )
    if start < top:
        text += " " + " ".join(a[start:top])
    if top < a_end:
        text += "-" + "-".join(a[top:a_end])
    if top < b_end:
        text += "+" + "+".join(b[top:b_end])
    if around:
        text += " " + " ".join(a[a_end : a_end + around])
    return text, 3 + (top - start) + (a_end - top) + (b_end - top) + around


def _end_lines(a: list[str], b: list[str]) -> None:
    """A last line without its newline is shown with one (after matching: "x" and "x\n"
    differ)."""
    if a and a[-1][-1:] != "\n":
        a[-1] += "\n"
    if b and b[-1][-1:] != "\n":
        b[-1] += "\n"


def _matched(a: list[str], b: list[str], top: int, a_end: int, b_end: int) -> list[Opcode]:
    """How ``a`` becomes ``b`` when the lines between their common ends share some: the
    common ends as they are, the lines between matched by difflib."""
    out: list[Opcode] = [("equal", 0, top, 0, top)] if top else []
    matcher = difflib.SequenceMatcher(None, a[top:a_end], b[top:b_end], autojunk=False)
    out += [
        (tag, i1 + top, i2 + top, j1 + top, j2 + top)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
    ]
    if a_end < len(a):
        out.append(("equal", a_end, len(a), b_end, len(b)))
    return out


def _hunks_text(a: list[str], b: list[str], codes: list[Opcode], name: str) -> tuple[str, int]:
    """The diff of ``a`` and ``b`` (``codes``: how one becomes the other) in hunks of
    ``CONTEXT`` lines around each change, and its number of lines."""
    _end_lines(a, b)
    # Each run of lines is joined with its mark in one step ("-" + "-".join(run)): a line
    # keeps its own ending, so this is the same text as marking line by line, and far fewer
    # Python steps for the long runs of a big cell.
    pieces = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    count = 2
    for hunk in _hunks(codes):
        first, last = hunk[0], hunk[-1]
        pieces.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        count += 1
        for tag, i1, i2, j1, j2 in hunk:
            runs = ((" ", a[i1:i2]),) if tag == "equal" else (("-", a[i1:i2]), ("+", b[j1:j2]))
            for mark, run in runs:
                if run:
                    pieces.append(mark + mark.join(run))
                    count += len(run)
    return "".join(pieces), count


def _hunks(codes: list[Opcode]) -> list[list[Opcode]]:
    """The changes with ``CONTEXT`` equal lines around each; changes closer than twice that
    share a hunk. ``codes`` holds at least two changes (one alone is ``_one_change_text``)."""
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
