"""The Python API a notebook holds (``pb = planbook.session()``): the Session with what only a
notebook has (``pb.plan`` shown as markdown and callable with a task, ``pb.review()`` the panel),
and the kernel's one session that the magics, the in-cell review and ``planbook.session()`` act
on, made on first use from the notebook this kernel belongs to."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from planbook.agent.state import Run, state_of
from planbook.sessions.open_kernel import open_kernel_session
from planbook.sessions.session import Session
from planbook.surfaces.plan_handle import PlanHandle

if TYPE_CHECKING:
    from planbook.surfaces.widget.panel import ReviewPanel  # heavy: anywidget, for the type


class NotebookSession(Session):
    """``planbook.Session(document, ...)`` and ``planbook.session()``: a Session for a notebook."""

    @property
    def plan(self) -> PlanHandle:
        """The current plan: shown in Jupyter; ``await pb.plan(task)`` asks the agent."""
        return PlanHandle(self)

    @property
    def agent_run(self) -> Run | None:
        """The agent's latest run in this session (``await pb.agent_run`` waits for it), or
        None before the first."""
        return state_of(self).run

    def review(self) -> ReviewPanel:
        """The review panel for this session (an anywidget): one per session, shown again by
        each call, so every view of it follows the same live state."""
        from planbook.surfaces.widget.panel import ReviewPanel  # heavy: anywidget

        return ReviewPanel.for_session(self)


_current: NotebookSession | None = None
_lock = threading.Lock()


def session(
    notebook: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    fresh: bool = False,
    live: bool | None = None,
    server_url: str | None = None,
    token: str | None = None,
) -> NotebookSession:
    """The session of this kernel, made on first use: ``planbook.session`` documents the
    arguments."""
    global _current
    with _lock:
        wanted = Path(notebook).resolve() if notebook is not None else None
        if (
            _current is not None
            and not fresh
            and (wanted is None or wanted == _current.notebook_path)
        ):
            return _current
        new = open_kernel_session(
            NotebookSession,
            wanted,
            root=Path(root) if root is not None else None,
            live=live,
            server_url=server_url,
            token=token,
        )
        if _current is not None:
            _current.close()
        _current = new
        return _current


def close() -> None:
    """Let go of the kernel's session (``%unload_ext planbook``)."""
    global _current
    with _lock:
        if _current is not None:
            _current.close()
        _current = None
