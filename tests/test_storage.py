"""Checkpoints hold only what their step changes; the metadata is written by part; old (schema 1)
metadata still works; gc keeps the newest; strip removes planbook's metadata (also for git)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.documents.file import FileNotebook
from planbook.engine.hashing import canonical_json, sha256
from planbook.engine.store import METADATA_KEY
from planbook.errors import NeedsConfirmation, UsageMistake
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook, sources
from tests.kernel_helper import kernel


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


def png(size: int, seed: int = 0) -> str:
    """A base64 "image" that does not compress, like a real PNG."""
    return base64.b64encode(os.urandom(size)).decode()


def plot_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    for i in range(3):
        cell = nbformat.v4.new_code_cell(f"plot({i})\nshow()", execution_count=i + 1)
        cell.id = f"c{i + 1}"
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data", data={"image/png": png(300_000), "text/plain": "<Figure>"}
            )
        ]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def metadata_size(path: Path) -> int:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return len(json.dumps(nb["metadata"].get(METADATA_KEY, {}), indent=1))


def without_planbook(path: Path) -> bytes:
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"].pop(METADATA_KEY, None)
    return nbformat.writes(nbformat.from_dict(nb)).encode()


def test_an_edit_beside_a_large_plot_stores_the_old_source_not_the_plot(tmp_path: Path) -> None:
    path = plot_notebook(tmp_path / "plots.ipynb")
    session = open_session(path)
    session.propose.edit_cell("c2", "plot(1, color='red')\nshow()", reason="r")
    session.propose.move_cell("c1", after="c3", reason="r")
    before = metadata_size(path)
    assert session.approve().ok
    (edit, move) = session.checkpoints()
    assert set(edit.cells[0].parts or {}) == {"source"}  # not the 400 KB of outputs
    assert move.cells[0].parts == {}  # a move keeps only the position
    assert metadata_size(path) - before < 4_000


def test_a_checkpoint_stores_nothing_the_file_holds_elsewhere(tmp_path: Path) -> None:
    """An edit's checkpoint is its old source and where to check drift: its id is its key,
    its plan and label come from the step; a fresh reader gets every field back."""
    import inspect
    import json.encoder

    code = inspect.getsource(json.encoder)[3000:5100]  # 2 KB of real code
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", code, "y = 2"])
    session = open_session(path)
    session.propose.edit_cell("c2", "z = 3", reason="r")
    assert session.approve().ok
    stored = json.loads(path.read_text())["metadata"][METADATA_KEY]["checkpoints"]["0000"]
    ((key, entry),) = stored.items()
    assert set(entry) == {"at", "cells", "seq", "step", "signature"}
    assert set(entry["cells"][0]) == {"cell_id", "index", "after_hash", "parts"}
    z = entry["cells"][0]["parts"]["source"]["z"]
    assert z.startswith("brotli:")  # smaller than zlib on code
    entry_bytes = len(key) + 4 + len(json.dumps(entry, indent=1))
    assert entry_bytes <= 1.5 * len(zlib.compress(json.dumps(code).encode(), 9))
    again = open_session(path).checkpoints()[0]
    assert again.model_dump() == session.checkpoints()[0].model_dump()
    assert again.id == key and again.plan == session.current_plan().id
    assert again.label == "before step 1 (edit_cell)"
    open_session(path).rollback()
    assert [c.source for c in nbformat.read(path, as_version=4).cells][1] == code


def test_a_checkpoint_kept_after_its_plan_is_dropped_keeps_its_plan_and_label(
    tmp_path: Path,
) -> None:
    """What a checkpoint leaves to its plan is written out when gc drops the plan."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1"])
    session = open_session(path)
    for n in (2, 3):  # two plans, each completed
        session.propose.edit_cell("c1", f"a = {n}", reason="r")
        assert session.approve().ok
    assert len(session.store.state.plans) == 2
    session.gc(keep_checkpoints=10, keep_plans=1)
    assert len(session.store.state.plans) == 1 and len(session.checkpoints()) == 2
    reread = {cp.id: cp for cp in open_session(path).checkpoints()}
    for cp in session.checkpoints():
        assert reread[cp.id].plan == cp.plan and reread[cp.id].label == cp.label


