"""The review panel: an anywidget that shows the plan as diffs and runs only what is approved.

State goes to the browser as one JSON trait (``view``, built by ``planbook.surfaces.widget.view``);
the person's actions come back as custom messages, validated (``planbook.surfaces.widget.messages``)
and then carried out through the Session exactly as the magics do. A bad message changes nothing and
shows its reason in the panel.


Approved steps run on the kernel's main thread, as a task on its event loop that yields between
steps (``planbook.surfaces.widget.mainloop``): the comm handler returns at once, progress streams
to the page, and a Stop gets in between two steps. A message may be handled on a subshell's thread
while a step runs on the main thread, so while a run is in progress a message only touches the
panel's own state (the stop flag, the shown error), never the Session.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anywidget
import traitlets

from planbook.agent.state import state_of
from planbook.errors import NeedsConfirmation, PlanbookError, RollbackConflict, UsageMistake
from planbook.model.events import Event
from planbook.model.plan import Plan
from planbook.present.checkpoint_names import checkpoint_names
from planbook.present.safe import md_text, visible
from planbook.sessions.session import Session
from planbook.surfaces.outside import follow_outside_changes
from planbook.surfaces.widget import agent
from planbook.surfaces.widget.assets import css_path, esm_source
from planbook.surfaces.widget.batch import Batch
from planbook.surfaces.widget.mainloop import call_on_main, running_main_loop, start_on_main
from planbook.surfaces.widget.messages import (
    Action,
    AnswerDecision,
    Approve,
    ApproveAll,
    Dismiss,
    Preview,
    Reject,
    Reorder,
    Retry,
    Revise,
    Rollback,
    ShowRevisionDiff,
    Skip,
    Stop,
    StopAgent,
    parse,
)
from planbook.surfaces.widget.preview_task import refuse_while_previewed, start_preview
from planbook.surfaces.widget.reorder import moves_for
from planbook.surfaces.widget.view import (
    Progress,
    build_view,
    cell_names,
    merge,
    revision_diff,
)

log = logging.getLogger("planbook")


@dataclass
class _Shown:
    """The panel a session shows (kept by the session: ``Session.attached``)."""

    panel: ReviewPanel | None = None


class ReviewPanel(anywidget.AnyWidget):
    """``ReviewPanel(session)``: live review of the session's current plan."""

    _esm = esm_source()
    _css = css_path()
    #: The whole panel (``planbook.surfaces.widget.view.build_view``), rebuilt from the Session.
    view = traitlets.Dict().tag(sync=True)
    #: Small overrides sent while steps run or the agent works (step statuses, progress, error,
    #: agent), so a big plan is not sent again for every step; cleared by the next rebuild.
    live = traitlets.Dict().tag(sync=True)
    #: Ids of the pending steps the person unticked: kept here, not in one view, so every
    #: display of the panel and every re-render (a new view, a page reload) agrees.
    deselected = traitlets.List(traitlets.Unicode()).tag(sync=True)
    #: True once a newer display of the plan replaced this one: it stops following the plan
    #: and shows one line, so a notebook with many ``%plan`` cells does not keep growing.
    superseded = traitlets.Bool(False).tag(sync=True)

    def __init__(self, session: Session, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session = session
        self._error: str | None = None
        #: What the error box offers to do next (a forced rollback), or None.
        self._offer: dict[str, Any] | None = None
        self._progress = Progress()
        self._compare: tuple[int, int] | None = None
        #: The run this panel started, while it runs.
        self._batch: Batch | None = None
        #: View updates come from the main thread (events) and from message threads.
        self._lock = threading.RLock()
        #: The kernel's main loop, seen while the panel was made in a cell (main thread).
        self._home_loop = running_main_loop()
        self._agent: dict[str, Any] = {}
        self._unsubscribe: Callable[[], None] | None = session.subscribe(self._on_event)
        self.on_msg(self._on_msg)
        self.refresh()

    @classmethod
    def for_session(cls, session: Session) -> ReviewPanel:
        """The session's panel: one per session, shown again by each ``%plan``, so repeated
        displays share one live state instead of each listening to the session."""
        shown = session.attached(_Shown)
        old = shown.panel
        if isinstance(old, cls) and old.comm is not None and old.running:
            old.refresh()  # a run it started reports there; a new panel would not see it
            return old
        panel = cls(session)
        follow_outside_changes(session, panel._home_loop)
        if isinstance(old, cls) and old.comm is not None:
            panel.deselected = list(old.deselected)
            old.supersede()
        shown.panel = panel
        return panel

    def supersede(self) -> None:
        """A newer panel took over: stop following the session; the page shows one line.

        Its view is let go in the same message: the page shows none of it, and a kernel
        that ran ``%plan`` twenty times on a 200-step plan held twenty copies of it (3.8 MB
        each, in the kernel and in the page). What stays is the widget and its comm, so the
        line still shows after the page reloads."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        with self._lock, self.hold_sync():
            self.superseded = True
            self.view = {}
            self.live = {}
            self._agent = {}
            self._compare = None

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The panel, plus the plan as markdown and text: what a frontend without widgets
        (nbconvert, nbclient, a terminal, a rendered .ipynb on a forge) shows instead."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        # Session warnings (such as "no OS sandbox") lead, so no frontend hides them.
        notes = list(self.session.warnings)
        data = {
            **(data or {}),
            "text/markdown": "".join(f"> **warning:** {md_text(n)}\n\n" for n in notes)
            + self.session.render_markdown(),
            "text/plain": "".join(f"warning: {visible(n)}\n" for n in notes)
            + self.session.render_text(),
        }
        return data, metadata

    # --- state -------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        return self._session

    @property
    def state(self) -> dict[str, Any]:
        """What the panel shows now: ``view`` with ``live`` applied."""
        with self._lock:
            return merge(self.view, self.live)

    @property
    def running(self) -> bool:
        return self._batch is not None or self._progress.running

    def refresh(self) -> None:
        """Rebuild the whole view from the Session."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        if self.superseded:  # its page shows one line: a view would only be held, never seen
            return
        session = self._session
        try:
            plan = session.current_plan()
            steps = session.step_views(plan) if plan else []
            compare = None
            if plan is not None and self._compare is not None:
                compare = revision_diff(plan, *self._compare)
            checkpoints = session.checkpoints()
            view = build_view(
                plan=plan,
                steps=steps,
                checkpoints=checkpoints,
                checkpoint_names=checkpoint_names(session.store.state.plans, checkpoints),
                cell_names=cell_names([c.id for c in session.cells()]),
                mode=session.mode,
                backend=session.document.backend,
                backend_description=session.document.description,
                progress=self._progress,
                error=self._error,
                revision_diff=compare,
                agent=self._agent_view(),
                offer=self._offer,
                warnings=session.warnings,
                hashes=session.step_hashes(plan.steps) if plan else {},
                previewing=session.previewing,
            )
            with self.hold_sync():  # one message: the new view and no stale overrides
                self.view = view
                self.live = {}
        except PlanbookError as exc:
            self._patch_live(error=str(exc))

    def _patch_live(self, **changes: Any) -> None:
        with self._lock:
            if not self.superseded:  # a run it started shows in the newer panel instead
                self.live = {**self.live, **changes}

    def _show_error(self, message: str | None) -> None:
        """Show (or clear) the panel's error; during a run without touching the Session."""
        with self._lock:
            self._error = message
            if self.superseded:
                # Only a message sent before its page heard of the newer panel gets here; the
                # page shows one line, so the kernel's log is where its refusal can be read.
                if message:
                    log.warning("planbook: a replaced review panel's action: %s", message)
            elif self.running:
                self._patch_live(error=message)
            else:
                self._refresh()

    def _push_progress(self) -> None:
        """Send progress and step statuses without touching the Session (it may be mid-step)."""
        self._patch_live(progress=self._progress.as_json())

    def _patch_step(self, step_id: str, status: str | None, error: str | None) -> None:
        if status is None:
            return
        with self._lock:
            steps = {**self.live.get("steps", {}), step_id: {"status": status, "error": error}}
            self._patch_live(steps=steps, progress=self._progress.as_json())

    # --- session events ----------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        progress = self._progress
        mine = self._batch is not None
        if event.kind == "run_started" and not mine:
            self._progress = Progress(running=True, step_ids=list(event.data.get("steps", [])))
            self._push_progress()
        elif event.kind == "step_started" and event.step_id:
            progress.current = event.step_id
            self._patch_step(event.step_id, "running", None)
        elif event.kind == "step_finished" and event.step_id:
            progress.current = None
            progress.finished.append(event.step_id)
            self._patch_step(
                event.step_id, event.status, event.message if event.status != "done" else None
            )
        elif event.kind == "run_finished" and not mine:
            self._progress = Progress()
            self.refresh()
        elif event.kind in agent.AGENT_EVENTS:
            self._on_agent_event(event)
        elif event.kind in ("checkpoint_written", "run_started", "run_finished", "error"):
            if event.kind == "error" and event.message:
                self._error = event.message
                if not self.running:
                    self.refresh()
        elif not self.running:
            self.refresh()

    def _on_agent_event(self, event: Event) -> None:
        agent.note_event(self._agent, event)
        self._patch_live(agent=self._agent_view())

    def _agent_view(self) -> dict[str, Any] | None:
        return agent.agent_view(self._session, self._agent)

    # --- actions -----------------------------------------------------------------------------
    def _on_msg(self, _widget: object, content: object, _buffers: object) -> None:
        self.handle(content)

    def handle(self, content: object) -> None:
        """Carry out one message from the front end; any problem shows as the panel's error."""
        try:
            action = parse(content)
            self._offer = None
            self._apply(action)
        except PlanbookError as exc:  # a BadMessage from the front end too
            self._show_error(str(exc))
        except Exception as exc:  # the panel must say so, not die silently
            log.exception("planbook: the review panel failed on %r", content)
            self._show_error(f"unexpected error: {type(exc).__name__}: {exc}; see the kernel log")

    def _plan_at(self, revision: int) -> Plan:
        plan = self._session.current_plan()
        if plan is None:
            raise UsageMistake("there is no plan: stage a step with `%%propose` first")
        if plan.current.number != revision:
            raise UsageMistake(
                f"the plan changed while you looked at revision {revision}: it is now at "
                f"revision {plan.current.number}; nothing was applied: review it and try again"
            )
        return plan

    def _number(self, plan: Plan, step_id: str) -> int:
        for number, step in enumerate(plan.steps, start=1):
            if step.id == step_id:
                return number
        raise UsageMistake(
            f"there is no step {step_id!r} in revision {plan.current.number}; nothing was "
            "applied: the panel may be stale, re-run `%plan`"
        )

    def _not_running(self, doing: str) -> None:
        # Checked before the Session is touched: during a run this may be another thread.
        if self.running:
            raise UsageMistake(f"a run is in progress: {doing} when it has finished, or press Stop")
        plan = self._session.current_plan()
        if plan is not None and plan.state == "executing":
            raise UsageMistake(f"a run is in progress: {doing} when it has finished")

    def _apply(self, action: Action) -> None:
        session = self._session
        if isinstance(action, Stop):
            self._request_stop()
            return
        if isinstance(action, Dismiss):
            self._show_error(None)
            return
        if isinstance(action, StopAgent):
            agent.stop(self._session, self._home_loop)
            return
        if isinstance(action, AnswerDecision):
            if agent.asked_over_mcp(action.decision_id):  # stored in the record, as a step is
                self._not_running("answer the question")
            # The agent's question, not the plan: fine while steps run (no Session access).
            agent.answer(self._session, action.decision_id, action.choice, action.text)
            self._show_error(None)
            self._patch_live(agent=self._agent_view())
            return
        if isinstance(action, ShowRevisionDiff):
            self._not_running("compare revisions")
            self._show_revisions(action)
            return
        if isinstance(action, Rollback):
            self._not_running("roll back")
            self._error = None
            try:
                session.rollback(action.checkpoint, force=action.force, confirm=action.confirm)
            except RollbackConflict:
                self._offer = {"kind": "force_rollback", "checkpoint": action.checkpoint}
                raise
            except NeedsConfirmation:
                preview = session.rollback_preview(action.checkpoint)
                self._offer = {
                    "kind": "confirm_rollback",
                    "checkpoint": action.checkpoint,
                    "writes": preview.writes,
                    "force": action.force,
                }
                raise
            self.refresh()
            return
        doing = "approve" if isinstance(action, Approve | ApproveAll) else "change the plan"
        self._not_running(doing)
        plan = self._plan_at(action.revision)
        if isinstance(action, Retry):
            self._retry(plan, action.step_id)
            return
        if isinstance(action, Preview):
            self._preview(plan, action.step_id)
            return
        if isinstance(action, Approve | ApproveAll):
            ids = (
                list(action.step_ids)
                if isinstance(action, Approve)
                else [s.id for s in plan.steps if s.status == "pending"]
            )
            self._approve(plan, ids, action.shown)
            return
        self._error = None
        if isinstance(action, Reject):
            session.reject()
        elif isinstance(action, Skip):
            number = self._number(plan, action.step_id)
            session.skip(number) if action.action == "skip" else session.unskip(number)
        elif isinstance(action, Reorder):
            for number, before in moves_for(
                [s.id for s in plan.steps], list(action.order), {s.id: s.status for s in plan.steps}
            ):
                session.move(number, before=before)
        elif isinstance(action, Revise):
            self._revise(action.feedback)
            return
        self.refresh()

    def _preview(self, plan: Plan, step_id: str) -> None:
        """Start the step's preview and return: the command runs off the main thread, the
        step says "previewing..." meanwhile, and the panel stays usable."""
        number = self._number(plan, step_id)
        if step_id in self._session.previewing:
            raise UsageMistake(f"step {number} is being previewed already: its preview shows soon")
        self._show_error(None)

        def done(error: str | None) -> None:
            if error is not None:
                self._show_error(error)

        start_preview(self._session, step_id, done, self._home_loop)

    def _retry(self, plan: Plan, step_id: str) -> None:
        """A failed step's code runs again at once (through the same path as Approve); a
        change that never applied is staged again for review."""
        step, run_now = self._session.retry(self._number(plan, step_id))
        self._error = None
        plan = self._session.current_plan() or plan
        if run_now and step.status == "pending":
            self._approve(plan, [step.id])
        else:
            self.refresh()

    def _revise(self, feedback: str) -> None:
        """A new revision: drafted by the agent when one is configured, else left to the person
        (the agent's run is a task on the kernel's main loop, so it is started there)."""
        with_agent = state_of(self._session).reviser
        if with_agent is None:
            self._session.revise(feedback)
            self.refresh()
            return

        def start() -> None:
            try:
                with_agent(feedback)
            except PlanbookError as exc:
                self._show_error(str(exc))
                return
            self.refresh()

        call_on_main(start, self._home_loop)

    def _show_revisions(self, action: ShowRevisionDiff) -> None:
        if action.from_ is None or action.to is None:
            self._compare = None
        else:
            plan = self._session.current_plan()
            if plan is None:
                raise UsageMistake("there is no plan whose revisions could be compared")
            plan.revision(action.from_)
            plan.revision(action.to)
            self._compare = (action.from_, action.to)
        self._error = None
        self.refresh()

    def _request_stop(self) -> None:
        if not self.running:
            raise UsageMistake("nothing is running, so there is nothing to stop")
        if self._batch is not None:
            self._batch.stop_requested = True
        self._session.request_stop()
        self._progress.stopping = True
        self._push_progress()

    # --- running -----------------------------------------------------------------------------
    def _approve(self, plan: Plan, ids: list[str], shown: dict[str, str] | None = None) -> None:
        """``shown``: the steps' hashes as the page rendered them; None: as they are now (a
        retry of a step the person just chose, which stages nothing new)."""
        if not ids:
            raise UsageMistake("nothing to approve: no step is pending")
        numbers = sorted(self._number(plan, i) for i in set(ids))
        for n in numbers:
            step = plan.steps[n - 1]
            if step.status != "pending":
                raise UsageMistake(f"step {n} is {step.status}, not pending; nothing was applied")
        refuse_while_previewed(self._session, [plan.steps[n - 1].id for n in numbers], numbers)
        # The Session checks dependencies and drift for the whole selection, applying nothing.
        self._session.approve(numbers, dry_run=True, shown=shown)
        batch = Batch(
            self._session, [plan.steps[n - 1] for n in numbers], plan.current.number, shown=shown
        )
        self._error = None
        self._batch = batch
        self._progress = Progress(running=True, step_ids=batch.step_ids)
        self.refresh()
        # Shown as approved (queued) at once; each is approved in the Session at its turn.
        for step_id in batch.step_ids:
            self._patch_step(step_id, "approved", None)

        async def run() -> None:
            try:
                await batch.run()
            finally:
                self._end_batch(batch)

        def run_now() -> None:
            try:
                batch.run_now()
            finally:
                self._end_batch(batch)

        try:
            start_on_main(run, run_now, self._home_loop)
        except RuntimeError as exc:
            self._end_batch(batch)
            raise UsageMistake(str(exc)) from None

    def _end_batch(self, batch: Batch) -> None:
        self._batch = None
        self._error = batch.error or self._error
        self._progress = Progress()
        self.refresh()

    # --- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        super().close()
