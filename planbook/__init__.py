"""planbook: plan mode for Jupyter notebooks.

Changes an agent (or you) propose are staged as steps, reviewed as diffs, approved, and run
behind checkpoints stored in the notebook itself.

The public names are these few; the floors below them are mapped in docs/architecture.md.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from planbook.version import __version__

if TYPE_CHECKING:
    from planbook.surfaces.api import NotebookSession

__all__ = [
    "Session",
    "__version__",
    "load_ipython_extension",
    "session",
    "unload_ipython_extension",
]

# Every import below is inside a function on purpose: `import planbook` and `%load_ext
# planbook` stay light (heavy: pydantic, the engine, ipywidgets and the comm load on first use).


def __getattr__(name: str) -> Any:
    if name == "Session":  # the Session with what a notebook has: `pb.plan`, `pb.review()`
        from planbook.surfaces.api import NotebookSession  # heavy: pydantic and the engine

        return NotebookSession
    raise AttributeError(f"module 'planbook' has no attribute {name!r}")


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
    """The session of this kernel (created on first use), or a session on another notebook.

    ``notebook``: the .ipynb to edit; by default the one this kernel belongs to (found through
    its Jupyter server, live when the server has collaboration, or ``JPY_SESSION_NAME``), else
    an in-memory notebook; the session says which and why. Another notebook's session is yours
    alone: the magics, the in-cell review and the panel of ``%plan`` stay on the kernel's
    notebook (asking twice for one notebook gives the same session).
    ``kernel``: make this notebook the kernel's: the magics and the page act on it from now on
    (``planbook.session(kernel=True)`` goes back to the notebook this kernel belongs to).
    ``root``: the workspace for file steps (default: the notebook's folder).
    ``fresh``: start a new session even if there is one for this notebook (for the kernel's
    own notebook, the magics and the page follow the new one at once).
    ``live``: False never edits through a collaboration room; True fails if it cannot.
    ``server_url``/``token``: the Jupyter server, for setups where discovery cannot find it.
    """
    from planbook.surfaces import api  # heavy: pydantic, the engine, the documents

    return api.session(
        notebook,
        root=root,
        fresh=fresh,
        live=live,
        server_url=server_url,
        token=token,
        kernel=kernel,
    )


def load_ipython_extension(ipython: Any) -> None:
    from planbook.surfaces.extension import load  # heavy: IPython's magics and the comm

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    api = sys.modules.get("planbook.surfaces.api")  # never made: nothing to close
    if api is not None:
        api.close()


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """planbook's Jupyter server extension: the MCP endpoint (planbook/surfaces/mcp/jupyter.py),
    enabled by the ``jupyter_server_config.d/planbook.json`` the wheel installs. Without the
    ``mcp`` extra the server starts without it, and its log says why."""
    if importlib.util.find_spec("mcp") is None:
        logging.getLogger("planbook").warning(
            "planbook: no MCP endpoint in this Jupyter server: pip install 'planbook[mcp]' "
            "and restart it"
        )
        return []
    return [{"module": "planbook.surfaces.mcp.jupyter"}]
