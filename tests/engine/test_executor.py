"""The executor on its own (no Session): a real notebook file, its store and workspace, steps
staged by the planner and approved with the approval hash, cells run by a real IPython shell."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

from planbook.documents.file import FileNotebook
from planbook.engine import planning
from planbook.engine.approval import approval_hash
from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.executor.report import RunReport
from planbook.engine.executor.run import Executor
from planbook.engine.received import signed_approval
from planbook.engine.rollback import rollback
from planbook.engine.runner import IPythonRunner
from planbook.engine.store import Store
from planbook.model.events import Event
from planbook.model.operations import AnyOperation, EditCell, InsertCell, RunCell, WriteFile
from planbook.model.plan import Approval, Plan
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook, sources


@pytest.fixture(autouse=True)
def _no_ipython_left_behind() -> Iterator[None]:
    yield
    InteractiveShell.clear_instance()


class Bench:
    """What Session.__init__ wires, and nothing more."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.document = FileNotebook(path)
        self.workspace = Workspace(path.parent, protected=(path,))
        self.store = Store(self.document)
        self.store.load()
        self.events: list[Event] = []
        self.executor = Executor(
            self.store,
            self.document,
            self.workspace,
            lambda: IPythonRunner(InteractiveShell.instance()),
            self.events.append,
        )

    def stage(self, *ops: AnyOperation, run: bool = False) -> Plan:
        with self.document.locked():
            self.store.sync()
            plan = Plan(task="test")
            self.store.state.plans.append(plan)
            for op in ops:
                planning.stage(
                    plan,
                    op,
                    reason="test",
                    cells=self.document.cells(),
                    workspace=self.workspace,
                    run_at_approval=run,
                )
            self.store.save()
        return plan

    def approve(self, plan: Plan, *, token: str | None = None) -> Approval:
        """Approve every pending step as the Session does: hash, owner, "executing", saved."""
        with self.document.locked():
            self.store.sync()
            plan = self.store.plan_by_id(plan.id)
            chosen = [s for s in plan.steps if s.status == "pending"]
            # signed as the person here would (an unsigned approval is a received one)
            approval = signed_approval(
                self.store.state,
                plan.id,
                Approval(
                    revision=plan.current.number,
                    step_ids=tuple(s.id for s in chosen),
                    sha256=approval_hash(chosen),
                    by="tester",
                ),
            )
            plan.approvals.append(approval)
            for step in chosen:
                step.status = "approved"
                step.run_by = token or self.executor.token
            plan.fire("approve")
            self.store.save()
        return approval

    def run(self, plan: Plan) -> RunReport:
        return self.executor.run(plan.id, self.approve(plan))

    def statuses(self, plan: Plan) -> list[str]:
        """As a fresh reader of the file sees them."""
        reader = Store(FileNotebook(self.path))
        reader.load()
        return [s.status for s in reader.plan_by_id(plan.id).steps]


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(make_notebook(tmp_path / "nb.ipynb", ["x = 1", "print(x)"]))


def insert(cell_id: str, source: str, after: str = "c2") -> InsertCell:
    return InsertCell(cell_id=cell_id, source=source, after=after)


def test_steps_run_in_order_and_the_first_failure_leaves_the_rest_pending(bench: Bench) -> None:
    plan = bench.stage(
        insert("a", "y = 2"),
        insert("b", "raise ValueError('bad data')", after="a"),
        insert("c", "z = 3", after="b"),
        run=True,
    )
    report = bench.run(plan)
    assert not report.ok
    assert [(o.number, o.status) for o in report.outcomes] == [(1, "done"), (2, "failed")]
    assert "ValueError: bad data" in report.outcomes[1].message
    assert report.left_pending == 1
    assert bench.statuses(plan) == ["done", "failed", "pending"]
    assert [src for _, src in sources(bench.path)] == [
        "x = 1",
        "print(x)",
        "y = 2",
        "raise ValueError('bad data')",
    ]
    assert InteractiveShell.instance().user_ns["y"] == 2  # step 1's code ran in the shell
    started = [e.step_id for e in bench.events if e.kind == "step_started"]
    assert started == [s.id for s in plan.steps[:2]]


