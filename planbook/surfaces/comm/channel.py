"""The in-cell review's link to the kernel: one comm per open notebook page, target "planbook".

A thin surface beside ``widget.py``: it sends the page the current plan (``comm_view``) after
every Session event, and carries out the page's decisions (approve, reject, retry or preview
one step) through the same Session calls and checks as ``%approve``, ``%reject``, ``%plan
preview`` and the panel. Decisions are handled on the kernel's main thread
(``planbook.surfaces.widget.mainloop``): a comm message may arrive on another thread while a
step runs, and the Session is only ever touched from the main thread; a preview's command
waits on a worker thread (``planbook.surfaces.widget.preview_task``).

The page opens the comm when its kernel is ready (refused while planbook is not loaded, so the
page shows nothing), and again when ``%load_ext planbook`` opens one to tell a page already open
(surfaces/extension.py, which loads this module when the first page's comm arrives). Front ends
without the extension (VS Code, Colab) ignore the kernel's comm.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from planbook.errors import PlanbookError, UsageMistake, read_message
from planbook.model.base import DEFERRED, PlanbookModel
from planbook.model.events import Event
from planbook.model.page_messages import PAGE_TYPES
from planbook.sessions.session import Session
from planbook.surfaces import api
from planbook.surfaces.comm.view import plan_message
from planbook.surfaces.outside import follow_outside_changes
from planbook.surfaces.widget.batch import Batch
from planbook.surfaces.widget.mainloop import call_on_main, running_main_loop, start_on_main
from planbook.surfaces.widget.preview_task import refuse_while_previewed, start_preview

if TYPE_CHECKING:
    from planbook.documents.page import PageNotebook

log = logging.getLogger("planbook")

#: Events that do not change what the cells show (the agent's chatter).
QUIET = frozenset({"agent_activity", "todos_changed", "decision_needed", "decision_made"})
#: Told while a run is under way and followed at once by the next step's start or the run's
#: end, whose plan shows the same and more: each sent the whole plan (4 ms at 50 steps), three
#: plans a step where one says it all.
FOLLOWED_IN_A_RUN = frozenset({"checkpoint_written", "step_finished"})


class _Decision(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str = Field(min_length=1, max_length=200, description="The step's id.")
    revision: int = Field(ge=1, description="The plan revision the person was looking at.")


class ApproveStep(_Decision):
    action: Literal["approve"]
    shown: str = Field(
        min_length=1,
        max_length=200,
        description="The step's hash as the page showed it (the plan message's `hash`): a "
        "step rewritten since is refused and nothing runs.",
    )


class RejectStep(_Decision):
    action: Literal["reject"]


class RetryStep(_Decision):
    action: Literal["retry"]


class PreviewStep(_Decision):
    """Run a pending shell step once in an overlay (off the main thread) and show it."""

    action: Literal["preview"]


AnyDecision = ApproveStep | RejectStep | RetryStep | PreviewStep
Decision = Annotated[AnyDecision, Field(discriminator="action")]
_DECISION: TypeAdapter[AnyDecision] = TypeAdapter(Decision, config=DEFERRED)


def parse(content: object) -> AnyDecision:
    return read_message(
        _DECISION,
        content,
        unreadable="the page sent a decision planbook cannot read",
        fix="reload the page",
        error=UsageMistake,
    )


class PageLoad(PlanbookModel):
    """The browser tab that opened a comm, kept across its reloads, and which load of it
    (js/labextension connection.ts ``PAGE``): a new load closes what earlier ones left open."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    tab: str = Field(min_length=1, max_length=64)
    load: str = Field(min_length=1, max_length=64)

    @classmethod
    def said(cls, opened: object) -> PageLoad | None:
        """What the page's open message says of it; None from a page that says nothing (an
        older extension) or something unreadable: its links are left as they were."""
        page = opened.get("page") if isinstance(opened, dict) else None
        try:
            return cls.model_validate(page) if isinstance(page, dict) else None
        except ValidationError:
            return None


