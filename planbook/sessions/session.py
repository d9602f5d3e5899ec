"""The Session: one per kernel. Wires document, workspace, store, policy and executor, owns the
mode and tells its surfaces what happened through events.

Everything that wants to change the notebook or the files comes through ``propose`` (or the
agent's tools, which call it): the policy decides whether the change is staged or applied, and
only the executor ever writes, and only approved steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from planbook.documents.base import NotebookDocument, coalesced_saves, outline
from planbook.engine import approval_checks, ask_first, planning
from planbook.engine.approval import (
    StepSelection,
    approval_hash,
    check_selection_argument,
    check_shown,
    check_step_number,
    select,
)
from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.executor.report import RunReport
from planbook.engine.policy import decide
from planbook.engine.received import locally_approved, signed_approval
from planbook.engine.retention import GcReport, Retention, gc
from planbook.engine.retry import retry_of
from planbook.engine.revisions import restore
from planbook.engine.rollback import RollbackPreview, find_checkpoint, preview_rollback, rollback
from planbook.engine.runner import CodeRunner, default_runner
from planbook.engine.signing import who
from planbook.engine.start_over import start_over
from planbook.engine.stored_record import conversation_of
from planbook.engine.takeover import Takeover, take_over
from planbook.errors import NothingToDo, PlanbookError, UsageMistake
from planbook.model.checkpoint import Checkpoint
from planbook.model.conversation import Conversation
from planbook.model.events import Event
from planbook.model.operations import AnyOperation
from planbook.model.plan import (
    OPEN_STATUSES,
    Approval,
    AskFirst,
    Plan,
    Revision,
    Step,
    approved_by_mode,
)
from planbook.sessions import arguments
from planbook.sessions.previewing import PreviewingSession
from planbook.sessions.proposer import Proposer
from planbook.sessions.questions import PersonQuestions
from planbook.workspace.files import Workspace


class Session(PreviewingSession, PersonQuestions):
    """One per kernel (or per notebook a tool opens): see the module's docstring."""

    def __init__(
        self,
        document: NotebookDocument,
        workspace: Workspace | None = None,
        *,
        runner: Callable[[], CodeRunner] = default_runner,
        notebook_path: Path | None = None,
    ) -> None:
        super().__init__(document, workspace, runner=runner, notebook_path=notebook_path)
        #: Staging extends the projection of the steps staged before (engine/planning.py).
        self._projections = planning.ProjectionCache()
        self.propose = self.proposing_as(None)

    def proposing_as(self, origin: str | None) -> Proposer:
        """``propose`` for someone other than the kernel's person or agent (an MCP client's
        name and version, ``origin``): every step it stages carries it."""
        return Proposer(
            self.document,
            self.workspace,
            stage=self.stage,
            current_plan=self.current_plan,
            advice=self.page_advice,
            preview=self.preview,
            refuse_denied=self.refuse_denied,
            origin=origin,
        )

    def new_plan(self, task: str) -> Plan:
        """Start a plan for ``task``. An open plan with no steps is reused; one whose steps are
        all settled (as act mode leaves it) is closed; one with steps still open is refused."""
        with self._editing():
            plan = self.current_plan()
            if plan is not None and plan.is_open and plan.steps:
                if any(s.status in OPEN_STATUSES for s in plan.steps):
                    raise UsageMistake(
                        "a plan with steps is still open: approve or `%reject` it before a new task"
                    )
                plan.fire("finish")
            plan = self._open_plan(task)
            plan.task = task
            self.store.save()
        self._changed(plan=plan)
        return plan

    def refuse_denied(self, op: AnyOperation) -> None:
        """Raise PolicyDenied when the rules, as their files say now, deny ``op``."""
        arguments.operation(op)
        with self._lock:  # the rules only: no need to hold the notebook for this
            self._install_rules()
            decide(self.mode, op, self.rules.verdict(op))

    def stage(
        self, op: AnyOperation, *, reason: str = "", run: bool = False, origin: str | None = None
    ) -> Step:
        """Put ``op`` through the policy: staged as a step, or applied now with a checkpoint.
        ``origin``: who proposed it from outside this kernel (an MCP client), kept on the step
        and in the audit log. Such a proposal is always staged, whatever the mode and the rules:
        the modes and rules are the person's grants to their own agent, not to every client
        that can reach the notebook."""
        with self._editing():
            self._install_rules()  # as the files say now: they may have changed since the start
            verdict = self.rules.verdict(op)
            # A deny rule refuses an outside client's proposal too; what it may not do is
            # apply: its proposal is staged whatever the mode and the allow rules.
            decision = decide(self.mode, op, verdict, runs=run)
            if origin:
                decision = "stage"
            plan = self._open_plan()
            busy = self._busy(plan)
            if busy:
                raise UsageMistake(
                    f"a run is in progress ({busy}): stage new steps when it has finished"
                )
            step = planning.stage(
                plan,
                op,
                reason=reason,
                cells=outline(self.document),
                workspace=self.workspace,
                run_at_approval=run,
                origin=origin,
                cache=self._projections,
            )
            self.store.log("staged", f"{step.id} {op.kind}" + (f" from {origin}" if origin else ""))
            self.store.save()
            self._durable()
        self._tell(
            Event(
                kind="staged",
                plan_id=plan.id,
                step_id=step.id,
                status=step.status,
                message=step.operation.kind,
            )
        )
        if decision == "apply":
            number = plan.steps.index(step) + 1
            report = self.approve([number], by=approved_by_mode(self.mode))
            plan = self.keep_open(plan.id)
            applied = plan.find_step(step.id) or step
            if not report.ok:
                raise PlanbookError(
                    f"{self.mode} mode applied step {number}, which "
                    f"{applied.status}: {applied.error or report}"
                )
            return applied
        return step

    def cell_ids(self) -> list[str]:
        """The notebook's cell ids, in order, read from its outline: ``cells()`` copies every
        cell, and a page open on the notebook hears the plan at every step of a run."""
        return [c.id for c in outline(self.document)]

    def approve(
        self,
        steps: StepSelection = None,
        *,
        first: int | None = None,
        dry_run: bool = False,
        by: str | None = None,
        shown: str | Mapping[str, str] | None = None,
    ) -> RunReport:
        """Approve pending steps and run exactly those: all, step n (``4`` or ``"4"``),
        ``"1,3-5"``, ``[1, 3]``, or the first n pending (``first=n``).

        ``shown``: the steps as the person saw them (``hash_of`` the chosen steps, or
        ``step_hashes`` of what the view showed); any chosen step that differs now, or was
        not shown, refuses the approval in one line and nothing runs.

        Another process may be running other steps of the plan at the same time: each process
        runs only the steps it approved, and a step is approved (so run) by one process only."""
        check_selection_argument(steps, first)
        arguments.flag(dry_run, "dry_run")
        arguments.optional_text(by, "by")
        arguments.shown_hashes(shown)
        # coalesced: the approval is written with the first step's save (documents/file.py)
        with self._lock, coalesced_saves(self.document):
            with self._editing():
                plan = self._require_plan()
                if self.executor.active:
                    raise UsageMistake("a run is already in progress: wait for it or stop it")
                if not plan.steps:
                    raise UsageMistake("nothing to approve: the plan has no steps yet")
                if not any(s.status == "pending" for s in plan.steps):
                    busy = self._busy(plan)
                    raise NothingToDo(
                        "nothing to approve: no step is pending"
                        + (f" ({busy} is running the approved ones)" if busy else "")
                        + "; see `%plan`"
                    )
                chosen = select(plan, steps, statuses=("pending",), first=first)
                approval_checks.check_selection(plan, chosen)
                if shown is not None:
                    check_shown(plan, chosen, shown)
                if dry_run:
                    return approval_checks.dry_run(plan, chosen, self.document, self.workspace)
                approval = signed_approval(
                    self.store.state,
                    plan.id,
                    Approval(
                        revision=plan.current.number,
                        step_ids=tuple(s.id for s in chosen),
                        sha256=approval_hash(chosen),
                        by=by or self.store.user,
                        person=who(),
                    ),
                )
                plan.approvals.append(approval)
                for step in chosen:
                    step.status = "approved"
                    step.run_by = self.executor.token
                if plan.state != "executing":  # else: joins another process's run
                    plan.fire("approve")
                self.store.log(
                    "approved",
                    f"{plan.id} steps {','.join(approval.step_ids)} by {approval.person} "
                    f"sha256={approval.sha256}",
                )
                # Kept, not written on its own (coalesced_saves): the file saves it with the
                # first step, and a live room gets it in the first step's update, so every save
                # that holds a step holds its approval, and a stop before that save loses both,
                # nothing half-applied (docs/live.md, "Saved when it matters"). A step that
                # runs code is saved before its code runs, the run's end in any case.
                self.store.save()
            self._changed(plan=plan)
            # Outside the notebook's lock: each step takes it in turn, and code runs without it.
            return self.executor.run(plan.id, approval)

    def keep_open(self, plan_id: str) -> Plan:
        """Reopen a plan its last approval completed, so the next change of the same task
        joins it instead of opening a plan of its own (act and ask modes)."""
        with self._editing():
            plan = self.store.plan_by_id(plan_id)
            if plan.state == "completed":
                plan.fire("reopen")
                self.store.save()
        return plan

    def retry(self, number: int) -> tuple[Step, bool]:
        """Retry failed step ``number`` of the current plan (``planbook.engine.retry``): the new
        step, and whether it should run at once (its change is in place, only code runs)."""
        check_step_number(number)
        plan = self._require_plan()
        if not 1 <= number <= len(plan.steps):
            raise UsageMistake(f"there is no step {number}; see `%plan`")
        again = retry_of(plan.steps[number - 1], number, self.document.cells())
        with self._editing():
            plan = self.store.plan_by_id(plan.id)
            if plan.state in ("completed", "cancelled"):
                plan.fire("reopen")  # the retry joins the plan its failed step belongs to
                self.store.save()
        return self.stage(again.operation, reason=again.reason), again.run_now

    def reject(self, steps: StepSelection = None, *, first: int | None = None) -> list[Step]:
        """Reject pending steps: all by default, or a selection as for ``approve``. A plan left
        with nothing open is closed."""
        check_selection_argument(steps, first)
        with self._editing():
            plan = self._require_plan()
            if self.executor.active:
                raise UsageMistake("a run is in progress: stop it before rejecting steps")
            chosen = select(plan, steps, statuses=("pending", "skipped"), first=first)
            if not chosen:
                raise UsageMistake("nothing to reject: no step is pending")
            for step in chosen:
                if step.status not in ("pending", "skipped"):
                    raise UsageMistake(
                        f"step {plan.steps.index(step) + 1} is {step.status}; "
                        "only pending steps can be rejected"
                    )
                step.status = "rejected"
            if not any(s.status in OPEN_STATUSES for s in plan.steps):
                plan.fire("finish" if any(s.status == "done" for s in plan.steps) else "reject")
            self.store.log("rejected", ",".join(s.id for s in chosen))
            self.store.save()
        self._changed(plan=plan)
        return chosen

    def _edit_plan(self, change: Callable[[Plan], Any], log: str) -> Any:
        with self._editing():
            plan = self._require_plan()
            busy = self._busy(plan)
            if busy:
                raise UsageMistake(
                    f"a run is in progress ({busy}): change the plan when it has finished"
                )
            result = change(plan)
            self.store.log("plan", log)
            self.store.save()
        self._changed(plan=plan)
        return result

    def skip(self, number: int) -> Step:
        check_step_number(number)
        return self._edit_plan(lambda p: planning.set_skipped(p, number, True), f"skip {number}")  # type: ignore[no-any-return]

    def unskip(self, number: int) -> Step:
        check_step_number(number)
        return self._edit_plan(lambda p: planning.set_skipped(p, number, False), f"unskip {number}")  # type: ignore[no-any-return]

    def move(self, number: int, *, before: int) -> None:
        check_step_number(number)
        check_step_number(before, "a step number for `before`")
        self._edit_plan(
            lambda p: planning.move(p, number, before), f"move {number} before {before}"
        )

    def revise(self, feedback: str) -> Revision:
        arguments.text(feedback, "feedback")
        return self._edit_plan(lambda p: planning.revise(p, feedback), f"revise: {feedback}")  # type: ignore[no-any-return]

    def restore_revision(self, number: int) -> Revision:
        """Make an earlier revision current again, as a new revision (the history is kept)."""
        return self._edit_plan(lambda p: restore(p, number), f"restore revision {number}")  # type: ignore[no-any-return]

    def set_summary(self, summary: str) -> None:
        """The agent's ``present_plan``: the plan now waits for the person's approval."""

        def change(plan: Plan) -> None:
            planning.editable(plan, "presented").summary = summary
            plan.fire("present")

        self._edit_plan(change, "presented")

    def edit_conversation(
        self, change: Callable[[Conversation], Conversation | None]
    ) -> Conversation:
        """Change (or, by returning one, replace) the agent's conversation kept with the
        notebook, as one transaction: from the saved state, saved at once, nothing kept in
        memory if ``change`` fails."""
        with self._editing():
            conversation = conversation_of(self.store.state) or Conversation()
            conversation = change(conversation) or conversation
            self.store.state.conversation = conversation
            self.store.save()
        return conversation

    def ask_before(self, number: int, question: str, options: Sequence[str] = ()) -> AskFirst:
        """Make pending step ``number`` a decision point: a run that reaches it pauses (it and
        the approved steps after it go back to pending) until ``answer_step`` is called.
        ``options`` are the answers offered; "stop here" is always added."""
        check_step_number(number)
        with self._editing():
            plan = self.current_plan()
            asked = ask_first.ask(plan, number, question, options)
            self.store.save()
        self._changed(plan=plan)
        return asked

    def waiting_questions(self) -> list[tuple[int, Step]]:
        """The steps of the current plan a run paused on, with their numbers, whose question
        waits for an answer (``step.ask_first``)."""
        return ask_first.waiting(self.current_plan())

    def answer_step(self, number: int, choice: str | int) -> RunReport | None:
        """Answer step ``number``'s question with one of its options (or the option's number).
        The answer goes in the notebook's log; unless it is "stop here", the steps the pause
        held back are approved and run at once: their report (None when nothing runs)."""
        check_step_number(number)
        with self._lock:
            with self._editing():
                plan = self._require_plan()
                chosen, again = ask_first.answer(plan, number, choice)
                # only steps approved here run on an answer: a received plan's question
                # may name any step as held back
                local = locally_approved(self.store.state, plan)
                again = [n for n in again if plan.steps[n - 1].id in local]
                self.store.log("answered", f"step {plan.steps[number - 1].id}: {chosen}")
                self.store.save()
            self._changed(plan=plan)
            if not again:
                return None
            return self.approve(again, by="answer to step question")

    def rollback_preview(self, checkpoint: str | int | None = None) -> RollbackPreview:
        """What ``rollback(checkpoint)`` would write (files and cells), what it refuses to, and
        whether it rests on checkpoints recorded elsewhere (then it needs ``confirm=True``):
        the surfaces show it before rolling back."""
        self.store.sync()
        if not self.store.state.checkpoints:
            raise UsageMistake("nothing to roll back: no step has run yet")
        return preview_rollback(self.store, find_checkpoint(self.store, checkpoint))

    def rollback(
        self, checkpoint: str | int | None = None, *, force: bool = False, confirm: bool = False
    ) -> Checkpoint:
        """Undo the last executed step, or everything after ``checkpoint``; recorded, undoable.
        A checkpoint recorded elsewhere (not signed here) is restored only with ``confirm``;
        a snapshot of anything its step's record does not name is never restored."""
        with self._editing():
            if not self.store.state.checkpoints:
                raise UsageMistake("nothing to roll back: no step has run yet")
            for plan in self.store.state.plans:
                busy = self._busy(plan)
                if busy:
                    raise UsageMistake(
                        f"a run is in progress ({busy}): roll back when it has finished"
                    )
            target = find_checkpoint(self.store, checkpoint)
            writer = CheckpointWriter(self.document, self.workspace, self.store.blobs)
            record = rollback(self.store, writer, target, force=force, confirm=confirm)
        self._tell(
            Event(
                kind="rolled_back",
                message=record.label,
                data={"checkpoint": record.id, "undid": record.undid},
            )
        )
        self._changed()
        return record

    def gc(self, keep_checkpoints: int | None = None, keep_plans: int | None = None) -> GcReport:
        """Keep the newest checkpoints and closed plans (limits from ``[tool.planbook]``, or
        the arguments) and drop the blobs nobody names any more."""
        configured = Retention.load(self.workspace.root)
        # `is None`, not `or`: a 0 given is refused in one line (Retention), never ignored
        retention = Retention(
            keep_checkpoints=configured.keep_checkpoints
            if keep_checkpoints is None
            else keep_checkpoints,
            keep_plans=configured.keep_plans if keep_plans is None else keep_plans,
        )
        with self._editing():
            report = gc(self.store.state, retention)
            self.store.log("gc", str(report))
            self.store.save()
        self._changed()
        return report

    def take_over(self, number: int, *, confirm: bool = False) -> Takeover:
        """Step ``number``, left approved or running by a process on another host: without
        ``confirm`` only what taking it over means (one line to ask with); with it, settled
        here as interrupted so it can be approved again (engine/takeover.py). Refused while its
        process is on this host and alive."""
        check_step_number(number)
        arguments.flag(confirm, "confirm")
        with self._editing():
            plan = self._require_plan()
            taken = take_over(plan, number, self.executor, self.store, confirm=confirm)
        if taken.done:
            self._changed(plan=plan)
        return taken

    def reset(self, *, force: bool = False) -> int:
        """Start over (``%plan reset``): undo every step still in effect and forget planbook's
        record of this notebook (engine/start_over.py); the number of steps undone."""
        with self._editing():
            for plan in self.store.state.plans:
                busy = self._busy(plan)
                if busy:
                    raise UsageMistake(f"a run is in progress ({busy}): start over when it ends")
            writer = CheckpointWriter(self.document, self.workspace, self.store.blobs)
            undone = start_over(self.store, writer, force=force)
        self._changed()
        return undone
