"""An MCP client for the tests: the official SDK's stdio client and ClientSession, talking to
planbook's server started as a real subprocess (``python -m planbook.surfaces.mcp TARGET``)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, ImageContent, Implementation, TextContent

if TYPE_CHECKING:
    from tests.support.jupyter_server import RunningServer


@asynccontextmanager
async def connect(
    target: Path,
    *,
    name: str = "test-agent",
    version: str = "1.0",
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """A session with planbook's MCP server on ``target``, introduced as ``name version``;
    ``args``: how to start it with ``python`` in ``target``'s folder (default:
    ``-m planbook.surfaces.mcp TARGET``; the CLI's ``-m planbook mcp ...`` is the other way);
    ``env``: variables set on top of this process's environment."""
    params = StdioServerParameters(
        command=sys.executable,
        args=args if args is not None else ["-m", "planbook.surfaces.mcp", str(target)],
        # the whole environment: PYTHONPATH puts this checkout's planbook first
        env={**os.environ, **(env or {})},
        cwd=str(target if target.is_dir() else target.parent),
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(
                read, write, client_info=Implementation(name=name, version=version)
            ) as session,
        ):
            await session.initialize()
            yield session


def connect_served(
    server: RunningServer, *, name: str = "test-agent", version: str = "1.0"
) -> AbstractAsyncContextManager[ClientSession]:
    """A client of ``python -m planbook mcp ROOT`` on a running Jupyter server's root folder,
    which finds that server by its runtime files, as it does on the person's machine."""
    return connect(
        server.root,
        name=name,
        version=version,
        args=["-m", "planbook", "mcp", str(server.root)],
        env={"JUPYTER_RUNTIME_DIR": server.env["JUPYTER_RUNTIME_DIR"]},
    )


def text(result: CallToolResult) -> str:
    """The text blocks of a tool's answer, joined."""
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def images(result: CallToolResult) -> list[ImageContent]:
    return [b for b in result.content if isinstance(b, ImageContent)]


async def ok(session: ClientSession, tool: str, **arguments: Any) -> str:
    """Call ``tool``; it must succeed; its text."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return text(result)


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """Call ``tool``; it must fail with a one-line error; that line."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was not refused: {text(result)}"
    message = text(result)
    assert "\n" not in message.strip(), message
    return message
