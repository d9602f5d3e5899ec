"""The MCP endpoint on a Jupyter server whose identity provider authenticates by a header a
proxy sets (JupyterHub-style, no token): it lets in exactly the requests the provider knows, and
proposals reach the notebook's room with the caller's credentials. (A server with collaboration
switched off: tests/mcp/test_mcp_http.py.)"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.test_mcp_http import INITIALIZE, planbook_steps, post
from tests.support.header_identity import HEADER
from tests.support.jupyter_server import JupyterServerError, RunningServer
from tests.support.mcp_client import ok
from tests.support.mcp_http import connect_http, with_endpoint

pytestmark = pytest.mark.server

IDENTITY = [
    "--ServerApp.identity_provider_class=tests.support.header_identity.HeaderIdentity",
    "--IdentityProvider.token=",  # no token at all
]


class HeaderServer(RunningServer):
    """A test server without a token, whose REST calls (readiness included) carry the header."""

    def command(self) -> list[str]:
        token = f"--IdentityProvider.token={self.token}"
        return [a for a in super().command() if a != token]

    def api(self, method: str, path: str, json: Any = None, *, timeout: float = 30.0) -> Any:
        url = urllib.parse.urljoin(self.url, path.lstrip("/"))
        data = None if json is None else _dumps(json)
        request = urllib.request.Request(url, data=data, method=method.upper())
        request.add_header(HEADER, "ada")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            raise JupyterServerError(f"{method} {path}: HTTP {e.code}") from None
        return _loads(body) if body else None


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def _loads(body: bytes) -> Any:
    return json.loads(body)


def saved_steps(path: Path, within: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + within
    while not planbook_steps(path) and time.monotonic() < deadline:
        time.sleep(0.2)
    return planbook_steps(path)


def test_an_identity_provider_without_a_token_guards_the_endpoint(tmp_path: Path) -> None:
    server = with_endpoint(HeaderServer(tmp_path / "root", extra_args=IDENTITY))
    with server:
        server.start()
        path = server.write_notebook("hub.ipynb", ["x = 41"], ids=["load"])
        before = path.read_bytes()
        body = json.dumps(INITIALIZE).encode()
        # no credentials, a name the provider does not know, a token on a server without one
        for headers in ({}, {HEADER: "mallory"}, {"Authorization": "token anything"}):
            status, answer = post(server, body, headers)
            assert status == 403, (headers, answer)
            assert "planbook" not in answer
        status, answer = post(server, body, {HEADER: "ada"})
        assert status == 200 and '"name":"planbook"' in answer.replace(" ", "")

        async def main() -> None:
            async with connect_http(server, headers={HEADER: "ada"}, name="hub-agent") as s:
                cell = await ok(s, "read_cell", notebook="hub.ipynb", cell="load")
                assert cell.startswith("#1 id=load code\nx = 41")
                answer = await ok(
                    s,
                    "propose_edit_cell",
                    notebook="hub.ipynb",
                    cell="load",
                    source="x = 42",
                    reason="the answer",
                )
                assert answer.startswith("Staged step 1 of the plan in hub.ipynb")
                plan = await ok(s, "read_plan", notebook="hub.ipynb")
                assert "1. [pending] edit cell `load`" in plan

        anyio.run(main)
        # the room was joined with ada's credentials: the server saves it with the step
        [step] = saved_steps(path, 10)
        assert step["origin"] == "hub-agent 1.0 (MCP)" and step["status"] == "pending"
        assert "".join(json.loads(path.read_text())["cells"][0]["source"]) == "x = 41"
        assert before != path.read_bytes()
        assert "collaboration rooms" in server.log_path.read_text(errors="replace")
