"""What the MCP endpoint inside a Jupyter server serves: the notebooks under the server's root
folder (the workspace). With jupyter-collaboration on the server each notebook is read and
edited through its collaboration room (sessions/served_rooms.py says why), so a proposal reaches the
open page and the kernel's session at once and reads see what the page holds, unsaved edits and
fresh outputs included; without it, the file, as the stdio server does."""

from __future__ import annotations

from pathlib import Path

from planbook.sessions.served import TOOL, ServedDocument, ServedNotebooks
from planbook.sessions.served_rooms import ServerRoute, room_session, version
from planbook.sessions.session import Session

#: How the documents name the endpoint in their descriptions.
HTTP_TOOL = f"{TOOL} over HTTP"


class ServerTarget(ServedNotebooks):
    """The folder a Jupyter server serves, each notebook through its room when there is one."""

    def __init__(self, root: Path, route: ServerRoute) -> None:
        super().__init__(root)
        self.route = route

    def describe(self) -> str:
        how = (
            "through their collaboration rooms (open pages see proposals at once)"
            if self.route.collaboration
            else "as files (no collaboration on this server: reload an open page to see them)"
        )
        return f"the notebooks of this Jupyter server, under {self.root}, {how}"

    def open_session(self, path: Path) -> Session:
        if not self.route.collaboration:
            return super().open_session(path)
        return room_session(self.route, self.root, path, HTTP_TOOL)

    def document(self, path: Path) -> ServedDocument:
        if not self.route.collaboration:
            return super().document(path)
        # the room's copy is the notebook as the page holds it: read that one, not the file
        return self.session(self.shown(path)).document

    def signature(self, path: Path) -> object:
        if not self.route.collaboration:
            return super().signature(path)
        return version(self.document(path))
