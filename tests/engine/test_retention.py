"""engine/retention.py on its own: gc keeps the newest history and every blob it still needs.

The history is written by the engine (a Bench on a real notebook file); gc is called on the
store's state, saved, and read back from the file.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from planbook.engine.retention import Retention, blobs_of, gc
from planbook.engine.rollback import rollback
from planbook.engine.stored_record import parse_state
from planbook.errors import UsageMistake
from planbook.model.plan import Plan
from tests.support.engine import Bench


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(tmp_path, ["x = 1"])


def saved_blobs(bench: Bench) -> set[str]:
    raw = nbformat.read(bench.path, as_version=4).metadata["planbook"]
    return set(parse_state(raw).blobs)


def test_gc_keeps_the_newest_checkpoints_and_the_blobs_they_name(bench: Bench) -> None:
    notes = bench.workspace.root / "notes.txt"
    # Each write's checkpoint keeps the file as it was: absent, then A, B, A again.
    checkpoints = [bench.write("notes.txt", text) for text in ("A\n", "B\n", "A\n", "B\n")]
    shared = checkpoints[1].files[0].blob  # "A": named by a dropped and by the kept checkpoint
    only_dropped = checkpoints[2].files[0].blob  # "B": named by a dropped checkpoint only
    assert shared == checkpoints[3].files[0].blob and shared != only_dropped
    bench.store.state.blobs["0" * 64] = "unreferenced"
    report = gc(bench.store.state, Retention(keep_checkpoints=1))
    bench.store.save()
    kept = bench.store.state.checkpoints
    assert [cp.id for cp in kept] == [checkpoints[-1].id]
    assert (report.checkpoints, report.blobs) == (3, 2)
    assert saved_blobs(bench) == {shared} == blobs_of(kept[0])
    assert str(report) == "dropped 3 checkpoints, 0 plans and 2 blobs no longer needed"
    # The kept checkpoint still works: rolling back to it restores the file from its blob.
    rollback(bench.store, bench.writer(), kept[0], force=False)
    assert notes.read_text() == "A\n"


def test_gc_keeps_the_newest_closed_plans_and_every_open_one(bench: Bench) -> None:
    for n in range(3):
        bench.edit("c1", f"x = {n}")  # each a plan of its own, completed
    closed = [p.id for p in bench.store.state.plans]
    open_plan = Plan(task="still drafting")
    bench.store.state.plans.insert(0, open_plan)
    report = gc(bench.store.state, Retention(keep_checkpoints=None, keep_plans=1))
    assert [p.id for p in bench.store.state.plans] == [open_plan.id, closed[-1]]
    assert report.plans == 2 and report.checkpoints == 0
    assert len(bench.store.state.checkpoints) == 3  # checkpoints follow their own limit


def test_the_checkpoint_of_a_running_step_is_never_dropped(bench: Bench) -> None:
    first = bench.edit("c1", "x = 2")
    bench.edit("c1", "x = 3")
    plan = bench.store.state.plans[0]
    plan.steps[0].status = "running"  # (as a run cut off mid-way leaves it)
    gc(bench.store.state, Retention(keep_checkpoints=1))
    assert first.id in {cp.id for cp in bench.store.state.checkpoints}
    assert len(bench.store.state.checkpoints) == 2


def test_limits_come_from_the_project_and_bad_ones_say_so(tmp_path: Path) -> None:
    assert Retention.load(tmp_path) == Retention()
    (tmp_path / "pyproject.toml").write_text("[tool.planbook]\nkeep_checkpoints = 5\n")
    (tmp_path / "planbook.toml").write_text("keep_plans = 2\n")
    assert Retention.load(tmp_path) == Retention(keep_checkpoints=5, keep_plans=2)
    (tmp_path / "planbook.toml").write_text("keep_plans = 0\n")
    with pytest.raises(UsageMistake, match=r"`keep_plans = 0`.*at least 1") as info:
        Retention.load(tmp_path)
    assert "\n" not in str(info.value)
