"""The kernel's session follows its record when someone outside the kernel changes it in the
shared document (an MCP client proposing through the collaboration room, another kernel): the
surfaces that listen to the session (the in-cell review, the panel) hear a ``plan_changed``
event and draw the plan again, within the room's own latency.

The room calls back on its sync thread after every change of the document (a keystroke, a
running cell's output), so the callback only schedules one look on the kernel's main thread
(the Session is only touched there); looks are coalesced, and the look reads the record only
when the metadata changed (it is cached until then).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from planbook.model.events import Event
from planbook.sessions.session import Session

log = logging.getLogger("planbook")

#: Hands a function to the kernel's main thread (surfaces/widget/mainloop.call_on_main).
OnMain = Callable[[Callable[[], None]], None]


def follow(session: Session, on_main: OnMain) -> Callable[[], None] | None:
    """Emit ``plan_changed`` on ``session`` whenever its record changes outside this kernel;
    the function that stops following, or None when the document cannot say it changed (a
    file: the next look at the plan reads it again anyway)."""
    subscribe = getattr(session.document, "subscribe", None)
    if not callable(subscribe):
        return None
    pending = threading.Lock()  # held from a scheduled look until it ran: one at a time

    def look() -> None:
        pending.release()
        if session.executor.active:
            return  # the run reads the record before each step and says so when it ends
        before = session.store.state
        try:
            session.current_plan()  # reads the record again when someone else changed it
        except Exception:  # a broken record is said where the person looks at the plan
            log.debug("planbook: reading a record changed outside failed", exc_info=True)
            return
        if session.store.state is not before:
            session.events.emit(
                Event(kind="plan_changed", message="the plan changed outside this kernel")
            )

    def changed() -> None:  # the room's sync thread, holding the room's lock: schedule only
        if not pending.acquire(blocking=False):
            return
        try:
            on_main(look)
        except RuntimeError:  # no kernel loop (plain Python): nothing listens on a page
            pending.release()

    stop: Callable[[], None] = subscribe(changed)
    return stop
