"""Run exactly the approved steps, in order, each behind a checkpoint.

For every step: verify the approval hash -> verify its target has not drifted -> write a
checkpoint -> apply -> run -> record the result. The first failure ends the run; the steps after
it go back to pending. Cell changes are applied in the same document transaction as their
checkpoint, so a step is either applied with its checkpoint or not at all.

Several processes may share a notebook file. Each step starts under the document's lock from
the saved state: it runs only if it is still approved for this process, and it is saved as
"running" (with its checkpoint and this process's token) before any code runs, which may
happen outside the lock; the result is recorded under the lock again. Whatever raises inside a
step fails that step with a one-line reason and ends the run: a plan is never left "executing".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from planbook.documents.base import NotebookDocument, make_durable
from planbook.engine import owner
from planbook.engine.apply import (
    apply_cell_op,
    check_drift,
    new_file_bytes,
    targets_of,
    write_file_bytes,
)
from planbook.engine.approval import approval_hash, steps_for
from planbook.engine.checkpoints import CheckpointWriter, next_seq
from planbook.engine.hashing import bytes_hash
from planbook.engine.reconcile import ReloadWatch, choose_record, reconcile
from planbook.engine.runner import CellRun, CodeRunner
from planbook.engine.store import Store
from planbook.errors import ConflictError, PlanbookError
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.model.events import Event
from planbook.model.operations import (
    DeleteFile,
    EditCell,
    EditFile,
    RunCell,
    Shell,
    WriteFile,
)
from planbook.model.plan import OPEN_STATUSES, Approval, Plan, Step, StepIndex, StepResult
from planbook.model.words import count, plural
from planbook.workspace.files import ShellResult, Workspace
from planbook.workspace.settings_guard import guard_for

if TYPE_CHECKING:
    from planbook.documents.live.merges import LateMerge


@dataclass
class StepOutcome:
    number: int
    step_id: str
    kind: str
    status: str
    message: str = ""


@dataclass
class RunReport:
    """What a run did, step by step. ``ok`` when every approved step finished."""

    outcomes: list[StepOutcome] = field(default_factory=list)
    stopped: str | None = None
    left_pending: int = 0
    #: What the person should know beyond the steps (a reconciliation, a save not confirmed).
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.stopped is None and all(o.status == "done" for o in self.outcomes)

    def lines(self) -> list[str]:
        out = [
            f"step {o.number} ({o.kind}): {o.status}" + (f": {o.message}" if o.message else "")
            for o in self.outcomes
        ]
        if self.stopped:
            out.append(self.stopped)
        if self.left_pending:
            out.append(
                f"{count(self.left_pending, 'approved step')} {plural('was', self.left_pending)} "
                f"not run and {plural('is', self.left_pending)} pending again"
            )
        return out + self.notes

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "nothing ran"


def one_line(exc: BaseException) -> str:
    """What went wrong, in one line: planbook's own message, or the exception's type and text."""
    if isinstance(exc, PlanbookError):
        text = str(exc)
    else:
        detail = " ".join(str(exc).split())
        text = f"{type(exc).__name__}" + (f": {detail}" if detail else "")
        text += " (not a planbook refusal: a system fault or a planbook bug)"
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:397] + "..."


#: Seconds between the saves a run of cell-only steps asks for (issue 10 item 8). Such a step's
#: change and its "done" travel in one room update, so a server stop before the next save
#: loses both together (the step is approved again, not done; no code ran, none runs twice);
#: the approval was saved before the run, code steps save before their code runs, and the
#: run's end saves. A save costs 20-200 ms of server time, which a run of a hundred steps
#: paid several times; this bounds what a stop can undo in a long run of cell-only steps.
CELL_ONLY_SAVE_EVERY = 5.0


class Executor:
    def __init__(
        self,
        store: Store,
        document: NotebookDocument,
        workspace: Workspace,
        runner: Callable[[], CodeRunner],
        emit: Callable[[Event], None],
    ) -> None:
        self.store = store
        self.document = document
        self.workspace = workspace
        self.runner = runner
        self.emit = emit
        self.stop_requested = False
        #: This process, as recorded on the steps it approves and runs.
        self.token = owner.this_process()
        #: Whether a run of this executor is in progress.
        self.active = False
        #: Consulted before each approved step: a message pauses the run there (that step and
        #: the ones after it go back to pending). The agent's decision points plug in here.
        self.before_step: Callable[[Plan, Step], str | None] | None = None
        #: Notices a reload of the document (live room) under a run; see engine/reconcile.py.
        self.watch = ReloadWatch(document, store)
        #: The end of the last run could not be saved (room unreachable): the session settles
        #: and saves it when the room is back.
        self.unsaved = False
        #: Results of steps whose code ran here while the room could not take them (keyed by
        #: step id): only this process knows them. Put back on every fresh read of the record
        #: until the room's record has them (see ``put_back_unrecorded``).
        self.unrecorded: dict[str, StepResult] = {}
        self._reloads_at_start = self.watch.count()
        #: Log entries of the record read at the start of the current step (all saved).
        self._log_saved = 0
        #: Finds a run's steps without a scan from the plan's top at each one.
        self._steps = StepIndex()

    def _reloaded(self) -> bool:
        """The document was reloaded since the run began: memory is this run's record, the
        room's is older (reconcile decides once the run stops)."""
        return self.watch.count() != self._reloads_at_start

    @property
    def checkpoints(self) -> CheckpointWriter:
        return CheckpointWriter(self.document, self.workspace, self.store.blobs)

    @contextmanager
    def _saved_state(self) -> Iterator[None]:
        """Hold the notebook and start from what is saved (another process may have saved)."""
        with self.document.locked():
            self._catch_up()
            yield

    def _catch_up(self, *, load: bool = False) -> None:
        """Start from the saved record (``load``: read it even if it looks unchanged) plus
        what only this process knows; after a reload, memory is this run's record and stays
        (reconcile decides once the run stops)."""
        if self._reloaded():
            return
        before = self.store.state
        if load:
            self.store.load()
        else:
            self.store.sync()
        self.put_back_unrecorded(fresh=self.store.state is not before)
        self._log_saved = len(self.store.state.log)

    def put_back_unrecorded(self, *, fresh: bool) -> None:
        """Record again the results of code that ran here but that the room lacks (its commit
        failed while the room was unreachable): a step the record shows "running" with the
        same checkpoint gets its result back, so it is neither run again nor taken as cut
        off. ``fresh``: the record was just read from the room, so a step it shows settled
        otherwise needs nothing more from memory (its entry goes)."""
        for step_id, result in list(self.unrecorded.items()):
            plan, step = _find(self.store.state.plans, step_id)
            if (
                plan is None
                or step is None
                or (step.status != "running" or step.checkpoint != result.checkpoint)
            ):
                if fresh:
                    del self.unrecorded[step_id]
                continue
            step.status = result.status  # type: ignore[assignment]
            step.error = None if result.status == "done" else result.message
            step.run_by = None
            plan.results.append(result.model_copy())

    def _tell(self, event: Event) -> None:
        """Surfaces only observe: one that raises never changes what a run does."""
        with suppress(Exception):
            self.emit(event)

    # --- a run -------------------------------------------------------------------------------
    def run(self, plan_id: str, approval: Approval) -> RunReport:
        report = RunReport()
        self.stop_requested = False
        own = tuple(approval.step_ids)
        self._tell(Event(kind="run_started", plan_id=plan_id, data={"steps": list(own)}))
        self.active = True
        self._reloads_at_start = self.watch.count()
        try:
            with owner.running_here(own):
                try:
                    for step_id in own:
                        if self._late_conflicts(plan_id, report, sync=False):
                            break
                        if self.stop_requested:
                            report.stopped = "stopped on request between steps"
                            break
                        if self._reloaded():
                            report.stopped = f"stopped: {self.watch.reason}"
                            break
                        try:
                            outcome = self._step(plan_id, approval, step_id, report)
                        except Exception as exc:  # even recording the failure failed
                            report.stopped = (
                                f"the run stopped: {one_line(exc)}; the plan is settled the "
                                "next time it is opened or changed"
                            )
                            break
                        if outcome is None:
                            if report.stopped:
                                break
                            continue
                        report.outcomes.append(outcome)
                        if outcome.status != "done":
                            break
                        self._durable_step(plan_id, outcome)
                        if report.stopped:
                            break
                except KeyboardInterrupt:
                    report.stopped = "interrupted: the run ended cleanly between steps"
                if self._reloaded():
                    self._settle_reload(plan_id, report)
                self._end_run(plan_id, own, report)
                # the last look, after the end's save: a slower network's edit had that long
                # to arrive (a late conflict leaves no step open: the plan's state stands)
                if not self._reloaded() and self._late_conflicts(plan_id, report):
                    warning = make_durable(self.document)
                    if warning:
                        report.notes.append(warning)
        finally:
            self.active = False
        self._tell(
            Event(
                kind="run_finished",
                plan_id=plan_id,
                status="ok" if report.ok else "stopped",
                message=str(report),
            )
        )
        return report

    def _end_run(self, plan_id: str, own: tuple[str, ...], report: RunReport) -> None:
        """Leave "executing"; tried twice (from the saved state again), since a plan left
        executing refuses changes until the next transaction settles it."""
        for attempt in (1, 2):
            try:
                if self._reloaded():  # also during the first attempt's commit
                    self._settle_reload(plan_id, report)
                with self._saved_state():
                    plan = self.store.plan_by_id(plan_id)
                    self._wrap_up(plan, report, set(own))
                    self.store.save()
                self.unsaved = False
                self.unrecorded.clear()  # confirmed: the room's record holds them now
                warning = make_durable(self.document)
                if warning:
                    report.notes.append(warning)
                return
            except Exception as exc:
                if _retryable(exc) and attempt == 1 and self._reloaded():
                    continue  # reloaded under the commit: settle, then try once more
                if _retryable(exc):  # keep memory: it is settled when the room is back
                    self.store.save_lost()
                    self.unsaved = True
                    report.notes.append(
                        f"the end of the run could not be saved ({one_line(exc)}); it is "
                        "settled with the notebook when the room is back"
                    )
                    return
                with suppress(Exception):
                    self.store.load()
                if attempt == 2:
                    note = f"could not record the end of the run ({one_line(exc)})"
                    report.stopped = f"{report.stopped}; {note}" if report.stopped else note

    def _step(
        self, plan_id: str, approval: Approval, step_id: str, report: RunReport
    ) -> StepOutcome | None:
        """One step, or None when it is not this run's to take (any more)."""
        started = time.monotonic()
        code_ran = False
        try:
            with self._saved_state():
                plan = self.store.plan_by_id(plan_id)
                if approval_hash(steps_for(plan, approval.step_ids)) != approval.sha256:
                    report.stopped = (
                        "refused: the plan changed after it was approved (approval hash "
                        "mismatch); nothing more was applied: review it with `%plan` and "
                        "approve again"
                    )
                    self.store.log("refused", report.stopped)
                    self.store.save()
                    self._tell(Event(kind="error", plan_id=plan.id, message=report.stopped))
                    return None
                found = self._steps.find(plan, step_id)
                step = None if found is None else found[1]
                if step is None or step.status != "approved" or step.run_by != self.token:
                    return None
                pause = self.before_step(plan, step) if self.before_step else None
                if pause:
                    report.stopped = pause
                    self.store.save()  # what the hook noted (the log, the question) is kept
                    return None
                outcome = self._start(plan, step, started)
            if outcome is not None:
                return self._announce(plan_id, outcome, step.checkpoint)
            # "running" and the checkpoint must survive a server stop before code runs: a
            # step whose record a stop lost would otherwise run again
            warning = make_durable(self.document)
            if warning:
                raise NotDurable(f"its code was not run: {warning}")
            late = self._late_conflicts(plan_id, report, current=step_id)
            for outcome in late:  # never run a merged text
                if outcome.step_id == step_id:
                    return outcome
            if late:  # an earlier step's: this one is applied and runs, then the run stops
                report.stopped = "stopped: an earlier step's cell met a late edit (a conflict)"
            code_ran = True
            op = step.operation
            if isinstance(op, Shell):
                guard = guard_for(plan, step, self.workspace)
                result = self.workspace.run_shell(op.command, timeout=op.timeout, guard=guard)
                return self._finish_shell(plan_id, step_id, op, result, started)
            cell_id = op.cell_id  # type: ignore[union-attr]
            run = self._run_cell(cell_id)
            try:
                return self._finish_code(plan_id, step_id, cell_id, run, started)
            except Exception as exc:
                if not _retryable(exc):
                    raise
                return self._ran_unrecorded(plan_id, step_id, run, exc, started)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            if _retryable(exc) and not code_ran:
                return self._left_pending(plan_id, step_id, exc)
            return self._fail(plan_id, step_id, exc, started, code_ran=code_ran)

    def _start(self, plan: Plan, step: Step, started: float) -> StepOutcome | None:
        """Under the lock: check, checkpoint and apply the step, saved as "running" first where
        code or a command still has to run (then None is returned: the caller runs it)."""
        number = self._steps.number(plan, step)
        step.status = "running"
        self._tell(
            Event(
                kind="step_started",
                plan_id=plan.id,
                step_id=step.id,
                status="running",
                data={"number": number},
            )
        )
        op = step.operation
        checkpoint = Checkpoint(
            seq=self._next_seq(),
            plan=plan.id,
            step=step.id,
            label=f"before step {number} ({op.kind})",
        )
        if isinstance(op, WriteFile | EditFile | DeleteFile):
            with self.document.transaction():
                check_drift(op, step.base, self.document, self.workspace)
                data = new_file_bytes(op, self.workspace)
                snap = self.checkpoints.snapshot_files([op.path])[0]
                checkpoint.files = [snap.model_copy(update={"after_hash": bytes_hash(data)})]
                self._record_checkpoint(step, checkpoint)
            write_file_bytes(self.workspace, op.path, data)
            return self._record(plan, step, "done", "", started, checkpoint.id)
        if isinstance(op, Shell):
            checkpoint.label += ": shell commands are not undone by rollback"
            with self.document.transaction():
                self._record_checkpoint(step, checkpoint)
            return None
        if self._landed_earlier(step) is not None:  # approved again after an unreachable room
            with self.document.transaction():
                self.store.save()  # "running" again; its code runs once this is saved
            return None
        # Drift check, checkpoint, change and (without code to run) "done" commit together:
        # a live backend re-checks the targets at commit, so nothing slips in between.
        with self.document.transaction():
            check_drift(op, step.base, self.document, self.workspace)
            writer = self.checkpoints  # one writer: it keeps the cells as they were
            checkpoint.cells = writer.snapshot_cells(targets_of(op).cells, outputs=step.runs_cell)
            if not isinstance(op, RunCell):
                apply_cell_op(self.document, op)
            writer.with_after_hashes(checkpoint)
            self._record_checkpoint(step, checkpoint)
            if not step.runs_cell:
                return self._record(plan, step, "done", "", started, checkpoint.id)
        return None

    def _run_cell(self, cell_id: str) -> CellRun:
        found = self.document.find_cell(cell_id)  # by id: not every cell converted
        if found is None:
            raise ConflictError(f"cell {cell_id!r} disappeared before it could run")
        if found.cell.cell_type != "code":
            raise ConflictError(
                f"cell {cell_id!r} is a {found.cell.cell_type} cell now; only code cells run"
            )
        return self.runner().run(found.cell.source)

    def _mine(self, plan_id: str, step_id: str) -> tuple[Plan, Step]:
        plan = self.store.plan_by_id(plan_id)
        step = plan.find_step(step_id)
        if step is None:
            raise ConflictError(f"step {step_id} disappeared from the plan while it ran")
        return plan, step

    def _finish_code(
        self, plan_id: str, step_id: str, cell_id: str, run: CellRun, started: float
    ) -> StepOutcome:
        with self._saved_state(), self.document.transaction():
            plan, step = self._mine(plan_id, step_id)
            found = self.document.find_cell(cell_id)
            if found is not None:
                self.document.replace_cell(
                    found.cell.model_copy(
                        update={"outputs": run.outputs, "execution_count": run.execution_count}
                    )
                )
            if run.error is None:
                outcome = self._record(plan, step, "done", "", started, step.checkpoint)
            else:
                reason = "interrupted (KeyboardInterrupt)" if run.interrupted else run.error
                outcome = self._record(
                    plan,
                    step,
                    "failed",
                    f"cell {cell_id!r} raised {reason}; "
                    "its outputs hold the traceback; later steps stay pending",
                    started,
                    step.checkpoint,
                )
        return self._announce(plan_id, outcome, step.checkpoint)

    def _finish_shell(
        self, plan_id: str, step_id: str, op: Shell, result: ShellResult, started: float
    ) -> StepOutcome:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        if result.timed_out:
            status, message = (
                "failed",
                f"`{op.command}` timed out after {op.timeout:g}s and was stopped; "
                "raise its timeout or run it yourself",
            )
        elif result.guarded:
            status, message = "failed", " | ".join(result.guarded)
        elif not result.ok:
            status, message = (
                "failed",
                f"`{op.command}` exited with {result.returncode}: "
                + (" | ".join(tail) or "no output"),
            )
            if result.read_only:
                message += (
                    f" ({', '.join(result.read_only)} cannot be changed by a command no one "
                    "reviewed: stage such a change as its own step)"
                )
        else:
            status, message = "done", " | ".join(tail)
        with self._saved_state():
            plan, step = self._mine(plan_id, step_id)
            outcome = self._record(plan, step, status, message, started, step.checkpoint)
        return self._announce(plan_id, outcome, step.checkpoint)

    def _fail(
        self, plan_id: str, step_id: str, exc: Exception, started: float, *, code_ran: bool
    ) -> StepOutcome:
        """Record the step as failed (conflict) with a one-line reason, from the saved state.

        A change that landed although its step could not be recorded done is put back, so the
        notebook and files hold either the whole recorded step or nothing of it. Once code
        or a command ran, its change stays with its checkpoint: rollback can undo it."""
        status = "conflict" if isinstance(exc, ConflictError) else "failed"
        reason = one_line(exc)
        with self.document.locked():
            memory, saved_before = self.store.state, self._log_saved
            self._catch_up(load=True)  # what the failed transaction left in memory goes
            log = self.store.state.log
            if len(log) < saved_before and log == memory.log[: len(log)]:
                # the saved record lost entries saved before this step began: it was put
                # back underneath (the server reloaded the file; the reload itself may be
                # noticed a moment later): memory stays, the run stops and reconciles
                self.store.state = memory
                self.store.rewinds += 1
            plan, step = self._mine(plan_id, step_id)
            if step.status not in ("approved", "running") and not getattr(exc, "landed", False):
                number = plan.steps.index(step) + 1
                return StepOutcome(number, step.id, step.operation.kind, step.status, reason)
            if not code_ran:
                self._undo_landed(step)
            outcome = self._record(plan, step, status, reason, started, step.checkpoint)
        return self._announce(plan_id, outcome, step.checkpoint)

    def _undo_landed(self, step: Step) -> None:
        cp = next((c for c in self.store.state.checkpoints if c.id == step.checkpoint), None)
        if cp is None:
            step.checkpoint = None
            return
        writer = self.checkpoints
        for snap in cp.files:
            if self._hash_now(snap) == snap.after_hash:
                writer.restore_file(snap)
        if any(self._hash_now(s) == s.after_hash for s in cp.cells):
            with self.document.transaction():
                for cell in reversed(cp.cells):
                    writer.restore_cell(cell)
        self.store.state.checkpoints.remove(cp)
        step.checkpoint = None

    def _hash_now(self, snap: CellSnapshot | FileSnapshot) -> str | None:
        """The target's hash now, or None when it cannot be read (a file swapped for a symlink
        or a FIFO meanwhile): then the change is not taken as landed, and settling goes on."""
        try:
            return self.checkpoints.current_hash(snap)
        except PlanbookError:
            return None

    # --- the live room's faults (issue 15) --------------------------------------------------
    def _durable_step(self, plan_id: str, outcome: StepOutcome) -> None:
        """After a done step the server saves the room: at once when code ran (it must never
        run twice), else at most every CELL_ONLY_SAVE_EVERY seconds (a lost step goes with
        its record: reconcile says so); the run's end saves in any case."""
        found = self._steps.find(self.store.plan_by_id(plan_id), outcome.step_id)
        step = None if found is None else found[1]
        runs = step is not None and (step.runs_cell or isinstance(step.operation, Shell))
        every = 0.0 if runs else CELL_ONLY_SAVE_EVERY
        warning = make_durable(self.document, unless_saved_within=every)
        if warning:
            outcome.message = "; ".join(m for m in (outcome.message, warning) if m)

    def _late_conflicts(
        self, plan_id: str, report: RunReport, current: str | None = None, *, sync: bool = True
    ) -> list[StepOutcome]:
        """Between steps, before code runs and at the run's end: a step done whose text
        rewrite met a late edit (see ``_put_back_late``) becomes a conflict in the report
        too (the run stops there); the outcomes, the ``current`` step's left to the caller."""
        try:
            outcomes = self._put_back_late(plan_id, sync=sync)
        except PlanbookError as exc:  # the room went away, or the cell changed again
            report.notes.append(
                f"could not look for a late edit of a step's cell ({one_line(exc)}); "
                "look at the cells the run changed"
            )
            return []
        for outcome in outcomes:
            at = [i for i, o in enumerate(report.outcomes) if o.step_id == outcome.step_id]
            if at:
                report.outcomes[at[-1]] = outcome
            elif outcome.step_id != current:  # a step of an earlier run
                report.notes.append(f"step {outcome.number}: conflict: {outcome.message}")
        return outcomes

    def _put_back_late(self, plan_id: str, *, sync: bool = True) -> list[StepOutcome]:
        """An edit made on the text a step rewrote, before the step reached it, that reached
        the server only after the step looked for a merge (a network's delay): the cell gets
        their text back and the step becomes a conflict, in one transaction (one room update),
        with the one line that says so. The step is the plan's last one done (or running)
        that rewrote that cell's text: a later rewrite ends the watch of an earlier one."""
        merges = _late_merges(self.document, sync=sync)
        if not merges:
            return []
        outcomes = []
        with self._saved_state(), self.document.transaction():
            plan = self.store.plan_by_id(plan_id)
            for merge in merges:
                step = next(
                    (
                        s
                        for s in reversed(plan.steps)
                        if isinstance(s.operation, EditCell)
                        and s.operation.cell_id == merge.cell_id
                        and s.status in ("done", "running")
                    ),
                    None,
                )
                found = self.document.find_cell(merge.cell_id)
                if step is None or found is None:
                    continue
                self.document.replace_cell(found.cell.model_copy(update={"source": merge.text}))
                saved = self.store.state.checkpoints
                cp = next((c for c in saved if c.id == step.checkpoint), None)
                if cp is not None:  # the step's change is gone: nothing of it to roll back
                    self.store.state.checkpoints.remove(cp)
                step.checkpoint = None
                outcomes.append(
                    self._record(plan, step, "conflict", merge.message(), time.monotonic())
                )
        return [self._announce(plan_id, outcome, None) for outcome in outcomes]

    def _settle_reload(self, plan_id: str, report: RunReport) -> None:
        """The run stopped because the document was reloaded: keep the richer record, mark
        what the reload undid, and free the steps whose conflict the reload caused."""
        with self.document.locked():
            chosen = choose_record(self.store)
            self.put_back_unrecorded(fresh=chosen == "room")
            report.notes += reconcile(self.store, self.document, self.watch.reason)
            plan = self.store.plan_by_id(plan_id)
            for outcome in report.outcomes:
                step = plan.find_step(outcome.step_id)
                if outcome.status == "conflict" and step is not None and step.status == "conflict":
                    step.status = "pending"
                    step.error = (
                        f"{self.watch.reason} while it was being applied; nothing was "
                        "applied: approve it again"
                    )
            self.watch.acknowledge()
            self._reloads_at_start = self.watch.count()

    def _landed_earlier(self, step: Step) -> Checkpoint | None:
        """The checkpoint of a step whose change is in the document already although it was
        left pending: an earlier attempt reached the room, its end was lost. Only a step with
        code resumes this way (its code never ran); None otherwise."""
        if step.checkpoint is None or not step.runs_cell or isinstance(step.operation, RunCell):
            return None
        cp = next((c for c in self.store.state.checkpoints if c.id == step.checkpoint), None)
        if cp is None or not cp.cells:
            return None
        changed = any(s.after_hash != step.base for s in cp.cells)
        here = all(self.checkpoints.current_hash(s) == s.after_hash for s in cp.cells)
        return cp if changed and here else None

    def _ran_unrecorded(
        self, plan_id: str, step_id: str, run: CellRun, exc: Exception, started: float
    ) -> StepOutcome:
        """The code ran but the room could not take its result: settle the step in memory as
        it ended (never pending: that would run it again); the session saves it, and
        reconciles it with the room, once the room is back."""
        self.store.save_lost()
        plan, step = self._mine(plan_id, step_id)
        while plan.results and plan.results[-1].step_id == step.id:
            plan.results.pop()
        status: Literal["done", "failed"] = "done" if run.error is None else "failed"
        # what was applied, never "nothing" (the exception's own text says nothing was
        # applied of the outputs' write, which is all it knows)
        message = (
            f"its change is in the notebook and its code ran"
            f"{'' if run.error is None else ' and raised ' + run.error}, but its outputs could "
            "not be written (the collaboration room was unreachable): run the cell again to "
            "see them"
        )
        result = StepResult(
            step_id=step.id,
            status=status,
            message=message,
            checkpoint=step.checkpoint,
            seconds=time.monotonic() - started,
        )
        step.status = status
        step.error = None if status == "done" else message
        step.run_by = None
        plan.results.append(result)
        # The next read of the record from the room would drop this (it says "running"
        # there): keep it apart until the room has it.
        self.unrecorded[step.id] = result
        self.unsaved = True
        outcome = StepOutcome(
            plan.steps.index(step) + 1, step.id, step.operation.kind, status, message
        )
        return self._announce(plan_id, outcome, step.checkpoint)

    def _left_pending(self, plan_id: str, step_id: str, exc: Exception) -> StepOutcome:
        """The room could not be reached (or not saved before code): nothing is wrong with
        the step, so it waits, pending, to be approved again as it is. What its attempt put
        in memory is dropped, except its checkpoint when the change may have landed:
        reconcile records it done, or drops the checkpoint, once the room is back."""
        self.store.save_lost()
        plan, step = self._mine(plan_id, step_id)
        while plan.results and plan.results[-1].step_id == step.id:
            plan.results.pop()
        if getattr(exc, "applied", None) is False:
            cp = next((c for c in self.store.state.checkpoints if c.id == step.checkpoint), None)
            if cp is not None:
                self.store.state.checkpoints.remove(cp)
            step.checkpoint = None
        step.status = "pending"
        step.run_by = None
        step.error = f"{one_line(exc)}; the step is pending: approve it again when the room is back"
        self.store.log("unreachable", f"{step.id}: {one_line(exc)}")
        outcome = StepOutcome(
            plan.steps.index(step) + 1, step.id, step.operation.kind, "pending", step.error
        )
        return self._announce(plan_id, outcome, None)

    # --- recording ---------------------------------------------------------------------------
    def _release_unrun(self, plan: Plan, own: set[str] | None) -> int:
        count = 0
        for step in plan.steps:
            if step.status == "approved" and (own is None or step.id in own):
                step.status = "pending"
                step.run_by = None
                count += 1
        return count

    def _record(
        self,
        plan: Plan,
        step: Step,
        status: str,
        message: str,
        started: float,
        checkpoint: str | None = None,
    ) -> StepOutcome:
        """Set the step's result and save it (inside the caller's transaction, if any)."""
        step.status = status  # type: ignore[assignment]
        step.error = message if status != "done" else None
        step.run_by = None
        result_status = status if status in ("done", "failed", "conflict") else "failed"
        plan.results.append(
            StepResult(
                step_id=step.id,
                status=result_status,  # type: ignore[arg-type]
                message=message,
                checkpoint=checkpoint,
                seconds=time.monotonic() - started,
            )
        )
        self.store.save()
        number = self._steps.number(plan, step)
        return StepOutcome(number, step.id, step.operation.kind, status, message)

    def _announce(self, plan_id: str, outcome: StepOutcome, checkpoint: str | None) -> StepOutcome:
        """Tell the surfaces, once what the step did is saved."""
        if checkpoint is not None:
            self._tell(
                Event(
                    kind="checkpoint_written",
                    plan_id=plan_id,
                    step_id=outcome.step_id,
                    data={"checkpoint": checkpoint},
                )
            )
        self._tell(
            Event(
                kind="step_finished",
                plan_id=plan_id,
                step_id=outcome.step_id,
                status=outcome.status,
                message=outcome.message,
                data={"number": outcome.number},
            )
        )
        return outcome

    def _finish(
        self,
        plan: Plan,
        step: Step,
        status: str,
        message: str,
        started: float,
        checkpoint: str | None = None,
    ) -> StepOutcome:
        outcome = self._record(plan, step, status, message, started, checkpoint)
        return self._announce(plan.id, outcome, checkpoint)

    def _next_seq(self) -> int:
        return next_seq(self.store.state.checkpoints)

    def _record_checkpoint(self, step: Step, checkpoint: Checkpoint) -> None:
        self.store.state.checkpoints.append(checkpoint)
        step.checkpoint = checkpoint.id
        self.store.save()

    # --- ending and recovering ----------------------------------------------------------------
    def _wrap_up(self, plan: Plan, report: RunReport, own: set[str] | None) -> None:
        """End a run (finished, stopped, interrupted, or found cut off): settle ``own`` steps
        (None: every step), and leave "executing" once no other live process runs a step."""
        for step in plan.steps:
            if step.status == "running" and (own is None or step.id in own):
                self._settle_interrupted(plan, step, report)
        report.left_pending = self._release_unrun(plan, own)
        if plan.state != "executing":
            return
        if any(s.status in ("approved", "running") for s in plan.steps):
            return  # another process is still running its steps: it ends the run
        if not any(s.status in OPEN_STATUSES for s in plan.steps):
            plan.fire("finish")
        else:
            plan.fire("pause")

    def recover(self) -> list[str]:
        """Settle runs that a dead process left mid-way (call with the notebook locked); the
        one-line notes say what was found. Steps a live process runs are left to it."""
        notes = []
        for plan in self.store.state.plans:
            if plan.state != "executing":
                continue
            dead = {
                s.id
                for s in plan.steps
                if s.status in ("approved", "running") and not owner.is_alive(s.run_by, s.id)
            }
            busy = any(s.status in ("approved", "running") for s in plan.steps)
            if busy and not dead:
                continue
            report = RunReport()
            self._wrap_up(plan, report, dead)
            notes.append(
                f"plan {plan.id}: a run was cut off (kernel stopped?); "
                + ("; ".join(report.lines()) or "nothing had started")
            )
        if notes:
            self.store.log("recovered", " | ".join(notes))
            self.store.save()
        return notes

    def _settle_interrupted(self, plan: Plan, step: Step, report: RunReport) -> None:
        """After an interrupt: a step whose change landed is done, one that did not is pending,
        and one whose code was running failed (its outputs may be incomplete)."""
        cp = next((c for c in self.store.state.checkpoints if c.id == step.checkpoint), None)
        snaps: list[CellSnapshot | FileSnapshot] = [*cp.cells, *cp.files] if cp else []
        landed = cp is not None and all(self._hash_now(s) == s.after_hash for s in snaps)
        if landed and (step.runs_cell or isinstance(step.operation, Shell)):
            self._finish(
                plan,
                step,
                "failed",
                "interrupted while its code ran; its outputs may "
                "be incomplete: roll it back or run it again",
                time.monotonic(),
                step.checkpoint,
            )
        elif landed:
            self._finish(
                plan,
                step,
                "done",
                "interrupted after it was applied",
                time.monotonic(),
                step.checkpoint,
            )
        else:
            if cp is not None:
                self.store.state.checkpoints.remove(cp)
            step.checkpoint = None
            step.status = "pending"
            step.run_by = None
            step.error = "interrupted before it was applied"
        report.outcomes.append(
            StepOutcome(
                plan.steps.index(step) + 1, step.id, step.operation.kind, step.status, "interrupted"
            )
        )


def _find(plans: list[Plan], step_id: str) -> tuple[Plan | None, Step | None]:
    for plan in plans:
        step = plan.find_step(step_id)
        if step is not None:
            return plan, step
    return None, None


def _late_merges(document: NotebookDocument, *, sync: bool) -> list[LateMerge]:
    """The live room's late merges (``LiveNotebook.late_merges``); none elsewhere."""
    found = getattr(document, "late_merges", None)
    return list(found(sync=sync)) if callable(found) else []


def _retryable(exc: BaseException) -> bool:
    """A failure to reach the document (the live room), not of the change itself."""
    return bool(getattr(exc, "retryable", False))


class NotDurable(PlanbookError):
    """The server did not confirm saving a step's "running" record, so its code was not run
    (a stop could otherwise make it run twice); approve the step again when the room is back."""

    retryable = True
