"""The Python API a notebook holds (``pb = planbook.session()``): the Session with what only a
notebook has (``pb.plan`` shown as markdown and callable with a task, ``pb.review()`` the panel),
and the kernel's session: the one the magics, the in-cell review and ``planbook.session()`` act
on, made on first use from the notebook this kernel belongs to.

A session asked for another notebook is the caller's, never the kernel's by accident: the
magics and the page stay on the kernel's notebook until ``planbook.session(nb, kernel=True)``
(or ``%plan use NB``) switches them, and whoever follows the kernel's session (the in-cell
review's comm) hears of every switch or fresh start at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planbook.agent.state import Run, state_of
from planbook.errors import PlanbookError
from planbook.model.plan import Step
from planbook.sessions.open_kernel import open_kernel_session
from planbook.sessions.session import Session
from planbook.surfaces.outside import follow_outside_changes
from planbook.surfaces.plan_handle import PlanHandle

if TYPE_CHECKING:
    from planbook.surfaces.widget.panel import ReviewPanel  # heavy: anywidget, for the type


class NotebookSession(Session):
    """``planbook.Session(document, ...)`` and ``planbook.session()``: a Session for a notebook."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A re-run cell proposes what an open step already makes: one line, no second step.
        self.propose.on_already_staged = say_already_staged
        plan = self.current_plan()
        #: The open plan the notebook held when this session opened it, and its pending steps
        #: then (the first magic says so: magic_common.py), or None.
        self.opened_with: tuple[str, int] | None = None
        if plan is not None and plan.is_open:
            self.opened_with = plan.id, sum(1 for s in plan.steps if s.status == "pending")

    def close(self) -> None:
        """Let go of the document and the listeners; ``planbook.session()`` opens the notebook
        again next time instead of handing back this closed session (a live one's room is
        gone)."""
        super().close()
        _forget(self)

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


#: The kernel's session: what the magics, the in-cell review and the panel of `%plan` act on.
def say_already_staged(step: Step, number: int) -> None:
    print(f"planbook: already staged as step {number} ({step.operation.kind}, {step.status})")


_kernel: NotebookSession | None = None
#: Sessions made for other notebooks, by path: the caller's, kept so that asking twice for one
#: notebook gives one session (``fresh=True`` replaces it).
_others: dict[Path, NotebookSession] = {}
#: Called with the new kernel session after a switch or a fresh start (the comm, the agent).
_followers: list[Callable[[NotebookSession], None]] = []
_lock = threading.RLock()


def follow_kernel_session(follower: Callable[[NotebookSession], None]) -> None:
    """Call ``follower(session)`` whenever the kernel's session is replaced (once per follower,
    however often ``%load_ext planbook`` runs)."""
    with _lock:
        if follower not in _followers:
            _followers.append(follower)


def kernel_session() -> NotebookSession:
    """The kernel's session, made on first use from the notebook this kernel belongs to."""
    global _kernel
    with _lock:
        if _kernel is None:
            _kernel = open_kernel_session(NotebookSession, None)
        return _kernel


def kernel_session_if_open() -> NotebookSession | None:
    """The kernel's session when something opened it (a page's link, a magic), else None: for
    a caller that must not open the kernel's notebook itself (surfaces/mcp/in_kernel.py)."""
    with _lock:
        return _kernel


def session(
    notebook: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    fresh: bool = False,
    live: bool | None = None,
    server_url: str | None = None,
    token: str | None = None,
    kernel: bool = False,
) -> NotebookSession:
    """``planbook.session``, which documents the arguments."""
    wanted = Path(notebook).resolve() if notebook is not None else None

    def open_new(path: Path | None) -> NotebookSession:
        return open_kernel_session(
            NotebookSession,
            path,
            root=Path(root) if root is not None else None,
            live=live,
            server_url=server_url,
            token=token,
        )

    with _lock:
        if wanted is None and not fresh and not kernel:
            return _kernel if _kernel is not None else _become_kernels(open_new(None))
        current = _kernel_or_none() if wanted is not None else _kernel
        if wanted is not None and current is not None and wanted == current.notebook_path:
            return _become_kernels(open_new(wanted)) if fresh else current
        if wanted is None:  # fresh or kernel=True: the notebook this kernel belongs to
            return _become_kernels(_own_notebook(open_new(None), fresh))
        kept = _others.pop(wanted, None)
        if kept is not None and fresh:
            kept.close()
            kept = None
        new = kept if kept is not None else open_new(wanted)
        if kernel:
            return _become_kernels(new)
        _others[wanted] = new
        return new


def _kernel_or_none() -> NotebookSession | None:
    """The kernel's session, made now if need be to compare a path with; None when this
    kernel's notebook cannot be opened (its own problem is said where it is used)."""
    try:
        return kernel_session()
    except PlanbookError:
        return None


def _own_notebook(found: NotebookSession, fresh: bool) -> NotebookSession:
    """The session on the notebook this kernel belongs to, just ``found``: unless ``fresh``,
    the one already there for that file is kept (and ``found`` let go)."""
    path = found.notebook_path
    if fresh or path is None:
        return found
    kept = _kernel if _kernel is not None and _kernel.notebook_path == path else None
    kept = kept or _others.pop(path, None)
    if kept is None:
        return found
    found.close()
    return kept


def _become_kernels(new: NotebookSession) -> NotebookSession:
    """``new`` is the kernel's session from now on; the one before is let go (a session on a
    file stays the caller's, for ``planbook.session(its_path)``), and the followers hear."""
    global _kernel
    old, _kernel = _kernel, new
    if old is not None and old is not new:
        if old.notebook_path is not None and old.notebook_path != new.notebook_path:
            _others[old.notebook_path] = old
        else:
            old.close()
    # The kernel's session hears what others change in its room (an MCP client's proposal)
    # from the start, page or no page: a page's link no longer opens it at %load_ext
    follow_outside_changes(new)
    for follower in list(_followers):
        follower(new)
    return new


def _forget(closed: NotebookSession) -> None:
    """``closed`` is no longer the kernel's session nor a caller's."""
    global _kernel
    with _lock:
        if _kernel is closed:
            _kernel = None
        for path in [p for p, kept in _others.items() if kept is closed]:
            del _others[path]


def close() -> None:
    """Let go of every session (``%unload_ext planbook``)."""
    global _kernel
    with _lock:
        for other in list(_others.values()):
            other.close()
        _others.clear()
        if _kernel is not None:
            _kernel.close()
        _kernel = None
