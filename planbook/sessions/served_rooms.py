"""The notebooks of a running Jupyter server, opened by a surface that lives inside that server
(planbook's MCP endpoint): a Session per notebook, over the notebook's collaboration room when
the server has jupyter-collaboration, else over the file.

Why the room, joined over the server's own websocket like any other client (with the server's
token, from a worker thread), rather than the server's in-process shared document: the room is
what the open page and the kernel's session edit, so a step staged there reaches both at once,
and the server's save of the room never fights a write of the file; and the live backend
(documents/live/) already carries every rule of editing a room (conflict checks, merges,
reconnects, saves) on its own thread, so the server's event loop never waits for a document
lock. The price is one loopback round trip per commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planbook.documents.base import NotebookDocument
from planbook.documents.file import FileNotebook
from planbook.documents.live.document import LiveNotebook, open_live
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


@dataclass(frozen=True)
class ServerRoute:
    """How a surface inside a Jupyter server reaches that server's collaboration rooms."""

    #: The server's own base URL (its connection URL, ending with a slash).
    url: str
    #: The server's token; "" when the server runs without one.
    token: str
    #: Whether jupyter-collaboration serves rooms on this server.
    collaboration: bool


def room_session(
    route: ServerRoute,
    root: Path,
    path: Path,
    tool: str,
    credentials: tuple[tuple[str, str], ...] = (),
    server_root: Path | None = None,
) -> Session:
    """A Session that edits ``path`` (a notebook under ``root``, the workspace it is confined
    to) through its collaboration room, joined with the server's token and ``credentials``
    (what a request the server let in carried: the way in on a server whose identity provider
    takes no token); the room is named relative to ``server_root``, the server's root folder
    (``root`` when None: the endpoint inside the server serves its whole root; the stdio server
    may serve a folder under it). LiveConnectionError (one line) when the room does not open."""
    rel = path.relative_to(server_root if server_root is not None else root).as_posix()
    document = open_live(
        route.url,
        route.token,
        rel,
        headers=credentials,
        description=f"live: {rel} in its collaboration room ({tool}; the open page sees changes)",
    )
    try:
        return Session(document, Workspace(root, protected=(path,)), notebook_path=path)
    except BaseException:
        document.close()
        raise


def file_session(root: Path, path: Path, tool: str) -> Session:
    """A Session that edits the notebook file ``path``, confined to ``root``."""
    document = FileNotebook(path, description=f"file: {path.name} ({tool})")
    return Session(document, Workspace(root, protected=(path,)), notebook_path=path)


def reading_document(path: Path, tool: str) -> FileNotebook:
    """The notebook file for reading: it re-reads the file when it changed and never writes."""
    return FileNotebook(path, description=f"file: {path.name} ({tool})")


def version(document: NotebookDocument | Any) -> int | None:
    """What grows with every change of a room's document (own and others'); None for a file."""
    return document.version if isinstance(document, LiveNotebook) else None
