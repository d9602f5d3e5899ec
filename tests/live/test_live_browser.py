"""The promise of the live backend, seen by a person: a step approved in the kernel appears in
the notebook open in JupyterLab, without reload (real Chromium through Playwright)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.live.conftest import run
from tests.support.browser import chromium_context
from tests.support.jupyter_server import RunningServer

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    # Playwright's default viewport (1280 x 720), as this test was written against
    with chromium_context(tmp_path / "chromium", width=1280, height=720) as context:
        yield context.new_page()


def page_kernel(server: RunningServer, notebook: str) -> dict[str, Any]:
    """The kernel session the page started for the notebook."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for session in server.api("GET", "api/sessions"):
            if session["path"] == notebook:
                return dict(session)
        time.sleep(0.2)
    raise AssertionError("the page started no kernel")


def test_a_kernel_applied_step_appears_in_the_open_page(
    server: RunningServer, notebook: str, page: Any
) -> None:
    page.goto(f"{server.url}lab/tree/{notebook}?token={server.token}")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    notebook_panel = page.locator(".jp-NotebookPanel")
    expect(notebook_panel.locator(".jp-Cell")).to_have_count(3)

    kernel = page_kernel(server, notebook)
    run(
        server,
        kernel,
        """
import planbook
s = planbook.session()
assert s.document.backend == "live", s.document.description
s.propose.insert_cell("print('planbook-live-' + str(6 * 7))", after="c3", reason="shown live",
                     run=True)
assert s.approve().ok
""",
    )

    # the same page, never reloaded: the new cell arrives through the collaboration room
    new_cell = notebook_panel.locator(".jp-Cell .cm-content", has_text="planbook-live-")
    new_cell.wait_for(state="visible", timeout=30_000)
    expect(notebook_panel.locator(".jp-Cell")).to_have_count(4)
    # and its output, written by the kernel the way the frontend writes outputs
    output = notebook_panel.locator(".jp-Cell").nth(3).locator(".jp-OutputArea-output")
    expect(output).to_contain_text("planbook-live-42")
