"""``planbook mcp`` over stdio, for a notebook open in a running Jupyter server with collaboration
switched off: the open page holds the notebook, so a proposal (and a question) goes through the
kernel of the page, found by the server's runtime files, never into the file the page's next save
would overwrite. The official SDK's stdio client drives a real ``python -m planbook mcp``
subprocess; the server is a real Jupyter server started with ``--YDocExtension.disable_rtc=True``.

Without a browser, the page is two things: for the server, a websocket held to the kernel (what it
counts as a connection); inside the kernel, the page protocol's double (tests/test_page.py) linked
to the kernel's session as the in-cell review's comm would be. The step lands in the kernel's
mirror of the page and in that page, marked with the client's origin; the client reads it back
through the kernel; the file keeps nothing. Each refusal is one line, the same as over HTTP. A
kernel no page is connected to leaves the file route.

With collaboration on (a second server, the default RunningServer), a proposal goes through the
notebook's collaboration room, where a plain collaboration client (tests/live/yclient.py) plays
the person typing in the open page: the step reaches them within the second, their unsaved edit
survives, and the file is written by the server's save of the room only. A room that does not
open is one line and nothing staged."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession

from tests.live.yclient import YClient
from tests.mcp.test_mcp_http import notebook, planbook_steps
from tests.mcp.test_mcp_kernel_staging import (
    STOPS,
    busy_for,
    busy_line,
    died_line,
    not_loaded_line,
    page_connected,
    stopped_under_a_call,
)
from tests.support.jupyter_server import RTC_OFF, RunningServer
from tests.support.mcp_client import connect_served, ok

pytestmark = [pytest.mark.server, pytest.mark.kernel]

#: The kernel's session links the page double as the in-cell review's comm would link the page.
LINK_PAGE = """\
from planbook.surfaces import api
from planbook.surfaces.comm.channel import CellReviewLink
from tests.test_page import Comm, Page, code
page = Page([code('load', 'x = 41'), code('show', 'print(x + 1)')])
comm = Comm(page)
link = CellReviewLink(api.kernel_session(), comm)
link.ask_for_cells()
comm.round_trip()
"""
#: What the page double holds once it took what the kernel sent: its plans' steps and questions.
PAGE_PLAN = """\
comm.round_trip()
import json
record = page.metadata.get('planbook') or {}
steps = [s for p in record.get('plans', {}).values() for s in p['revisions'][-1]['steps']]
print(json.dumps({'steps': steps, 'questions': record.get('questions', []),
                  'show': next(c['source'] for c in page.cells if c['id'] == 'show')}))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path_factory.mktemp("mcp-stdio-page-root"), extra_args=[RTC_OFF])
    # planbook's page extension where the server looks (a stub: no browser loads it), so the
    # kernel's %load_ext edits through the page, as it does when JupyterLab has the extension
    stub = Path(running.env["JUPYTER_DATA_DIR"]) / "labextensions" / "planbook"
    stub.mkdir(parents=True)
    (stub / "package.json").write_text(json.dumps({"name": "planbook", "version": "0.0.0"}))
    try:
        yield running.start()
    finally:
        running.close()


def stdio(server: RunningServer) -> AbstractAsyncContextManager[ClientSession]:
    """A client of ``python -m planbook mcp ROOT``, introduced as claude-code 2."""
    return connect_served(server, name="claude-code", version="2")


def call(server: RunningServer, tool: str, **arguments: Any) -> tuple[bool, str]:
    """One tool call from a stdio client of its own: (refused?, its text)."""

    async def main() -> tuple[bool, str]:
        async with stdio(server) as session:
            result = await session.call_tool(tool, arguments)
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    return anyio.run(main)


def propose_and_ask(server: RunningServer, name: str) -> list[tuple[bool, str]]:
    """A proposal and a question to ``name``, each from a stdio client of its own."""
    return [
        call(server, "propose_edit_cell", notebook=name, cell="show", source="2", reason="r"),
        call(server, "ask_person", notebook=name, question="q?"),
    ]


