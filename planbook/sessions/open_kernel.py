"""A Session on the notebook this kernel belongs to: found through its Jupyter server (live with
collaboration, through the page without it), a file, or memory, with the workspace beside it.

The floor below the kernel's surfaces: they ask for a session of their own class and never see
how the notebook was found.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from planbook.documents.base import close_document
from planbook.documents.locate import open_document
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace

S = TypeVar("S", bound=Session)


def open_kernel_session(
    session_class: type[S],
    notebook: Path | None,
    *,
    root: Path | None = None,
    live: bool | None = None,
    server_url: str | None = None,
    token: str | None = None,
) -> S:
    """A new ``session_class`` on ``notebook`` (None: the one this kernel belongs to); what
    finding it learned (an unsynced page, warnings) is in its page advice. The document is
    let go again if the session cannot be made."""
    located = open_document(notebook, server_url=server_url, token=token, live=live)
    workspace = None
    if root is not None or located.path is not None:
        base = root if root is not None else located.path.parent  # type: ignore[union-attr]
        workspace = Workspace(base, protected=(located.path,) if located.path else ())
    try:
        session = session_class(located.document, workspace, notebook_path=located.path)
        session.page_advice.adopt(located)
    except BaseException:
        close_document(located.document)
        raise
    return session
