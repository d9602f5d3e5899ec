"""The executor's MCP caller: calls one tool of a planbook.toml server for an approved step.

Given to the Session's executor (engine/mcp_calls.py's ``McpCaller``), so the engine never
imports the MCP SDK. Each call connects afresh (a stdio server is started and stopped again)
on a thread of its own with its own event loop: the executor is synchronous and may be called
from a kernel whose loop is running (an approval in a cell, or the agent's own tool call).
"""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from planbook.engine.mcp_calls import McpResult, error_line
from planbook.engine.mcp_servers import (
    HttpServer,
    McpServerEntry,
    StdioServer,
    expand,
    load_servers,
)
from planbook.errors import McpServerError

__all__ = ["McpClient", "result_text"]


class McpClient:
    """Calls the tools of the servers in ``root``'s planbook.toml, as the file says now."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> McpResult:
        servers, problems = load_servers(self.root)
        entry = servers.get(server)
        if entry is None:
            why = next((p for p in problems if f"[mcp.servers.{server}]" in p), None)
            raise McpServerError(
                why
                or f"there is no MCP server {server!r} in planbook.toml's [mcp.servers]; "
                "nothing was sent"
            )
        box: list[McpResult | BaseException] = []

        def run() -> None:
            try:
                box.append(asyncio.run(_call(server, entry, tool, arguments, self.root)))
            except BaseException as exc:  # handed to the caller's thread
                box.append(exc)

        worker = threading.Thread(target=run, name=f"planbook-mcp-{server}", daemon=True)
        worker.start()
        worker.join()
        outcome = box[0]
        if isinstance(outcome, McpServerError):
            raise outcome
        if isinstance(outcome, BaseException):
            raise McpServerError(
                f"MCP server {server}: calling {tool} failed ({error_line(outcome)}); it may or "
                "may not have acted: check before retrying"
            ) from outcome
        return outcome


async def _call(
    name: str, entry: McpServerEntry, tool: str, arguments: dict[str, Any], root: Path
) -> McpResult:
    from mcp import Client  # heavy: the mcp SDK

    try:
        async with asyncio.timeout(entry.timeout), AsyncExitStack() as stack:
            transport = await _transport(name, entry, root, stack)
            client = await stack.enter_async_context(Client(transport))
            result = await client.call_tool(tool, arguments)
    except TimeoutError:
        raise McpServerError(
            f"MCP server {name}: {tool} did not answer within {entry.timeout:g}s (its `timeout` "
            "in planbook.toml); it may or may not have acted: check before retrying"
        ) from None
    return McpResult(text=result_text(result), is_error=bool(result.is_error))


async def _transport(name: str, entry: McpServerEntry, root: Path, stack: AsyncExitStack) -> Any:
    """What the SDK's ``Client`` connects through; an HTTP client is closed with ``stack``."""
    from mcp.client.stdio import StdioServerParameters  # heavy: the mcp SDK
    from mcp.client.streamable_http import streamable_http_client  # heavy: the mcp SDK

    if isinstance(entry, StdioServer):
        return StdioServerParameters(
            command=entry.command,
            args=list(entry.args),
            env={k: expand(v, name) for k, v in entry.env.items()} or None,
            cwd=str(root / entry.cwd) if entry.cwd else str(root),
        )
    assert isinstance(entry, HttpServer)
    import httpx2  # heavy: the mcp SDK's HTTP client

    headers = {k: expand(v, name) for k, v in entry.headers.items()}
    http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
    return streamable_http_client(expand(entry.url, name), http_client=http)


def result_text(result: Any) -> str:
    """A tool's result as text: its text blocks, and a line for anything else it returned."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]")
        elif kind == "resource_link":
            parts.append(f"[link {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'content'}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)
