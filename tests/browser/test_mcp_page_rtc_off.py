"""An outside agent's proposal where collaboration is switched off: the open page holds the
notebook, so the proposal goes through the page's kernel (planbook's own silent call) into the
page itself. JupyterLab in real Chromium, a real kernel that loaded planbook, the official MCP
client over HTTP (the server's endpoint) and over stdio (the agent's own ``planbook mcp``
process, which finds the server by its runtime files): the step shows on its cell within
seconds, marked with the client's name, while the person has unsaved typing in another cell;
approved on the cell, it runs there; the client's wait and read see the output before anything
is saved; a question is asked and answered the same way; the person's save writes the step,
its output, the answer and their typing (nothing lost, no "File Changed")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_mcp_page import call, call_over_stdio, propose_approve_and_wait
from tests.support.jupyter_server import RTC_OFF, RunningServer
from tests.support.notebook_page import (
    editor,
    first_run,
    no_file_changed_dialog,
    notebook_page,
    open_notebook,
    page_server,
    run_cell,
    saved,
    type_into,
)

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]

TYPED = "note = 'typed, not saved'"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with page_server(
        tmp_path_factory.mktemp("mcp-page-off-root"), mcp=True, extra_args=[RTC_OFF]
    ) as running:
        yield running


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with notebook_page(tmp_path / "chromium") as opened:
        yield opened


#: How the agent reaches planbook: the server's endpoint, or its own ``planbook mcp`` process.
AGENTS = {"http": call, "stdio": call_over_stdio}


@pytest.mark.parametrize("transport", list(AGENTS))
def test_a_proposal_goes_through_the_pages_kernel_and_the_save_keeps_everything(
    server: RunningServer, page: Any, transport: str
) -> None:
    call = AGENTS[transport]
    server.write_notebook(
        "agent.ipynb", ["x = 41", "print(x + 1)", "", ""], ids=["load", "show", "magic", "typed"]
    )
    try:
        panel = open_notebook(page, server, "agent.ipynb", 4)
        first_run(panel)
        expect(run_cell(panel, 2, "%load_ext planbook\n%plan").first).to_contain_text("page:")
        type_into(panel, 3, TYPED)  # the person's unsaved typing
        page.keyboard.press("Escape")

        # the file keeps no step before the person saves: the step lives in the page
        before = saved(server, "agent.ipynb")
        answer, shown_after = propose_approve_and_wait(server, panel, call)
        print(
            f"proposal ({transport}) to on-cell review without collaboration: {shown_after:.2f} s"
        )
        assert saved(server, "agent.ipynb") == before

        # the client reads the page's decision and output through the kernel, before any save
        step_id = re.search(r"\(step id (\w+)\)", answer)
        assert step_id is not None, answer
        waited = call(
            server, "wait_for_review", notebook="agent.ipynb", step_ids=[step_id[1]], timeout_s=30
        )
        assert waited.startswith("every step is decided:"), waited
        assert "1. [done] edit cell `show`" in waited and "82" in waited, waited
        cell = call(server, "read_cell", notebook="agent.ipynb", cell="show")
        assert "print(x * 2)" in cell and "82" in cell.split("outputs", 1)[1], cell

        # a question goes the same way: asked into the page, answered there, read back
        asked = call(
            server,
            "ask_person",
            notebook="agent.ipynb",
            question="Keep the doubled value?",
            options=["yes", "no"],
        )
        assert asked.startswith("Asked question q1 in agent.ipynb"), asked
        expect(run_cell(panel, 2, "%answer q1 yes").first).to_contain_text("q1 -> yes")
        waited = call(
            server, "wait_for_review", notebook="agent.ipynb", question_ids=["q1"], timeout_s=30
        )
        assert waited.startswith("every question is answered:"), waited
        assert waited.rstrip().endswith(": yes"), waited

        # the person saves: the step, its result and their typing are all in the file
        expect(editor(panel, 3)).to_have_text(TYPED)
        page.keyboard.press("ControlOrMeta+s")
        expect(page.locator(".jp-mod-dirty")).to_have_count(0)
        no_file_changed_dialog(page)
        on_disk = saved(server, "agent.ipynb")
        by_id = {c["id"]: c for c in on_disk["cells"]}
        assert "".join(by_id["show"]["source"]) == "print(x * 2)"
        assert "82" in str(by_id["show"]["outputs"])
        assert "".join(by_id["typed"]["source"]) == TYPED
        plans = on_disk["metadata"]["planbook"]["plans"]
        [step] = [s for p in plans.values() for s in p["revisions"][-1]["steps"]]
        assert step["status"] == "done" and step["origin"] == "claude-code 2.1.0 (MCP)"
        [question] = on_disk["metadata"]["planbook"]["questions"]
        assert question["answer"] == "yes"
    finally:
        server.end_sessions()
