"""The MCP server: the read, propose and review tools over the served notebooks, and nothing
else (no tool approves, rejects, changes the mode or edits rules). ``serve_stdio`` serves it
over stdio, the form Claude Code, Codex, Cursor and VS Code start by command.

Every call is checked before it reaches a tool: an unknown tool name (``approve`` included) or
an argument the tool does not take is refused, and a malformed argument is named in one line
(the SDK's own message is a multi-line pydantic report that echoes the caller's data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from planbook.errors import first_problem
from planbook.sessions.served import ServedNotebooks
from planbook.sessions.served_kernels import KernelReach, RunningServers
from planbook.surfaces.mcp import ask, kernel_tools, propose_tools, read_tools, review
from planbook.surfaces.mcp.kernel_staging import KernelStaging
from planbook.surfaces.mcp.propose_tools import PageStaging
from planbook.surfaces.mcp.stdio_target import StdioTarget
from planbook.version import __version__

INSTRUCTIONS = """\
planbook serves Jupyter notebooks under review. Read freely (list_notebooks, read_notebook,
read_cell, read_plan, list_files, read_file; read_variables where the notebook's kernel runs).
Every change is a proposal: the propose_* tools stage it as a step of the notebook's plan, with
your reason, for the person to review; nothing changes until they approve it. To ask the person
something, call ask_person. Then call wait_for_review to learn what was decided, how the
approved steps ran and what the person answered, and continue from there. No tool approves,
rejects, answers or changes the mode.
"""


class PlanbookServer(MCPServer[Any]):
    """MCPServer with planbook's checks on every call's name and arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arguments: dict[str, frozenset[str]] | None = None

    async def arguments(self) -> dict[str, frozenset[str]]:
        """Tool name -> the arguments its schema declares (read once: tools are fixed)."""
        if self._arguments is None:
            self._arguments = {
                t.name: frozenset(t.input_schema.get("properties", {}))
                for t in await self.list_tools()
            }
        return self._arguments

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        allowed = (await self.arguments()).get(name)
        if allowed is None:
            raise ToolError(
                f"unknown tool {name!r}: planbook's tools read and propose; approving, "
                "rejecting and the mode are the person's (the panel, %approve, planbook approve)"
            )
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            takes = ", ".join(sorted(allowed)) or "no arguments"
            raise ToolError(f"{name} takes no argument {unknown[0]!r} (it takes: {takes})")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                where, problem = first_problem(cause, whole="arguments")
                raise ToolError(f"{name}: invalid argument `{where}`: {problem}") from None
            raise


def build_server(
    target: ServedNotebooks, kernels: KernelReach, pages: PageStaging | None = None
) -> PlanbookServer:
    """The server over ``target``; ``kernels`` is how a notebook's kernel is reached (the
    running Jupyter servers for stdio, the server's own kernel manager inside Jupyter);
    ``pages``, where proposals to a notebook its open page holds go (inside a Jupyter server
    without collaboration)."""
    server = PlanbookServer(
        "planbook",
        version=__version__,
        instructions=INSTRUCTIONS + f"This server serves {target.describe()}.",
    )
    proposals = propose_tools.Proposals()
    read_tools.register(server, target)
    kernel_tools.register(server, target, kernels)
    propose_tools.register(server, target, proposals, pages)
    ask.register(server, target, proposals, pages)
    review.register(server, target, proposals)
    return server


def serve_stdio(target: Path) -> None:
    """Serve ``target`` (a notebook or a folder of notebooks) over stdio until the client
    closes the connection. A notebook under a running Jupyter server with collaboration on is
    proposed to and read through its collaboration room (stdio_target.py). A notebook open in
    a running Jupyter server without collaboration, with its page connected to its kernel, is
    proposed to and read through that kernel, as the endpoint inside Jupyter does
    (kernel_staging.py), even before this process proposed anything to it (an agent that
    reconnects starts a new process); any other, its file."""
    kernels = RunningServers()
    served = StdioTarget(target, kernels)
    served.pages = KernelStaging(kernels, served.root, follow_pages=True)
    server = build_server(served, kernels, pages=served.pages)
    try:
        anyio.run(server.run_stdio_async)
    finally:
        served.close()  # leave the rooms joined (their websockets and threads)
