"""Run exactly the approved steps, in order, each behind a checkpoint.

For every step: verify the approval hash -> verify its target has not drifted -> write a
checkpoint -> apply -> run -> record the result. The first failure ends the run; the steps after
it go back to pending. A step that asks first (``Step.ask_first``, engine/ask_first.py) pauses
the run before it until its question is answered. Cell changes are applied in the same document
transaction as their checkpoint, so a step is either applied with its checkpoint or not at all.

Several processes may share a notebook file. Each step starts under the document's lock from
the saved state: it runs only if it is still approved for this process, and it is saved as
"running" (with its checkpoint and this process's token) before any code runs, which may
happen outside the lock; the result is recorded under the lock again. Whatever raises inside a
step fails that step with a one-line reason and ends the run: a plan is never left "executing".
"""

from __future__ import annotations

import time
from dataclasses import replace

from planbook.documents.base import keeps_saves, make_durable, saves_dropped
from planbook.engine import ask_first, owner
from planbook.engine.apply import (
    apply_cell_op,
    check_drift,
    new_file_bytes,
    targets_of,
    write_file_bytes,
)
from planbook.engine.executor.approved import ApprovalCheck
from planbook.engine.executor.late_merges import LateMerges
from planbook.engine.executor.record import retryable
from planbook.engine.executor.recovery import Recovery
from planbook.engine.executor.report import RunReport, StepOutcome, one_line
from planbook.engine.executor.shell_layer import ShellLayers
from planbook.engine.hashing import bytes_hash
from planbook.engine.mcp_calls import McpResult, bounded
from planbook.engine.runner import CellRun
from planbook.engine.stored_record import UNDONE_NOTES
from planbook.errors import ConflictError, LayerRefused, NotDurable
from planbook.model.cell import Cell
from planbook.model.checkpoint import Checkpoint
from planbook.model.events import Event
from planbook.model.operations import DeleteFile, EditFile, McpCall, RunCell, Shell, WriteFile
from planbook.model.plan import Approval, Plan, Step
from planbook.workspace.files import ShellResult
from planbook.workspace.overlay import Layer, remove_layer
from planbook.workspace.settings_guard import SettingsGuard, Snapshot, guard_for

#: Seconds between the saves a run of cell-only steps asks for (issue 10 item 8). Such a step's
#: change and its "done" travel in one room update, so a server stop before the next save
#: loses both together (the step is approved again, not done; no code ran, none runs twice);
#: the approval was saved before the run, code steps save before their code runs, and the
#: run's end saves. A save costs 20-200 ms of server time, which a run of a hundred steps
#: paid several times; this bounds what a stop can undo in a long run of cell-only steps.
CELL_ONLY_SAVE_EVERY = 5.0


