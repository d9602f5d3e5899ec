"""The MCP endpoint on Jupyter servers set up otherwise than with a token and collaboration: a
server whose identity provider authenticates by a header a proxy sets (JupyterHub-style, no
token) lets in exactly the requests it knows, and proposals reach the notebook's room with the
caller's credentials; a server started with ``--YDocExtension.disable_rtc=True`` (collaboration
installed, switched off) stages proposals in the file at once, never in a room no page joins."""

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
        assert "collaboration rooms" in server.log()


def test_with_collaboration_switched_off_proposals_go_to_the_file_at_once(
    tmp_path: Path,
) -> None:
    flag = ["--YDocExtension.disable_rtc=True"]
    with with_endpoint(RunningServer(tmp_path / "root", extra_args=flag)) as server:
        server.start()
        # jupyter-collaboration is there and answers: only the flag says pages never join rooms
        with pytest.raises(JupyterServerError, match="HTTP 405"):  # PUT only: it is there
            server.api("GET", "api/collaboration/session/x.ipynb")
        path = server.write_notebook("plain.ipynb", ["x = 41", "print(x)"], ids=["load", "show"])

        async def main() -> None:
            async with connect_http(server, name="cursor", version="3") as session:
                answer = await ok(
                    session,
                    "propose_insert_cell",
                    notebook="plain.ipynb",
                    source="print('hi')",
                    after="show",
                    reason="greet",
                )
                assert answer.startswith("Staged step 1")
                # in the file when the answer comes: no room holds it to save later
                [step] = planbook_steps(path)
                assert step["origin"] == "cursor 3 (MCP)"

        anyio.run(main)
        assert [c["id"] for c in json.loads(path.read_text())["cells"]] == ["load", "show"]
        log = server.log()
        assert "as files (collaboration is off or absent on this server" in log
        assert "through their collaboration rooms" not in log
