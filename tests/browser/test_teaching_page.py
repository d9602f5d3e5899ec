"""The plan-vs-act teaching notebook as a class sees it: run cell by cell in a real JupyterLab
page (live, with collaboration), plan mode puts its badges on the very cells of the open
notebook and `%plan` shows the panel beside them; act mode takes the notes cell off the page
and the rollback brings it back; then the start-over cell and plan mode again, for the
rehearsal, give the same badges.

The pictures docs/in-the-page.md shows for the teaching notebook are taken here."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import expect

from tests.support.jupyter_server import RunningServer
from tests.support.notebook_page import (
    RAN,
    doc_shot,
    notebook_page,
    open_notebook,
    page_server,
)

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CELLS = nbformat.read(NOTEBOOKS / "plan-vs-act.ipynb", as_version=4).cells
AT = {cell.id: n for n, cell in enumerate(CELLS)}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    root = tmp_path / "class"
    root.mkdir()
    shutil.copy(NOTEBOOKS / "plan-vs-act.ipynb", root / "plan-vs-act.ipynb")
    with page_server(root, collaboration=True) as running:
        yield running


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with notebook_page(tmp_path / "chromium") as opened:
        opened.route(ROOT_LISTING, _list_the_root_again_on_404)
        yield opened


#: The file browser's listing of the server's root (it asks again every 10 s).
ROOT_LISTING = re.compile(r"/api/contents/?\?(.*&)?content=1")


def _list_the_root_again_on_404(route: Any) -> None:
    """The act step deletes field-notes.txt from the root. A listing of the root that reads a
    file's name just before it goes and its details just after is answered 404 by
    jupyter_server (2.21: the entry's ``get`` raises; 54 of 3655 listings under load while a
    file was written and deleted in a loop), and JupyterLab's file browser then covers the
    page with "Directory not found: \"\"" until someone closes it. The root exists: such a
    listing is asked again, as the browser's next refresh would."""
    response = route.fetch()
    for _ in range(5):
        if response.status != 404 or route.request.method != "GET":
            break
        response = route.fetch()
    route.fulfill(response=response)


def cell(panel: Any, cell_id: str) -> Any:
    """A cell by its content (JupyterLab's DOM has no cell ids, and act mode removes a cell,
    so positions move): a code cell by its first line, a markdown cell by its first words."""
    source = next(c for c in CELLS if c.id == cell_id)
    first = source.source.splitlines()[0]
    if source.cell_type == "markdown":
        words = first.lstrip("# ").replace("*", "")[:30]
        return panel.locator(".jp-MarkdownCell").filter(has_text=words)
    whole = "$" if "\n" not in source.source else ""
    editor = panel.page.locator(".cm-content", has_text=re.compile(f"^{re.escape(first)}{whole}"))
    return panel.locator(".jp-CodeCell").filter(has=editor)


def review_box(panel: Any, cell_id: str) -> Any:
    return panel.locator(f".pb-cell-review[data-cell-id='{cell_id}']")


def run_through(panel: Any, first: str, last: str) -> None:
    """Select cell ``first`` and press Shift+Enter on it and each cell after it up to ``last``,
    as the teacher does; each code cell has run before the next is run."""
    cell(panel, first).click()
    for source in CELLS[AT[first] : AT[last] + 1]:
        if source.cell_type != "code":
            panel.page.keyboard.press("Shift+Enter")
            continue
        prompt = cell(panel, source.id).locator(".jp-InputPrompt")
        before = prompt.inner_text()
        panel.page.keyboard.press("Shift+Enter")
        expect(prompt).not_to_have_text(before, timeout=180_000)
        expect(prompt).to_have_text(RAN, timeout=180_000)


def plan_mode_badges(panel: Any) -> None:
    """The two cell steps wait on their cells; the notes cell is still on the page."""
    expect(review_box(panel, "load-penguins")).to_contain_text("pending")
    expect(review_box(panel, "my-notes")).to_contain_text("pending")
    expect(cell(panel, "my-notes")).to_have_count(1)


def test_the_class_sees_plan_mode_on_the_open_notebook_then_act_mode_and_again(
    server: RunningServer, page: Any
) -> None:
    panel = open_notebook(page, server, "plan-vs-act.ipynb", len(CELLS))
    run_through(panel, "intro", "plan-panel")
    expect(cell(panel, "setup").locator(".jp-OutputArea-output")).to_contain_text("live: ")
    plan_mode_badges(panel)
    review = cell(panel, "plan-panel").locator(".planbook-panel")
    expect(review.locator(".pb-step")).to_have_count(3)
    doc_shot(
        "teaching-plan-mode",
        cell(panel, "load-penguins"),
        cell(panel, "my-notes"),
    )
    doc_shot("teaching-plan-panel", review)

    run_through(panel, "plan-decide", "run-act")
    # act mode: the notes cell left the page as soon as the assistant deleted it
    expect(cell(panel, "my-notes")).to_have_count(0, timeout=30_000)
    act = cell(panel, "run-act").locator(".jp-OutputArea-output")
    expect(act.first).to_contain_text("notes cell still there: False")

    run_through(panel, "act-rollback", "compare")
    expect(cell(panel, "my-notes")).to_have_count(1, timeout=30_000)
    undo = cell(panel, "act-undo").locator(".jp-OutputArea-output")
    expect(undo.first).to_contain_text("notes cell back: True")
    table = cell(panel, "compare").locator(".jp-OutputArea-output table")
    expect(table).to_contain_text("act mode, then rollback")
    doc_shot("teaching-side-by-side", cell(panel, "compare"))

    # the rehearsal: start over and plan mode again give the same badges
    run_through(panel, "start-over", "run-plan")
    plan_mode_badges(panel)
