"""Writes in plan mode are impossible in code: whatever is proposed, nothing changes."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import nbformat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planbook.errors import PlanbookError
from planbook.sessions.session import Session
from tests.conftest import make_notebook, reopen

ids = st.sampled_from(["c1", "c2", "c3", "nope"])
paths = st.sampled_from(["a.txt", "sub/b.py", "../out.txt", "/etc/x", "link.txt", "analysis.ipynb"])
text = st.text(max_size=40)
edits = st.lists(
    st.fixed_dictionaries({"search": st.sampled_from(["hello", "x", ""]), "replace": text}),
    max_size=2,
)

proposals = st.one_of(
    st.tuples(st.just("insert_cell"), text, st.one_of(st.none(), ids)),
    st.tuples(st.just("edit_cell"), ids, text),
    st.tuples(st.just("delete_cell"), ids),
    st.tuples(st.just("move_cell"), ids, st.one_of(st.none(), ids)),
    st.tuples(st.just("run_cell"), ids),
    st.tuples(st.just("write_file"), paths, text),
    st.tuples(st.just("edit_file"), paths, edits),
    st.tuples(st.just("delete_file"), paths),
    st.tuples(st.just("shell"), st.sampled_from(["touch made", "rm -f a.txt", "echo x > a.txt"])),
)


def propose(session: Session, call: tuple[object, ...]) -> None:
    kind, *args = call
    p = session.propose
    match kind:
        case "insert_cell":
            p.insert_cell(args[0], after=args[1])  # type: ignore[arg-type]
        case "edit_cell":
            p.edit_cell(args[0], args[1])  # type: ignore[arg-type]
        case "delete_cell":
            p.delete_cell(args[0])  # type: ignore[arg-type]
        case "move_cell":
            p.move_cell(args[0], after=args[1])  # type: ignore[arg-type]
        case "run_cell":
            p.run_cell(args[0])  # type: ignore[arg-type]
        case "write_file":
            p.write_file(args[0], args[1])  # type: ignore[arg-type]
        case "edit_file":
            p.edit_file(args[0], args[1])  # type: ignore[arg-type]
        case "delete_file":
            p.delete_file(args[0])  # type: ignore[arg-type]
        case "shell":
            p.shell(args[0])  # type: ignore[arg-type]


def snapshot(root: Path, nb_path: Path) -> tuple[object, dict[str, bytes]]:
    nb = nbformat.read(nb_path, as_version=4)
    cells = [(c.id, c.cell_type, c.source, c.get("outputs")) for c in nb.cells]
    files = {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p != nb_path
    }
    return cells, files


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(proposals, min_size=1, max_size=8))
def test_nothing_changes_in_plan_mode_whatever_is_proposed(calls: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "a.txt").write_text("hello\n")
        (root / "sub").mkdir()
        (root / "sub" / "b.py").write_text("x = 1\n")
        (root / "link.txt").symlink_to(Path(tmp) / "outside.txt")
        (Path(tmp) / "outside.txt").write_text("outside")
        nb_path = make_notebook(root / "analysis.ipynb", ["import math", "x = 1", "print(x)"])
        session = reopen(nb_path)
        before = snapshot(root, nb_path)
        for call in calls:
            # refused with a message is fine, as long as nothing changed
            with contextlib.suppress(PlanbookError):
                propose(session, call)
            assert snapshot(root, nb_path) == before
            assert (Path(tmp) / "outside.txt").read_text() == "outside"
        assert (
            all(s.status == "pending" for s in session.current_plan().steps)
            if session.current_plan()
            else True
        )