def test_a_drifted_target_is_refused_and_nothing_is_written(bench: Bench) -> None:
    plan = bench.stage(
        EditCell(cell_id="c1", source="x = 100"), WriteFile(path="out.txt", content="hi")
    )
    # someone edits the cell after the step was staged
    nb = nbformat.read(bench.path, as_version=4)
    nb.cells[0].source = "x = 2  # theirs"
    nbformat.write(nb, bench.path)
    report = bench.run(plan)
    assert report.outcomes[0].status == "conflict"
    assert "changed" in report.outcomes[0].message
    assert sources(bench.path)[0][1] == "x = 2  # theirs"
    assert not (bench.path.parent / "out.txt").exists()
    assert bench.statuses(plan) == ["conflict", "pending"]
    assert not bench.store.state.checkpoints  # a refused step leaves no checkpoint


def test_a_tampered_approval_hash_refuses_to_run(bench: Bench) -> None:
    plan = bench.stage(insert("a", "y = 2"), WriteFile(path="out.txt", content="hi"))
    approval = bench.approve(plan)
    forged = approval.model_copy(update={"sha256": "0" * 64})
    report = bench.executor.run(plan.id, forged)
    assert report.stopped is not None and "approval hash mismatch" in report.stopped
    assert not report.outcomes
    assert [src for _, src in sources(bench.path)] == ["x = 1", "print(x)"]
    assert not (bench.path.parent / "out.txt").exists()
    assert bench.statuses(plan) == ["pending", "pending"]
    assert any(e.event == "refused" for e in bench.store.state.log)


def test_each_applied_step_is_behind_a_checkpoint_written_first(bench: Bench) -> None:
    plan = bench.stage(
        EditCell(cell_id="c1", source="x = 10"),
        WriteFile(path="notes.txt", content="new\n"),
        insert("a", "w = 1", after="c1"),
    )
    assert bench.run(plan).ok
    reader = Store(FileNotebook(bench.path))  # what the file holds, as a restarted kernel reads
    reader.load()
    saved = reader.plan_by_id(plan.id)
    checkpoints = {c.id: c for c in reader.state.checkpoints}
    assert [checkpoints[s.checkpoint].step for s in saved.steps if s.checkpoint] == [
        s.id for s in saved.steps
    ]
    labels = [checkpoints[s.checkpoint].label for s in saved.steps if s.checkpoint]
    assert labels == [
        "before step 1 (edit_cell)",
        "before step 2 (write_file)",
        "before step 3 (insert_cell)",
    ]
    # the first checkpoint holds everything as it was: rolling back to it undoes all three
    with reader.document.locked():
        writer = CheckpointWriter(reader.document, bench.workspace, reader.blobs)
        rollback(reader, writer, checkpoints[saved.steps[0].checkpoint or ""], force=False)
    assert [src for _, src in sources(bench.path)] == ["x = 1", "print(x)"]
    assert not (bench.path.parent / "notes.txt").exists()


def test_stop_requested_ends_the_run_between_steps(bench: Bench) -> None:
    plan = bench.stage(insert("a", "y = 1"), insert("b", "y = 2", after="a"), run=True)
    asked: list[str] = []

    def stop_after_first(event: Event) -> None:
        bench.events.append(event)
        if event.kind == "step_finished":
            asked.append(event.step_id or "")
            bench.executor.stop_requested = True

    bench.executor.emit = stop_after_first
    report = bench.run(plan)
    assert report.stopped == "stopped on request between steps"
    assert [o.status for o in report.outcomes] == ["done"]
    assert bench.statuses(plan) == ["done", "pending"]
    assert InteractiveShell.instance().user_ns["y"] == 1
    assert [src for _, src in sources(bench.path)][-1] == "y = 1"