def loaded_with_page(server: RunningServer, name: str) -> tuple[Path, str]:
    """A notebook whose kernel loaded planbook and has the page double linked."""
    path = notebook(server, name)
    kernel = server.create_session(name)["kernel"]["id"]
    done = server.execute(kernel, "%load_ext planbook\n" + LINK_PAGE)
    assert done["error"] is None, done["error"]
    return path, kernel


def in_page(server: RunningServer, kernel: str) -> dict[str, Any]:
    said = server.execute(kernel, PAGE_PLAN)
    assert said["error"] is None, said["error"]
    page: dict[str, Any] = json.loads(said["stdout"])
    return page


def test_a_proposal_is_staged_in_the_pages_kernel_and_read_back_the_file_untouched(
    server: RunningServer,
) -> None:
    path, kernel = loaded_with_page(server, "page.ipynb")
    before = path.read_bytes()
    try:
        with page_connected(server, kernel):

            async def main() -> tuple[str, str, str, str]:
                async with stdio(server) as session:
                    staged = await ok(
                        session,
                        "propose_edit_cell",
                        notebook="page.ipynb",
                        cell="show",
                        source="print(x + 2)",
                        reason="show the next number",
                    )
                    asked = await ok(
                        session,
                        "ask_person",
                        notebook="page.ipynb",
                        question="Keep x at 41?",
                        options=["yes", "no"],
                    )
                    plan = await ok(session, "read_plan", notebook="page.ipynb")
                    waited = await ok(
                        session, "wait_for_review", notebook="page.ipynb", timeout_s=1
                    )
                    return staged, asked, plan, waited

            staged, asked, plan, waited = anyio.run(main)
            # an agent that reconnects is a new process: it reads the page's plan at once
            step_id = staged.split("(step id ", 1)[1].split(")", 1)[0]
            _, again = call(server, "read_plan", notebook="page.ipynb")
            _, still = call(
                server, "wait_for_review", notebook="page.ipynb", step_ids=[step_id], timeout_s=1
            )
        # no page connected any more: a new client reads the file, which has no plan
        _, alone = call(server, "read_plan", notebook="page.ipynb")
        assert "1. [pending] edit cell `show`" in again and "from: claude-code 2 (MCP)" in again
        assert still.startswith("timed out after 1 s with 1 step still open"), still
        assert f"1. [pending] edit cell `show` (step id {step_id}" in still, still
        assert "edit cell" not in alone, alone
        assert staged.startswith("Staged step 1 of the plan in page.ipynb"), staged
        assert asked.startswith("Asked question q1 in page.ipynb"), asked
        # the client reads the page's plan through the kernel (the file has none): the step is
        # there, pending, from this client; the wait sees the step and the open question
        assert "1. [pending] edit cell `show`" in plan and "from: claude-code 2 (MCP)" in plan
        assert "still open" in waited and "- question q1: Keep x at 41?" in waited, waited
        # the step lives in the page (marked with the client), never in the file
        page = in_page(server, kernel)
        [step] = page["steps"]
        assert step["origin"] == "claude-code 2 (MCP)"
        assert step["operation"]["source"] == "print(x + 2)"
        assert [q["question"] for q in page["questions"]] == ["Keep x at 41?"]
        assert page["show"] == "print(x + 1)"  # proposed, not applied
        assert path.read_bytes() == before
        assert planbook_steps(path) == []
    finally:
        server.end_sessions()


def test_no_page_connected_leaves_the_file_route(server: RunningServer) -> None:
    path, _kernel = loaded_with_page(server, "nopage.ipynb")
    # no websocket is open to the kernel: the server counts no page, the file is the notebook
    refused_, answer = call(
        server, "propose_edit_cell", notebook="nopage.ipynb", cell="show", source="2", reason="r"
    )
    try:
        assert not refused_ and answer.startswith("Staged step 1 of the plan in nopage.ipynb")
        [step] = planbook_steps(path)
        assert step["origin"] == "claude-code 2 (MCP)"
    finally:
        server.end_sessions()