def test_rolling_back_an_edit_leaves_the_cell_where_it_was_moved_since(tmp_path: Path) -> None:
    """An edit's checkpoint holds no place (the edit did not move the cell); a delete's does."""
    path = make_notebook(tmp_path / "n.ipynb", ["a = 1", "b = 2", "c = 3"])
    session = open_session(path)
    session.propose.edit_cell("c2", "b = 20", reason="r")
    assert session.approve().ok
    with session.document.transaction():  # the person moves it to the top meanwhile
        session.document.move_cell("c2", 0)
    session.rollback()
    assert sources(path) == [("c2", "b = 2"), ("c1", "a = 1"), ("c3", "c = 3")]
    session.propose.delete_cell("c1", reason="r")
    assert session.approve().ok
    session.rollback()
    assert sources(path) == [("c2", "b = 2"), ("c1", "a = 1"), ("c3", "c = 3")]


@pytest.mark.kernel
def test_a_run_stores_the_old_outputs_once_and_rollback_restores_them(tmp_path: Path) -> None:
    path = plot_notebook(tmp_path / "plots.ipynb")
    original = without_planbook(path)
    nb = nbformat.read(path, as_version=4)
    changed = zlib.compress(canonical_json([dict(o) for o in nb.cells[0].outputs]), 9)
    before = metadata_size(path)
    with kernel(tmp_path) as k:
        reply = k.run(
            "import planbook\n"
            "s = planbook.session(notebook='plots.ipynb', live=False)\n"
            "s.propose.edit_cell('c1', 'print(41 + 1)', reason='r', run=True)\n"
            "s.propose.delete_cell('c3', reason='r')\n"
            "print(s.approve().ok)"
        )
    assert reply.stdout.strip().endswith("True"), reply.text
    assert nbformat.read(path, as_version=4).cells[0].outputs[0]["text"] == "42\n"
    session = open_session(path)
    run_cp, delete_cp = session.checkpoints()
    assert set(run_cp.cells[0].parts or {}) == {"source", "outputs", "execution_count"}
    assert set(delete_cp.cells[0].parts or {}) >= {"source", "outputs", "metadata", "cell_type"}
    session.rollback(run_cp.id)
    assert without_planbook(path) == original  # every byte outside metadata.planbook
    # old outputs of c1, c3 (the delete) and the rollback's copy of c1's new outputs
    assert metadata_size(path) - before < 2 * 1.5 * len(changed) + 10_000


