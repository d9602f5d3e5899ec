"""The kernel's surfaces (the in-cell review, the panel) follow the plan when it changes outside
the kernel: a step an MCP client stages through the notebook's collaboration room shows on its
cell and in the panel without waiting for the person to act. One follower per session."""

from __future__ import annotations

import asyncio

from planbook.sessions.outside_changes import follow
from planbook.sessions.session import Session
from planbook.surfaces.widget.mainloop import call_on_main

_KEY = "outside_changes"


def follow_outside_changes(session: Session, home: asyncio.AbstractEventLoop | None = None) -> None:
    """Start following ``session``'s record (once; ``home``: the kernel's main loop)."""
    if _KEY in session.extras:
        return
    session.extras[_KEY] = follow(session, lambda look: call_on_main(look, home))
