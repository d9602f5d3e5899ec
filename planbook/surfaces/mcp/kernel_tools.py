"""The read tool for a notebook's kernel: its variables (names, types, shapes, short values), or
one variable in detail, by the same bounded inspection as the in-kernel agent's. Only where a
kernel is attached (sessions/served_kernels.py says where that is); else one line saying so."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from planbook.errors import PlanbookError
from planbook.sessions import served_kernels
from planbook.sessions.served import ServedNotebooks
from planbook.sessions.served_kernels import KernelReach
from planbook.surfaces.mcp.calls import in_thread, one_line
from planbook.surfaces.mcp.limits import NAME_CHARS, Notebook

VariableName = Annotated[
    str | None,
    Field(
        max_length=NAME_CHARS,
        description=(
            "One variable's plain name, such as `df`, to describe it in detail (shape, dtypes, "
            "columns, head); leave it out to list every variable. Nothing is evaluated."
        ),
    ),
]


def register(server: MCPServer, target: ServedNotebooks, kernels: KernelReach) -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def read_variables(name: VariableName = None, notebook: Notebook = None) -> str:
        """Read the variables of the notebook's kernel, where one is attached (the notebook is
        open in Jupyter): each variable's name, type, shape or length and a short value; with
        `name`, that variable in detail. Bounded; nothing you send is run as code."""
        path = await in_thread(target.notebook_path, notebook)
        try:
            return await served_kernels.read_variables(kernels, path, target.shown(path), name)
        except PlanbookError as exc:
            raise ToolError(one_line(exc.said_to("cli"))) from None
