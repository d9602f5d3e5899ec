"""The Session: one per kernel. Wires document, workspace, store, policy and executor, owns the
mode and tells its surfaces what happened through events.

Everything that wants to change the notebook or the files comes through ``propose`` (or the
agent's tools, which call it): the policy decides whether the change is staged or applied, and
only the executor ever writes, and only approved steps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from planbook.documents.base import (
    NotebookDocument,
    catch_up,
    close_document,
    coalesced_saves,
    make_durable,
)
from planbook.documents.headless import HeadlessNotebook
from planbook.documents.page import PageNotebook
from planbook.engine import approval_checks, ask_first, planning
from planbook.engine.approval import (
    StepSelection,
    approval_hash,
    check_selection_argument,
    check_step_number,
    select,
)
from planbook.engine.checkpoints import CheckpointWriter
from planbook.engine.executor.report import RunReport, one_line
from planbook.engine.executor.run import Executor
from planbook.engine.owner import describe
from planbook.engine.policy import check_mode, decide
from planbook.engine.reconcile import choose_record, reconcile
from planbook.engine.retention import GcReport, Retention, gc
from planbook.engine.retry import retry_of
from planbook.engine.revisions import restore
from planbook.engine.rollback import find_checkpoint, rollback
from planbook.engine.rules.project import ProjectRules
from planbook.engine.runner import CodeRunner, default_runner
from planbook.engine.store import Store
from planbook.engine.takeover import Takeover, take_over
from planbook.errors import NothingToDo, PlanbookError, TransactionFailed, UsageMistake
from planbook.model.cell import Cell
from planbook.model.checkpoint import Checkpoint
from planbook.model.conversation import Conversation
from planbook.model.events import Event, EventBus, EventKind, Listener
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
from planbook.model.store import Mode
from planbook.model.words import count
from planbook.present.text import checkpoints_text, plan_markdown, plan_text, revision_diff
from planbook.present.views import StepView, step_views
from planbook.sessions.mcp_client import McpClient
from planbook.sessions.page_advice import PageAdvice
from planbook.sessions.proposer import Proposer
from planbook.workspace.files import Workspace

Attached = TypeVar("Attached")


class Session:
    def __init__(
        self,
        document: NotebookDocument,
        workspace: Workspace | None = None,
        *,
        runner: Callable[[], CodeRunner] = default_runner,
        notebook_path: Path | None = None,
    ) -> None:
        self.document = document
        self.notebook_path = notebook_path
        self.workspace = workspace or Workspace(
            notebook_path.parent if notebook_path else Path.cwd(),
            protected=(notebook_path,) if notebook_path else (),
        )
        self.events = EventBus()
        self.store = Store(document)
        self.executor = Executor(
            self.store,
            document,
            self.workspace,
            runner,
            self.events.emit,
            McpClient(self.workspace.root),  # approved mcp_call steps call through it
        )
        #: What was repaired at start: runs cut off by a dead kernel (one line each).
        self.recovered = self.executor.recover()
        #: Problems found at start that the person should hear about (one line each).
        self.warnings: list[str] = []
        #: Save-and-reload advice for a page that gets no live updates: the floor needs it, as
        #: every surface's "no such cell" (``propose``) depends on it.
        self.page_advice = PageAdvice(document, self.warnings)
        self.propose = self.proposing_as(None)
        #: The project's permission rules (engine/rules/project.py), as its files say now.
        self.rules = ProjectRules(self.workspace.root, notebook_path)
        #: Per-session objects of the floors above, by their owner's class (``attached``).
        self._attached: dict[type, object] = {}
        self._attached_lock = threading.Lock()
        self._lock = threading.RLock()
        #: Staging extends the projection of the steps staged before (engine/planning.py).
        self._projections = planning.ProjectionCache()
        self._install_rules()

    def close(self) -> None:
        """Let go of the document (a live one holds a websocket and a thread) and listeners."""
        self.request_stop()
        self.events = EventBus()
        self.executor.emit = self.events.emit
        close_document(self.document)

    def __repr__(self) -> str:
        return f"<planbook.Session mode={self.mode} {self.document.description!r}>"

    def proposing_as(self, origin: str | None) -> Proposer:
        """``propose`` for someone other than the kernel's person or agent (an MCP client's
        name and version, ``origin``): every step it stages carries it."""
        return Proposer(
            self.document,
            self.workspace,
            stage=self.stage,
            current_plan=self.current_plan,
            advice=self.page_advice,
            origin=origin,
        )

    @staticmethod
    def hash_of(steps: Sequence[Step]) -> str:
        """The approval hash of ``steps`` as they are now: what a surface keeps when it shows
        them, so that a step changed since is refused instead of run."""
        return approval_hash(steps)

    @property
    def headless(self) -> bool:
        """A run with no page to show anything to (nbconvert, papermill)."""
        return isinstance(self.document, HeadlessNotebook)

    def page_document(self) -> PageNotebook | None:
        """Where the page is the notebook (no collaboration): its document, which the page's
        comm feeds with the page's cells and answers; None for every other backend."""
        return self.document if isinstance(self.document, PageNotebook) else None

    def attached(self, kind: type[Attached]) -> Attached:
        """The one ``kind`` object of this session, made by ``kind()`` on first use: how the
        floors above keep their per-session objects (the agent's state, the review panel)
        without the Session knowing their types. Keyed by the owner's class, so
        only code importing it reaches it, and typed by it. Kept here, not in a module-level
        WeakKeyDictionary, because those objects point back to the session: as values of such
        a dictionary they would keep every session alive; here they go with it."""
        with self._attached_lock:  # not the session's lock: a run holds that one for long
            found = self._attached.get(kind)
            if not isinstance(found, kind):
                found = kind()
                self._attached[kind] = found
            return found

    def _install_rules(self) -> None:
        """Read the rules again if their files changed; say what is wrong with them (a broken
        file fails closed: every change is staged until it is fixed)."""
        for warning in self.rules.refresh():
            if warning not in self.warnings:
                self.warnings.append(warning)

    def _settle_reload(self) -> None:
        """After the document was reloaded underneath (live room: server restart, file changed
        on disk) or a run's end could not be saved, settle the record with the cells before
        believing it (engine/reconcile.py); say what was found."""
        watch, executor = self.executor.watch, self.executor
        if executor.active:
            return
        if not executor.unsaved:  # (else memory holds what the room lacks: kept below)
            self.store.sync()  # a record put back to an older copy is noticed here (a rewind)
        if not (watch.reloaded() or executor.unsaved):
            return
        with self._lock:
            reloaded = watch.reloaded()
            reason = watch.reason if reloaded else "the room was unreachable at the end of a run"
            chosen = choose_record(self.store)
            executor.put_back_unrecorded(fresh=chosen == "room")
            notes = reconcile(self.store, self.document, reason)
            notes += executor.recover()
            try:
                self.store.save()
            except PlanbookError as exc:
                if not getattr(exc, "retryable", False):
                    raise
                return  # still unreachable: settled on the next call
            watch.acknowledge()
            executor.unsaved = False
            executor.unrecorded.clear()  # the saved record holds them now
            make_durable(self.document)
        for note in notes:
            self.warnings.append(note)
            self.events.emit(Event(kind="plan_changed", message=note))

    def _durable(self) -> None:
        """The server holds what was just saved (live room); else say why not, once."""
        warning = make_durable(self.document)
        if warning and warning not in self.warnings:
            self.warnings.append(warning)

    @contextmanager
    def _editing(self) -> Iterator[None]:
        """One operation holding the notebook (across threads and processes) and starting from
        the saved state; a run a dead process left behind is settled first. If it fails,
        whatever it changed in memory is dropped: the saved state was never touched."""
        with self._lock, self.document.locked():
            catch_up(self.document)  # a reload the reconnect brings is settled just below
            self._settle_reload()
            self.store.sync()
            try:
                self.executor.recover()
                yield
            except (PlanbookError, KeyboardInterrupt):
                with suppress(Exception):
                    self.store.load()
                raise
            except Exception as exc:
                with suppress(Exception):
                    self.store.load()
                raise TransactionFailed(f"nothing was changed: {one_line(exc)}") from exc

    def _busy(self, plan: Plan) -> str | None:
        """Who runs steps of ``plan`` now, in a few words, or None when no run is under way."""
        if self.executor.active:
            return "this session"
        if plan.state != "executing":
            return None
        owners = {s.run_by for s in plan.steps if s.status in ("approved", "running") and s.run_by}
        return ", ".join(sorted(describe(o) for o in owners)) or "another process"

    # --- observing ---------------------------------------------------------------------------
    def _tell(self, event: Event) -> None:
        """Surfaces observe: whatever fails there never undoes or blocks what was done."""
        with suppress(Exception):
            self.events.emit(event)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self.events.subscribe(listener)

    def _changed(
        self,
        kind: EventKind = "plan_changed",
        plan: Plan | None = None,
        message: str = "",
        **data: Any,
    ) -> None:
        self._tell(
            Event(
                kind=kind,
                plan_id=plan.id if plan else None,
                message=message,
                data=data,
            )
        )

    # --- mode --------------------------------------------------------------------------------
    @property
    def mode(self) -> Mode:
        return self.store.state.mode

    def set_mode(self, mode: str) -> Mode:
        with self._editing():
            wanted = check_mode(mode)
            if wanted == self.store.state.mode:
                # nothing changes, so nothing is written: `%plan on` in a fresh notebook (plan
                # is the default) must not make the open page's next save ask "File Changed"
                return wanted
            self.store.state.mode = wanted
            self.store.log("mode", mode)
            self.store.save()
        self._changed("mode_changed", message=mode)
        return self.store.state.mode

    # --- plans -------------------------------------------------------------------------------
    def current_plan(self) -> Plan | None:
        """The open plan, or else the most recent one."""
        self._settle_reload()
        self.store.sync()
        plans = self.store.state.plans
        for plan in reversed(plans):
            if plan.is_open:
                return plan
        return plans[-1] if plans else None

    def _require_plan(self) -> Plan:
        plan = self.current_plan()
        if plan is None:
            raise UsageMistake("there is no plan yet: stage a step with `%%propose` first")
        return plan

    def _open_plan(self, task: str = "") -> Plan:
        plan = self.current_plan()
        if plan is None or not plan.is_open:
            plan = Plan(task=task)
            self.store.state.plans.append(plan)
            self.store.log("plan", f"started {plan.id}" + (f": {task}" if task else ""))
        return plan

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

    def stage(
        self, op: AnyOperation, *, reason: str = "", run: bool = False, origin: str | None = None
    ) -> Step:
        """Put ``op`` through the policy: staged as a step, or applied now with a checkpoint.
        ``origin``: who proposed it from outside this kernel (an MCP client), kept on the step
        and in the audit log."""
        with self._editing():
            self._install_rules()  # as the files say now: they may have changed since the start
            verdict = self.rules.verdict(op)
            decision = decide(self.mode, op, verdict, runs=run)
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
                cells=self.document.cells(),
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

    # --- deciding ----------------------------------------------------------------------------
    def approve(
        self,
        steps: StepSelection = None,
        *,
        first: int | None = None,
        dry_run: bool = False,
        by: str | None = None,
    ) -> RunReport:
        """Approve pending steps and run exactly those: all, step n (``4`` or ``"4"``),
        ``"1,3-5"``, ``[1, 3]``, or the first n pending (``first=n``).

        Another process may be running other steps of the plan at the same time: each process
        runs only the steps it approved, and a step is approved (so run) by one process only."""
        check_selection_argument(steps, first)
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
                if dry_run:
                    return approval_checks.dry_run(plan, chosen, self.document, self.workspace)
                approval = Approval(
                    revision=plan.current.number,
                    step_ids=tuple(s.id for s in chosen),
                    sha256=approval_hash(chosen),
                    by=by or self.store.user,
                )
                plan.approvals.append(approval)
                for step in chosen:
                    step.status = "approved"
                    step.run_by = self.executor.token
                if plan.state != "executing":  # else: joins another process's run
                    plan.fire("approve")
                self.store.log(
                    "approved",
                    f"{plan.id} steps {','.join(approval.step_ids)} sha256={approval.sha256}",
                )
                self.store.save()
                # Saved before the first step: a server stop during the run then loses no
                # approval (issue 15), only the last cell-only steps' change with their record.
                self._durable()
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
            conversation = self.store.state.conversation or Conversation()
            conversation = change(conversation) or conversation
            self.store.state.conversation = conversation
            self.store.save()
        return conversation

    # --- asking before a step -----------------------------------------------------------------
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
                self.store.log("answered", f"step {plan.steps[number - 1].id}: {chosen}")
                self.store.save()
            self._changed(plan=plan)
            if not again:
                return None
            return self.approve(again, by="answer to step question")

    def request_stop(self) -> None:
        """End a run cleanly between steps."""
        self.executor.stop_requested = True

    # --- checkpoints -------------------------------------------------------------------------
    def checkpoints(self) -> list[Checkpoint]:
        self.store.sync()
        return list(self.store.state.checkpoints)

    def rollback(self, checkpoint: str | None = None, *, force: bool = False) -> Checkpoint:
        """Undo the last executed step, or everything after ``checkpoint``; recorded, undoable."""
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
            record = rollback(self.store, writer, target, force=force)
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
        retention = Retention(
            keep_checkpoints=keep_checkpoints or configured.keep_checkpoints,
            keep_plans=keep_plans or configured.keep_plans,
        )
        with self._editing():
            report = gc(self.store.state, retention)
            self.store.log("gc", str(report))
            self.store.save()
        self._changed()
        return report

    # --- reading -----------------------------------------------------------------------------
    def cells(self) -> list[Cell]:
        return self.document.cells()

    def step_views(self, plan: Plan | None = None, revision: int | None = None) -> list[StepView]:
        plan = plan or self.current_plan()
        if plan is None:
            return []
        if revision is not None and revision != plan.current.number:
            plan = plan.model_copy(update={"revisions": [plan.revision(revision)]})
        return step_views(
            plan,
            self.document.cells(),
            self.workspace,
            self.store.state.checkpoints,
            self.store.blobs,
        )

    def render_markdown(self) -> str:
        plan = self.current_plan()
        if plan is None:
            return (
                f"*no plan yet* · mode: {self.mode} · notebook: {self.document.description}\n\n"
                "Stage a step with `%%propose` (anchors: `%plan cells`)."
            )
        return plan_markdown(
            plan, self.step_views(plan), mode=self.mode, backend=self.document.description
        )

    def render_text(self, *, color: bool = False) -> str:
        plan = self.current_plan()
        if plan is None:
            return f"no plan yet (mode: {self.mode}; notebook: {self.document.description})\n"
        return plan_text(
            plan,
            self.step_views(plan),
            mode=self.mode,
            backend=self.document.description,
            color=color,
        )

    def checkpoints_text(self) -> str:
        return checkpoints_text(self.checkpoints(), self.store.state.plans)

    def history(self) -> str:
        plan = self._require_plan()
        lines = []
        for rev in plan.revisions:
            approved = [a for a in plan.approvals if a.revision == rev.number]
            lines.append(
                f"revision {rev.number}"
                + (f" (from {rev.parent})" if rev.parent else "")
                + f": {count(rev.steps, 'step')}"
                + (f"; feedback: {rev.feedback}" if rev.feedback else "")
                + (f"; approved {len(approved)}x" if approved else "")
            )
        return "\n".join(lines)

    def diff_revisions(self, a: int, b: int) -> str:
        return "\n".join(revision_diff(self._require_plan(), a, b))

    def take_over(self, number: int, *, confirm: bool = False) -> Takeover:
        """Step ``number``, left approved or running by a process on another host: without
        ``confirm`` only what taking it over means (one line to ask with); with it, settled
        here as interrupted so it can be approved again (engine/takeover.py). Refused while its
        process is on this host and alive."""
        with self._editing():
            plan = self._require_plan()
            taken = take_over(plan, number, self.executor, self.store, confirm=confirm)
        if taken.done:
            self._changed(plan=plan)
        return taken
