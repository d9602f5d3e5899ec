"""The executor's state and the recording of a step's result (the floor the run, recovery
and late-merge handling stand on).

A result is saved in the notebook before surfaces hear of it; a run reads the saved record at
each step (another process may have saved), and puts back what only this process knows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from planbook.documents.base import (
    NotebookDocument,
    make_durable,
    save_kept,
    saves_dropped,
    write_pending,
)
from planbook.engine import owner
from planbook.engine.checkpoints import CheckpointWriter, next_seq
from planbook.engine.executor.approved import ApprovalCheck
from planbook.engine.executor.outputs import KeptOutputs
from planbook.engine.executor.report import StepOutcome, one_line
from planbook.engine.mcp_calls import McpCaller, NoMcpCaller
from planbook.engine.reconcile import ReloadWatch
from planbook.engine.runner import CodeRunner
from planbook.engine.store import Store
from planbook.errors import ConflictError, PlanbookError
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.model.events import Event
from planbook.model.plan import Plan, Step, StepIndex, StepResult
from planbook.workspace.files import Workspace


class StepRecords:
    """What every part of a run shares: the notebook, its record, and how a result is saved."""

    def __init__(
        self,
        store: Store,
        document: NotebookDocument,
        workspace: Workspace,
        runner: Callable[[], CodeRunner],
        emit: Callable[[Event], None],
        mcp_caller: McpCaller | None = None,
    ) -> None:
        self.store = store
        self.document = document
        self.workspace = workspace
        self.runner = runner
        self.emit = emit
        #: Calls the MCP tool of an approved ``mcp_call`` step (engine/mcp_calls.py); the
        #: agent floor sets it, so the engine never imports an MCP client.
        self.mcp_caller: McpCaller = mcp_caller or NoMcpCaller()
        self.stop_requested = False
        #: This process, as recorded on the steps it approves and runs.
        self.token = owner.this_process()
        #: Whether a run of this executor is in progress.
        self.active = False
        #: Notices a reload of the document (live room) under a run; see engine/reconcile.py.
        self.watch = ReloadWatch(document, store)
        #: The end of the last run could not be saved (room unreachable): the session settles
        #: and saves it when the room is back.
        self.unsaved = False
        #: Results of steps whose code ran here while the room could not take them (keyed by
        #: step id): only this process knows them. Put back on every fresh read of the record
        #: until the room's record has them (see ``put_back_unrecorded``).
        self.unrecorded: dict[str, StepResult] = {}
        #: Outputs of code steps that the saved notebook may lack (the room was dropped or the
        #: server stopped before it saved them): written back into their cells whenever the
        #: record is read again, until a save holds them (see engine/executor/outputs.py).
        self.outputs = KeptOutputs(document)
        self._reloads_at_start = self.watch.count()
        #: Log entries of the record read at the start of the current step (all saved).
        self._log_saved = 0
        #: Finds a run's steps without a scan from the plan's top at each one.
        self._steps = StepIndex()
        #: Announcements of steps whose record is in a save kept in memory, held until a
        #: save holds them (``_write_pending``, the run's end): a surface never shows "done"
        #: for a step the file does not hold yet.
        self._held: list[tuple[str, StepOutcome, str | None]] = []
        #: ``saves_dropped`` of the document when the first of them was held: a kept save
        #: dropped since took their records with it.
        self._held_since = 0
        #: The run's code steps whose result was recorded in memory alone, for the next save
        #: to carry (``keeps_saves``): (result, ``saves_dropped`` then). A failure reloads
        #: the record from the document before that save, and puts them back
        #: (``_put_back_awaiting``); kept for the run (few).
        self._awaiting_save: list[tuple[StepResult, int]] = []
        #: The approval-hash check before each step of the run under way.
        self._approval_check = ApprovalCheck()
        #: The code runner of the run under way and the factory that made it (``_code_runner``).
        self._made_runner: tuple[Callable[[], CodeRunner], CodeRunner] | None = None

    def _code_runner(self) -> CodeRunner:
        """The runner of this run's code steps, made once per run (made per step, each step
        looked up the kernel's shell again); made afresh when ``runner`` was replaced."""
        made = self._made_runner
        if made is None or made[0] is not self.runner:
            made = self._made_runner = (self.runner, self.runner())
        return made[1]

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
            settle(plan, step, result.model_copy())
        self.restore_outputs()

    #: Writes of the kept outputs, each followed by a save, before a restore leaves them to
    #: the session's next look (a server that overwrites the room at a save does it once).
    RESTORE_TRIES = 3

    def restore_outputs(self) -> None:
        """Put the kept outputs of code steps back into cells that lack them after a fault (a
        step recorded done or failed has its outputs in its cell: whole or nothing). Only
        while the document is reachable; an attempt that fails leaves the executor unsaved,
        so the session looks again once the run is over (the outputs stay kept).

        A cell that still holds its outputs after a reload stays watched: the server reloads
        a file changed on disk in pieces (its notice can come before the cells change)."""
        if not self.outputs.restorable():
            return
        if getattr(self.document, "connected", True):
            try:
                for _ in range(self.RESTORE_TRIES):
                    restored = self.outputs.restore(self._ran)
                    if not restored:
                        return
                    if make_durable(self.document):
                        break
                    # each looked at (no short cut): those the save's overwrite took go again
                    if not [step_id for step_id in restored if self.outputs.saved_with(step_id)]:
                        return
            except PlanbookError:
                pass
        self.unsaved = True

    def _ran(self, step_id: str) -> bool:
        """Whether the record shows the step settled after its code ran (done or failed)."""
        _, step = _find(self.store.state.plans, step_id)
        return step is not None and step.status in ("done", "failed")

    def _tell(self, event: Event) -> None:
        """Surfaces only observe: one that raises never changes what a run does."""
        with suppress(Exception):
            self.emit(event)

    def _mine(self, plan_id: str, step_id: str) -> tuple[Plan, Step]:
        plan = self.store.plan_by_id(plan_id)
        found = self._steps.find(plan, step_id)  # indexed: not a scan from the plan's top
        step = None if found is None else found[1]
        if step is None:
            raise ConflictError(f"step {step_id} disappeared from the plan while it ran")
        return plan, step

    def _hash_now(self, snap: CellSnapshot | FileSnapshot) -> str | None:
        """The target's hash now, or None when it cannot be read (a file swapped for a symlink
        or a FIFO meanwhile): then the change is not taken as landed, and settling goes on."""
        try:
            return self.checkpoints.current_hash(snap)
        except PlanbookError:
            return None

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
        *,
        save: bool = True,
    ) -> StepOutcome:
        """Set the step's result and save it (inside the caller's transaction, if any);
        ``save`` False: in memory alone, for the next save to carry."""
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
        if save:
            self.store.save()
        number = self._steps.number(plan, step)
        return StepOutcome(number, step.id, step.operation.kind, status, message)

    def _put_back_awaiting(self) -> None:
        """After the record was read again from the document (a failure drops what its
        transaction left in memory): the results that were waiting in memory for a save, put
        back on their steps the document still has running, while it holds their outputs (no
        kept save was dropped since: a failed write or someone else's save takes them)."""
        dropped = saves_dropped(self.document)
        for result, dropped_then in self._awaiting_save:
            if dropped != dropped_then:
                continue  # the outputs went with the dropped save: the step stays running
            plan, step = _find(self.store.state.plans, result.step_id)
            if plan is None or step is None or step.status != "running":
                continue  # a save held it, or the record is another one now
            settle(plan, step, result)

    def _announce(self, plan_id: str, outcome: StepOutcome, checkpoint: str | None) -> StepOutcome:
        """Tell the surfaces, once what the step did is saved: at once when its transaction
        wrote it, else with the save that holds it (``_write_pending``: before the next step's
        code runs or its file is written, or at the run's end). A run's steps that change
        only cells are then one save, and a code step's outputs travel with the next code
        step's "running": one save a code step, not two (docs/performance.md)."""
        if not self._held:
            self._held_since = saves_dropped(self.document)
        self._held.append((plan_id, outcome, checkpoint))
        if not save_kept(self.document):
            self._tell_held()
        return outcome

    def _write_pending(self) -> None:
        """Write the save kept in memory, then announce the steps it holds. When it cannot be
        written, their outcomes say so (the file holds none of them) and the error is
        raised."""
        try:
            write_pending(self.document)
        except Exception as exc:
            self._unsaved_held(f"its change could not be saved ({one_line(exc)})")
            raise
        self._tell_held()

    def _unsaved_held(self, why: str) -> None:
        """The held steps' records were lost with a kept save: none of them is done as the
        notebook holds them, whatever the run counted."""
        held = []
        for plan_id, outcome, checkpoint in self._held:
            if outcome.status == "done":
                outcome.status = "failed"
                outcome.message = why
                checkpoint = None  # not on disk either: never announced as written
            held.append((plan_id, outcome, checkpoint))
        self._held = held

    def _tell_held(self) -> None:
        """Announce the held steps, their save done (or lost: their outcomes say so)."""
        if self._held and saves_dropped(self.document) != self._held_since:
            self._unsaved_held(
                "its change was not saved: the notebook was saved by someone else before it "
                "(the file holds nothing of it)"
            )
        held, self._held = self._held, []
        for item in held:
            self._tell_finished(*item)

    def _tell_finished(self, plan_id: str, outcome: StepOutcome, checkpoint: str | None) -> None:
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
        self._add_checkpoint(step, checkpoint)
        self.store.save()

    def _add_checkpoint(self, step: Step, checkpoint: Checkpoint) -> None:
        """The step's checkpoint in the record, saved by the caller's next save."""
        self.store.state.checkpoints.append(checkpoint)
        step.checkpoint = checkpoint.id


def settle(plan: Plan, step: Step, result: StepResult) -> None:
    """``step`` ends as ``result`` says (its status; its message as the error unless done),
    and the result joins the plan's: a result recorded in memory and given back to a
    record read again."""
    step.status = result.status  # type: ignore[assignment]
    step.error = None if result.status == "done" else result.message
    step.run_by = None
    plan.results.append(result)


def _find(plans: list[Plan], step_id: str) -> tuple[Plan | None, Step | None]:
    for plan in plans:
        step = plan.find_step(step_id)
        if step is not None:
            return plan, step
    return None, None


def retryable(exc: BaseException) -> bool:
    """A failure to reach the document (the live room), not of the change itself."""
    return bool(getattr(exc, "retryable", False))
