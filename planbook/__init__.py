"""planbook: plan mode for Jupyter notebooks.

Changes an agent (or you) propose are staged as steps, reviewed as diffs, approved, and run
behind checkpoints stored in the notebook itself.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from planbook.session import Session

__all__ = [
    "Session",
    "__version__",
    "load_ipython_extension",
    "session",
    "unload_ipython_extension",
]
__version__ = "0.1.0"

_current: Session | None = None
_lock = threading.Lock()


def session(
    notebook: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    fresh: bool = False,
) -> Session:
    """The session of this kernel (created on first use).

    ``notebook``: the .ipynb to edit; by default the one this kernel belongs to
    (``JPY_SESSION_NAME``), else an in-memory notebook (the session says so).
    ``root``: the workspace for file steps (default: the notebook's folder).
    """
    global _current
    from planbook.documents.locate import open_document
    from planbook.workspace import Workspace

    with _lock:
        wanted = Path(notebook).resolve() if notebook is not None else None
        if (
            _current is not None
            and not fresh
            and (wanted is None or wanted == _current.notebook_path)
        ):
            return _current
        located = open_document(wanted)
        workspace = None
        if root is not None or located.path is not None:
            base = Path(root) if root is not None else located.path.parent  # type: ignore[union-attr]
            workspace = Workspace(base, protected=(located.path,) if located.path else ())
        _current = Session(located.document, workspace, notebook_path=located.path)
        return _current


def load_ipython_extension(ipython: Any) -> None:
    from planbook.magics import register

    register(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    global _current
    _current = None
