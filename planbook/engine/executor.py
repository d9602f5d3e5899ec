"""Run exactly the approved steps, in order, each behind a checkpoint.

For every step: verify the approval hash -> verify its target has not drifted -> write a
checkpoint -> apply -> run -> record the result. The first failure ends the run; the steps after
it go back to pending. Cell changes are applied in the same document transaction as their
checkpoint, so a step is either applied with its checkpoint or not at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from planbook.documents.base import NotebookDocument, index_of
from planbook.engine.apply import (
    apply_cell_op,
    check_drift,
    new_file_bytes,
    targets_of,
    write_file_bytes,
)
from planbook.engine.approval import approval_hash, steps_for
from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.hashing import bytes_hash
from planbook.engine.runner import CodeRunner
from planbook.engine.store import Store
from planbook.errors import ApprovalMismatch, ConflictError, PlanbookError
from planbook.events import Event
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.model.operations import (
    DeleteFile,
    EditFile,
    RunCell,
    Shell,
    WriteFile,
)
from planbook.model.plan import OPEN_STATUSES, Approval, Plan, Step, StepResult
from planbook.workspace import Workspace


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
            out.append(f"{self.left_pending} approved step(s) were not run and are pending again")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines()) or "nothing ran"


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

    @property
    def checkpoints(self) -> CheckpointWriter:
        return CheckpointWriter(self.document, self.workspace, self.store.blobs)

    def run(self, plan_id: str, approval: Approval) -> RunReport:
        report = RunReport()
        self.stop_requested = False
        plan = self.store.plan_by_id(plan_id)
        self.emit(
            Event(kind="run_started", plan_id=plan.id, data={"steps": list(approval.step_ids)})
        )
        try:
            for step_id in [s.id for s in steps_for(plan, approval.step_ids)]:
                plan = self.store.plan_by_id(plan_id)
                if self.stop_requested:
                    report.stopped = "stopped on request between steps"
                    break
                if approval_hash(steps_for(plan, approval.step_ids)) != approval.sha256:
                    report.stopped = (
                        "refused: the plan changed after it was approved (approval hash mismatch); "
                        "nothing more was applied: review it with `%plan` and approve again"
                    )
                    self.store.log("refused", report.stopped)
                    self.emit(Event(kind="error", plan_id=plan.id, message=report.stopped))
                    break
                step = plan.find_step(step_id)
                if step is None or step.status != "approved":
                    continue
                outcome = self._run_step(plan, step)
                report.outcomes.append(outcome)
                if outcome.status != "done":
                    break
        except KeyboardInterrupt:
            self.store.sync()
            report.stopped = "interrupted: the run ended cleanly between steps"
        plan = self.store.plan_by_id(plan_id)
        self._wrap_up(plan, report)
        self.store.save()
        self.emit(
            Event(
                kind="run_finished",
                plan_id=plan.id,
                status="ok" if report.ok else "stopped",
                message=str(report),
            )
        )
        return report

    def _release_unrun(self, plan: Plan) -> int:
        count = 0
        for step in plan.steps:
            if step.status == "approved":
                step.status = "pending"
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
        number = plan.steps.index(step) + 1
        return StepOutcome(number, step.id, step.operation.kind, status, message)

    def _announce(self, plan_id: str, outcome: StepOutcome, checkpoint: str | None) -> StepOutcome:
        """Tell the surfaces, once what the step did is saved."""
        if checkpoint is not None:
            self.emit(
                Event(
                    kind="checkpoint_written",
                    plan_id=plan_id,
                    step_id=outcome.step_id,
                    data={"checkpoint": checkpoint},
                )
            )
        self.emit(
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

    def _fresh(self, plan_id: str, step_id: str) -> tuple[Plan, Step]:
        """The plan and step as saved: what a failed transaction changed in memory is dropped."""
        self.store.sync()
        plan = self.store.plan_by_id(plan_id)
        step = plan.find_step(step_id)
        if step is None:
            raise ApprovalMismatch(f"step {step_id} disappeared from the plan during the run")
        return plan, step

    def _run_step(self, plan: Plan, step: Step) -> StepOutcome:
        started = time.monotonic()
        number = plan.steps.index(step) + 1
        # "running" is saved together with the checkpoint: one save fewer per step.
        step.status = "running"
        self.emit(
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
        try:
            if isinstance(op, WriteFile | EditFile | DeleteFile):
                self._apply_file(step, op, checkpoint)
                return self._finish(plan, step, "done", "", started, checkpoint.id)
            if isinstance(op, Shell):
                return self._apply_shell(plan, step, op, checkpoint, started)
            runs = step.runs_cell
            # Drift check, checkpoint, change and (without code to run) "done" commit together:
            # a live backend re-checks the targets at commit, so nothing slips in between.
            with self.document.transaction():
                check_drift(op, step.base, self.document, self.workspace)
                checkpoint.cells = self.checkpoints.snapshot_cells(targets_of(op).cells)
                if not isinstance(op, RunCell):
                    apply_cell_op(self.document, op)
                self.checkpoints.with_after_hashes(checkpoint)
                self._record_checkpoint(step, checkpoint)
                if not runs:
                    outcome = self._record(plan, step, "done", "", started, checkpoint.id)
            if not runs:
                return self._announce(plan.id, outcome, checkpoint.id)
            return self._run_code(plan, step, op.cell_id, checkpoint, started)
        except PlanbookError as exc:
            # Whatever the failed transaction put in memory (a checkpoint, a status) was never
            # saved: start again from the saved state before recording the failure.
            plan, step = self._fresh(plan.id, step.id)
            status = "conflict" if isinstance(exc, ConflictError) else "failed"
            return self._finish(plan, step, status, str(exc), started, step.checkpoint)

    def _next_seq(self) -> int:
        return max((c.seq for c in self.store.state.checkpoints), default=0) + 1

    def _record_checkpoint(self, step: Step, checkpoint: Checkpoint) -> None:
        self.store.state.checkpoints.append(checkpoint)
        step.checkpoint = checkpoint.id
        self.store.save()

    def _apply_file(
        self, step: Step, op: WriteFile | EditFile | DeleteFile, checkpoint: Checkpoint
    ) -> None:
        with self.document.transaction():
            check_drift(op, step.base, self.document, self.workspace)
            data = new_file_bytes(op, self.workspace)
            snap = self.checkpoints.snapshot_files([op.path])[0]
            checkpoint.files = [snap.model_copy(update={"after_hash": bytes_hash(data)})]
            self._record_checkpoint(step, checkpoint)
        try:
            write_file_bytes(self.workspace, op.path, data)
        except BaseException:
            # Writes are atomic, so nothing was written: drop the checkpoint of a change
            # that did not happen.
            with self.document.transaction():
                self.store.state.checkpoints.remove(checkpoint)
                step.checkpoint = None
                self.store.save()
            raise

    def _apply_shell(
        self, plan: Plan, step: Step, op: Shell, checkpoint: Checkpoint, started: float
    ) -> StepOutcome:
        checkpoint.label += ": shell commands are not undone by rollback"
        with self.document.transaction():
            self._record_checkpoint(step, checkpoint)
        result = self.workspace.run_shell(op.command, timeout=op.timeout)
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        if result.timed_out:
            return self._finish(
                plan,
                step,
                "failed",
                f"`{op.command}` timed out after {op.timeout:g}s and was stopped; "
                "raise its timeout or run it yourself",
                started,
                checkpoint.id,
            )
        if not result.ok:
            return self._finish(
                plan,
                step,
                "failed",
                f"`{op.command}` exited with {result.returncode}: "
                + (" | ".join(tail) or "no output"),
                started,
                checkpoint.id,
            )
        return self._finish(plan, step, "done", " | ".join(tail), started, checkpoint.id)

    def _run_code(
        self, plan: Plan, step: Step, cell_id: str, checkpoint: Checkpoint, started: float
    ) -> StepOutcome:
        cells = self.document.cells()
        i = index_of(cells, cell_id)
        if i is None:
            raise ConflictError(f"cell {cell_id!r} disappeared before it could run")
        run = self.runner().run(cells[i].source)
        with self.document.transaction():
            cells = self.document.cells()
            j = index_of(cells, cell_id)
            if j is not None:
                self.document.replace_cell(
                    cells[j].model_copy(
                        update={"outputs": run.outputs, "execution_count": run.execution_count}
                    )
                )
            if run.error is None:
                return self._finish(plan, step, "done", "", started, checkpoint.id)
            reason = "interrupted (KeyboardInterrupt)" if run.interrupted else run.error
            return self._finish(
                plan,
                step,
                "failed",
                f"cell {cell_id!r} raised {reason}; "
                "its outputs hold the traceback; later steps stay pending",
                started,
                checkpoint.id,
            )

    def _wrap_up(self, plan: Plan, report: RunReport) -> None:
        """End a run (finished, stopped, interrupted, or found cut off after a restart)."""
        for step in plan.steps:
            if step.status == "running":
                self._settle_interrupted(plan, step, report)
        report.left_pending = self._release_unrun(plan)
        if plan.state != "executing":
            return
        if not any(s.status in OPEN_STATUSES for s in plan.steps):
            plan.fire("finish")
        else:
            plan.fire("pause")

    def recover(self) -> list[str]:
        """Settle runs that a dead kernel left mid-way; the one-line notes say what was found."""
        notes = []
        for plan in self.store.state.plans:
            if plan.state == "executing":
                report = RunReport()
                self._wrap_up(plan, report)
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
        landed = cp is not None and all(
            self.checkpoints.current_hash(s) == s.after_hash for s in snaps
        )
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
            step.error = "interrupted before it was applied"
        report.outcomes.append(
            StepOutcome(
                plan.steps.index(step) + 1, step.id, step.operation.kind, step.status, "interrupted"
            )
        )
