"""Checkpoints and rollback: bytes and cells come back exactly; a rollback can itself be undone."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from planbook.engine.blobs import BlobStore
from planbook.errors import MetadataError, RollbackConflict, UnknownCheckpoint, UsageMistake
from planbook.sessions.session import Session
from tests.conftest import reopen, sources


def notebook_cells(nb_path: Path) -> list[dict[str, object]]:
    nb = nbformat.read(nb_path, as_version=4)
    return [
        {k: c.get(k) for k in ("id", "cell_type", "source", "outputs", "metadata")}
        for c in nb.cells
    ]


def test_rollback_restores_cells_and_files_byte_for_byte(session: Session, nb_path: Path) -> None:
    root = nb_path.parent
    (root / "data.csv").write_bytes(b"a,b\r\n1,2\r\n")  # CRLF must survive
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    nb.cells[2].metadata["tags"] = ["keep"]
    nbformat.write(nb, nb_path)
    cells_before = notebook_cells(nb_path)

    session.propose.edit_file("data.csv", [{"search": "1,2", "replace": "3,4"}], reason="fix")
    session.propose.delete_cell("c3", reason="remove print")
    session.propose.move_cell("c1", after="c2", reason="reorder")
    session.propose.insert_cell("new = 1", before="c1", reason="add")
    session.propose.delete_file("data.csv", reason="drop")
    session.propose.write_file("fresh.txt", "fresh", reason="new file")
    assert session.approve().ok
    assert not (root / "data.csv").exists() and (root / "fresh.txt").exists()
    assert [c["id"] for c in notebook_cells(nb_path)][:2] == ["c2", sources(nb_path)[1][0]]

    session.rollback("1")
    assert notebook_cells(nb_path) == cells_before
    assert (root / "data.csv").read_bytes() == b"a,b\r\n1,2\r\n"
    assert not (root / "fresh.txt").exists()
    assert {s.status for s in session.current_plan().steps} == {"rolled_back"}


def test_rollback_without_argument_undoes_the_last_step_only(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c1", "import os", reason="a")
    session.propose.edit_cell("c2", "x = 2", reason="b")
    session.approve()
    session.rollback()
    assert [s for _, s in sources(nb_path)][:2] == ["import os", "x = 1"]
    session.rollback()
    assert [s for _, s in sources(nb_path)][:2] == ["import math", "x = 1"]
    with pytest.raises(UsageMistake, match="nothing to roll back"):
        session.rollback()


def test_a_checkpoint_is_named_by_its_number_as_an_int_too(session: Session, nb_path: Path) -> None:
    """``rollback(2)`` is ``rollback("2")``, as ``approve(2)`` is step 2; what names no
    checkpoint (a bool, a float, a list) is refused in one line and nothing moves: it was an
    AttributeError calling itself a planbook bug."""
    session.propose.edit_cell("c1", "import os", reason="a")
    session.propose.edit_cell("c2", "x = 2", reason="b")
    assert session.approve().ok
    before = nb_path.read_bytes()
    for bad in (True, 2.0, ["2"], {"id": "2"}):
        with pytest.raises(UsageMistake, match=r"does not name a checkpoint: give its number") as e:
            session.rollback(bad)  # type: ignore[arg-type]
        assert "\n" not in str(e.value) and "planbook bug" not in str(e.value)
        with pytest.raises(UsageMistake, match=r"does not name a checkpoint"):
            session.rollback_preview(bad)  # type: ignore[arg-type]
    assert nb_path.read_bytes() == before
    as_int, as_text = session.rollback_preview(2), session.rollback_preview("2")
    assert [c.id for c in as_int.undo] == [c.id for c in as_text.undo] != []
    session.rollback(2)
    assert [s for _, s in sources(nb_path)][:2] == ["import os", "x = 1"]
    with pytest.raises(UnknownCheckpoint):
        session.rollback(7)


def test_a_rollback_can_be_rolled_back(session: Session, nb_path: Path) -> None:
    session.propose.edit_cell("c2", "x = 2", reason="b")
    session.propose.write_file("f.txt", "v2", reason="f")
    session.approve()
    record = session.rollback("1")
    assert sources(nb_path)[1][1] == "x = 1" and not (nb_path.parent / "f.txt").exists()
    session.rollback(record.id)
    assert sources(nb_path)[1][1] == "x = 2" and (nb_path.parent / "f.txt").read_text() == "v2"
    assert [s.status for s in session.current_plan().steps] == ["done", "done"]
    assert [cp.kind for cp in session.checkpoints()] == ["step", "step", "rollback", "rollback"]


def test_rollback_refuses_to_overwrite_later_edits_unless_forced(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c2", "x = 2", reason="b")
    session.approve()
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[1].source = "x = 'my own edit'"
    nbformat.write(nb, nb_path)
    with pytest.raises(RollbackConflict, match="cell 'c2' changed after the step ran"):
        session.rollback()
    assert sources(nb_path)[1][1] == "x = 'my own edit'"
    session.rollback(force=True)
    assert sources(nb_path)[1][1] == "x = 1"


def test_rollback_with_nothing_and_unknown_checkpoints(session: Session) -> None:
    with pytest.raises(UsageMistake, match="no step has run yet"):
        session.rollback()
    session.propose.edit_cell("c2", "x = 2", reason="b")
    session.approve()
    with pytest.raises(UnknownCheckpoint, match="no checkpoint 'cp-nope'"):
        session.rollback("cp-nope")
    record = session.rollback()
    with pytest.raises(UsageMistake, match="already rolled back"):
        session.rollback(record.undid[0])


def test_checkpoints_survive_a_restart(session: Session, nb_path: Path) -> None:
    session.propose.edit_cell("c2", "x = 2", reason="b")
    session.approve()
    again = reopen(nb_path)
    assert len(again.checkpoints()) == 1
    again.rollback()
    assert sources(nb_path)[1][1] == "x = 1"


def test_blobs_are_content_addressed_compressed_and_stored_once() -> None:
    blobs: dict[str, str] = {}
    store = BlobStore(blobs)
    data = b"same content " * 1000
    assert store.put(data) == store.put(data)
    assert len(blobs) == 1 and len(next(iter(blobs.values()))) < len(data) / 10
    assert store.get(store.put(data)) == data
    key = store.put(b"other")
    blobs[key] = blobs[store.put(data)]
    with pytest.raises(MetadataError, match="corrupted"):
        store.get(key)


def test_metadata_grows_with_the_change_not_the_notebook(tmp_path: Path) -> None:
    from tests.conftest import make_notebook

    big = "\n".join(
        f"row_{i} = {i} * 3.14159  # some realistic code line {i}" for i in range(20000)
    )
    nb_path = make_notebook(tmp_path / "big.ipynb", [big, "x = 1"])
    session = reopen(nb_path)
    session.propose.edit_cell("c2", "x = 2", reason="tiny change")
    session.approve()
    stored = json.dumps(nbformat.read(nb_path, as_version=4).metadata["planbook"])
    assert len(big) > 500_000
    assert len(stored) < 10_000  # the plan and one checkpoint of a tiny cell, not a copy of 500 kB


def test_a_commit_that_fails_leaves_no_checkpoint_and_no_change(
    session: Session, nb_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a live room does when someone edits the target between drift check and commit."""
    from planbook.documents.file import FileNotebook
    from planbook.errors import ConflictError

    session.propose.edit_cell("c2", "x = 2", reason="b")
    session.propose.write_file("f.txt", "new", reason="f")
    real_commit = FileNotebook._commit
    calls = {"n": 0}

    def commit_refused_once(self: FileNotebook) -> None:
        if self._nb["metadata"]["planbook"]["checkpoints"] and calls["n"] == 0:  # the step's commit
            calls["n"] += 1
            raise ConflictError("cell 'c2' changed at commit; nothing was applied")
        real_commit(self)

    monkeypatch.setattr(FileNotebook, "_commit", commit_refused_once)
    report = session.approve()
    assert [o.status for o in report.outcomes] == ["conflict"]
    assert session.checkpoints() == []
    assert sources(nb_path)[1][1] == "x = 1"
    saved = nbformat.read(nb_path, as_version=4).metadata["planbook"]
    assert saved["checkpoints"] == {}
    (plan,) = saved["plans"].values()
    assert [s["status"] for s in plan["revisions"][-1]["steps"]] == [
        "conflict",
        "pending",
    ]


def test_a_file_write_that_fails_leaves_no_checkpoint(
    session: Session, nb_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planbook.workspace.files import Workspace

    session.propose.write_file("f.txt", "new", reason="f")

    def disk_full(self: Workspace, path: str, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Workspace, "write_bytes", disk_full)
    report = session.approve()  # the step fails in one line; the plan is not left executing
    assert report.outcomes[0].status == "failed"
    assert "No space left on device" in report.outcomes[0].message
    assert session.current_plan().state != "executing"
    assert session.checkpoints() == []
    assert not (nb_path.parent / "f.txt").exists()
