"""How a tool call runs: its blocking work (file reads, the notebook's lock, a save) in a worker
thread, so one slow call never stalls the others; a planbook error comes back as a tool error of
one line, its fixes named as the ``planbook`` command says them."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from planbook.errors import PlanbookError
from planbook.surfaces.mcp.origin import origin_of

T = TypeVar("T")


async def in_thread(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a worker thread; a PlanbookError becomes a one-line ToolError."""
    try:
        return await anyio.to_thread.run_sync(partial(work, *args))
    except PlanbookError as exc:
        raise ToolError(one_line(exc.said_to("cli"))) from None


def one_line(text: str) -> str:
    return " ".join(text.split())


def client_origin(ctx: Context[Any, Any]) -> str:
    """The origin of this call's client: its name and version from the initialize request."""
    params = ctx.session.client_params
    return origin_of(params.client_info if params is not None else None)
