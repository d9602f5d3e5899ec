"""What a cell says after planbook acted on it, in a real JupyterLab page (no collaboration: the
page is the notebook).

A failed insert offers Retry on its own cell, and its red box goes once the retry ran; a
decided step leaves a short trace that fades; a cell planbook ran looks like a cell the person
ran (no "modified" marker, Out [n] is In [n], a trailing `;` hides the value, a notebook the
person trusted stays trusted); an approved
edit that did not run says its output is from the code before, until the cell runs; a pending
delete of a markdown cell is struck through.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.jupyter_server import RunningServer
from tests.support.notebook_page import (
    RAN,
    doc_shot,
    editor,
    first_run,
    four_cells,
    notebook_page,
    open_notebook,
    output,
    page_server,
    run_cell,
)

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]

_names = itertools.count(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with page_server(tmp_path_factory.mktemp("states-root"), collaboration=False) as running:
        yield running


@pytest.fixture
def notebook(server: RunningServer) -> Iterator[str]:
    """Code cells c1..c4 and a markdown cell m1 after c2."""
    name = f"states{next(_names)}.ipynb"
    path = four_cells(server, name)
    nb = json.loads(path.read_text())
    nb["cells"].insert(
        2, {"id": "m1", "cell_type": "markdown", "source": "Old notes", "metadata": {}}
    )
    path.write_text(json.dumps(nb, indent=1))
    yield name
    server.end_sessions()


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with notebook_page(tmp_path / "chromium") as opened:
        yield opened


#: JupyterLab's "modified since it ran" marker on a cell.
DIRTY = re.compile(r"\bjp-mod-dirty\b")


def cell(panel: Any, index: int) -> Any:
    return panel.locator(".jp-Cell").nth(index)


def trust_notebook(page: Any) -> Any:
    """The person runs "Trust Notebook" (command palette); the dialog it opens."""
    page.keyboard.press("Escape")
    page.keyboard.press("ControlOrMeta+Shift+c")
    page.keyboard.insert_text("Trust Notebook")
    page.keyboard.press("Enter")
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_have_count(1)
    return dialog


def test_a_failed_insert_is_retried_on_its_cell_and_its_box_goes(
    server: RunningServer, notebook: str, page: Any
) -> None:
    panel = open_notebook(page, server, notebook, 5)
    first_run(panel)
    dialog = trust_notebook(page)  # the person trusts this notebook
    dialog.locator(".jp-mod-accept").click()
    expect(dialog).to_have_count(0)
    run_cell(panel, 4, "%load_ext planbook")
    out = run_cell(panel, 5, "%%propose --after c1 --run\nprint('ready', ready)")
    expect(out).to_contain_text("staged step 1")
    panel.locator(".pb-cell-review[data-step-number='1'] .pb-cell-approve").click()
    # the insert landed and its run failed: the box sits on the new cell itself, with Retry
    expect(editor(panel, 1)).to_have_text("print('ready', ready)")
    failed = cell(panel, 1).locator(".pb-cell-review.pb-status-failed")
    expect(failed).to_contain_text("Step 1 · failed")
    expect(failed.locator(".pb-cell-approve")).to_have_count(0)
    expect(panel.locator(".pb-placeholder")).to_have_count(0)
    doc_shot("failed-insert-retry", cell(panel, 0), cell(panel, 1))
    run_cell(panel, 7, "ready = 'yes'")
    failed.locator(".pb-cell-retry").click()
    expect(output(panel, 1)).to_contain_text("ready yes")
    expect(panel.locator(".pb-cell-review")).to_have_count(0)
    # what happened, said on the cell for a moment
    trace = cell(panel, 1).locator(".pb-cell-trace")
    expect(trace).to_have_text("Step 2 · done")  # the retry is step 2 of the plan
    doc_shot("decided-trace", cell(panel, 1))
    expect(trace).to_have_count(0, timeout=15_000)
    # the cell planbook ran is not marked modified, and the notebook is still trusted
    expect(cell(panel, 1)).not_to_have_class(DIRTY)
    dialog = trust_notebook(page)
    expect(dialog).to_contain_text("Notebook is already trusted")


def test_cells_planbook_ran_look_like_cells_the_person_ran(
    server: RunningServer, notebook: str, page: Any
) -> None:
    panel = open_notebook(page, server, notebook, 5)
    first_run(panel)
    # the person ran c2 and c3 already: JupyterLab marks a cell whose code changed after its
    # run as modified, until it runs again
    run_cell(panel, 1, "print(x)")
    run_cell(panel, 3, "z = 'old'")
    run_cell(panel, 4, "%load_ext planbook")
    out = run_cell(panel, 5, "%%propose --replace c2 --run\nx + 41")
    expect(out).to_contain_text("staged step 1")
    out = run_cell(panel, 6, "%%propose --replace c3 --run\nx + 1;")
    expect(out).to_contain_text("staged step 2")
    out = run_cell(panel, 7, "%approve")
    expect(out.first).to_contain_text("step 2")
    # c2 ran: its value, Out [n] the same n as its In [n], no "modified" marker
    expect(output(panel, 1)).to_have_text("42")
    prompt_in = cell(panel, 1).locator(".jp-InputPrompt").inner_text()
    prompt_out = cell(panel, 1).locator(".jp-OutputPrompt").inner_text()
    assert RAN.search(prompt_in), prompt_in
    assert prompt_in.strip() == prompt_out.strip(), (prompt_in, prompt_out)
    # c3 ran with a trailing `;`: no value shown
    expect(cell(panel, 3).locator(".jp-InputPrompt")).to_have_text(RAN)
    expect(output(panel, 3)).to_have_count(0)
    for index in (1, 3):
        expect(cell(panel, index)).not_to_have_class(DIRTY)
    doc_shot("ran-like-a-person", cell(panel, 1), cell(panel, 3))

    # an approved edit without a run: the cell says its output is from the old code
    # (the plan above is complete: this is step 1 of a new one)
    out = run_cell(panel, 8, "%%propose --replace c2\nx + 100")
    expect(out).to_contain_text("staged step 1")
    panel.locator(".pb-cell-review[data-step-number='1'] .pb-cell-approve").click()
    expect(editor(panel, 1)).to_have_text("x + 100")
    stale = cell(panel, 1).locator(".pb-cell-stale")
    expect(stale).to_contain_text("Output from the code before step 1")
    doc_shot("edited-not-run", cell(panel, 1))
    editor(panel, 1).click()
    page.keyboard.press("Shift+Enter")
    expect(output(panel, 1)).to_have_text("101")
    expect(stale).to_have_count(0)

    # a pending delete of a markdown cell: its rendered text is struck through
    run_cell(panel, 9, "import planbook\nplanbook.session().propose.delete_cell('m1')")
    box = cell(panel, 2).locator(".pb-cell-review")
    expect(box).to_contain_text("delete")
    rendered = cell(panel, 2).locator(".jp-RenderedMarkdown")
    expect(rendered).to_have_css("text-decoration-line", "line-through")
    doc_shot("markdown-delete", cell(panel, 2))


def test_a_panel_whose_kernel_restarted_says_so_and_offers_nothing(
    server: RunningServer, notebook: str, page: Any
) -> None:
    panel = open_notebook(page, server, notebook, 5)
    first_run(panel)
    run_cell(panel, 4, "%load_ext planbook")
    out = run_cell(panel, 5, "%%propose --replace c2\nprint(2)")
    expect(out).to_contain_text("staged step 1")
    run_cell(panel, 6, "%plan")
    old = cell(panel, 6).locator(".planbook-panel")
    expect(old.locator("button:enabled").first).to_be_visible()
    # the person restarts the kernel (command mode: 0 0, then Restart)
    cell(panel, 0).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("0")
    page.keyboard.press("0")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    expect(old.locator(".pb-disconnected")).to_contain_text("Run %plan again")
    expect(old.locator("button")).to_have_count(0)
    doc_shot("panel-disconnected", cell(panel, 6))
    # a new %plan draws a working panel; the old one still says it is disconnected
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1)
    run_cell(panel, 7, "%load_ext planbook")
    run_cell(panel, 8, "%plan")
    fresh = cell(panel, 8).locator(".planbook-panel")
    expect(fresh.locator("button:enabled").first).to_be_visible()
    expect(fresh.locator(".pb-disconnected")).to_have_count(0)
    expect(old.locator(".pb-disconnected")).to_have_count(1)
