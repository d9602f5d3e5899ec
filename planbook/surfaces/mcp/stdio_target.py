"""What the stdio server (``planbook mcp``) serves: the notebooks of its folder, each through the
way that does not fight whoever else holds it.

A notebook under the root of a running Jupyter server with collaboration on is proposed to and
read through its collaboration room, joined over that server's websocket with the token of its
runtime file, as the endpoint inside the server does (server_target.py): the room is what the
open page and the kernel's session edit, so a step reaches them at once, the person's unsaved
typing stays, and the server's own save writes the file. Writing the file instead would make the
room reload it (losing what was typed since its last save) or save over it. So a room that does
not open is one line and nothing staged, never the file. The room's session is kept for the
process's life; its name is relative to the server's root, the confinement stays this folder.

Any other notebook: through the kernel of its open page on a server without collaboration
(kernel_staging.py), else its file.
"""

from __future__ import annotations

import time
from pathlib import Path

from planbook.errors import LiveConnectionError
from planbook.sessions.served import TOOL, ServedDocument
from planbook.sessions.served_kernels import RunningServers, ServedRoom
from planbook.sessions.served_rooms import room_session, version
from planbook.sessions.session import Session
from planbook.surfaces.mcp.kernel_staging import PagesTarget

#: A notebook whose room did not open is read from its file, and not tried again for reading
#: this long (a wait polls twice a second); a proposal always tries again.
NO_ROOM_SECONDS = 5.0


class StdioTarget(PagesTarget):
    """Served notebooks, each through its room when a running server collaborates on it."""

    def __init__(self, path: Path, servers: RunningServers) -> None:
        super().__init__(path)
        self.servers = servers
        #: Notebooks whose room did not open, and when: read from the file meanwhile.
        self._no_room: dict[Path, float] = {}
        #: Notebooks whose room's session is open (kept for the process's life).
        self._in_rooms: set[Path] = set()

    def describe(self) -> str:
        return (
            f"{super().describe()}: a notebook under a running Jupyter server with "
            "collaboration goes through its collaboration room (open pages see proposals at "
            "once), one open in a page without collaboration through the page's kernel, any "
            "other as its file"
        )

    def open_session(self, path: Path) -> Session:
        room = self.servers.room_of(path)
        if room is None:
            return super().open_session(path)
        try:
            return room_session(room.route, self.root, path, TOOL, server_root=room.root)
        except LiveConnectionError as exc:
            raise not_joined(self.shown(path), room, exc) from None

    def document(self, path: Path) -> ServedDocument:
        live = self._room_document(path)
        return live if live is not None else super().document(path)

    def signature(self, path: Path) -> object:
        live = self._room_document(path)
        return version(live) if live is not None else super().signature(path)

    def _room_document(self, path: Path) -> ServedDocument | None:
        """The room's copy of the notebook when it goes through a room (joined now if it was
        not yet); None for a file's or a page's notebook, or a room that did not open."""
        if time.monotonic() - self._no_room.get(path, -NO_ROOM_SECONDS) < NO_ROOM_SECONDS:
            return None
        if path not in self._in_rooms and self.servers.room_of(path) is None:
            return None  # no session is opened just to read a file: reading never writes
        try:
            document = self.session(self.shown(path)).document
        except LiveConnectionError:
            self._no_room[path] = time.monotonic()
            return None
        if version(document) is None:  # staged into the file before a server collaborated
            return None
        self._in_rooms.add(path)
        return document


def not_joined(shown: str, room: ServedRoom, exc: LiveConnectionError) -> LiveConnectionError:
    """The one line for a room that did not open: nothing staged, the file left alone."""
    return LiveConnectionError(
        f"{shown} is served with collaboration by the Jupyter server at {room.route.url}, but "
        f"its collaboration room did not open ({exc}): nothing was staged, and the file was "
        "not written (the room would overwrite it); check that the server still runs"
    )
