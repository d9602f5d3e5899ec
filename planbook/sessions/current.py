"""The kernel's session: the one Session the magics, the in-cell review and ``planbook.session()``
act on, made on first use from the notebook this kernel belongs to."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from planbook.documents.base import close_document
from planbook.documents.locate import open_document
from planbook.sessions.page_advice import adopt as adopt_located
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace

_current: Session | None = None
_lock = threading.Lock()


def session(
    notebook: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    fresh: bool = False,
    live: bool | None = None,
    server_url: str | None = None,
    token: str | None = None,
) -> Session:
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
        located = open_document(wanted, server_url=server_url, token=token, live=live)
        workspace = None
        if root is not None or located.path is not None:
            base = Path(root) if root is not None else located.path.parent  # type: ignore[union-attr]
            workspace = Workspace(base, protected=(located.path,) if located.path else ())
        try:
            new = Session(located.document, workspace, notebook_path=located.path)
            adopt_located(new, located)
        except BaseException:
            close_document(located.document)
            raise
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
