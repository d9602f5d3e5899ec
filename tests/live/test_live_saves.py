"""When a live run asks the server to save (issue 10 item 8, keeping issue 15's promises): the
run's end, and before it code steps before their code (the code itself reads the file), never
each cell-only step, nor the approval on its own: the approval reaches the room in the first
step's update (``LiveNotebook.coalesced``), so every save that holds a step holds its
approval. ``approve()`` returns with everything on disk. A server stopped early in a run of
cell-only steps never leaves a file holding a step without its approval (the steps the stop
undid are pending again and run once when approved again); audited as issue 15's fault
trials are."""

from __future__ import annotations

import functools
import itertools
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planbook.documents.file import FileNotebook
from planbook.documents.live.document import open_live
from planbook.documents.live.room import Room
from planbook.engine.runner import IPythonRunner
from planbook.engine.store import Store
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.live.conftest import disk_sources, on_disk, read_after_restart
from tests.live.test_live_faults import SCALE, STEPS, Audit, Trial, after_steps, tally
from tests.live.yclient import UpdatesSeen, YClient
from tests.support.jupyter_server import RunningServer

pytestmark = [pytest.mark.server, pytest.mark.kernel]

_names = itertools.count(1)


@pytest.fixture
def runner() -> Iterator[IPythonRunner]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    yield IPythonRunner(shell)
    shell.user_ns.pop("seen_on_disk", None)


def saved_state(path: Path) -> list[tuple[str, int]]:
    """(status of each step, number of approvals) of each plan in the file on disk."""
    store = Store(FileNotebook(path))
    store.load()
    return [
        (",".join(s.status for s in plan.steps), len(plan.approvals)) for plan in store.state.plans
    ]


def approvals_in(metadata: dict[str, Any]) -> int:
    """How many approvals the plans of a notebook's metadata record (the stored layout)."""
    plans = (metadata.get("planbook") or {}).get("plans") or {}
    return sum(len(plan.get("approvals") or []) for plan in plans.values())


def arrivals(seen: UpdatesSeen) -> list[tuple[int, int]]:
    """(cells, approvals recorded) after each update a second client applied, in order."""
    return [(len(cells), approvals_in(metadata)) for cells, metadata in seen.states()]


def test_a_short_run_of_cell_steps_saves_at_its_end_only(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"saves-{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1"])
    doc = open_live(server.url, server.token, name)
    watcher = YClient(server, name)
    try:
        session = Session(doc, Workspace(server.root))
        anchor = doc.cells()[0].id
        for i in range(5):
            anchor = session.propose.insert_cell(f"v{i} = {i}", after=anchor).operation.cell_id  # type: ignore[union-attr]
        saves: list[str] = []
        original = Room.save

        def counted(room: Room, timeout: float) -> str:
            status = original(room, timeout)
            saves.append(status)
            return status

        monkeypatch.setattr(Room, "save", counted)
        seen = UpdatesSeen(watcher)
        report = session.approve()
        assert report.ok and not report.notes, report.lines()
        assert saves == ["success"]  # the run's end: not the approval alone, not per step
        assert watcher.wait_for(lambda w: len(w.cells_array) == 6)
        states = arrivals(seen)
        # the second client never held a step's cell without the approval, nor the approval
        # alone: it came in the first step's update
        assert [cells for cells, _ in states if cells > 1][:1] == [2]
        assert all(approvals == 1 for cells, approvals in states if cells > 1), states
        assert not any(approvals for cells, approvals in states if cells == 1), states
        # returned: on disk, every step done with its cell
        assert disk_sources(on_disk(server, name)) == ["x = 1"] + [f"v{i} = {i}" for i in range(5)]
        assert saved_state(Path(server.root) / name) == [(",".join(["done"] * 5), 1)]
    finally:
        watcher.close()
        doc.close()


def test_the_approved_plan_is_on_disk_before_any_code_runs(
    server: RunningServer, runner: IPythonRunner
) -> None:
    name = f"saves-{next(_names)}.ipynb"
    path = Path(server.root) / name
    server.write_notebook(name, ["x = 1"])
    doc = open_live(server.url, server.token, name)
    try:
        session = Session(doc, Workspace(server.root), runner=lambda: runner)
        first = session.propose.insert_cell("a = 1", after=doc.cells()[0].id)
        code = (
            "from pathlib import Path\n"
            "from tests.live.test_live_saves import saved_state\n"
            f"seen_on_disk = saved_state(Path({str(path)!r}))"
        )
        session.propose.insert_cell(code, after=first.operation.cell_id, run=True)  # type: ignore[union-attr]
        report = session.approve()
        assert report.ok, report.lines()
        # what the step's code found in the file: approved, step 1 done, itself running
        assert runner.shell.user_ns["seen_on_disk"] == [("done,running", 1)]
        assert saved_state(path) == [("done,done", 1)]
    finally:
        doc.close()


