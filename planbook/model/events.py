"""What the Session tells its surfaces (panel, magics, agent stream). Observers, not callers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from pydantic import ConfigDict, Field

from planbook.model.base import PlanbookModel

EventKind = Literal[
    "staged",
    "plan_changed",
    "mode_changed",
    "run_started",
    "step_started",
    "step_finished",
    "run_finished",
    "checkpoint_written",
    "rolled_back",
    "error",
    "agent_activity",
    "todos_changed",
    "decision_needed",
    "decision_made",
]

log = logging.getLogger("planbook")


class Event(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: EventKind
    plan_id: str | None = None
    step_id: str | None = None
    status: str | None = None
    message: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken panel must never break a run
                log.exception("planbook: an event listener failed on %s", event.kind)
