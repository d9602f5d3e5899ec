"""The Session's core: the floors below wired together (document, workspace, store, rules,
executor), one transaction at a time on the saved state (``_editing``), the mode, the current
plan, and events for the surfaces. session.py builds the person's and the agent's operations on
it; reading.py the views of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from planbook.documents.base import NotebookDocument, catch_up, close_document, make_durable
from planbook.documents.headless import HeadlessNotebook
from planbook.documents.page import PageNotebook
from planbook.engine.approval import (
    Shown,
    approval_hash,
    step_hashes,
)
from planbook.engine.executor.report import one_line
from planbook.engine.executor.run import Executor
from planbook.engine.owner import describe
from planbook.engine.policy import check_mode
from planbook.engine.received import sign_mode
from planbook.engine.reconcile import choose_record, reconcile
from planbook.engine.rules.project import ProjectRules
from planbook.engine.runner import CodeRunner, default_runner
from planbook.engine.store import Store
from planbook.errors import NothingToDo, PlanbookError, TransactionFailed, UsageMistake
from planbook.model.events import Event, EventBus, EventKind, Listener
from planbook.model.plan import (
    Plan,
    Step,
)
from planbook.model.store import Mode
from planbook.sessions import arguments
from planbook.sessions.mcp_client import McpClient
from planbook.sessions.page_advice import PageAdvice
from planbook.workspace.files import Workspace

Attached = TypeVar("Attached")


class SessionCore:
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
        self.store = Store(document, str(notebook_path.resolve()) if notebook_path else "")
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
        self.warnings: list[str] = list(self.store.received)
        #: What each surface last showed this person, step id -> hash (``mark_shown``).
        self._shown: dict[str, Shown] = {}
        #: Save-and-reload advice for a page that gets no live updates: the floor needs it, as
        #: every surface's "no such cell" (``propose``) depends on it.
        self.page_advice = PageAdvice(document, self.warnings)
        #: The project's permission rules (engine/rules/project.py), as its files say now.
        self.rules = ProjectRules(self.workspace.root, notebook_path)
        #: Per-session objects of the floors above, by their owner's class (``attached``).
        self._attached: dict[type, object] = {}
        self._attached_lock = threading.Lock()
        self._lock = threading.RLock()
        #: The thread inside ``_editing``, which read the record again as it began: the plan
        #: it asks for (``current_plan``) is the one in memory, not read a second time.
        self._settled_in: int | None = None
        self._install_rules()

    def close(self) -> None:
        """Let go of the document (a live one holds a websocket and a thread) and listeners."""
        self.request_stop()
        self.events = EventBus()
        self.executor.emit = self.events.emit
        close_document(self.document)

    def __repr__(self) -> str:
        return f"<planbook.Session mode={self.mode} {self.document.description!r}>"

    @staticmethod
    def step_hashes(steps: Sequence[Step]) -> Shown:
        """Each step's ``hash_of([step])`` by id: what a view carries of the steps it shows, and
        what an approval from that view sends back as ``shown``."""
        return step_hashes(arguments.steps(steps))

    def mark_shown(
        self, surface: str, steps: Sequence[Step] | None = None, *, adding: bool = False
    ) -> Shown:
        """Remember that ``surface`` ("magics", "cli", ...) just showed ``steps`` (default: the
        current plan's) to the person: what its next approval is compared with. ``adding``
        keeps what it showed before (``%%propose`` shows the one step it staged)."""
        arguments.text(surface, "surface")
        if steps is None:
            plan = self.current_plan()
            steps = plan.steps if plan else []
        arguments.steps(steps)
        hashes = step_hashes(steps)
        if adding:
            hashes = {**self._shown.get(surface, {}), **hashes}
        self._shown[surface] = hashes
        return dict(hashes)

    def last_shown(self, surface: str) -> Shown | None:
        """What ``surface`` last showed (``mark_shown``), or None when it showed nothing yet."""
        found = self._shown.get(arguments.text(surface, "surface"))
        return None if found is None else dict(found)

    @staticmethod
    def hash_of(steps: Sequence[Step]) -> str:
        """The approval hash of ``steps`` as they are now: what a surface keeps when it shows
        them, so that a step changed since is refused instead of run."""
        return approval_hash(arguments.steps(steps))

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
        arguments.kind(kind)
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

    def _catch_up_record(self) -> None:
        """The record as saved now, settled with the cells (``_settle_reload``), and what it
        carried from elsewhere said."""
        if not self._settle_reload():
            self.store.sync()
        self._note_received()

    def _settle_reload(self) -> bool:
        """After the document was reloaded underneath (live room: server restart, file changed
        on disk) or a run's end could not be saved, settle the record with the cells before
        believing it (engine/reconcile.py); say what was found. True when the record was read
        again here (synced) and nothing was left to settle."""
        watch, executor = self.executor.watch, self.executor
        if executor.active:
            return False
        if not executor.unsaved:  # (else memory holds what the room lacks: kept below)
            self.store.sync()  # a record put back to an older copy is noticed here (a rewind)
        if not (watch.reloaded() or executor.unsaved):
            return True
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
                return False  # still unreachable: settled on the next call
            watch.acknowledge()
            executor.unsaved = False
            executor.unrecorded.clear()  # the saved record holds them now
            make_durable(self.document)
        for note in notes:
            self.warnings.append(note)
            self.events.emit(Event(kind="plan_changed", message=note))
        return False

    def _note_received(self) -> None:
        """Say what a record read since carried from elsewhere and lost its authority here
        (another person's approvals, their mode): it is as visible as on opening."""
        for note in self.store.received:
            if note not in self.warnings:
                self.warnings.append(note)

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
            self._catch_up_record()
            outer, self._settled_in = self._settled_in, threading.get_ident()
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
            finally:
                self._settled_in = outer

    def _busy(self, plan: Plan) -> str | None:
        """Who runs steps of ``plan`` now, in a few words, or None when no run is under way."""
        if self.executor.active:
            return "this session"
        if plan.state != "executing":
            return None
        owners = {s.run_by for s in plan.steps if s.status in ("approved", "running") and s.run_by}
        return ", ".join(sorted(describe(o) for o in owners)) or "another process"

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
            sign_mode(self.store.state)  # chosen here: the notebook keeps it on reopening
            self.store.log("mode", mode)
            self.store.save()
        self._changed("mode_changed", message=mode)
        return self.store.state.mode

    def trust(self) -> list[str]:
        """The person vouches for this notebook and its project (``%plan trust``, ``planbook
        trust``): a notebook of theirs that was copied or moved gets its records' authority
        back here (engine/received.py), and the allow rules of the project's rules files, as
        they are now, are trusted (engine/rules/trusted.py). One line each of what changed;
        `NothingToDo` when the notebook's records were signed by someone else."""
        lines: list[str] = []
        with self._editing():
            before = list(self.store.received)
            found = self.store.rebind() if self.store.place else "here"
            if found == "not yours":
                raise NothingToDo(
                    "nothing was trusted: this notebook's records were not signed by you "
                    "(received); read its steps and approve them here instead"
                )
            if found == "moved":
                self.warnings[:] = [w for w in self.warnings if w not in before]
                lines.append(f"trusted this notebook's records at {self.store.place}")
        lines += self.rules.trust_files()
        return lines

    def current_plan(self) -> Plan | None:
        """The open plan, or else the most recent one."""
        if self._settled_in != threading.get_ident():  # (else read again as ``_editing`` began)
            self._catch_up_record()
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

    def request_stop(self) -> None:
        """End a run cleanly between steps."""
        self.executor.stop_requested = True
