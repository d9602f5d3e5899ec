"""A shell step's Preview pressed in the panel or on its cell: started without blocking.

The preview runs as a task on the kernel's main loop whose command waits on a worker thread
(``Session.preview_async``), so the comm handler returns at once, the kernel stays idle for the
page, and the panel stays usable while the command runs. ``done`` hears how it ended, on the
main thread: None when the preview is kept on the step, else one line saying why not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from planbook.errors import PlanbookError, UsageMistake
from planbook.sessions.session import Session
from planbook.surfaces.widget.mainloop import start_on_main

log = logging.getLogger("planbook")

Done = Callable[[str | None], None]


def refuse_while_previewed(session: Session, step_ids: list[str], numbers: list[int]) -> None:
    """Approving a step whose preview is still running is refused: the person would approve
    before seeing what it does."""
    running = session.previewing
    for step_id, number in zip(step_ids, numbers, strict=True):
        if step_id in running:
            raise UsageMistake(
                f"step {number} is being previewed: approve it once its preview shows; nothing "
                "was applied"
            )


def _step_number(session: Session, step_id: str) -> int:
    plan = session.current_plan()
    for number, step in enumerate(plan.steps if plan else [], start=1):
        if step.id == step_id:
            return number
    raise UsageMistake(f"there is no step {step_id!r} in this plan any more; nothing was previewed")


def _failure(exc: BaseException) -> str:
    if isinstance(exc, PlanbookError):
        return str(exc)
    log.exception("planbook: a preview failed", exc_info=exc)
    return f"unexpected error: {type(exc).__name__}: {exc}; see the kernel log"


def start_preview(
    session: Session, step_id: str, done: Done, home: asyncio.AbstractEventLoop | None = None
) -> None:
    """Preview step ``step_id`` off the main thread; ``done(None | why)`` when it ends."""

    async def run() -> None:
        try:
            await session.preview_async(_step_number(session, step_id))
        except Exception as exc:
            done(_failure(exc))
            return
        done(None)

    def run_now() -> None:  # no kernel loop (plain Python): in the foreground
        try:
            session.preview(_step_number(session, step_id))
        except Exception as exc:
            done(_failure(exc))
            return
        done(None)

    start_on_main(run, run_now, home)