def test_planbook_not_loaded_in_the_pages_kernel_is_one_line_and_the_file_untouched(
    server: RunningServer,
) -> None:
    path = notebook(server, "unloaded.ipynb")
    before = path.read_bytes()
    kernel = server.create_session("unloaded.ipynb")["kernel"]["id"]
    try:
        with page_connected(server, kernel):
            answers = propose_and_ask(server, "unloaded.ipynb")
        for was_refused, said in answers:
            assert was_refused and "\n" not in said
            assert said.endswith(not_loaded_line("unloaded.ipynb")), said
        assert path.read_bytes() == before
        loaded = server.execute(kernel, "import sys; print('planbook' in sys.modules)")
        assert loaded["stdout"].strip() == "False"
    finally:
        server.end_sessions()


def test_a_busy_pages_kernel_is_one_line_and_the_late_request_stages_nothing(
    server: RunningServer,
) -> None:
    path, kernel = loaded_with_page(server, "busy.ipynb")
    before = path.read_bytes()
    try:
        running = busy_for(server, kernel, 16)
        started = time.monotonic()
        refused_, line = call(
            server, "propose_edit_cell", notebook="busy.ipynb", cell="show", source="2", reason="r"
        )
        waited = time.monotonic() - started
        assert refused_ and line.endswith(busy_line("busy.ipynb")), line
        assert 10.0 <= waited < 16.0, waited
        running.join(30)
        time.sleep(1.0)  # the kernel reached the expired request: it staged nothing
        assert in_page(server, kernel)["steps"] == []
        assert path.read_bytes() == before
    finally:
        server.end_sessions()


@pytest.mark.parametrize("how", list(STOPS))
def test_a_pages_kernel_that_stops_mid_call_is_one_line(server: RunningServer, how: str) -> None:
    path, kernel = loaded_with_page(server, "dies.ipynb")
    before = path.read_bytes()
    try:
        # stopped once this call's `planbook mcp` joined the kernel (it asks at once)
        stopped_under_a_call(server, kernel, how, after=0.5, joined=True)
        started = time.monotonic()
        refused_, line = call(
            server, "propose_edit_cell", notebook="dies.ipynb", cell="show", source="2", reason="r"
        )
        assert refused_ and line.endswith(died_line("dies.ipynb")), line
        assert time.monotonic() - started < 10.0  # not the busy wait
        assert path.read_bytes() == before
    finally:
        server.end_sessions()


def test_a_pages_kernel_following_another_notebook_is_one_line(server: RunningServer) -> None:
    path = notebook(server, "mine.ipynb")
    notebook(server, "other.ipynb")
    before = path.read_bytes()
    kernel = server.create_session("mine.ipynb")["kernel"]["id"]
    try:
        done = server.execute(kernel, "%load_ext planbook\n%plan use other.ipynb")
        assert done["error"] is None, done["error"]
        with page_connected(server, kernel):
            refused_, line = call(
                server,
                "propose_edit_cell",
                notebook="mine.ipynb",
                cell="show",
                source="2",
                reason="r",
            )
        assert refused_ and line.endswith(
            "planbook in this kernel edits other.ipynb, not mine.ipynb: nothing was staged; the "
            "person can switch it with `%plan use mine.ipynb`"
        ), line
        assert path.read_bytes() == before
    finally:
        server.end_sessions()


@pytest.fixture(scope="module")
def collaborating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path_factory.mktemp("mcp-stdio-room-root"))
    try:
        yield running.start()
    finally:
        running.close()


