"""Asking the person over HTTP inside a real Jupyter server with collaboration: the question
goes through the notebook's room, the kernel's session (live) hears of it, `%answer` in that
kernel lists and answers it, and the client waiting in wait_for_review gets the answer."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from tests.support.jupyter_server import RunningServer
from tests.support.mcp_client import ok
from tests.support.mcp_http import connect_http, with_endpoint

pytestmark = [pytest.mark.server, pytest.mark.kernel]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = with_endpoint(RunningServer(tmp_path_factory.mktemp("mcp-ask-root")))
    try:
        yield running.start()
    finally:
        running.close()


def test_ask_over_http_answer_with_percent_answer_in_the_live_kernel(
    server: RunningServer,
) -> None:
    server.write_notebook("sales.ipynb", ["x = 41"], ids=["load"])
    kernel = server.create_session("sales.ipynb")["kernel"]["id"]
    loaded = server.execute(
        kernel,
        "%load_ext planbook\nimport planbook\nprint(planbook.session().document.description)",
        timeout=120,
    )
    assert loaded["error"] is None, loaded["error"]
    assert loaded["stdout"].splitlines()[-1].startswith("live:"), loaded["stdout"]

    def percent_answer(line: str) -> str:
        done = server.execute(kernel, f"%answer {line}".rstrip())
        assert done["error"] is None, done["error"]
        return str(done["stdout"]).strip()

    async def main() -> None:
        async with connect_http(server, name="cursor", version="1.4") as session:
            asked = await ok(
                session,
                "ask_person",
                notebook="sales.ipynb",
                question="Round x to the nearest ten?",
                options=["yes", "no"],
            )
            assert asked.startswith("Asked question q1 in sales.ipynb")
            started = time.monotonic()
            listed = ""
            while "q1" not in listed and time.monotonic() - started < 10:
                listed = await anyio.to_thread.run_sync(percent_answer, "")
            # the first magic in the kernel also prints planbook's status line first
            assert listed.splitlines()[-1] == (
                "q1 (from cursor 1.4 (MCP)): Round x to the nearest ten? [yes / no]"
            )

            async def person_answers() -> None:
                await anyio.sleep(0.3)
                said = await anyio.to_thread.run_sync(percent_answer, "q1 no")
                assert said == "planbook: q1 -> no (answered for cursor 1.4 (MCP))"

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(person_answers)
                waited = await ok(session, "wait_for_review", notebook="sales.ipynb", timeout_s=60)
            assert waited.startswith("every question is answered:"), waited
            assert waited.rstrip().endswith(": no")

    anyio.run(main)
