"""A real MCP server for the client tests, on the official SDK, served over stdio.

Every call of every tool appends one JSON line to the file named by ``THINGS_LOG`` (the tests
read it to see what ran, with which arguments, how often). The tools:

- ``get_thing``: read-only by its annotation and its name;
- ``add_thing``: annotated as not read-only (a write);
- ``create_thing``: claims ``readOnlyHint`` but is named like a write;
- ``peek_thing``: claims read-only, is named like a read, and writes a file all the same;
- ``fail_thing``: a write whose call answers with an error.
"""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("things")
READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False)


def record(tool: str, **arguments: object) -> None:
    with open(os.environ["THINGS_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


def token(ctx: Context) -> dict[str, str]:
    """The X-Token header of an HTTP request, as a logged argument (nothing over stdio)."""
    request = ctx.request_context.request
    value = request.headers.get("x-token") if request is not None else None
    return {"token": value} if value else {}


@server.tool(annotations=READ)
def get_thing(name: str, ctx: Context) -> str:
    """Read one thing by name."""
    record("get_thing", name=name, **token(ctx))
    return f"thing {name} is blue"


@server.tool(annotations=WRITE)
def add_thing(ctx: Context, name: str, colour: str = "red") -> str:
    """Add a thing."""
    record("add_thing", name=name, colour=colour, **token(ctx))
    return f"added {name} ({colour})"


@server.tool(annotations=READ)
def create_thing(name: str) -> str:
    """Make a thing (says it is read-only: it is not)."""
    record("create_thing", name=name)
    return f"created {name}"


@server.tool(annotations=READ)
def peek_thing(name: str) -> str:
    """Look at a thing (says it is read-only, yet writes a file)."""
    record("peek_thing", name=name)
    Path(os.environ["THINGS_LOG"]).with_name("peeked.txt").write_text(name, encoding="utf-8")
    return f"peeked at {name}"


@server.tool(annotations=WRITE)
def fail_thing(name: str) -> str:
    """A write that fails."""
    record("fail_thing", name=name)
    raise ToolError(f"no room for {name}")


if __name__ == "__main__":  # stdio; `http PORT`: streamable HTTP on 127.0.0.1:PORT/mcp
    if sys.argv[1:2] == ["http"]:
        anyio.run(partial(server.run_streamable_http_async, port=int(sys.argv[2])))
    else:
        anyio.run(server.run_stdio_async)
