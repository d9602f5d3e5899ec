"""What the MCP endpoint inside a Jupyter server serves: the notebooks under the server's root
folder (the workspace). With jupyter-collaboration on the server each notebook is read and
edited through its collaboration room (sessions/served_rooms.py says why), so a proposal reaches the
open page and the kernel's session at once and reads see what the page holds, unsaved edits and
fresh outputs included. Without it, a notebook whose open page holds it is proposed to and read
through its kernel (kernel_staging.py); any other, the file, as the stdio server does."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from planbook.sessions.served import TOOL, ServedDocument
from planbook.sessions.served_rooms import ServerRoute, room_session, version
from planbook.sessions.session import Session
from planbook.surfaces.mcp.kernel_staging import PagesTarget

#: How the documents name the endpoint in their descriptions.
HTTP_TOOL = f"{TOOL} over HTTP"
#: Headers of a request that say nothing about who asks (the transport's, the MCP session's):
#: every other one may be how the server's identity provider knows the caller.
NOT_CREDENTIALS = frozenset(
    {
        "host",
        "origin",
        "referer",
        "user-agent",
        "accept",
        "accept-encoding",
        "accept-language",
        "content-type",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "expect",
        "upgrade",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    }
)


def credentials_of(headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """What of a request's headers may carry its credentials (a cookie, an authorization, a
    header a proxy or hub sets), to be sent again when joining a room for it."""
    return tuple(
        (name, value)
        for name, value in headers
        if name.lower() not in NOT_CREDENTIALS and not name.lower().startswith("sec-websocket-")
    )


class ServerTarget(PagesTarget):
    """The folder a Jupyter server serves, each notebook through its room when there is one."""

    def __init__(self, root: Path, route: ServerRoute) -> None:
        super().__init__(root)
        self.route = route
        #: Rooms are joined with the credentials of the latest request the server's identity
        #: provider let in (every request that reaches a tool was), besides the server's
        #: token: an identity provider may take no token (a hub, a proxy's header).
        self.credentials: tuple[tuple[str, str], ...] = ()

    def let_in(self, headers: Iterable[tuple[str, str]]) -> None:
        """A request the server authenticated and authorized: remember its credentials."""
        self.credentials = credentials_of(headers)

    def describe(self) -> str:
        how = (
            "through their collaboration rooms (open pages see proposals at once)"
            if self.route.collaboration
            else "through the kernel of the page that has a notebook open (collaboration is "
            "off or absent on this server: planbook in that kernel stages into the page), "
            "else as files"
        )
        return f"the notebooks of this Jupyter server, under {self.root}, {how}"

    def open_session(self, path: Path) -> Session:
        if not self.route.collaboration:
            return super().open_session(path)
        return room_session(self.route, self.root, path, HTTP_TOOL, self.credentials)

    def document(self, path: Path) -> ServedDocument:
        if not self.route.collaboration:  # through the page's kernel, else the file
            return super().document(path)
        # the room's copy is the notebook as the page holds it: read that one, not the file
        return self.session(self.shown(path)).document

    def signature(self, path: Path) -> object:
        if not self.route.collaboration:
            return super().signature(path)
        return version(self.document(path))
