"""MCP over streamable HTTP inside a real Jupyter server (planbook's server extension, enabled by
the config file the wheel installs), driven by the official SDK's HTTP client: the server's own
token guards every tool; proposals go through the notebook's collaboration room, where a kernel
with planbook loaded hears of them at once; a server without collaboration stages into the file;
bad requests (no token, an oversized body, an unknown notebook, a client gone mid-wait) get one
line and change nothing."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.live.yclient import YClient
from tests.mcp.test_docs_mcp import http_configurations
from tests.mcp.test_server_reads import PROPOSE_TOOLS, READ_TOOLS
from tests.support.jupyter_server import RTC_OFF, RunningServer
from tests.support.mcp_client import ok, refused
from tests.support.mcp_http import connect_http, endpoint, with_endpoint

pytestmark = pytest.mark.server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = with_endpoint(RunningServer(tmp_path_factory.mktemp("mcp-http-root")))
    try:
        yield running.start()
    finally:
        running.close()


def notebook(server: RunningServer, name: str) -> Path:
    return server.write_notebook(name, ["x = 41", "print(x + 1)"], ids=["load", "show"])


def planbook_steps(path: Path) -> list[dict[str, Any]]:
    meta = json.loads(path.read_text()).get("metadata", {}).get("planbook", {})
    return [s for p in meta.get("plans", {}).values() for s in p["revisions"][-1]["steps"]]


def post(
    server: RunningServer, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    """A raw POST to the endpoint: its status and body."""
    request = urllib.request.Request(endpoint(server), data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def announce_body(server: RunningServer, size: int) -> tuple[int, str]:
    """A POST that announces a body of ``size`` bytes and sends none of it: the answer."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.putrequest("POST", "/planbook/mcp")
        connection.putheader("Authorization", f"token {server.token}")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Accept", "application/json, text/event-stream")
        connection.putheader("Content-Length", str(size))
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_without_the_servers_token_nothing_is_reached(server: RunningServer) -> None:
    path = notebook(server, "guarded.ipynb")
    before = path.read_bytes()
    body = json.dumps(INITIALIZE).encode()
    for headers in ({}, {"Authorization": "token wrong"}, {"Authorization": "Bearer nope"}):
        status, _ = post(server, body, headers)
        assert status == 403, headers
    # the SDK's own client without a token cannot even initialize, let alone propose
    with pytest.raises(BaseException):  # noqa: B017 (the SDK wraps it in an ExceptionGroup)

        async def main() -> None:
            async with connect_http(server, token=None) as session:
                await session.call_tool(
                    "propose_edit_cell",
                    {"notebook": "guarded.ipynb", "cell": "load", "source": "", "reason": "r"},
                )

        anyio.run(main)
    # the same request with the token is answered
    status, answer = post(server, body, {"Authorization": f"token {server.token}"})
    assert status == 200 and "planbook" in answer
    time.sleep(1.0)  # a save the room would make (none: nothing was proposed)
    assert path.read_bytes() == before


@pytest.mark.kernel
def test_a_proposal_reaches_the_room_and_the_kernel_hears_of_it_at_once(
    server: RunningServer,
) -> None:
    path = notebook(server, "analysis.ipynb")
    kernel = server.create_session("analysis.ipynb")["kernel"]["id"]
    loaded = server.execute(
        kernel,
        "%load_ext planbook\n"
        "import time, planbook\n"
        "heard = []\n"
        "planbook.session().subscribe(lambda e: heard.append((e.kind, time.time())))\n"
        "print(planbook.session().document.description)",
        timeout=120,
    )
    assert loaded["error"] is None, loaded["error"]
    assert loaded["stdout"].splitlines()[-1].startswith("live:"), loaded["stdout"]
    other = YClient(server, "analysis.ipynb")  # a plain collaboration client in the room
    try:

        async def main() -> float:
            async with connect_http(server, name="claude-code", version="2.1.0") as session:
                tools = {t.name for t in (await session.list_tools()).tools}
                assert tools == READ_TOOLS | PROPOSE_TOOLS | {"ask_person", "wait_for_review"}
                assert "analysis.ipynb" in (await ok(session, "list_notebooks")).splitlines()
                cell = await ok(session, "read_cell", notebook="analysis.ipynb", cell="#2")
                assert cell.startswith("#2 id=show code\nprint(x + 1)")
                answer = await ok(
                    session,
                    "propose_edit_cell",
                    notebook="analysis.ipynb",
                    cell="load",
                    source="x = 41  # the answer, less one",
                    reason="say what x is",
                )
                staged = time.time()
                assert answer.startswith("Staged step 1 of the plan in analysis.ipynb")
                plan = await ok(session, "read_plan", notebook="analysis.ipynb")
                assert "1. [pending] edit cell `load`" in plan
                assert "from: claude-code 2.1.0 (MCP)" in plan
                return staged

        staged = anyio.run(main)
        # the other client in the room sees the step in the notebook's metadata...
        assert other.wait_for(lambda c: "planbook" in c.metadata(), 5)
        # ...the cells are as they were (staged, not applied)...
        assert other.sources() == ["x = 41", "print(x + 1)"]
        # ...and the kernel's session heard of it, within the second, with its origin
        seen = server.execute(
            kernel,
            "plan = planbook.session().current_plan()\n"
            "print([(s.status, s.origin) for s in plan.steps])\n"
            "print([t for k, t in heard if k == 'plan_changed'][:1])",
        )
        assert seen["error"] is None, seen["error"]
        steps_line, heard_line = seen["stdout"].splitlines()
        assert steps_line == "[('pending', 'claude-code 2.1.0 (MCP)')]"
        [heard_at] = json.loads(heard_line)
        assert heard_at - staged < 1.0
    finally:
        other.close()
    # the server saves the room: the file holds the step too, its cells untouched
    deadline = time.monotonic() + 10
    while not planbook_steps(path) and time.monotonic() < deadline:
        time.sleep(0.2)
    [step] = planbook_steps(path)
    assert step["origin"] == "claude-code 2.1.0 (MCP)" and step["status"] == "pending"
    assert "".join(json.loads(path.read_text())["cells"][0]["source"]) == "x = 41"