def sources_of(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


def test_with_collaboration_on_the_proposal_goes_through_the_room_and_keeps_unsaved_typing(
    collaborating: RunningServer,
) -> None:
    path = notebook(collaborating, "shared.ipynb")
    other = YClient(collaborating, "shared.ipynb")  # the person, typing in the open page
    try:

        async def main() -> tuple[float, str, str, str, list[str]]:
            async with stdio(collaborating) as session:
                other.set_source("load", "x = 40  # typed, not saved yet")
                other.flush()
                staged = await ok(
                    session,
                    "propose_edit_cell",
                    notebook="shared.ipynb",
                    cell="show",
                    source="print(x + 2)",
                    reason="show the next number",
                )
                answered = time.monotonic()
                # the person's copy of the room has the step within the second
                assert other.wait_for(lambda c: "planbook" in c.metadata(), 1.0), staged
                seen = time.monotonic() - answered
                # the server saved its room when the step was staged (planbook asks it to, so
                # the step survives a stop of the server): the file has the step AND the
                # person's typing, which only the room had (a write of the file would not)
                assert len(planbook_steps(path)) == 1
                on_disk = sources_of(path)
                typed = await ok(session, "read_cell", notebook="shared.ipynb", cell="load")
                plan = await ok(session, "read_plan", notebook="shared.ipynb")
                waited = await ok(session, "wait_for_review", notebook="shared.ipynb", timeout_s=1)
                return seen, typed, plan, waited, on_disk

        seen, typed, plan, waited, on_disk = anyio.run(main)
        assert seen < 1.0
        assert on_disk == ["x = 40  # typed, not saved yet", "print(x + 1)"]
        # the person's unsaved edit is in the room beside the step (proposed, not applied)
        assert other.sources() == ["x = 40  # typed, not saved yet", "print(x + 1)"]
        [step] = [
            s
            for p in other.metadata()["planbook"]["plans"].values()
            for s in p["revisions"][-1]["steps"]
        ]
        assert step["origin"] == "claude-code 2 (MCP)"
        # reads over stdio see the room: the unsaved edit, the step, the wait on it
        assert typed.startswith("#1 id=load code\nx = 40  # typed, not saved yet"), typed
        assert "1. [pending] edit cell `show`" in plan and "from: claude-code 2 (MCP)" in plan
        assert waited.startswith("timed out after 1 s with 1 step still open"), waited
        # an agent that reconnects (a new process) reads the plan from the room at once
        _, again = call(collaborating, "read_plan", notebook="shared.ipynb")
        assert "1. [pending] edit cell `show`" in again, again
    finally:
        other.close()
    # the file, as the server saved it: the step and the person's edit, both kept
    time.sleep(1.5)  # past the server's own save delay: no later save undid either
    [saved] = planbook_steps(path)
    assert saved["origin"] == "claude-code 2 (MCP)" and saved["status"] == "pending"
    assert sources_of(path) == ["x = 40  # typed, not saved yet", "print(x + 1)"]


def test_a_room_that_does_not_open_is_one_line_and_the_file_untouched(
    collaborating: RunningServer,
) -> None:
    path = notebook(collaborating, "locked.ipynb")
    before = path.read_bytes()
    [runtime] = Path(collaborating.env["JUPYTER_RUNTIME_DIR"]).glob("jpserver-*.json")
    kept = runtime.read_text()
    runtime.write_text(json.dumps({**json.loads(kept), "token": "not-the-token"}))
    try:
        answers = propose_and_ask(collaborating, "locked.ipynb")
    finally:
        runtime.write_text(kept)
    for was_refused, said in answers:
        assert was_refused and "\n" not in said, said
        assert "locked.ipynb is served with collaboration by the Jupyter server at" in said
        assert said.endswith(
            "nothing was staged, and the file was not written (the room would overwrite it); "
            "check that the server still runs"
        ), said
    time.sleep(1.5)  # past the server's save delay: no room holds a change it could save
    assert path.read_bytes() == before
