"""The plan as text and markdown: the diffs a person reads (the same as ``diff -u`` where the
alignment is not ambiguous) and the notes under each step, said alike on both surfaces."""

from __future__ import annotations

import difflib
import random
from pathlib import Path

import pytest

from planbook.documents.memory import MemoryNotebook
from planbook.engine.unified import unified_diff
from planbook.model.cell import Cell, short_ids
from planbook.present.safe import visible
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


def _diff_u(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
        n=3,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


CELL = "".join(f"value_{i} = load({i})\n" for i in range(40))


@pytest.mark.parametrize(
    "after",
    [
        CELL.replace("load(7)", "load(7, cache=True)"),  # one line changed, context around
        CELL.replace("load(2)", "fetch(2)").replace("load(33)", "fetch(33)"),  # two hunks
        CELL.replace("value_9 = load(9)\n", ""),  # a line removed
        CELL + "print(value_39)\n",  # a line added at the end
        "import os\n" + CELL,  # ... and at the top
        CELL.rstrip("\n"),  # the last newline removed: that line shows as changed
        CELL.replace("load(5)", "a\nb").replace("load(6)", "load(5)"),  # lines moved about
        "",  # everything removed
    ],
)
def test_a_step_shows_the_diff_diff_u_shows(after: str) -> None:
    assert unified_diff(CELL, after, "x.py", most=500, more="") == _diff_u(CELL, after, "x.py")


def test_no_change_shows_no_diff_and_a_long_one_says_how_much_is_left_out() -> None:
    assert unified_diff(CELL, CELL, "x.py", most=500, more="") == ""
    text = unified_diff("", CELL, "x.py", most=10, more=" (see the panel)")
    lines = text.splitlines()
    assert len(lines) == 11 and lines[2] == "@@ -0,0 +1,40 @@"
    assert lines[-1] == "... 33 more diff lines (see the panel)"


def test_short_ids_of_front_end_uuids_grow_past_what_they_share() -> None:
    shared = "7f3a9c21-aaaa-4bbb-8ccc-"
    ids = [f"{shared}{i:012d}" for i in range(3)] + ["7f3a9c2f-0000-4000-8000-000000000000"]
    short = short_ids(ids + ids[:1])  # a repeated id is not a rival of itself
    assert short[ids[0]] == ids[0]  # they differ in the last character only
    assert short[ids[3]] == "7f3a9c2f"
    # 2,000 of them (a big notebook made in JupyterLab) in one sort, not 4 million compares.
    many = [f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(2000)]
    assert set(short_ids(many).values()) == {i[:8] for i in many}


@pytest.fixture
def session(tmp_path: Path) -> Session:
    cells = [Cell(id="load", source="df = load()\n"), Cell(id="plot", source="df.plot()\n")]
    return Session(MemoryNotebook(cells), Workspace(tmp_path))


def test_text_and_markdown_say_the_same_notes_under_a_step(session: Session) -> None:
    session.propose.edit_cell("load", "df = load(cache=True)\n", reason="cache the *load*")
    session.propose.run_cell("load", reason="see it")  # it builds on step 1
    text, markdown = session.render_text(), session.render_markdown()
    assert "   why: cache the *load*" in text
    assert "> cache the *load*" in markdown  # the reason's own markdown, quoted
    assert "   builds on step 1" in text and "> builds on step 1" in markdown
    assert "   -df = load()\n   +df = load(cache=True)" in text
    assert "-df = load()\n+df = load(cache=True)" in markdown


def _unique_lines(rng: random.Random, n: int, tag: str) -> list[str]:
    return [f"{tag}{rng.randrange(10**6)}_{k} = {k}\n" for k in range(n)]


def test_one_change_anywhere_shows_what_diff_u_shows() -> None:
    """Lines added, removed or replaced in one place (told apart from other changes and
    written as one hunk directly): the same text as ``diff -u`` at the top, the end, the
    middle, next to the edges of the context, with and without a last newline."""
    rng = random.Random(25)
    for case in range(600):
        before = _unique_lines(rng, rng.randrange(0, 12), "old")
        at = rng.randrange(0, len(before) + 1)
        gone = rng.randrange(0, len(before) - at + 1)
        added = _unique_lines(rng, rng.randrange(0, 4), "new")
        after = before[:at] + added + before[at + gone :]
        a, b = "".join(before), "".join(after)
        if case % 3 == 0:
            a = a.rstrip("\n")
        if case % 5 == 0:
            b = b.rstrip("\n")
        assert unified_diff(a, b, "c.py", most=500, more="") == _diff_u(a, b, "c.py"), (a, b)


def test_a_cut_one_change_says_how_many_lines_are_left_out() -> None:
    text = unified_diff(CELL, CELL + "extra\n" * 30, "x.py", most=12, more=" (see the panel)")
    lines = text.splitlines()
    assert lines[:3] == ["--- a/x.py", "+++ b/x.py", "@@ -38,3 +38,33 @@"]
    assert len(lines) == 13 and lines[-1] == "... 24 more diff lines (see the panel)"


def test_every_ascii_control_character_in_plain_text_shows_as_its_escape() -> None:
    plain = "".join(chr(c) for c in range(0x20, 0x7F)) + "\n\t"
    assert visible(plain * 3) == plain * 3  # nothing to escape: the text as it is
    for code in [*range(0x20), 0x7F]:
        ch = chr(code)
        if ch in "\n\t":
            continue
        shown = visible(f"{plain}{ch}{plain}")
        escape = {"\r": "\\r", "\b": "\\b"}.get(ch, f"\\x{code:02x}")
        assert shown == f"{plain}{escape}{plain}", code


@pytest.mark.parametrize("other", ["·", "é", "表", "\U0001f600", "\ud800"])
def test_hidden_characters_beside_other_characters_show_as_their_escapes(other: str) -> None:
    """Text that is not all ASCII (a plan's header holds a "·"; a lone surrogate can come
    from JSON): plain, it is shown as it is; each hidden character in it as its escape."""
    plain = f"state: pending {other} revision 1\n\tx = 'caf{other}'\n" * 3
    assert visible(plain) == plain
    for hidden, escape in [
        ("\x1b", "\\x1b"),
        ("\x85", "\\x85"),
        ("\u202e", "\\u202e"),
        ("\u200b", "\\u200b"),
        ("\U000e0041", "\\ue0041"),
    ]:
        assert visible(f"{plain}{hidden}{plain}") == f"{plain}{escape}{plain}", hidden
