"""The MCP servers planbook's agent may use: ``[mcp.servers.NAME]`` tables of planbook.toml.

A server is started by command (stdio: ``command``, ``args``, ``env``, ``cwd``) or reached by URL
(streamable HTTP: ``url``, ``headers``). ``${NAME}`` in an ``env`` or ``headers`` value (or the
URL) is taken from the kernel's environment when the server is reached, so a token need not be
written in the file. Each entry is validated on its own: a bad one gives one line naming its key
and is left out, and the others work. Only what is here is read; starting a server or calling
a tool is the floor above's job (sessions/mcp_client.py, agent/mcp_toolsets.py).

A server's command runs as the person and its headers may carry the kernel's secrets, so an
entry counts only when this person trusts it as written (engine/rules/trusted.py; ``planbook
trust planbook.toml``): a project that arrives with servers in its planbook.toml starts none.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from planbook.engine.rules.rule import RULES_FILE
from planbook.engine.rules.trusted import entry_signature, is_signed, keep
from planbook.errors import McpServerError, invalid_as
from planbook.model.base import PlanbookModel

__all__ = [
    "HttpServer",
    "McpServerEntry",
    "StdioServer",
    "expand",
    "load_servers",
    "trust_servers",
]

#: A server's name: it prefixes its tools for the model and starts every ``server.tool`` rule.
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Entry(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(
        default=60.0, gt=0, le=3600, description="Seconds one call may take before it fails."
    )


class StdioServer(_Entry):
    """A server started as a subprocess, spoken to over its stdin and stdout."""

    command: str = Field(min_length=1, description="The program to start (looked up on PATH).")
    args: tuple[str, ...] = Field(default=(), description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables it gets besides a minimal environment (HOME, PATH, ...): the "
        "kernel's other variables, keys included, are not passed on.",
    )
    cwd: str | None = Field(
        default=None, description="Its working folder, relative to the project root."
    )


class HttpServer(_Entry):
    """A server reached over streamable HTTP."""

    url: str = Field(description="The server's MCP endpoint, http:// or https://.")
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers sent with every request."
    )

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url


McpServerEntry = StdioServer | HttpServer
_KEYS = frozenset(StdioServer.model_fields) | frozenset(HttpServer.model_fields)


def load_servers(root: Path) -> tuple[dict[str, McpServerEntry], list[str]]:
    """The servers of ``root``'s planbook.toml this person trusts, and one line for each
    entry left out (invalid, or not trusted)."""
    found, problems, raws = _read_servers(root / RULES_FILE)
    distrusted = [name for name in found if not is_signed(_signature(root, name, raws[name]))]
    for name in distrusted:
        del found[name]
    if distrusted:
        problems.append(
            f"{RULES_FILE}'s MCP {'server' if len(distrusted) == 1 else 'servers'} "
            f"{', '.join(distrusted)} not trusted here (a server's command runs as you): left "
            f"out until you read and trust the file: `planbook trust {RULES_FILE}` or "
            "`%plan trust`"
        )
    return found, problems


def trust_servers(path: Path) -> list[str]:
    """Trust, as this person, the valid MCP server entries of the planbook.toml at ``path``
    as they are now; the names newly trusted."""
    found, _, raws = _read_servers(path)
    fresh = {n: _signature(path.parent, n, raws[n]) for n in found}
    fresh = {n: s for n, s in fresh.items() if not is_signed(s)}
    keep(list(fresh.values()))
    return list(fresh)


def _signature(root: Path, name: str, raw: Any) -> str:
    return entry_signature(root / RULES_FILE, "mcp-server", [name, raw])


def _read_servers(
    path: Path,
) -> tuple[dict[str, McpServerEntry], list[str], dict[str, Any]]:
    """The valid entries of ``path``, a line per one left out, and each entry as written."""
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return {}, [], {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"{RULES_FILE}: cannot read it ({exc}); no MCP server is used"], {}
    mcp = data.get("mcp", {})
    servers = mcp.get("servers", {}) if isinstance(mcp, dict) else None
    if not isinstance(servers, dict):
        return {}, [f"{RULES_FILE} [mcp.servers]: expected tables [mcp.servers.NAME]"], {}
    found: dict[str, McpServerEntry] = {}
    problems: list[str] = []
    for name, raw in servers.items():
        try:
            found[name] = _entry(name, raw)
        except McpServerError as exc:
            problems.append(str(exc))
    return found, problems, servers


def _entry(name: str, raw: Any) -> McpServerEntry:
    where = f"{RULES_FILE} [mcp.servers.{name}]"
    left_out = "this server is left out"
    if not _NAME.match(name):
        raise McpServerError(
            f"{where}: a server's name is a letter then letters, digits, _ or - (no dots); "
            f"{left_out}"
        )
    if not isinstance(raw, dict):
        raise McpServerError(f"{where}: expected a table; {left_out}")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise McpServerError(
            f"{where}: unknown key `{unknown[0]}` (an entry takes {', '.join(sorted(_KEYS))}); "
            f"{left_out}"
        )
    if ("command" in raw) == ("url" in raw):
        raise McpServerError(
            f"{where}: give `command` (a stdio server) or `url` (streamable HTTP), "
            f"{'not both' if 'url' in raw else 'one of them'}; {left_out}"
        )
    kind: type[McpServerEntry] = HttpServer if "url" in raw else StdioServer
    with invalid_as(
        lambda key, problem: McpServerError(
            f"{where}: `{key}`: {problem.removeprefix('Value error, ')}; {left_out}"
        ),
        whole="entry",
    ):
        return kind.model_validate(raw)


def expand(value: str, server: str) -> str:
    """``value`` with each ``${NAME}`` replaced from the environment (`McpServerError` naming
    the variable when it is not set)."""

    def one(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in os.environ:
            raise McpServerError(
                f"MCP server {server}: ${{{variable}}} is not set in the kernel's environment"
            )
        return os.environ[variable]

    return _VARIABLE.sub(one, value)