#: A child process that opens the notebook and takes over its approved plan, as a kernel
#: restarted on it would (its run follows).
CHILD_EXECUTOR = """
import os, signal, sys
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell
from planbook.documents.base import coalesced_saves
from planbook.documents.file import FileNotebook
from planbook.engine.executor.run import Executor
from planbook.engine.runner import IPythonRunner
from planbook.engine.store import Store
from planbook.model.plan import Approval
from planbook.workspace.files import Workspace

path = Path(sys.argv[1])
document = FileNotebook(path)
store = Store(document)
store.load()
executor = Executor(store, document, Workspace(path.parent), lambda: IPythonRunner(
    InteractiveShell.instance()), lambda event: None)
plan = store.state.plans[0]
for step in plan.steps:
    step.run_by = executor.token
store.save()
"""
CUT_OFF = CHILD_EXECUTOR + "executor.run(plan.id, Approval.model_validate_json(sys.argv[2]))\n"


def test_recovery_settles_a_run_whose_process_died(bench: Bench) -> None:
    """Another process approved and ran the plan and was killed while step 2's code ran; a
    fresh executor finds it cut off and settles it from what landed."""
    plan = bench.stage(
        insert("a", "y = 1"), insert("b", "import time; time.sleep(60)", after="a"), run=True
    )
    approval = bench.approve(plan)
    child = subprocess.Popen(
        [sys.executable, "-c", CUT_OFF, str(bench.path), approval.model_dump_json()],
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    try:
        deadline = time.monotonic() + 60
        while bench.statuses(plan) != ["done", "running"]:
            assert child.poll() is None, "the child process ended before its step ran"
            assert time.monotonic() < deadline, bench.statuses(plan)
            time.sleep(0.1)
    finally:
        child.kill()
        child.wait()

    again = Bench(bench.path)  # a kernel restarted on the same notebook
    with again.document.locked():
        again.store.sync()
        notes = again.executor.recover()
    assert len(notes) == 1 and "a run was cut off" in notes[0]
    assert again.statuses(plan) == ["done", "failed"]
    saved = again.store.plan_by_id(plan.id)
    assert "interrupted while its code ran" in (saved.steps[1].error or "")
    assert saved.state == "completed"
    assert saved.steps[1].checkpoint is not None  # rollback can still undo it
    assert any(e.event == "recovered" for e in again.store.state.log)


def test_recovery_finds_a_run_cut_off_after_it_last_looked(bench: Bench) -> None:
    """``recover`` runs before every operation and looks again only at the plans changed
    since its last look: a plan approved since (its runner gone: nothing of this process
    runs it), one another process left executing in the file (read again), and none once
    both are settled. Beside the others, each is found, once."""
    plans = [bench.stage(insert(f"p{n}", f"v{n} = {n}")) for n in range(3)]
    with bench.document.locked():
        assert bench.executor.recover() == []  # the first look: nothing executing
    bench.approve(plans[1])  # executing, run by nobody alive: cut off
    with bench.document.locked():
        notes = bench.executor.recover()
        assert len(notes) == 1 and f"plan {plans[1].id}" in notes[0]
        assert bench.executor.recover() == []  # settled: not found again
    other = Bench(bench.path)  # another process, which died after approving
    other.approve(plans[2])
    with bench.document.locked():
        bench.store.sync()  # the file changed: the plans are read again
        notes = bench.executor.recover()
        assert len(notes) == 1 and f"plan {plans[2].id}" in notes[0]
        assert bench.executor.recover() == []
    states = {p.id: p.state for p in Bench(bench.path).store.state.plans}
    assert states[plans[0].id] == "drafting"  # never approved: as it was staged
    assert "executing" not in states.values()


KILLED_BETWEEN = (
    CHILD_EXECUTOR
    + """
start = Executor._start

def killed_at_the_second_step(self, plan, step, started):
    if step.id == plan.steps[1].id:  # step 1's code ran; its "done" waits for this save
        os.kill(os.getpid(), signal.SIGKILL)
    return start(self, plan, step, started)

Executor._start = killed_at_the_second_step
with coalesced_saves(document):
    executor.run(plan.id, Approval.model_validate_json(sys.argv[2]))
"""
)


def test_a_kill_before_the_save_after_a_code_step_never_runs_its_code_again(
    bench: Bench,
) -> None:
    """A code step's outputs and "done" wait for the next save (the next code step's, or the
    run's end). A process killed (-9) in between leaves the step "running" on disk, as if it
    died during the code: recovery settles it failed, the step after it goes back to
    pending, and its code never runs a second time."""
    marker = bench.path.parent / "ran.txt"
    plan = bench.stage(
        insert("a", f"open({str(marker)!r}, 'a').write('ran\\n')"),
        insert("b", "z = 3", after="a"),
        run=True,
    )
    approval = bench.approve(plan)
    child = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN, str(bench.path), approval.model_dump_json()],
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL
    assert marker.read_text() == "ran\n"
    assert bench.statuses(plan) == ["running", "approved"]

    again = Bench(bench.path)  # a kernel restarted on the same notebook
    with again.document.locked():
        again.store.sync()
        notes = again.executor.recover()
    assert len(notes) == 1 and "a run was cut off" in notes[0]
    saved = again.store.plan_by_id(plan.id)
    assert [s.status for s in saved.steps] == ["failed", "pending"]
    assert "interrupted while its code ran" in (saved.steps[0].error or "")
    assert saved.steps[0].checkpoint is not None  # rollback can still undo it
    assert marker.read_text() == "ran\n"  # recovery ran nothing
    assert [c for c, _ in sources(bench.path)].count("a") == 1


