"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the real HTTP path.

It answers ``POST /v1/chat/completions`` from a fixed script, one reply per request, streaming
(server-sent events) or not, as the client asks. A reply is text, tool calls, or an HTTP error
(429 with a short ``retry-after-ms``, 500, ...). Every request body is kept for assertions.
No model anywhere: this is the stand-in for a provider, so tests never reach one.

    with ScriptedOpenAI([Reply(tool_calls=[("list_cells", {})]), Reply(content="done")]) as api:
        model = api.model()            # a pydantic-ai OpenAIChatModel pointed at the server
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

_ERROR_TYPES = {
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
    401: "invalid_api_key",
    400: "invalid_request_error",
}


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = None
    #: Reasoning text, sent as ``reasoning_content`` (as DeepSeek, vLLM and others do).
    reasoning: str | None = None
    #: (tool name, arguments as a dict or as raw JSON text, which may be malformed on purpose)
    tool_calls: Sequence[tuple[str, dict[str, Any] | str]] = ()
    #: Not 200: answer with this HTTP error instead (the script still advances).
    status: int = 200
    error: str = "scripted error"
    #: Seconds to wait before answering (for Stop / responsiveness tests).
    delay: float = 0.0


@dataclass
class ScriptedOpenAI:
    replies: list[Reply]
    model_name: str = "scripted-model"
    #: Request bodies in arrival order.
    requests: list[dict[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), init=False)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first (use it as a context manager)"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> Self:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def model(self, **provider: Any) -> Any:
        """A pydantic-ai ``OpenAIChatModel`` talking to this server (api key is a dummy)."""
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(
            self.model_name,
            provider=OpenAIProvider(base_url=self.base_url, api_key="test-key", **provider),
        )

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if not self.replies:
                return Reply(status=400, error="the scripted server has no reply left")
            return self.replies.pop(0)

    def new_id(self) -> int:
        with self._lock:
            return next(self._ids)


def _handler_for(api: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._json(400, _error(400, "request body is not JSON"))
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, _error(404, f"no route {self.path}"))
                return
            reply = api.next_reply(body)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status != 200:
                self._json(
                    reply.status,
                    _error(reply.status, reply.error),
                    {"retry-after-ms": "20"} if reply.status == 429 else None,
                )
                return
            n = api.new_id()
            if body.get("stream"):
                self._stream(reply, n, str(body.get("model", api.model_name)))
            else:
                self._json(200, _completion(reply, n, str(body.get("model", api.model_name))))

        def _json(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: Reply, n: int, model: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in _chunks(reply, n, model):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def _error(status: int, message: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": _ERROR_TYPES.get(status, "error"),
            "param": None,
            "code": None,
        }
    }


def _arguments(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _completion(reply: Reply, n: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _usage(),
    }


def _chunks(reply: Reply, n: int, model: str) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.reasoning:
        half = len(reply.reasoning) // 2
        yield chunk({"reasoning_content": reply.reasoning[:half]})
        yield chunk({"reasoning_content": reply.reasoning[half:]})
    if reply.content:
        # Two pieces, so the client really has to put a streamed text together.
        half = len(reply.content) // 2
        yield chunk({"content": reply.content[:half]})
        yield chunk({"content": reply.content[half:]})
    for i, (name, args) in enumerate(reply.tool_calls):
        text = _arguments(args)
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": f"call_{n}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        cut = len(text) // 2
        for piece in (text[:cut], text[cut:]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    yield {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [],
        "usage": _usage(),
    }
