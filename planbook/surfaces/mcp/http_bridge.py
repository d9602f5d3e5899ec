"""The MCP endpoint's Tornado handler: each request is first the Jupyter server's (its host and
origin checks, its identity provider, its authorizer: a request without the server's token or
login is refused with 403 and reaches no tool), then handed to the MCP SDK's streamable HTTP
session manager as an ASGI request, whose answer (JSON, or an event stream) is written back as
it comes. The headers of a request let in are told to ``let_in`` (the served folder joins
collaboration rooms with them on a server whose identity provider takes no token).

The body is bounded before it is read: a request that says it is larger than ``MAX_BODY_BYTES``
is refused at once with one line (413), and Tornado cuts a chunked body at that size. A client
that goes away is told to the SDK as an ASGI ``http.disconnect``; writing to it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from tornado import web
from tornado.iostream import StreamClosedError

#: The largest request body taken (JSON-RPC): a cell's source or a file's text of a few MB.
MAX_BODY_BYTES = 4 * 1024 * 1024

Message = MutableMapping[str, Any]
#: Told the headers of every request the server let in, before the SDK sees it.
LetIn = Callable[[Iterable[tuple[str, str]]], None]


class SessionManagerTask:
    """The SDK's session manager, running for the server's life in a task of its event loop
    (started by the first request; it ends with the server's process)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    async def started(self) -> StreamableHTTPSessionManager:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()
        return self.manager

    async def _run(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # until the server's loop ends


@web.stream_request_body
class MCPHandler(APIHandler):
    """``/planbook/mcp``: POST (client messages), GET (the server's event stream), DELETE
    (end of session), each authenticated and authorized as a write or read of contents."""

    auth_resource = "contents"

    def initialize(self, manager: SessionManagerTask, let_in: LetIn) -> None:
        self.manager = manager
        self.let_in = let_in
        self._body: list[bytes] = []
        self._size = 0
        self._gone = asyncio.Event()
        self._started = False

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()  # the server's checks: host, origin, who is asking
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise web.HTTPError(
                413,
                f"the request body of {int(length):,} bytes is over planbook's limit of "
                f"{MAX_BODY_BYTES:,} bytes; nothing was done",
            )
        with contextlib.suppress(AttributeError):  # a chunked body is cut at the same size
            self.request.connection.set_max_body_size(MAX_BODY_BYTES)  # type: ignore[union-attr]

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size <= MAX_BODY_BYTES:
            self._body.append(chunk)

    def on_connection_close(self) -> None:
        self._gone.set()

    @authorized
    async def post(self) -> None:
        await self._forward()

    @authorized
    async def get(self) -> None:
        await self._forward()

    @authorized
    async def delete(self) -> None:
        await self._forward()

    # --- the ASGI side ---------------------------------------------------------------------
    def _scope(self) -> dict[str, Any]:
        request = self.request
        host, _, port = (request.host or "127.0.0.1").rpartition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode(),
            "query_string": request.query.encode(),
            "root_path": "",
            "headers": [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in request.headers.get_all()
            ],
            "client": (request.remote_ip or "", 0),
            "server": (host or request.host, int(port) if port.isdigit() else 0),
        }

    async def _forward(self) -> None:
        if self._size > MAX_BODY_BYTES:
            raise web.HTTPError(413, f"the request body is over {MAX_BODY_BYTES:,} bytes")
        self.let_in(self.request.headers.get_all())
        manager = await self.manager.started()
        body = b"".join(self._body)
        sent_body = False

        async def receive() -> Message:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await self._gone.wait()
            return {"type": "http.disconnect"}

        await manager.handle_request(self._scope(), receive, self._send)
        if not self._finished and not self._gone.is_set():
            self.finish()

    async def _send(self, message: Message) -> None:
        if self._gone.is_set() or self._finished:
            return  # the client went away: what was meant for it goes nowhere
        kind = message["type"]
        if kind == "http.response.start":
            self._started = True
            self.set_status(int(message["status"]))
            self._clear_representation_headers()
            for name, value in message.get("headers", []):
                self.add_header(bytes(name).decode("latin-1"), bytes(value).decode("latin-1"))
        elif kind == "http.response.body":
            chunk = bytes(message.get("body", b""))
            if chunk:
                self.write(chunk)
            if message.get("more_body", False):
                await self._flush()
            else:
                content_type = self._headers.get("Content-Type", "application/json")
                self.finish(set_content_type=content_type)

    async def _flush(self) -> None:
        try:
            await self.flush()
        except StreamClosedError:
            self._gone.set()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors as one JSON-RPC error line, which an MCP client shows as it is."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = (
            exc.log_message
            if isinstance(exc, web.HTTPError) and exc.log_message
            else self._reason or "error"
        )
        self.set_header("Content-Type", "application/json")
        self.finish(
            json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
            )
        )
