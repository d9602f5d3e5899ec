"""engine/rollback.py on its own: undo steps the engine ran on a real notebook file.

The history comes from the executor (a Bench: stage, approve, run); the rollback is called
directly, and the file on disk is what each test checks.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from planbook.engine.rollback import find_checkpoint, rollback
from planbook.errors import NothingToDo, RollbackConflict, UnknownCheckpoint, UsageMistake
from tests.support.engine import Bench, file_sources


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(tmp_path, ["x = 1", "y = 2"])


def step_statuses(bench: Bench) -> list[str]:
    return [s.status for p in bench.store.state.plans for s in p.steps]


def test_undo_the_last_step(bench: Bench) -> None:
    bench.edit("c1", "x = 10")
    bench.edit("c2", "y = 20")
    target = find_checkpoint(bench.store, None)  # the newest step
    record = rollback(bench.store, bench.writer(), target, force=False)
    assert file_sources(bench.path) == ["x = 10", "y = 2"]
    assert record.kind == "rollback" and record.undid == [target.id]
    assert step_statuses(bench) == ["done", "rolled_back"]


def test_back_to_a_checkpoint_undoes_every_later_step_newest_first(bench: Bench) -> None:
    first = bench.edit("c1", "x = 10")
    second = bench.edit("c1", "x = 100")
    (tmp := bench.workspace.root / "notes.txt").write_text("before\n")
    third = bench.write("notes.txt", "after\n")
    record = rollback(bench.store, bench.writer(), first, force=False)
    # c1 went 1 -> 10 -> 100: only undoing newest first lands on the value before step 1.
    assert file_sources(bench.path) == ["x = 1", "y = 2"]
    assert tmp.read_text() == "before\n"
    assert record.undid == [third.id, second.id, first.id]
    assert all(not cp.active for cp in (first, second, third))
    assert step_statuses(bench) == ["rolled_back"] * 3
    with pytest.raises(UsageMistake, match="already rolled back"):
        rollback(bench.store, bench.writer(), first, force=False)


def test_a_rollback_is_recorded_and_can_be_rolled_forward(bench: Bench) -> None:
    bench.edit("c1", "x = 10")
    record = rollback(bench.store, bench.writer(), find_checkpoint(bench.store, None), force=False)
    assert file_sources(bench.path) == ["x = 1", "y = 2"]
    # Saved in the notebook: a fresh read of the file knows about it.
    saved = nbformat.read(bench.path, as_version=4).metadata["planbook"]
    assert any(record.id in bucket for bucket in saved["checkpoints"].values())
    assert bench.store.state.log[-1].event == "rollback"
    forward = rollback(bench.store, bench.writer(), record, force=False)
    assert file_sources(bench.path) == ["x = 10", "y = 2"]
    assert forward.undid == [record.id]
    assert step_statuses(bench) == ["done"]
    assert find_checkpoint(bench.store, "1").active  # the step's checkpoint counts again


def test_a_checkpoint_undone_after_it_was_saved_is_saved_undone(bench: Bench) -> None:
    """A saved checkpoint changes in memory (undone by a rollback); the next save writes it,
    so a fresh read of the file, in another process, does not offer it to undo again."""
    checkpoint = bench.edit("c1", "x = 10")
    saved = nbformat.read(bench.path, as_version=4).metadata["planbook"]["checkpoints"]
    entry = next(b[checkpoint.id] for b in saved.values() if checkpoint.id in b)
    assert entry.get("active", True) and "undone_by" not in entry  # (defaults not stored)
    record = rollback(bench.store, bench.writer(), checkpoint, force=False)
    saved = nbformat.read(bench.path, as_version=4).metadata["planbook"]["checkpoints"]
    entry = next(b[checkpoint.id] for b in saved.values() if checkpoint.id in b)
    assert entry["active"] is False and entry["undone_by"] == record.id


def test_a_target_changed_after_the_step_refuses_unless_forced(bench: Bench) -> None:
    checkpoint = bench.edit("c1", "x = 10")
    nb = nbformat.read(bench.path, as_version=4)
    nb.cells[0].source = "x = 'mine'"  # the person edits the cell after the step ran
    nbformat.write(nb, bench.path)
    bench.store.sync()
    checkpoints = len(bench.store.state.checkpoints)
    before = bench.path.read_bytes()
    with pytest.raises(RollbackConflict, match="cell 'c1' changed after the step ran"):
        rollback(bench.store, bench.writer(), checkpoint, force=False)
    assert bench.path.read_bytes() == before  # nothing written, nothing recorded
    assert len(bench.store.state.checkpoints) == checkpoints and checkpoint.active
    rollback(bench.store, bench.writer(), checkpoint, force=True)
    assert file_sources(bench.path) == ["x = 1", "y = 2"]


def test_finding_a_checkpoint_by_number_id_or_prefix(bench: Bench) -> None:
    with pytest.raises(NothingToDo):
        find_checkpoint(bench.store, None)
    checkpoint = bench.edit("c1", "x = 10")
    assert find_checkpoint(bench.store, "1") is checkpoint
    assert find_checkpoint(bench.store, checkpoint.id) is checkpoint
    assert find_checkpoint(bench.store, checkpoint.id[:6]) is checkpoint
    with pytest.raises(UnknownCheckpoint):
        find_checkpoint(bench.store, "cp-nothing")
