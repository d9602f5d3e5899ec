"""Recovery: ending a run and settling what a fault left behind.

A run's end leaves "executing" (tried twice); a step that failed has its landed change put
back; a run a dead process left mid-way is settled from what landed (``recover``); a reload
of the document under a run is reconciled; a room that could not take a step's record leaves
the step pending (or, once its code ran, settled in memory until the room is back).
"""

from __future__ import annotations

import operator
import time
from contextlib import suppress
from itertools import compress, repeat
from typing import Literal

from planbook.documents.base import make_durable
from planbook.engine import owner
from planbook.engine.executor.record import StepRecords, retryable, settle
from planbook.engine.executor.report import RunReport, StepOutcome, one_line
from planbook.engine.reconcile import choose_record, reconcile
from planbook.engine.runner import CellRun
from planbook.errors import ConflictError
from planbook.model.checkpoint import CellSnapshot, Checkpoint, FileSnapshot
from planbook.model.operations import McpCall, RunCell, Shell
from planbook.model.plan import OPEN_STATUSES, Plan, Step, StepResult
from planbook.model.tracked import HOLDERS, holds_itself

#: A plan's state (``recover`` looks for the executing ones).
_STATE = operator.attrgetter("state")


class Recovery(StepRecords):
    #: The plans' list ``recover`` last looked at, with its executing plans, and the count of
    #: the plans' journal then (``HOLDERS``): see ``_executing``.
    _seen: tuple[list[Plan], list[Plan]] | None = None
    _seen_at = -1

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
                self._write_pending()  # with the records of the steps it holds
                self.unsaved = False
                self.unrecorded.clear()  # confirmed: the room's record holds them now
                warning = make_durable(self.document)
                if warning:
                    report.notes.append(warning)
                return
            except Exception as exc:
                if retryable(exc) and attempt == 1 and self._reloaded():
                    continue  # reloaded under the commit: settle, then try once more
                if retryable(exc):  # keep memory: it is settled when the room is back
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
                    self._unsaved_held(f"its change could not be saved ({one_line(exc)})")

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
            self._put_back_awaiting()  # earlier steps' results no save held yet
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
            f"{'' if run.error is None else ' and raised ' + run.error}; its outputs could "
            "not be written yet (the collaboration room was unreachable): they are kept and "
            "written into the cell when the room is back"
        )
        result = StepResult(
            step_id=step.id,
            status=status,
            message=message,
            checkpoint=step.checkpoint,
            seconds=time.monotonic() - started,
        )
        settle(plan, step, result)
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
        for plan in self._executing():
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

    def _executing(self) -> list[Plan]:
        """The executing plans, in the plans' order. ``recover`` runs before every operation
        and a notebook keeps every plan it ran: a look at each plan's state cost 53 µs beside
        1,000 past plans, even in C. The plans' journal (model/tracked.py) notes every
        assignment to a plan and every change of the plans' list, so after a first look only
        the plans it names are looked at; a list it names, another list (a reload) or a
        journal that no longer holds every change since: every plan again."""
        plans = self.store.state.plans
        now, changed = HOLDERS.since(self._seen_at)
        seen = self._seen
        if seen is None or seen[0] is not plans or changed is None or holds_itself(changed, plans):
            # every plan's state, found in C
            found = list(compress(plans, map(operator.eq, map(_STATE, plans), repeat("executing"))))
        else:
            found = [plan for plan in seen[1] if plan.state == "executing"]
            for plan in changed:  # another session's plans are named too: only ours count
                if (
                    isinstance(plan, Plan)
                    and plan.state == "executing"
                    and not holds_itself(found, plan)
                    and holds_itself(plans, plan)
                ):
                    found.append(plan)
            if len(found) > 1:  # rare: more than one run cut off; in the plans' order
                found = [plan for plan in plans if holds_itself(found, plan)]
        self._seen, self._seen_at = (plans, found), now
        return found

    def _settle_interrupted(self, plan: Plan, step: Step, report: RunReport) -> None:
        """After an interrupt: a step whose change landed is done, one that did not is pending,
        and one whose code was running failed (its outputs may be incomplete)."""
        cp = next((c for c in self.store.state.checkpoints if c.id == step.checkpoint), None)
        snaps: list[CellSnapshot | FileSnapshot] = [*cp.cells, *cp.files] if cp else []
        landed = cp is not None and all(self._hash_now(s) == s.after_hash for s in snaps)
        if landed and (step.runs_cell or isinstance(step.operation, Shell | McpCall)):
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
