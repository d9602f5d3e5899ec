"""Decision points: the agent run waits here for the person's choice.

Everything the person must decide while an agent runs goes through one small registry:
``ask_user`` questions, ask-mode approvals of a single change, offers to switch modes, and the
doom-loop "continue?". The run ``await``s the answer; the panel (a comm message) or a magic
(``%answer``) calls ``answer``. The registry knows nothing about surfaces: they learn about new
and settled decisions by ``subscribe``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any, Literal

from pydantic import ConfigDict, Field

from planbook.errors import UnknownDecision, UsageMistake
from planbook.model.base import PlanbookModel

_log = logging.getLogger(__name__)

DecisionKind = Literal["question", "approval", "mode_switch", "doom_loop"]

__all__ = ["Answer", "Decision", "DecisionKind", "Decisions"]


class Decision(PlanbookModel):
    """A question the run is waiting on."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Short id used to answer it, such as `d3`.")
    kind: DecisionKind = Field(description="What sort of decision this is.")
    question: str = Field(description="The question, one or two lines.")
    options: list[str] = Field(description="The choices; an answer picks one of them.")
    allow_text: bool = Field(default=False, description="A free-text answer is accepted too.")
    data: dict[str, Any] = Field(default_factory=dict, description="Details for the panel.")


class Answer(PlanbookModel):
    """The person's choice, with a reason or edited arguments where the choice takes them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    choice: str
    #: A denial's reason, or a free-text answer.
    text: str | None = None
    #: Edited tool arguments (ask-mode "edit").
    args: dict[str, Any] | None = None


Listener = Callable[[Literal["asked", "answered", "cancelled"], Decision], None]


class Decisions:
    """The open decisions of one session."""

    def __init__(self, first: int = 1) -> None:
        self._open: dict[str, tuple[Decision, asyncio.Future[Answer]]] = {}
        #: Decisions no run awaits (a step's question): answering calls back instead.
        self._parked: dict[str, tuple[Decision, Callable[[Answer], None]]] = {}
        self._ids = itertools.count(first)
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def ask(
        self,
        question: str,
        options: list[str],
        *,
        kind: DecisionKind = "question",
        allow_text: bool = False,
        data: dict[str, Any] | None = None,
    ) -> asyncio.Future[Answer]:
        """Open a decision; await the returned future for the answer (call inside the loop)."""
        loop = asyncio.get_running_loop()
        decision = Decision(
            id=f"d{next(self._ids)}",
            kind=kind,
            question=question,
            options=list(options),
            allow_text=allow_text or not options,
            data=dict(data or {}),
        )
        future: asyncio.Future[Answer] = loop.create_future()
        with self._lock:
            self._open[decision.id] = (decision, future)
        # A run that is cancelled (Stop) takes its open questions with it.
        future.add_done_callback(lambda f: self._forget(decision.id, f))
        self._emit("asked", decision)
        return future

    def park(
        self,
        question: str,
        options: list[str],
        on_answer: Callable[[Answer], None],
        *,
        data: dict[str, Any] | None = None,
    ) -> Decision:
        """Open a decision that no run waits on: ``on_answer`` runs when it is answered (on the
        answering thread). A stopped run does not withdraw it."""
        decision = Decision(
            id=f"d{next(self._ids)}",
            kind="question",
            question=question,
            options=list(options),
            data=dict(data or {}),
        )
        with self._lock:
            self._parked[decision.id] = (decision, on_answer)
        self._emit("asked", decision)
        return decision

    def answer(
        self,
        decision_id: str,
        choice: str | int,
        *,
        text: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> Answer:
        """Settle a decision: ``choice`` is one of its options (or its 1-based number)."""
        with self._lock:
            entry = self._open.get(decision_id)
            parked = self._parked.get(decision_id)
            open_ids = [*self._open, *self._parked]
        if parked is not None:
            picked = self.pick(parked[0], choice, text)
            answer = Answer(choice=picked, text=text, args=args)
            with self._lock:
                if self._parked.pop(decision_id, None) is None:
                    raise UnknownDecision(decision_id, open_ids)  # answered meanwhile
            self._emit("answered", parked[0])
            parked[1](answer)
            return answer
        if entry is None:
            raise UnknownDecision(decision_id, open_ids)
        decision, future = entry
        picked = self.pick(decision, choice, text)
        answer = Answer(choice=picked, text=text, args=args)
        self._settle(decision, future, answer)
        return answer

    def withdraw(self, decision_id: str) -> None:
        """Drop a parked decision that was settled elsewhere (a step's question answered
        through the Session); surfaces hear it as cancelled."""
        with self._lock:
            entry = self._parked.pop(decision_id, None)
        if entry is not None:
            self._emit("cancelled", entry[0])

    def pending(self) -> list[Decision]:
        with self._lock:
            return [d for d, _ in self._open.values()] + [d for d, _ in self._parked.values()]

    def cancel_all(self) -> None:
        """Drop every open decision (the run was stopped)."""
        with self._lock:
            futures = [f for _, f in self._open.values()]
        for future in futures:
            loop = future.get_loop()
            if _on_loop_thread(loop):
                future.cancel()
            else:
                loop.call_soon_threadsafe(future.cancel)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @staticmethod
    def pick(decision: Decision, choice: str | int, text: str | None) -> str:
        """The option ``choice`` names (itself, its 1-based number, or its first words), or the
        free text when the decision allows it; else a one-line `UsageMistake`."""
        options = decision.options
        if isinstance(choice, bool):
            choice = str(choice).lower()
        if isinstance(choice, int):
            if 1 <= choice <= len(options):
                return options[choice - 1]
            raise UsageMistake(
                f"choice {choice} is not between 1 and {len(options)} for {decision.id}"
            )
        lowered = {o.lower(): o for o in options}
        if choice.lower() in lowered:
            return lowered[choice.lower()]
        # The first words of an option stand for the first option they begin ("always allow":
        # the narrowest scope, which is offered first).
        starts = [o for o in options if o.lower().startswith(choice.lower() + " ")]
        if starts and choice.strip():
            return starts[0]
        if decision.allow_text:
            return choice
        raise UsageMistake(
            f"{choice!r} is not an option of {decision.id}; choose one of: {', '.join(options)}"
        )

    # --- internals ------------------------------------------------------------------------------

    def _settle(self, decision: Decision, future: asyncio.Future[Answer], answer: Answer) -> None:
        # Forget it at once, so `pending()` is right before the waiting run wakes up.
        with self._lock:
            self._open.pop(decision.id, None)
        self._emit("answered", decision)

        def set_it() -> None:
            if not future.done():
                future.set_result(answer)

        loop = future.get_loop()
        if _on_loop_thread(loop):
            set_it()
        else:
            loop.call_soon_threadsafe(set_it)

    def _forget(self, decision_id: str, future: asyncio.Future[Answer]) -> None:
        # Only a cancelled future is still registered here; answered ones left in `_settle`.
        with self._lock:
            entry = self._open.pop(decision_id, None)
        if entry is not None:
            self._emit("cancelled", entry[0])

    def _emit(self, what: Literal["asked", "answered", "cancelled"], decision: Decision) -> None:
        for listener in list(self._listeners):
            # A broken surface must not break the run.
            try:
                listener(what, decision)
            except Exception:
                _log.exception("planbook: a decision listener failed")


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        # No loop running here: safe to touch the future only if its loop is not running.
        return not loop.is_running()