class CellReviewLink:
    """One page's comm: the plan out, the person's decisions in."""

    #: The page has spoken on this comm (opened it, or sent a message): a page with the
    #: extension. A comm the kernel opened may go to a page without it, or to a client that
    #: ignores comms (nbclient); planbook/sessions/page_advice.py tells the person to reload then.
    heard_from_page = False

    def __init__(
        self,
        session: Session,
        comm: Any,
        home: asyncio.AbstractEventLoop | None = None,
        page: PageLoad | None = None,
    ) -> None:
        self.session = session
        self.comm = comm
        #: The browser tab and the load of it that opened this comm, when the page said.
        self.page = page
        self._home = home or running_main_loop()
        #: runs under way in the session (a step's code may approve and run another plan)
        self._runs = 0
        self._unsubscribe: Callable[[], None] | None = session.subscribe(self._on_event)
        comm.on_msg(self._on_msg)
        comm.on_close(lambda _msg: self.close())

    # --- out -------------------------------------------------------------------------------
    def send_plan(self) -> None:
        try:
            message = plan_message(self.session)
        except PlanbookError as exc:
            self.send_error(str(exc))
            return
        self.comm.send(message)

    def send_error(self, message: str, step_id: str | None = None) -> None:
        self.comm.send({"type": "error", "message": message, "step_id": step_id})

    def _on_event(self, event: Event) -> None:
        if event.kind in QUIET or self._unsubscribe is None:
            return
        if event.kind == "run_started":
            self._runs += 1
        elif event.kind == "run_finished":
            self._runs = max(self._runs - 1, 0)
        elif self._runs and event.kind in FOLLOWED_IN_A_RUN:
            return  # the next step's start or the run's end shows it
        # Events come from the main thread (the executor, a magic): the Session may be read.
        self.send_plan()

    # --- in --------------------------------------------------------------------------------
    def heard(self) -> None:
        """The page spoke: while this comm is open, the page follows planbook's changes."""
        if not self.heard_from_page and self._unsubscribe is not None:
            self.heard_from_page = True
            self.session.page_advice.page_joined(self)

    def _on_msg(self, msg: dict[str, Any]) -> None:
        self.heard()
        content = msg.get("content", {}).get("data")
        if isinstance(content, dict) and set(content) <= {"protocol"}:
            call_on_main(self.send_plan, self._home)  # the page asks for the plan again
            return
        if isinstance(content, dict) and content.get("type") in PAGE_TYPES:
            call_on_main(lambda: self.page_message(content), self._home)
            return
        step_id = content.get("step_id") if isinstance(content, dict) else None
        try:
            decision = parse(content)
        except UsageMistake as exc:
            self.send_error(str(exc), step_id if isinstance(step_id, str) else None)
            return
        call_on_main(lambda: self.decide(decision), self._home)

    # --- the page's notebook (documents/page.py) ---------------------------------------------
    def page_document(self) -> PageNotebook | None:
        return self.session.page_document()

    def ask_for_cells(self) -> None:
        """Where the page is the notebook (no collaboration), ask it for its cells."""
        if self.page_document() is not None:
            self.comm.send({"type": "resync"})

    def page_message(self, content: dict[str, Any]) -> None:
        """The page's cells, or its answer to a change (main thread); a bad one: one line."""
        document = self.page_document()
        if document is None:
            return  # live or file backend: the page's own copy is not needed
        replaced = document.replaced
        try:
            note = document.receive(content, self, self.comm.send)
        except PlanbookError as exc:
            self.send_error(str(exc))
            return
        if note is None and document.replaced != replaced:
            # the page's snapshot is the notebook now (after a restart it holds the plan the
            # file lacks): the panel drawn before it came, and this page, show it again
            self.session.events.emit(Event(kind="plan_changed", message="the page's notebook"))
        if note is not None:  # the page showed it; the kernel's record now follows the page's
            if note not in self.session.warnings:
                self.session.warnings.append(note)
            self.send_plan()

    def decide(self, decision: AnyDecision) -> None:
        """Carry out one decision (main thread); a refusal goes back to the page as one line."""
        try:
            if isinstance(decision, ApproveStep):
                self._approve(decision)
            elif isinstance(decision, RetryStep):
                self._retry(decision)
            elif isinstance(decision, PreviewStep):
                self._preview(decision)
            else:
                self._reject(decision)
        except PlanbookError as exc:
            self.send_error(str(exc), decision.step_id)
            self.send_plan()
        except Exception as exc:  # the page must hear of it, not wait forever
            log.exception("planbook: the in-cell review failed on %r", decision)
            self.send_error(
                f"unexpected error: {type(exc).__name__}: {exc}; see the kernel log",
                decision.step_id,
            )

    def _number(self, decision: AnyDecision, status: str = "pending") -> int:
        plan = self.session.current_plan()
        if plan is None:
            raise UsageMistake("there is no plan any more; nothing was changed")
        if plan.current.number != decision.revision:
            raise UsageMistake(
                f"the plan changed while you looked at revision {decision.revision}: it is now "
                f"at revision {plan.current.number}; nothing was changed: review it again"
            )
        for number, step in enumerate(plan.steps, start=1):
            if step.id == decision.step_id:
                if step.status != status:
                    raise UsageMistake(
                        f"step {number} is {step.status}, not {status}; nothing was changed"
                    )
                return number
        raise UsageMistake(f"there is no step {decision.step_id!r} in this plan; nothing changed")

    def _reject(self, decision: RejectStep) -> None:
        self.session.reject([self._number(decision)])

    def _retry(self, decision: RetryStep) -> None:
        """As the panel's Retry: the code runs again at once where the change is in place (the
        same path as Approve), else the change is staged again for review on its cell."""
        step, run_now = self.session.retry(self._number(decision, "failed"))
        plan = self.session.current_plan()
        if run_now and step.status == "pending" and plan is not None:
            self._run(plan.steps.index(step) + 1, plan.current.number)
        else:
            self.send_plan()

    def _preview(self, decision: PreviewStep) -> None:
        """Start the preview and return: the page shows "previewing..." until it ends."""
        number = self._number(decision)
        if decision.step_id in self.session.previewing:
            raise UsageMistake(f"step {number} is being previewed already: its preview shows soon")

        def done(error: str | None) -> None:
            if error is not None:
                self.send_error(error, decision.step_id)
            self.send_plan()

        start_preview(self.session, decision.step_id, done, self._home)

    def _approve(self, decision: ApproveStep) -> None:
        shown = {decision.step_id: decision.shown}
        number = self._number(decision)
        refuse_while_previewed(self.session, [decision.step_id], [number])
        self._run(number, decision.revision, shown)

    def _run(self, number: int, revision: int, shown: dict[str, str] | None = None) -> None:
        """Run step ``number``; ``shown``: its hash as the page showed it (None: as it is now,
        for a retry, which the person chose on the failed step and which stages nothing new)."""
        plan = self.session.current_plan()
        assert plan is not None
        # Dependencies and drift, checked for this step exactly as `%approve N` checks them.
        for outcome in self.session.approve([number], dry_run=True, shown=shown).outcomes:
            if outcome.status != "would run":
                raise UsageMistake(
                    f"step {number} was not applied: {outcome.message or outcome.status}"
                )
        batch = Batch(
            self.session, [plan.steps[number - 1]], revision, by="in-cell review", shown=shown
        )

        async def run() -> None:
            await batch.run()
            self._after(batch)

        def run_now() -> None:
            batch.run_now()
            self._after(batch)

        start_on_main(run, run_now, self._home)

    def _after(self, batch: Batch) -> None:
        step_id = batch.step_ids[0]
        plan = self.session.current_plan()
        step = plan.find_step(step_id) if plan is not None else None
        if batch.error:
            self.send_error(batch.error, step_id)
        elif step is not None and step.status == "failed":
            self.send_error(f"the step failed: {step.error or 'see the plan panel'}", step_id)
        self.send_plan()

    def follow(self, session: Session) -> None:
        """The kernel's session is now ``session`` (a switch, or a fresh start): leave the old
        one, and show the page the new one's plan at once."""
        if self._unsubscribe is None or session is self.session:
            return
        heard = self.heard_from_page
        self._leave()
        self.session, self.heard_from_page, self._runs = session, False, 0
        self._unsubscribe = session.subscribe(self._on_event)
        _LINKS.add(self)
        follow_outside_changes(session, self._home)
        if heard:
            self.heard()
        self.send_plan()
        self.ask_for_cells()

    def _leave(self) -> None:
        _LINKS.discard(self)
        document = self.page_document()
        if document is not None:
            document.detach(self)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.session.page_advice.page_left(self)

    def close(self) -> None:
        self._leave()


