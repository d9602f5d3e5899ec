"""docs/mcp.md says what the server really serves: its tool table is generated from the
server's own tool definitions (regenerate it with ``python tests/mcp/test_docs_mcp.py``), and
every client configuration it shows parses as the JSON or TOML its client reads."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio

from planbook.sessions.served import ServedNotebooks
from planbook.sessions.served_kernels import RunningServers
from planbook.surfaces.mcp.server import build_server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
TABLE = re.compile(r"<!-- tools: generated -->\n(.*?)<!-- /tools -->", re.S)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


def tool_table(folder: Path) -> str:
    """The table of tools as the server lists them: name, kind, and its description's first
    sentence."""
    tools = anyio.run(build_server(ServedNotebooks(folder), RunningServers()).list_tools)
    rows = ["| tool | kind | what it does |", "| --- | --- | --- |"]
    for tool in tools:
        kind = "read" if tool.annotations and tool.annotations.read_only_hint else "propose"
        if tool.name == "wait_for_review":
            kind = "wait"
        elif tool.name == "ask_person":
            kind = "ask"
        first = " ".join((tool.description or "").split("\n\n")[0].split())
        rows.append(f"| `{tool.name}` | {kind} | {first} |")
    return "\n".join(rows) + "\n"


def test_the_tool_table_is_the_servers_own(tmp_path: Path) -> None:
    found = TABLE.search(PAGE.read_text(encoding="utf-8"))
    assert found, "docs/mcp.md has no generated tool table"
    assert found.group(1) == tool_table(tmp_path), (
        "docs/mcp.md's tool table is stale: run python tests/mcp/test_docs_mcp.py"
    )


def configurations() -> list[dict[str, Any]]:
    """Every client configuration docs/mcp.md shows: planbook's entry in each."""
    found = []
    for lang, code in FENCE.findall(PAGE.read_text(encoding="utf-8")):
        if lang in ("json", "jsonc"):
            config = json.loads(code)
            found.append((config.get("mcpServers") or config.get("servers"))["planbook"])
        elif lang == "toml" and "mcp_servers" in code:  # (not the agent's planbook.toml)
            found.append(tomllib.loads(code)["mcp_servers"]["planbook"])
    return found


def http_configurations() -> list[dict[str, Any]]:
    """The configurations that reach planbook's endpoint inside a Jupyter server."""
    return [c for c in configurations() if "url" in c]


def test_every_client_configuration_parses() -> None:
    stdio = [c for c in configurations() if "url" not in c]
    for config in stdio:
        assert config["command"] == "planbook"
        assert config["args"][0] == "mcp"
    assert len(stdio) >= 5  # Claude Code, Codex CLI, Cursor, VS Code, Jupyter AI
    http = http_configurations()
    for config in http:
        assert config["url"] == "http://127.0.0.1:8888/planbook/mcp"
        auth = config.get("headers", {}).get("Authorization", "")
        assert auth.startswith("token ${") or config.get("bearer_token_env_var")
    assert len(http) >= 4  # Claude Code, Codex CLI, Cursor, VS Code (each tried in test_http)


if __name__ == "__main__":  # rewrite the table in docs/mcp.md from the server
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        table = tool_table(Path(folder))
    text = PAGE.read_text(encoding="utf-8")
    PAGE.write_text(
        TABLE.sub(lambda _: f"<!-- tools: generated -->\n{table}<!-- /tools -->", text),
        encoding="utf-8",
    )
    sys.exit(0)