def test_a_file_step_changes_its_file_only_once_its_approval_and_checkpoint_are_on_disk(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file lives outside the room: a server stopped after the file changed but before the
    notebook was saved would leave a changed file with no approval and no checkpoint to undo
    it. So a file step asks the server to save before it writes the file (as a code step does
    before its code runs)."""
    import planbook.engine.executor.run as run_module

    name = f"saves-{next(_names)}.ipynb"
    path = Path(server.root) / name
    server.write_notebook(name, ["x = 1"])
    doc = open_live(server.url, server.token, name)
    seen: list[tuple[list[tuple[str, int]], int]] = []
    real_write = run_module.write_file_bytes

    def write_seen(workspace: Workspace, relative: str, data: bytes) -> None:
        store = Store(FileNotebook(path))
        store.load()
        seen.append((saved_state(path), len(store.state.checkpoints)))
        real_write(workspace, relative, data)

    monkeypatch.setattr(run_module, "write_file_bytes", write_seen)
    try:
        session = Session(doc, Workspace(server.root))
        session.propose.insert_cell("a = 1", after=doc.cells()[0].id)
        session.propose.write_file(f"{name}.txt", "written\n")
        report = session.approve()
        assert report.ok, report.lines()
        assert (Path(server.root) / f"{name}.txt").read_text() == "written\n"
        # when the file changed, the file on disk held the approval and both checkpoints
        assert seen == [([("done,running", 1)], 2)]
        assert saved_state(path) == [("done,done", 1)]
    finally:
        doc.close()


class CellOnlyTrial(Trial):
    """Issue 15's trial with a plan of cell-only steps: no code step saves before the run's
    end, so a stop early in the run strikes between the approval's save and the next."""

    def stage(self) -> None:
        anchor = self.doc.cells()[0].id
        for i in range(1, STEPS + 1):
            step = self.session.propose.insert_cell(f"v{i} = {i}", after=anchor, reason=f"{i}")
            anchor = step.operation.cell_id  # type: ignore[union-attr]


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_a_stop_early_in_a_run_of_cell_steps_keeps_the_approval(
    server: RunningServer, runner: IPythonRunner, crash: bool
) -> None:
    rng = random.Random(f"approval-saved-by-the-run-{crash}")
    total = Audit()

    on_disk_when_stopped: list[tuple[list[tuple[str, int]], int]] = []

    def restart(path: Path) -> None:
        try:
            server.kill() if crash else server.stop()
            # what a restarted server loads, and a new kernel finds if this one died too (this
            # kernel lives on and would write its memory back to the room)
            loaded = read_after_restart(path)
            on_disk_when_stopped.append(
                (saved_state(loaded), len(disk_sources(json.loads(loaded.read_bytes()))))
            )
            time.sleep(0.5)
        finally:  # the next trial, and the next test on this server, need it
            server.start()

    trials = SCALE  # PLANBOOK_FAULT_TRIALS=N for a soak
    for _ in range(trials):
        trial = CellOnlyTrial(server, runner)
        try:
            trial.stage()
            stop = functools.partial(restart, Path(server.root) / trial.name)
            thread = after_steps(trial.session, rng.randrange(STEPS // 2), 0.0, stop)
            trial.approve()
            thread.join(60)
            saved, cells = on_disk_when_stopped[-1]
            # a step on disk (its cell, or its record done) without the approval
            applied = cells > 1 or (bool(saved) and "done" in saved[0][0])
            if applied and (not saved or saved[0][1] != 1):
                total += Audit(lost_approval=1, details=[f"{trial.name}: {saved}, {cells}"])
            total += trial.audit(finished=trial.finish())
        finally:
            trial.close()
    tally(f"server {'SIGKILL' if crash else 'SIGTERM'} early in a run of cell steps", trials, total)
    assert total == Audit(), str(total)
