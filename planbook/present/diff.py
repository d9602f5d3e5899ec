"""Structured line diffs for the review panel: hunks of lines with intraline changed ranges.

Computed here (difflib) rather than in the browser so the front end stays a plain renderer and
every frontend (JupyterLab, Notebook 7, VS Code) shows the same diff. The shape is ready for a
unified view (lines in order) and a side-by-side view: within a hunk, a run of removed lines
followed by a run of added lines pairs up one to one, and the changed ranges are computed for
exactly those pairs.
"""

from __future__ import annotations

import difflib
from typing import Literal, TypedDict

#: Lines of context around each change (like `diff -U3`).
CONTEXT = 3
#: Diff lines shown before "show more"; the rest are sent but folded.
FOLD_AT = 40
#: Diff lines sent at all; a diff past this is cut and says how much was left out, so one huge
#: file cannot make the widget's state megabytes long.
MAX_LINES = 1500
#: Pairs of lines longer than this get no intraline ranges (quadratic matcher, little value).
MAX_INTRALINE = 400
#: Below this similarity a changed pair is shown as wholly removed and added.
MIN_SIMILARITY = 0.35

LineType = Literal["context", "add", "del"]
DiffKind = Literal["same", "added", "deleted", "changed"]


class DiffLine(TypedDict):
    type: LineType
    old: int | None
    new: int | None
    text: str
    #: Changed character ranges [start, end) inside `text`; empty when the whole line changed.
    ranges: list[tuple[int, int]]


class Hunk(TypedDict):
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[DiffLine]


class Diff(TypedDict):
    kind: DiffKind
    hunks: list[Hunk]
    added: int
    removed: int
    #: Number of diff lines (all hunks) that were sent.
    lines: int
    #: Lines shown before the "show more" button.
    fold_at: int
    #: Diff lines left out entirely because the diff was too long.
    omitted: int


def split_lines(text: str) -> list[str]:
    return text.splitlines()


def changed_ranges(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character ranges that differ between two paired lines; ([], []) if they barely match."""
    if len(old) > MAX_INTRALINE or len(new) > MAX_INTRALINE:
        return [], []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    if matcher.ratio() < MIN_SIMILARITY:
        return [], []
    left: list[tuple[int, int]] = []
    right: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            left.append((i1, i2))
        if j2 > j1:
            right.append((j1, j2))
    return left, right


def _line(kind: LineType, old: int | None, new: int | None, text: str) -> DiffLine:
    return {"type": kind, "old": old, "new": new, "text": text, "ranges": []}


def _replace_block(
    a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int
) -> list[DiffLine]:
    removed = [_line("del", i + 1, None, a[i]) for i in range(i1, i2)]
    added = [_line("add", None, j + 1, b[j]) for j in range(j1, j2)]
    for left, right in zip(removed, added, strict=False):
        left["ranges"], right["ranges"] = changed_ranges(left["text"], right["text"])
    return removed + added


def diff_texts(before: str, after: str, *, context: int = CONTEXT) -> Diff:
    """The diff from `before` to `after` as hunks; `kind` says added/deleted/changed/same."""
    a, b = split_lines(before), split_lines(after)
    if a == b:
        kind: DiffKind = "same"
    elif not a and not before:
        kind = "added"
    elif not b and not after:
        kind = "deleted"
    else:
        kind = "changed"
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    hunks: list[Hunk] = []
    added = removed = sent = omitted = 0
    for group in matcher.get_grouped_opcodes(context):
        lines: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(
                    _line("context", i + 1, j1 + k + 1, a[i]) for k, i in enumerate(range(i1, i2))
                )
            elif tag == "replace":
                lines.extend(_replace_block(a, b, i1, i2, j1, j2))
            elif tag == "delete":
                lines.extend(_line("del", i + 1, None, a[i]) for i in range(i1, i2))
            else:
                lines.extend(_line("add", None, j + 1, b[j]) for j in range(j1, j2))
            added += j2 - j1 if tag in ("replace", "insert") else 0
            removed += i2 - i1 if tag in ("replace", "delete") else 0
        room = MAX_LINES - sent
        if room <= 0:
            omitted += len(lines)
            continue
        if len(lines) > room:
            omitted += len(lines) - room
            lines = lines[:room]
        sent += len(lines)
        first, last = group[0], group[-1]
        hunks.append(
            {
                "old_start": first[1] + 1,
                "old_count": last[2] - first[1],
                "new_start": first[3] + 1,
                "new_count": last[4] - first[3],
                "lines": lines,
            }
        )
    return {
        "kind": kind,
        "hunks": hunks,
        "added": added,
        "removed": removed,
        "lines": sent,
        "fold_at": FOLD_AT,
        "omitted": omitted,
    }


def unified_text(diff: Diff) -> str:
    """The diff as `diff -u` style text (for plain-text fallbacks and tests)."""
    out: list[str] = []
    marks = {"context": " ", "add": "+", "del": "-"}
    for hunk in diff["hunks"]:
        out.append(
            f"@@ -{hunk['old_start']},{hunk['old_count']} "
            f"+{hunk['new_start']},{hunk['new_count']} @@"
        )
        out.extend(marks[line["type"]] + line["text"] for line in hunk["lines"])
    return "\n".join(out)


Row = tuple[DiffLine | None, DiffLine | None]


def side_by_side(hunk: Hunk) -> list[Row]:
    """Rows of (left, right) for a side-by-side view: context on both sides, and each run of
    removed lines paired one to one with the run of added lines that follows it."""
    rows: list[Row] = []
    dels: list[DiffLine] = []
    adds: list[DiffLine] = []

    def flush() -> None:
        for k in range(max(len(dels), len(adds))):
            rows.append((dels[k] if k < len(dels) else None, adds[k] if k < len(adds) else None))
        dels.clear()
        adds.clear()

    for line in hunk["lines"]:
        if line["type"] == "context":
            flush()
            rows.append((line, line))
        elif line["type"] == "del":
            if adds:
                flush()
            dels.append(line)
        else:
            adds.append(line)
    flush()
    return rows