class Executor(Recovery, LateMerges, ShellLayers):
    """Runs exactly the approved steps of one plan, in order (see the module's docstring)."""

    # --- a run -------------------------------------------------------------------------------
    def run(self, plan_id: str, approval: Approval) -> RunReport:
        report = RunReport()
        self.stop_requested = False
        own = tuple(approval.step_ids)
        self._held = []
        self._awaiting_save = []
        self._made_runner = None
        self._approval_check = ApprovalCheck()
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
                self._tell_held()
                # the last look, after the end's save: a slower network's edit had that long
                # to arrive (a late conflict leaves no step open: the plan's state stands)
                if not self._reloaded() and self._late_conflicts(plan_id, report):
                    warning = make_durable(self.document)
                    if warning:
                        report.notes.append(warning)
        finally:
            self.active = False
            self._tell_held()  # a run that ended by an exception still says what its steps did
        self._tell(
            Event(
                kind="run_finished",
                plan_id=plan_id,
                status="ok" if report.ok else "stopped",
                message=str(report),
            )
        )
        return report

    def _step(
        self, plan_id: str, approval: Approval, step_id: str, report: RunReport
    ) -> StepOutcome | None:
        """One step, or None when it is not this run's to take (any more)."""
        started = time.monotonic()
        code_ran = False
        try:
            with self._saved_state():
                plan = self.store.plan_by_id(plan_id)
                if not self._approval_check.holds(plan, approval):
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
                number = self._steps.number(plan, step)
                pause = ask_first.pause(plan, step, number)
                if pause:  # the step asks first: it and the approved ones after it wait
                    report.stopped = pause
                    question = step.ask_first.question if step.ask_first else ""
                    self.store.log("paused", f"before step {number}: {question}")
                    self.store.save()
                    return None
                outcome = self._start(plan, step, started)
            if outcome is not None:
                return self._announce(plan_id, outcome, step.checkpoint)
            # "running" and the checkpoint must survive a crash or a server stop before code
            # runs: a step whose record a stop lost would otherwise run again
            self._write_pending()
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
                ran = self._run_layered(op, guard) if self._layered() else None
                if ran is None:  # no overlay here: as before
                    result = self.workspace.run_shell(op.command, timeout=op.timeout, guard=guard)
                    return self._finish_shell(plan_id, step_id, op, result, started)
                # The command's writes are still in its layer: the workspace is as before it.
                before = guard.snapshot() if guard is not None else None
                try:
                    return self._finish_shell(
                        plan_id, step_id, op, ran[0], started, ran[1], guard, before
                    )
                finally:
                    remove_layer(ran[1])
            if isinstance(op, McpCall):
                called = self.mcp_caller.call(op.server, op.tool, op.args)
                return self._finish_mcp(plan_id, step_id, op, called, started)
            cell_id = op.cell_id  # type: ignore[union-attr]
            cell, run = self._run_cell(cell_id)
            # kept at once, from the cell as it was before the run: a room that cannot be
            # read now (reloading, unreachable) gets them back later (``restore_outputs``)
            self.outputs.keep(step_id, cell, run)
            try:
                return self._finish_code(plan_id, step_id, cell_id, run, started)
            except Exception as exc:
                if not retryable(exc):
                    raise
                return self._ran_unrecorded(plan_id, step_id, run, exc, started)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            if retryable(exc) and not code_ran:
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
            # The checkpoint (and the approval) on disk before the file changes: the file is
            # outside the notebook, and a stop between the two would leave a changed file
            # nothing records or can undo (a live room saves only when asked).
            self._write_pending()
            warning = make_durable(self.document)
            if warning:
                raise NotDurable(f"its file was not written: {warning}")
            write_file_bytes(self.workspace, op.path, data)
            return self._record(plan, step, "done", "", started, checkpoint.id)
        if isinstance(op, Shell | McpCall):  # the label says what rollback cannot undo
            if isinstance(op, McpCall) or not self._layered():
                checkpoint.label += UNDONE_NOTES[op.kind]
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
            writer.with_after_hashes(checkpoint, unchanged=isinstance(op, RunCell))
            if not step.runs_cell:  # one save holds the checkpoint and "done" (one live update)
                self._add_checkpoint(step, checkpoint)
                return self._record(plan, step, "done", "", started, checkpoint.id)
            self._record_checkpoint(step, checkpoint)
        return None

    def _run_cell(self, cell_id: str) -> tuple[Cell, CellRun]:
        """The cell as it was before its code ran, and what the run made."""
        found = self.document.find_cell(cell_id)  # by id: not every cell converted
        if found is None:
            raise ConflictError(f"cell {cell_id!r} disappeared before it could run")
        if found.cell.cell_type != "code":
            raise ConflictError(
                f"cell {cell_id!r} is a {found.cell.cell_type} cell now; only code cells run"
            )
        return found.cell, self._code_runner().run(found.cell.source)

    def _finish_code(
        self, plan_id: str, step_id: str, cell_id: str, run: CellRun, started: float
    ) -> StepOutcome:
        # A file's saves are kept in memory until the next step's code, file or the run's
        # end writes them: the result waits in memory for the save made there, which carries
        # it into the same write (the record's changes made once a step that runs code, not
        # twice). A room saves right after such a step (``_durable_step``): it takes it now.
        save = not keeps_saves(self.document)
        with self._saved_state(), self.document.transaction():
            plan, step = self._mine(plan_id, step_id)
            found = self.document.find_cell(cell_id)
            if found is not None:
                # kept (again, from the cell as it is now) until a save holds them: a room
                # that misses them gets them back
                self.outputs.keep(step_id, found.cell, run)
                self.document.replace_cell(
                    found.cell.model_copy(
                        update={"outputs": run.outputs, "execution_count": run.execution_count}
                    )
                )
            if run.error is None:
                outcome = self._record(plan, step, "done", "", started, step.checkpoint, save=save)
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
                    save=save,
                )
            awaiting = None if save else (plan.results[-1], saves_dropped(self.document))
        if awaiting is not None:  # its outputs are committed: the result waits for the save
            self._awaiting_save.append(awaiting)
        return self._announce(plan_id, outcome, step.checkpoint)

    def _finish_shell(
        self,
        plan_id: str,
        step_id: str,
        op: Shell,
        result: ShellResult,
        started: float,
        lay: Layer | None = None,
        guard: SettingsGuard | None = None,
        before: Snapshot | None = None,
    ) -> StepOutcome:
        """Record a shell step's result; with ``lay``, first apply its layer under the lock
        (engine/executor/shell_layer.py) and put back what ``guard`` protects."""
        with self._saved_state():
            plan, step = self._mine(plan_id, step_id)
            applied, refused = "", ""
            if lay is not None and result.timed_out:
                applied = "nothing of its layer was applied (a command stopped half way)"
            elif lay is not None:
                checkpoint = next(
                    (c for c in self.store.state.checkpoints if c.id == step.checkpoint), None
                )
                try:
                    applied = self._apply(lay, step, checkpoint, reviewed=guard is None)
                except LayerRefused as exc:
                    refused = str(exc)
                if guard is not None and before is not None:
                    result = replace(result, guarded=tuple(guard.restore(before)))
            status, message = self._shell_verdict(op, result)
            if refused:
                status, message = "failed", refused
            elif applied:
                message = "; ".join(part for part in (message, applied) if part)
            outcome = self._record(plan, step, status, message, started, step.checkpoint)
        return self._announce(plan_id, outcome, step.checkpoint)

    @staticmethod
    def _shell_verdict(op: Shell, result: ShellResult) -> tuple[str, str]:
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
        return status, message

    def _finish_mcp(
        self, plan_id: str, step_id: str, op: McpCall, result: McpResult, started: float
    ) -> StepOutcome:
        text = bounded(result.text) or "(no content)"
        if result.is_error:
            status, message = "failed", f"{op.name} answered with an error: {text}"
        else:
            status, message = "done", text
        with self._saved_state():
            plan, step = self._mine(plan_id, step_id)
            outcome = self._record(plan, step, status, message, started, step.checkpoint)
        return self._announce(plan_id, outcome, step.checkpoint)

    # --- the live room's faults (issue 15) --------------------------------------------------
    def _durable_step(self, plan_id: str, outcome: StepOutcome) -> None:
        """After a done step the server saves the room: at once when code ran (it must never
        run twice), else at most every CELL_ONLY_SAVE_EVERY seconds (a lost step goes with
        its record: reconcile says so); the run's end saves in any case."""
        found = self._steps.find(self.store.plan_by_id(plan_id), outcome.step_id)
        step = None if found is None else found[1]
        runs = step is not None and (step.runs_cell or isinstance(step.operation, Shell | McpCall))
        every = 0.0 if runs else CELL_ONLY_SAVE_EVERY
        warning = make_durable(self.document, unless_saved_within=every)
        if warning:
            outcome.message = "; ".join(m for m in (outcome.message, warning) if m)
        elif (
            runs
            and outcome.step_id not in self.unrecorded  # its outputs were committed
            and self.outputs.saved_with(outcome.step_id)
        ):
            self.restore_outputs()  # the server overwrote them with the file at the save
