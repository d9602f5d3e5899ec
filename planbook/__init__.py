"""planbook: plan mode for Jupyter notebooks.

Changes an agent (or you) propose are staged as steps, reviewed as diffs, approved, and run
behind checkpoints stored in the notebook itself.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


class _Package(types.ModuleType):
    """Importing the module ``planbook.session`` (lazily, below) must not replace the function
    ``planbook.session``: the import system sets the submodule as an attribute of the package."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "session" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    # `import planbook` stays light (the engine and pydantic load on first use), which keeps
    # `%load_ext planbook` and `import planbook` in a script fast.
    if name == "Session":
        from planbook.session import Session

        return Session
    raise AttributeError(f"module 'planbook' has no attribute {name!r}")


def session(
    notebook: str | os.PathLike[str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    fresh: bool = False,
    live: bool | None = None,
    server_url: str | None = None,
    token: str | None = None,
) -> Session:
    """The session of this kernel (created on first use).

    ``notebook``: the .ipynb to edit; by default the one this kernel belongs to (found through
    its Jupyter server, live when the server has collaboration, or ``JPY_SESSION_NAME``), else
    an in-memory notebook; the session says which and why.
    ``root``: the workspace for file steps (default: the notebook's folder).
    ``fresh``: start a new session even if this kernel has one.
    ``live``: False never edits through a collaboration room; True fails if it cannot.
    ``server_url``/``token``: the Jupyter server, for setups where discovery cannot find it.
    """
    global _current
    from planbook.documents.base import close_document
    from planbook.documents.locate import open_document
    from planbook.page_advice import adopt as adopt_located
    from planbook.session import Session
    from planbook.workspace import Workspace

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


def load_ipython_extension(ipython: Any) -> None:
    from planbook.comm import register as register_cell_review
    from planbook.magics import register

    register(ipython)
    register_cell_review(ipython)  # the in-cell review of the JupyterLab extension, if any


def unload_ipython_extension(ipython: Any) -> None:
    global _current
    with _lock:
        if _current is not None:
            _current.close()
        _current = None
