"""How the executor calls an MCP tool for an approved ``mcp_call`` step: through a caller it is
given, the way it runs a cell through a ``CodeRunner``.

The engine never imports the MCP SDK or the agent. The Session's owner hands the executor an
``McpCaller`` (planbook/agent/mcp_calls.py builds one from planbook.toml); without one an
approved call fails with one line saying why, and nothing is sent anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from planbook.errors import McpServerError

#: Characters of a tool's result kept in the step's record (the notebook's metadata).
RESULT_LIMIT = 4000


@dataclass(frozen=True)
class McpResult:
    """What one call returned: its content as text, and whether the tool said it failed."""

    text: str
    is_error: bool = False


class McpCaller(Protocol):
    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> McpResult: ...


class NoMcpCaller:
    """The caller of a session no MCP client was given to."""

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> McpResult:
        raise McpServerError(
            f"cannot call {server}.{tool}: no MCP client is set up in this process (install "
            "`planbook[agent]` and approve it from the notebook's kernel); nothing was sent"
        )


def error_line(exc: BaseException) -> str:
    """What went wrong reaching a server, in one short line: the first real error inside an
    exception group (anyio wraps what a transport raises)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def bounded(text: str, limit: int = RESULT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... ({len(text) - limit:,} more characters not kept)"
