"""The kernel's surfaces (the in-cell review, the panel) follow the plan when it changes outside
the kernel: a step an MCP client stages through the notebook's collaboration room shows on its
cell and in the panel without waiting for the person to act. One follower per session."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from planbook.sessions.outside_changes import follow
from planbook.sessions.session import Session
from planbook.surfaces.widget.mainloop import call_on_main


@dataclass
class _Following:
    """Whether a session is followed (kept by the session: ``Session.attached``)."""

    started: bool = False
    stop: Callable[[], None] | None = None


def follow_outside_changes(session: Session, home: asyncio.AbstractEventLoop | None = None) -> None:
    """Start following ``session``'s record (once; ``home``: the kernel's main loop)."""
    following = session.attached(_Following)
    if following.started:
        return
    following.started = True
    following.stop = follow(session, lambda look: call_on_main(look, home))
