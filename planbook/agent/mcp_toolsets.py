"""The MCP servers of planbook.toml as toolsets of the agent, each behind a gate.

Each ``[mcp.servers.NAME]`` becomes a pydantic-ai ``MCPToolset`` (started when a run starts,
stopped when it ends), its tools named ``NAME_tool`` for the model. The gate decides each call:

- a rule (``[permissions] mcp = { "NAME.tool" = ... }``) that denies: refused;
- a tool that runs at once (engine/rules/mcp_tools.py: annotated read-only and not named like a
  write) with no rule asking about it: called now, and its result goes to the model;
- every other call: an ``mcp_call`` step through the same path as the write tools: staged in
  plan mode; outside it asked about (ask mode, an ask rule), or run at once and recorded when a
  rule allows it or the mode does (act; auto-edit asks first, as for shell). The executor makes
  the call once the step is approved, and its result goes to the model.

A server that cannot start, or an entry that is wrong, gives one line and is left out; the
agent and the other servers work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from planbook.agent.context import AgentDeps
from planbook.agent.staging import stage_change
from planbook.engine.mcp_calls import error_line
from planbook.engine.mcp_servers import HttpServer, McpServerEntry, expand, load_servers
from planbook.engine.rules.mcp_tools import runs_at_once
from planbook.errors import McpServerError

if TYPE_CHECKING:
    from pydantic_ai.mcp import MCPToolset

__all__ = ["McpGate", "mcp_toolsets"]

_READ_NOTE = " [planbook: read-only, runs at once]"
_WRITE_NOTE = " [planbook: acts outside the notebook: staged as a step for the person's review]"


def mcp_toolsets(ctx: RunContext[AgentDeps]) -> AbstractToolset[AgentDeps] | None:
    """The toolsets of the servers in planbook.toml as it is at the start of the run."""
    deps = ctx.deps
    servers, problems = load_servers(deps.session.workspace.root)
    for line in problems:
        deps.say("error", line)
    gates: list[AbstractToolset[AgentDeps]] = []
    for name, entry in servers.items():
        try:
            toolset = _toolset(name, entry, deps)
        except McpServerError as exc:
            deps.say("error", f"{exc}; its tools are left out")
            continue
        gates.append(McpGate(toolset, server=name).prefixed(name))
    return CombinedToolset(gates) if gates else None


def _toolset(name: str, entry: McpServerEntry, deps: AgentDeps) -> MCPToolset[AgentDeps]:
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport  # heavy: fastmcp
    from pydantic_ai.mcp import MCPToolset  # heavy: pydantic-ai's MCP client

    transport: Any
    if isinstance(entry, HttpServer):
        headers = {k: expand(v, name) for k, v in entry.headers.items()}
        transport = StreamableHttpTransport(expand(entry.url, name), headers=headers)
    else:
        root = deps.session.workspace.root
        transport = StdioTransport(
            entry.command,
            list(entry.args),
            env={k: expand(v, name) for k, v in entry.env.items()} or None,
            cwd=str(root / entry.cwd) if entry.cwd else str(root),
            keep_alive=False,  # the server ends with the run
        )
    return MCPToolset(transport, id=name, read_timeout=entry.timeout)


@dataclass
class McpGate(WrapperToolset[AgentDeps]):
    """One server's tools: reads pass, everything else goes through planbook's policy."""

    server: str = ""
    #: Why the server could not be used (it then has no tools), or None.
    broken: str | None = field(default=None, init=False)
    _entered: bool = field(default=False, init=False)
    _told: bool = field(default=False, init=False)

    async def __aenter__(self) -> McpGate:
        try:
            await self.wrapped.__aenter__()
        except Exception as exc:  # a server that does not start must not end the run
            self.broken = error_line(exc)
        else:
            self._entered = True
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if not self._entered:
            return None
        self._entered = False
        return await self.wrapped.__aexit__(*args)

    async def get_tools(self, ctx: RunContext[AgentDeps]) -> dict[str, ToolsetTool[AgentDeps]]:
        if self.broken is None:
            try:
                tools = await self.wrapped.get_tools(ctx)
            except Exception as exc:
                self.broken = error_line(exc)
        if self.broken is not None:
            if not self._told:  # once a run, not at every model request
                self._told = True
                ctx.deps.say(
                    "error",
                    f"MCP server {self.server} cannot be used ({self.broken}); its tools are "
                    "left out",
                )
            return {}
        return {name: _described(tool, self._at_once(name, tool)) for name, tool in tools.items()}

    def _at_once(self, name: str, tool: ToolsetTool[AgentDeps]) -> bool:
        return runs_at_once(name, (tool.tool_def.metadata or {}).get("annotations"))

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDeps],
        tool: ToolsetTool[AgentDeps],
    ) -> Any:
        deps = ctx.deps
        target = f"{self.server}.{name}"
        rule = deps.rules.decide("mcp", target)
        if rule == "deny":
            return (
                f"Refused by a permission rule (mcp denies {target}). Do not retry; find "
                "another way or tell the person."
            )
        if self._at_once(name, tool) and rule != "ask":
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        shown = json.dumps(tool_args, ensure_ascii=False, sort_keys=True)
        summary = f"call {target} {shown if len(shown) <= 200 else shown[:197] + '...'}"
        return await stage_change(
            ctx,
            "mcp",
            target,
            summary,
            lambda: deps.session.propose.mcp_call(self.server, name, tool_args),
        )


def _described(tool: ToolsetTool[AgentDeps], at_once: bool) -> ToolsetTool[AgentDeps]:
    """The tool, its description saying what planbook does with a call."""
    note = _READ_NOTE if at_once else _WRITE_NOTE
    description = (tool.tool_def.description or "") + note
    return replace(tool, tool_def=replace(tool.tool_def, description=description))