#: The open pages' links: they follow the kernel's session when it is replaced.
_LINKS: set[CellReviewLink] = set()


def open_link(session: Session, comm: Any, page: PageLoad | None = None) -> CellReviewLink:
    if page is not None:  # a new load of a tab: the links its earlier loads left lead nowhere
        earlier = [o for o in _LINKS if o.page is not None and o.page.tab == page.tab]
        for other in [o for o in earlier if o.page != page]:
            other.close()
            with contextlib.suppress(Exception):  # the comm's kernel side: nobody to tell
                other.comm.close()
    link = CellReviewLink(session, comm, page=page)
    document = link.page_document()
    if document is not None:
        # The page opening a comm is the page now. A reloaded page never closed its old comm:
        # a change sent there before the new page's cells arrive (a round trip later) would
        # be reported done, then undone by those cells. Until they come, it is refused.
        for other in _LINKS:
            document.detach(other)
    _LINKS.add(link)
    follow_outside_changes(session, link._home)
    link.send_plan()
    link.ask_for_cells()
    return link


def _follow_kernel_session(session: Session) -> None:
    """Every open page shows the kernel's new session (called on the thread that made it)."""
    for link in list(_LINKS):
        link.follow(session)


def link_page(comm: Any, opened: object = None) -> None:
    """A page opened ``comm`` (the target surfaces/extension.py registered) and said ``opened``:
    link it to the kernel's session, which is opened now if this is its first use; a session
    that cannot open closes the comm with one line saying why."""
    api.follow_kernel_session(_follow_kernel_session)
    try:
        open_link(api.session(), comm, PageLoad.said(opened)).heard()
    except PlanbookError as exc:
        comm.close({"type": "error", "message": str(exc), "step_id": None})
