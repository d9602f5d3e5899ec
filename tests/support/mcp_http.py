"""An MCP client over streamable HTTP for the tests: the official SDK's client, talking to the
endpoint planbook's Jupyter server extension serves inside a real Jupyter server, and that
server started with the extension enabled by the very config file the wheel installs."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import Implementation

from tests.support.jupyter_server import RunningServer

#: The file the wheel installs as etc/jupyter/jupyter_server_config.d/planbook.json.
ENABLE = Path(__file__).parents[2] / "jupyter-config" / "jupyter_server_config.d" / "planbook.json"


def with_endpoint(server: RunningServer) -> RunningServer:
    """Enable planbook's server extension in ``server``'s (temporary) config, before it starts."""
    folder = server.home / "config" / "jupyter_server_config.d"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ENABLE, folder / "planbook.json")
    return server


def endpoint(server: RunningServer) -> str:
    return f"{server.url}planbook/mcp"


@asynccontextmanager
async def connect_http(
    server: RunningServer,
    *,
    token: str | None = "",
    name: str = "test-agent",
    version: str = "1.0",
    url: str | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """A session with the endpoint of ``server`` (or ``url``), sending ``token`` (default: the
    server's; None: no token at all) or else ``headers``, introduced as ``name version``."""
    secret = server.token if token == "" else token
    if headers is None:
        headers = {} if secret is None else {"Authorization": f"token {secret}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url or endpoint(server), http_client=http) as (read, write),
        ClientSession(read, write, client_info=Implementation(name=name, version=version)) as s,
    ):
        await s.initialize()
        yield s