def disk_full(path: Path, data: object) -> object:
    """``atomic_write`` on a full disk."""
    raise OSError(28, "No space left on device", str(path))


def test_a_last_step_whose_save_fails_is_not_counted_done(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last step's change is saved with the run's end (one durable save a step): when that
    save fails, the report says the step failed, and the file holds nothing of it."""
    import planbook.documents.file as file_backend
    from planbook.documents.base import coalesced_saves

    plan = bench.stage(EditCell(cell_id="c1", source="x = 2"))
    before = bench.path.read_bytes()
    approval = bench.approve(plan)
    saved = bench.path.read_bytes()

    monkeypatch.setattr(file_backend, "atomic_write", disk_full)
    with coalesced_saves(bench.document):
        report = bench.executor.run(plan.id, approval)
    (outcome,) = report.outcomes
    assert outcome.status == "failed"
    assert outcome.message.startswith("its change could not be saved (OSError: [Errno 28]")
    assert not report.ok and "could not record the end of the run" in (report.stopped or "")
    assert bench.path.read_bytes() == saved != before
    assert sources(bench.path)[0] == ("c1", "x = 1")


def test_a_step_is_announced_done_only_once_the_file_holds_it(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The surfaces show what the file holds: each step_finished is told after the save that
    records it. Saves are made where crash safety needs them and nowhere else: before code
    runs (its step "running", with the steps done before it) and at the run's end. A cell
    edit, a cell run and a cell insert are two saves, not five."""
    import planbook.documents.file as file_backend
    from planbook.documents.base import coalesced_saves

    plan = bench.stage(
        EditCell(cell_id="c1", source="x = 5"), RunCell(cell_id="c1"), insert("a", "y = 2")
    )
    seen: list[list[str]] = []

    def on_event(event: Event) -> None:
        if event.kind == "step_finished":
            seen.append(bench.statuses(plan))

    saves: list[int] = []
    atomic_write = file_backend.atomic_write

    def counted(path: Path, data: object) -> object:
        saves.append(1)
        return atomic_write(path, data)  # type: ignore[arg-type]

    bench.executor.emit = on_event
    approval = bench.approve(plan)
    monkeypatch.setattr(file_backend, "atomic_write", counted)
    with coalesced_saves(bench.document):
        assert bench.executor.run(plan.id, approval).ok
    assert seen == [
        ["done", "running", "approved"],  # the edit, saved as the run step began
        ["done", "done", "done"],  # the run and the insert, saved at the end
        ["done", "done", "done"],
    ]
    assert len(saves) == 2
    assert [c.source for c in nbformat.read(bench.path, as_version=4).cells][:1] == ["x = 5"]


def test_steps_held_for_a_save_that_fails_are_not_counted_done(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose record waits in a kept save is not done until that save is written: when
    the write before the next step's code fails (disk full), the steps it held are reported
    failed with the reason, the file holds none of them, and nothing ran."""
    import planbook.documents.file as file_backend
    from planbook.documents.base import coalesced_saves

    plan = bench.stage(EditCell(cell_id="c1", source="x = 5"), RunCell(cell_id="c2"))
    approval = bench.approve(plan)
    saved = bench.path.read_bytes()

    monkeypatch.setattr(file_backend, "atomic_write", disk_full)
    told: list[tuple[str, str]] = []
    bench.executor.emit = lambda e: told.append((e.kind, e.status or ""))
    with coalesced_saves(bench.document):
        report = bench.executor.run(plan.id, approval)
    edit, run = report.outcomes
    assert edit.status == "failed", edit
    assert edit.message.startswith("its change could not be saved (OSError: [Errno 28]")
    assert run.status == "failed" and run.message.startswith("OSError: [Errno 28]"), run
    assert not report.ok
    finished = [status for kind, status in told if kind == "step_finished"]
    assert finished == ["failed", "failed"]
    assert ("checkpoint_written", "") not in told  # no checkpoint reached the file
    assert bench.path.read_bytes() == saved
    assert nbformat.read(bench.path, as_version=4).cells[1].outputs == []  # print(x) never ran


def test_steps_held_for_a_save_that_someone_else_overwrote_are_not_counted_done(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone else saves the notebook (Jupyter's page, git) while a step's record waits in
    a kept save: their save wins, and the step is reported failed, "saved by someone else",
    never done; the file holds their change, and nothing of the step."""
    from planbook.documents.base import coalesced_saves
    from planbook.engine.executor.run import Executor

    plan = bench.stage(EditCell(cell_id="c1", source="x = 5"), RunCell(cell_id="c2"))
    approval = bench.approve(plan)
    start = Executor._start

    def theirs_first(self: Executor, plan: Any, step: Any, started: float) -> Any:
        if step.id == plan.steps[1].id:  # step 1's record waits for this step's save
            nb = nbformat.read(bench.path, as_version=4)
            nb.cells[1].source = "print('theirs')"
            nbformat.write(nb, bench.path)
        return start(self, plan, step, started)

    monkeypatch.setattr(Executor, "_start", theirs_first)
    told: list[tuple[str, str]] = []
    bench.executor.emit = lambda e: told.append((e.kind, e.status or ""))
    with coalesced_saves(bench.document):
        report = bench.executor.run(plan.id, approval)
    assert not report.ok
    edit = report.outcomes[0]
    assert edit.status == "failed"
    assert edit.message.startswith("its change was not saved: the notebook was saved by someone")
    # step 2's cell is theirs now: a conflict, and its code never ran
    assert [s for k, s in told if k == "step_finished"] == ["failed", "conflict"]
    assert nbformat.read(bench.path, as_version=4).cells[1].outputs == []
    assert ("checkpoint_written", "") not in told
    assert [src for _, src in sources(bench.path)][:2] == ["x = 1", "print('theirs')"]


def test_code_steps_read_each_cell_four_times_and_make_one_runner_a_run(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that runs a cell reads it for the drift check, its checkpoint (before and
    after are the same reading: nothing is applied before its code runs), the run and the
    outputs; the kernel's runner is made once for the whole run, not once per step. The
    checkpoint still holds the outputs the run replaced: rolling back to it restores them."""
    made: list[int] = []

    def runner() -> IPythonRunner:
        made.append(1)
        return IPythonRunner(InteractiveShell.instance())

    bench.executor.runner = runner
    plan = bench.stage(RunCell(cell_id="c1"), RunCell(cell_id="c2"))
    lookups: Counter[str] = Counter()
    find_cell = bench.document.find_cell

    def counted(cell_id: str) -> object:
        lookups[cell_id] += 1
        return find_cell(cell_id)

    monkeypatch.setattr(bench.document, "find_cell", counted)
    assert bench.run(plan).ok
    assert made == [1]
    assert lookups == {"c1": 4, "c2": 4}
    nb = nbformat.read(bench.path, as_version=4)
    assert nb.cells[1].outputs[0]["text"] == "1\n"  # print(x) ran, after x = 1
    monkeypatch.undo()
    reader = Store(FileNotebook(bench.path))
    reader.load()
    saved = reader.plan_by_id(plan.id)
    checkpoint = next(c for c in reader.state.checkpoints if c.id == saved.steps[1].checkpoint)
    with reader.document.locked():
        writer = CheckpointWriter(reader.document, bench.workspace, reader.blobs)
        rollback(reader, writer, checkpoint, force=False)
    assert nbformat.read(bench.path, as_version=4).cells[1].outputs == []


def test_the_approved_steps_are_hashed_in_full_once_a_run_until_one_changes(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before each step reads every approved step only when one may have changed
    since it last held (a run of n steps read n x n); a step changed in memory during the
    run is still caught before the next step: nothing more is applied."""
    from planbook.engine.executor import approved

    hashed: list[int] = []

    def counted(steps: list[object]) -> str:
        hashed.append(len(steps))
        return approval_hash(steps)  # type: ignore[arg-type]

    monkeypatch.setattr(approved, "approval_hash", counted)
    plan = bench.stage(
        EditCell(cell_id="c1", source="x = 10"),
        EditCell(cell_id="c2", source="print(10)"),
        insert("a", "w = 1"),
    )
    assert bench.run(plan).ok
    assert hashed == [3]  # before step 1; steps 2 and 3 found nothing changed since

    hashed.clear()
    second = bench.stage(
        EditCell(cell_id="c1", source="x = 20"),
        EditCell(cell_id="c2", source="print(20)"),
        insert("b", "v = 2"),
    )

    def tamper(event: Event) -> None:
        if event.kind == "step_finished" and event.data.get("number") == 1:
            step = bench.store.plan_by_id(second.id).steps[2]
            step.operation = InsertCell(cell_id="b", source="import os", after="c2")

    bench.executor.emit = tamper
    report = bench.run(second)
    assert not report.ok and "approval hash mismatch" in str(report)
    assert hashed == [3, 3]  # before step 1, then again once step 3 was assigned to
    assert [src for _, src in sources(bench.path)] == ["x = 20", "print(10)", "w = 1"]


def test_a_file_step_whose_checkpoint_could_not_be_made_durable_writes_no_file(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file is outside the notebook: when the notebook's holder (a live room's server) does
    not confirm the save of the step's checkpoint, the file is not written and the step is
    left to approve again, as a code step's code is not run."""
    import planbook.engine.executor.run as run_module

    asked: list[bool] = []

    def unconfirmed(document: object, **_: object) -> str:
        asked.append(True)
        return "the server did not confirm the save within 10 s"

    plan = bench.stage(WriteFile(path="out.txt", content="new\n"))
    monkeypatch.setattr(run_module, "make_durable", unconfirmed)
    report = bench.run(plan)
    assert asked
    assert not (bench.path.parent / "out.txt").exists()
    assert not report.ok
    assert "its file was not written: the server did not confirm" in " ".join(report.lines())
    assert bench.statuses(plan) != ["done"]