def drop_mid_wait(server: RunningServer, name: str) -> None:
    """A client that opens a session, calls wait_for_review and drops the connection while the
    answer streams (no cancel, no DELETE: a crash)."""
    auth = {"Authorization": f"token {server.token}"}
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {
        **auth,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    connection.request("POST", "/planbook/mcp", json.dumps(INITIALIZE), headers)
    opened = connection.getresponse()
    opened.read()
    headers["Mcp-Session-Id"] = opened.headers["Mcp-Session-Id"]
    headers["Mcp-Protocol-Version"] = "2025-06-18"
    connection.request(
        "POST",
        "/planbook/mcp",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        headers,
    )
    connection.getresponse().read()
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "wait_for_review", "arguments": {"notebook": name, "timeout_s": 600}},
    }
    connection.request("POST", "/planbook/mcp", json.dumps(call), headers)
    streaming = connection.getresponse()
    assert streaming.status == 200
    time.sleep(0.5)
    connection.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
    connection.close()


def test_bad_requests_get_one_line_and_change_nothing(server: RunningServer) -> None:
    path = notebook(server, "bad.ipynb")
    # an oversized body is refused before a byte of it is read (413, one line)
    status, answer = announce_body(server, 5 * 1024 * 1024)
    assert status == 413
    message = json.loads(answer)["error"]["message"]
    assert message == (
        "the request body of 5,242,880 bytes is over planbook's limit of 4,194,304 bytes; "
        "nothing was done"
    )

    async def main() -> None:
        async with connect_http(server) as session:
            assert "no notebook 'nope.ipynb'" in await refused(
                session, "read_plan", notebook="nope.ipynb"
            )
            assert "no notebook" in await refused(
                session,
                "propose_insert_cell",
                notebook="missing.ipynb",
                source="1",
                reason="r",
            )
            assert "outside" in await refused(
                session, "read_notebook", notebook="../elsewhere.ipynb"
            )
            # a client that goes away while it waits for review
            await ok(
                session,
                "propose_run_cell",
                notebook="bad.ipynb",
                cell="show",
                reason="see the answer",
            )
            with anyio.move_on_after(1.0):
                await session.call_tool("wait_for_review", {"notebook": "bad.ipynb"})

    anyio.run(main)
    drop_mid_wait(server, "bad.ipynb")

    async def again() -> None:  # the server is up, and the plan holds the one step, pending
        async with connect_http(server) as session:
            plan = await ok(session, "read_plan", notebook="bad.ipynb")
            assert "1. [pending] run cell `show`" in plan
            assert "2." not in plan

    anyio.run(again)
    assert server.proc is not None and server.proc.poll() is None
    deadline = time.monotonic() + 10
    while not planbook_steps(path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [s["status"] for s in planbook_steps(path)] == ["pending"]


def test_the_documented_configurations_reach_the_endpoint(server: RunningServer) -> None:
    """Each HTTP configuration of docs/mcp.md, with this server's address and token where the
    page has its placeholders, is a session the SDK's client opens."""
    configs = http_configurations()
    assert len(configs) >= 4
    for config in configs:
        url = config["url"].replace("http://127.0.0.1:8888/", server.url)
        if "bearer_token_env_var" in config:  # Codex: the variable's value as a bearer token
            headers = {"Authorization": f"Bearer {server.token}"}
        else:
            headers = {
                name: re.sub(r"\$\{[^}]+\}", server.token, value)
                for name, value in config["headers"].items()
            }

        async def main(url: str = url, headers: dict[str, str] = headers) -> None:
            async with connect_http(server, url=url, headers=headers) as session:
                assert "guarded.ipynb" in await ok(session, "list_notebooks")

        anyio.run(main)


#: Collaboration absent (its server extension off), or installed and switched off by flag (its
#: endpoints still answer, but no page joins a room).
WITHOUT_COLLABORATION = {
    "absent": {"collaboration": False},
    "switched off": {"extra_args": [RTC_OFF]},
}


@pytest.mark.parametrize("how", list(WITHOUT_COLLABORATION))
def test_without_collaboration_proposals_go_to_the_file(
    tmp_path_factory: pytest.TempPathFactory, how: str
) -> None:
    root = tmp_path_factory.mktemp("mcp-http-file-root")
    setup: Any = WITHOUT_COLLABORATION[how]
    with with_endpoint(RunningServer(root, **setup)) as server:
        server.start()
        path = notebook(server, "plain.ipynb")

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
        log = server.log_path.read_text(errors="replace")  # the whole log: it starts there
        assert "through the kernel of the page that has a notebook open (collaboration" in log
        assert "through their collaboration rooms" not in log
