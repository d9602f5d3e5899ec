"""Where a notebook's collaboration room lives, and the HTTP request that opens its session.

jupyter-collaboration serves a room per document: ``PUT /api/collaboration/session/<path>``
answers the room's file id and the server's session id, and the room's websocket URL is built
from them.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RoomAddress:
    """Where a notebook's collaboration room lives."""

    server_url: str
    """Base URL of the Jupyter server, ending with a slash (http://127.0.0.1:8888/)."""
    token: str
    """The server's token ("" when the server needs none)."""
    path: str
    """The notebook's path relative to the server's root_dir, with forward slashes."""
    headers: tuple[tuple[str, str], ...] = ()
    """Credentials sent with every request besides the token (whose header they replace when
    they carry an Authorization), for a server whose identity provider authenticates
    otherwise (a cookie, a header set by a proxy or a hub)."""

    def header_lines(self) -> list[str]:
        """``headers`` as the websocket handshake takes them."""
        return [f"{name}: {value}" for name, value in self.headers]

    def open_session(self) -> tuple[str, str]:
        """PUT /api/collaboration/session/<path>: (fileId, sessionId) of the room.

        The contents API is asked first whether the file is there (an HTTPError 404 if not):
        jupyter-collaboration 5.0 gives a missing file a session anyway, and the room's
        websocket then fails to load it, and that failure often breaks the server's websocket
        server: no room of planbook's opened on that server again for as long as we watched
        (docs/live.md, "A missing notebook")."""
        quoted = urllib.parse.quote(self.path)
        self._request("GET", f"api/contents/{quoted}?content=0")
        body = json.dumps({"format": "json", "type": "notebook"}).encode()
        reply = self._request("PUT", f"api/collaboration/session/{quoted}", body)
        return str(reply["fileId"]), str(reply["sessionId"])

    def _request(self, method: str, path: str, body: bytes | None = None) -> Any:
        request = urllib.request.Request(
            urllib.parse.urljoin(self.server_url, path), data=body, method=method
        )
        if body is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in self.headers:
            request.add_header(name, value)
        if self.token and not request.has_header("Authorization"):
            request.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def room_url(self, file_id: str, session_id: str) -> str:
        base = self.server_url.replace("http", "ws", 1)
        query = urllib.parse.urlencode({"sessionId": session_id, "token": self.token})
        return f"{base}api/collaboration/room/json:notebook:{file_id}?{query}"