def test_the_same_output_is_stored_once(tmp_path: Path) -> None:
    path = plot_notebook(tmp_path / "plots.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].outputs = nb.cells[0].outputs  # the same figure twice
    nbformat.write(nb, path)
    session = open_session(path)
    session.propose.delete_cell("c1", reason="r")
    session.propose.delete_cell("c2", reason="r")
    assert session.approve().ok
    first, second = session.checkpoints()
    items = [cp.cells[0].parts["outputs"]["items"] for cp in (first, second)]  # type: ignore[index]
    assert items[0] == items[1]
    assert len(session.store.state.blobs) <= 4


def test_a_deleted_executable_file_comes_back_executable(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    session = open_session(path)
    session.propose.delete_file("run.sh", reason="r")
    assert session.approve().ok and not script.exists()
    session.rollback()
    assert script.stat().st_mode & 0o7777 == 0o755


def test_a_step_writes_its_own_entries_not_the_whole_history(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    session = open_session(path)
    writes: list[set[tuple[str, ...]]] = []
    real = FileNotebook.update_metadata

    def spy(self: FileNotebook, key: str, changes: dict[tuple[str, ...], object]) -> None:
        writes.append({path[:1] for path in changes})
        real(self, key, changes)

    for n in range(12):
        session.propose.insert_cell(f"y{n} = {n}", reason="r")
    session.approve()
    FileNotebook.update_metadata = spy  # type: ignore[assignment,method-assign]
    try:
        session.propose.insert_cell("z = 0", reason="r")
        session.approve()
    finally:
        FileNotebook.update_metadata = real  # type: ignore[method-assign]
    touched = set().union(*writes)
    assert touched <= {("plans",), ("checkpoints",), ("log",), ("blobs",), ("plan_order",)}
    assert all(len(w) <= 4 for w in writes)
    saved = nbformat.read(path, as_version=4).metadata[METADATA_KEY]
    assert saved["schema_version"] == 2 and list(saved["checkpoints"]) == ["0000"]
    assert len(saved["checkpoints"]["0000"]) == 13


def schema_1(path: Path) -> None:
    """Rewrite the planbook metadata as planbook 0.1 stored it (lists; whole-cell blobs)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    meta = nb["metadata"][METADATA_KEY]
    cells = {c["id"]: c for c in nb["cells"]}
    from planbook.engine.stored_record import from_layout

    # with what schema 2 leaves out for the reader to derive (id, plan, label, exists)
    checkpoints = from_layout(meta)["checkpoints"]
    blobs = {}
    for cp in checkpoints:
        for snap in cp["cells"]:
            parts = snap.pop("parts")
            snap.setdefault("exists", True)
            if snap["exists"]:
                cell = {"id": snap["cell_id"], "cell_type": "code", "metadata": {}, "outputs": []}
                cell["source"] = json.loads(parts["source"]["json"])
                cell["execution_count"] = cells[snap["cell_id"]].get("execution_count")
                data = canonical_json(cell)
                blobs[sha256(data)] = base64.b64encode(zlib.compress(data)).decode()
                snap["blob"] = sha256(data)
    nb["metadata"][METADATA_KEY] = {
        "schema_version": 1,
        "mode": meta["mode"],
        "plans": [meta["plans"][i] for i in meta["plan_order"]],
        "checkpoints": checkpoints,
        "blobs": blobs,
        "log": [e for b in sorted(meta["log"]) for _, e in sorted(meta["log"][b].items())],
    }
    path.write_text(json.dumps(nb, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def test_schema_1_metadata_is_read_rolled_back_and_migrated(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    session = open_session(path)
    session.propose.edit_cell("c1", "x = 10", reason="r")
    assert session.approve().ok
    schema_1(path)
    old = open_session(path)
    assert [s.status for s in old.current_plan().steps] == ["done"]
    # its checkpoint was rewritten (whole-cell blobs): no longer what this key signed
    with pytest.raises(NeedsConfirmation, match="not signed here"):
        old.rollback()
    old.rollback(confirm=True)
    assert nbformat.read(path, as_version=4).cells[0].source == "x = 1"
    saved = nbformat.read(path, as_version=4).metadata[METADATA_KEY]
    assert saved["schema_version"] == 2 and isinstance(saved["plans"], dict)


def test_gc_keeps_the_newest_checkpoints_and_says_when_one_was_dropped(tmp_path: Path) -> None:
    path = plot_notebook(tmp_path / "plots.ipynb")
    (tmp_path / "pyproject.toml").write_text("[tool.planbook]\nkeep_checkpoints = 2\n")
    session = open_session(path)
    for cell in ("c1", "c2", "c3"):
        session.propose.delete_cell(cell, reason="r")
    assert session.approve().ok
    first = session.checkpoints()[0].id
    size = path.stat().st_size
    report = session.gc()
    assert (report.checkpoints, report.blobs) == (1, 1)  # c1's output (its source is inline)
    assert path.stat().st_size < size - 300_000
    with pytest.raises(UsageMistake, match="dropped by `planbook gc`") as info:
        session.rollback(first)
    assert "\n" not in str(info.value)
    session.rollback(session.checkpoints()[0].id)  # the kept ones still roll back
    assert [c.id for c in session.cells()] == ["c2", "c3"]
    kept = path.read_bytes()
    for zero in ({"keep_checkpoints": 0}, {"keep_plans": 0}, {"keep_checkpoints": -3}):
        # a count under 1 given to the call is refused, not taken as "the configured one"
        with pytest.raises(UsageMistake, match="give a count of 1 or more"):
            session.gc(**zero)
    assert path.read_bytes() == kept
    (tmp_path / "pyproject.toml").write_text("[tool.planbook]\nkeep_checkpoints = 0\n")
    with pytest.raises(UsageMistake, match="keep_checkpoints = 0"):
        session.gc()


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> bytes:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "planbook", *args],
        input=stdin,
        capture_output=True,
        check=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    return done.stdout


def test_strip_removes_planbook_metadata_keeping_the_rest_byte_for_byte(tmp_path: Path) -> None:
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    clean = path.read_bytes()
    session = open_session(path)
    session.propose.edit_cell("c1", "x = 2", reason="r")
    assert run_cli("strip", "-", stdin=path.read_bytes()) == clean
    assert run_cli("strip", "-", stdin=clean) == clean  # idempotent, as a filter must be
    run_cli("strip", str(path))
    assert path.read_bytes() == clean


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_strip_works_as_a_git_clean_filter(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    path = make_notebook(repo / "n.ipynb", ["x = 1"])
    clean = path.read_bytes()
    session = open_session(path)
    session.propose.edit_cell("c1", "x = 2", reason="r")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GIT_CONFIG_GLOBAL": "/dev/null"}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
        ).stdout

    git("init", "-q")
    # the lines docs/checkpoints.md tells people to add
    (repo / ".gitattributes").write_text("*.ipynb filter=planbook-strip\n")
    git("config", "filter.planbook-strip.clean", f"{sys.executable} -m planbook strip")
    git("config", "filter.planbook-strip.smudge", "cat")
    git("add", "n.ipynb", ".gitattributes")
    assert git("show", ":n.ipynb").encode() == clean
    assert METADATA_KEY in json.loads(path.read_text())["metadata"]  # the work tree keeps it


@settings(max_examples=25, deadline=None)
@given(
    actions=st.lists(
        st.sampled_from(
            [
                "edit",
                "insert",
                "delete",
                "approve",
                "rollback",
                "reject",
                "gc",
                "gc plans",
                "mode",
                "ask",
                "answer",
            ]
        ),
        min_size=1,
        max_size=16,
    )
)
def test_what_is_saved_by_part_is_always_the_whole_state(actions: list[str]) -> None:
    """After any sequence of changes, the entries written one by one add up to exactly what
    writing the whole state would give, and a fresh reader sees the same state (a save looks
    only at the plans and checkpoints whose parts noted a change: model/tracked.py)."""
    from planbook.documents.memory import MemoryNotebook
    from planbook.engine.plan_dumps import stored_step
    from planbook.engine.store import Store
    from planbook.errors import PlanbookError
    from planbook.model.cell import Cell

    doc = MemoryNotebook([Cell(id=f"c{i}", source=f"x{i} = {i}") for i in range(4)])
    session = Session(doc, Workspace(Path.cwd()))
    for n, action in enumerate(actions):
        ids = [c.id for c in session.cells()]
        try:
            if action == "edit" and ids:
                session.propose.edit_cell(ids[n % len(ids)], f"y = {n}", reason="p")
            elif action == "insert":
                session.propose.insert_cell(f"z = {n}", reason="p")
            elif action == "delete" and ids:
                session.propose.delete_cell(ids[-1], reason="p")
            elif action == "approve":
                session.approve()
            elif action == "rollback":
                session.rollback()
            elif action == "reject":
                session.reject()
            elif action == "gc":
                session.gc(keep_checkpoints=2)
            elif action == "gc plans":
                session.gc(keep_plans=1)
            elif action == "ask":
                session.ask_before(1, f"sure {n}?")
            elif action == "answer":
                session.answer_step(1, "stop here")
            elif action == "mode":
                session.set_mode("act" if session.mode == "plan" else "plan")
        except PlanbookError:
            pass
        saved = doc.get_metadata(METADATA_KEY)
        if saved is not None:
            assert saved == session.store.layout()
            # plans dumped from their reused parts are what pydantic dumps, in its key order,
            # each step without the fields at their defaults (``stored_step``)
            for plan in session.store.state.plans:
                expected = plan.model_dump(mode="json")
                for revision in expected["revisions"]:
                    revision["steps"] = [stored_step(s) for s in revision["steps"]]
                assert json.dumps(saved["plans"][plan.id]) == json.dumps(expected)
            again = Store(doc).state
            assert again.model_dump() == session.store.state.model_dump()


def test_a_pending_step_whose_cell_a_rollback_removed_refuses_only_itself(
    tmp_path: Path,
) -> None:
    """Found by the test above: a delete staged for a cell that a rollback then removed made
    every later staging raise a TypeError; now the stale step is passed over while staging and
    conflicts alone, in one line, when it is approved."""
    path = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    session = open_session(path)
    session.propose.insert_cell("z = 3", reason="r")
    assert session.approve().ok
    inserted = session.cells()[-1].id
    session.propose.delete_cell(inserted, reason="r")
    session.rollback()
    assert [c.source for c in session.cells()] == ["x = 1", "y = 2"]
    session.propose.edit_cell("c1", "x = 10", reason="r")
    report = session.approve()
    assert not report.ok
    assert report.lines()[0] == (
        f"step 1 (delete_cell): conflict: cell {inserted!r} no longer exists; nothing was "
        "applied: revise the plan (`pb.revise(...)`) or reject this step and propose it again"
    )
    assert [c.source for c in session.cells()] == ["x = 1", "y = 2"]
