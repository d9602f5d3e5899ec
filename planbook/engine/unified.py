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
    found = _one_change_text(a, b, name) or _hunks_text(a, b, name)
    text, count = found
    if count <= most:
        return text
    lines = text.splitlines(keepends=True)
    return "".join(lines[:most]) + f"... {count - most} more diff lines{more}\n"


def _one_change_text(a: list[str], b: list[str], name: str) -> tuple[str, int] | None:
    """The diff and its number of lines when ``a`` and ``b`` differ in one run of lines
    that nothing has to be matched in (lines only added, only removed, or all replaced),
    as ``_hunks_text`` writes it, in one hunk without opcodes to group; else None. The
    common case of a step, so it is told first, in one function (it runs for every step)."""
    top, most = 0, min(len(a), len(b))
    while top < most and a[top] == b[top]:
        top += 1
    tail = 0
    while tail < most - top and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    if top not in (a_end, b_end) and not set(a[top:a_end]).isdisjoint(b[top:b_end]):
        return None
    # A last line without its newline is shown with one (after matching: "x" and "x\n"
    # differ): ``_end_lines``, written out.
    if a and a[-1][-1:] != "\n":
        a[-1] += "\n"
    if b and b[-1][-1:] != "\n":
        b[-1] += "\n"
    start = top - CONTEXT if top > CONTEXT else 0
    around = tail if tail < CONTEXT else CONTEXT  # the equal lines shown after the change
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
    for side in (a, b):
        if side and not side[-1].endswith("\n"):
            side[-1] += "\n"


def _hunks_text(a: list[str], b: list[str], name: str) -> tuple[str, int]:
    """The diff of ``a`` and ``b`` in hunks of ``CONTEXT`` lines around each change, and its
    number of lines."""
    codes = _opcodes(a, b)
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
    if len(codes) <= 3 and sum(code[0] != "equal" for code in codes) == 1:
        return [_one_hunk(codes)]  # the common case: one change, at most 2 runs around it
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


def _one_hunk(codes: list[Opcode]) -> list[Opcode]:
    """One change with the equal lines before and after it (either may be missing), cut to
    ``CONTEXT`` lines each."""
    out = []
    for tag, i1, i2, j1, j2 in codes:
        if tag != "equal":
            out.append((tag, i1, i2, j1, j2))
        elif not out:  # before the change: its last lines
            out.append((tag, max(i1, i2 - CONTEXT), i2, max(j1, j2 - CONTEXT), j2))
        else:  # after it: its first lines
            out.append((tag, i1, min(i2, i1 + CONTEXT), j1, min(j2, j1 + CONTEXT)))
    return out


def _range(start: int, stop: int) -> str:
    """A hunk's line range as ``diff -u`` writes it: ``first,count``, the first line alone
    when it is one line, and the line before when the range is empty."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"
