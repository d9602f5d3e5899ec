"""Two agents on one Jupyter server at once, each through the official SDK's HTTP client: each
proposes to the same notebook, and each wait_for_review answers with the decisions on the steps
that client proposed (its MCP session), never on the other's, while the person decides them
with the ``planbook`` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.support.jupyter_server import RunningServer
from tests.support.mcp_client import ok
from tests.support.mcp_http import connect_http, with_endpoint

pytestmark = pytest.mark.server


def planbook_cli(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "planbook", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


async def propose(session: ClientSession, source: str) -> str:
    answer = await ok(
        session,
        "propose_insert_cell",
        notebook="shared.ipynb",
        source=source,
        reason=f"add {source}",
    )
    return answer.split("(step id ", 1)[1].split(")", 1)[0]


def test_each_client_waits_for_its_own_steps(tmp_path: Path) -> None:
    with with_endpoint(RunningServer(tmp_path / "root", collaboration=False)) as server:
        server.start()
        path = server.write_notebook("shared.ipynb", ["x = 1"], ids=["load"])
        answers: dict[str, str] = {}
        ids: dict[str, str] = {}

        async def agent(name: str, source: str, proposed: anyio.Event) -> None:
            async with connect_http(server, name=name, version="1") as session:
                ids[name] = await propose(session, source)
                proposed.set()
                answers[name] = await ok(
                    session, "wait_for_review", notebook="shared.ipynb", timeout_s=60
                )

        async def person(ada: anyio.Event, grace: anyio.Event) -> None:
            await ada.wait()
            await grace.wait()
            await anyio.sleep(0.5)  # both agents are waiting now
            order = [ids["ada"], ids["grace"]]
            # the plan numbers steps in the order they came: reject grace's, approve ada's
            await anyio.to_thread.run_sync(
                planbook_cli, "reject", "--steps", str(order.index(ids["grace"]) + 1), str(path)
            )
            await anyio.sleep(1.0)  # ada's wait goes on: her step is still pending
            assert "ada" not in answers
            await anyio.to_thread.run_sync(
                planbook_cli,
                "approve",
                "--no-rerun",
                "--quiet",
                "--steps",
                str(order.index(ids["ada"]) + 1),
                str(path),
            )

        async def main() -> None:
            ada, grace = anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(agent, "ada", "print('ada')", ada)
                await ada.wait()  # ada's step first, then grace's: step 1 and step 2
                group.start_soon(agent, "grace", "print('grace')", grace)
                group.start_soon(person, ada, grace)

        anyio.run(main)
    for name, other, status in (("ada", "grace", "done"), ("grace", "ada", "rejected")):
        answer = answers[name]
        assert answer.startswith("every step is decided:"), answer
        assert f"step id {ids[name]}" in answer and f"[{status}]" in answer
        assert f"step id {ids[other]}" not in answer, (name, answer)
        assert f"from: {name} 1 (MCP)" in answer and f"from: {other} 1" not in answer
