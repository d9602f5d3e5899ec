"""End to end: JupyterLab in Chromium, a notebook whose cell stages steps, the review panel.

The person skips one step and clicks Approve selected: exactly the other steps run (the notebook
and the files say so); then Rollback, confirmed, puts everything back.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.conftest import make_notebook
from tests.support.jupyter_server import RunningServer, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.server]

#: The inserted cell ends in an expression: its result must reach the cell and the file when
#: the step is approved from the panel, as with `%approve`.
DESCRIBE = (
    "import pandas as pd\ny = x + 1\nprint('y is', y)\npd.DataFrame({'y': [y, 2 * y]}).describe()"
)
STAGE = f"""\
import planbook
DESCRIBE = {DESCRIBE!r}
s = planbook.session()
s.propose.edit_cell("c1", "x = 41", reason="the answer is near", run=True)
s.propose.insert_cell(DESCRIBE, after="c2", reason="derive y", run=True)
s.propose.write_file("result.txt", "42\\n", reason="keep the result")
s.propose.write_file("skipped.txt", "no\\n", reason="this one gets skipped")
s.review()"""


def write_notebook(path: Path) -> None:
    make_notebook(path, ["x = 1", "print('x is', x)", STAGE])


def cells(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    return [(c["id"], c["source"]) for c in nb.cells]


def result_html(path: Path, cell_index: int) -> str:
    nb = nbformat.read(path, as_version=4)
    outputs = nb.cells[cell_index].get("outputs", [])
    return "".join(
        o["data"].get("text/html", "") for o in outputs if o["output_type"] == "execute_result"
    )


def outputs_text(path: Path, cell_index: int) -> str:
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for o in nb.cells[cell_index].get("outputs", []))


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait until `check()` holds (the collaboration server saves about a second later)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, ValueError, json.JSONDecodeError, IndexError, KeyError):
            pass  # the file is being replaced right now
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def run_first_cell(page: Any, tries: int = 4) -> None:
    """Shift+Enter in the first cell until the kernel has run it: right after the page opens,
    JupyterLab can drop an execution while the kernel connection and the shared document are
    still settling, so the first run is retried (running `x = 1` twice changes nothing)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    prompt = page.locator(".jp-Cell").first.locator(".jp-InputPrompt")
    for _ in range(tries):
        page.locator(".jp-Cell .cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        try:
            prompt.filter(has_text=re.compile(r"\[\d+\]")).wait_for(timeout=15_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError("JupyterLab never ran the first cell")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "analysis.ipynb")
    with start_jupyter(root, lab=True, collaboration=True) as running:
        yield running


def test_approve_selected_with_one_skipped_then_rollback(
    server: RunningServer, browser: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    nb_path = server.root / "analysis.ipynb"
    original = cells(nb_path)
    page = browser.new_page()
    page.set_default_timeout(60_000)
    try:
        run_review(page, server, nb_path, original, artifacts)
    except BaseException:
        page.screenshot(path=str(artifacts / "panel-failure.png"), full_page=True)
        raise
    finally:
        page.close()


def run_review(
    page: Any,
    server: RunningServer,
    nb_path: Path,
    original: list[tuple[str, str]],
    artifacts: Path,
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{server.url}lab/tree/analysis.ipynb?token={server.token}")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")

    # Run the three cells: x = 1, print, then the cell that stages the plan and shows the panel.
    run_first_cell(page)
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Control+Enter")  # run the last cell in place: no new empty cell
    panel = page.locator(".planbook-panel")
    expect(panel).to_be_visible()
    steps = panel.locator(".pb-step")
    expect(steps).to_have_count(4)
    expect(panel.locator(".pb-header")).to_contain_text("4 pending")
    expect(panel.locator(".pb-header")).to_contain_text("live")

    # Skip step 4 from the keyboard: JupyterLab's own j/k/s shortcuts must not take the keys.
    steps.nth(2).locator(".pb-reason").click()
    page.keyboard.press("j")
    expect(steps.nth(3)).to_be_focused()
    page.keyboard.press("s")
    expect(steps.nth(3)).to_have_class(re.compile(r"\bpb-status-skipped\b"))
    approve = panel.get_by_role("button", name="Approve selected (3)")
    expect(approve).to_be_enabled()
    panel.screenshot(path=str(artifacts / "panel-review.png"))

    approve.click()
    for i in range(3):
        expect(steps.nth(i).locator(".pb-status-badge")).to_have_text("done")
    expect(steps.nth(3).locator(".pb-status-badge")).to_have_text("skipped")
    expect(panel.locator(".pb-header")).to_contain_text("3 done")
    expect(panel.locator(".pb-checkpoint")).to_have_count(3)
    panel.screenshot(path=str(artifacts / "panel-done.png"))

    # Exactly the approved steps ran: the notebook (saved by the collaboration server) and files.
    root = server.root
    wait_for(
        lambda: len(cells(nb_path)) == 4 and cells(nb_path)[0][1] == "x = 41",
        "the edited and inserted cells on disk",
    )
    ids_sources = cells(nb_path)
    assert [src for _, src in ids_sources] == [
        "x = 41",
        "print('x is', x)",
        DESCRIBE,
        STAGE,
    ]
    wait_for(lambda: "y is 42" in outputs_text(nb_path, 2), "the inserted cell's output")
    wait_for(lambda: "mean" in result_html(nb_path, 2), "the describe() table in the file")
    table = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output table")
    expect(table).to_contain_text("mean")
    assert (root / "result.txt").read_text() == "42\n"
    assert not (root / "skipped.txt").exists()
    expect(page.locator(".jp-Cell").nth(2).locator(".cm-content")).to_contain_text("y = x + 1")

    # Roll back to the first checkpoint, with a confirmation.
    first = panel.locator(".pb-checkpoint").first
    name = "Rollback to before step 1: edit cell #1, the answer is near"
    first.get_by_role("button", name=name).click()
    dialog = panel.get_by_role("alertdialog", name="Confirm rollback")
    expect(dialog).to_contain_text("Roll back to")
    dialog.get_by_role("button", name="Roll back").click()
    expect(panel.locator(".pb-error")).to_have_count(0)

    wait_for(lambda: cells(nb_path) == original, "the notebook back as it was")
    assert not (root / "result.txt").exists()
    assert not (root / "skipped.txt").exists()
    expect(page.locator(".jp-Cell")).to_have_count(3)
    expect(page.locator(".jp-Cell").first.locator(".cm-content")).to_have_text("x = 1")


#: The flag lives outside the workspace: a command in an overlay sees the workspace as it was
#: when it started (docs/what-it-cannot-do.md).
SLOW = """\
import planbook
s = planbook.session()
s.propose.shell("while [ ! -f {flag} ]; do sleep 0.1; done; echo released",
                reason="wait for the test to let go", timeout=120)
s.propose.write_file("after-stop.txt", "should not exist\\n", reason="runs only if not stopped")
s.review()"""


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[RunningServer]:
    root = tmp_path / "root"
    root.mkdir()
    slow = SLOW.replace("{flag}", str(tmp_path / "release.flag"))
    make_notebook(root / "slow.ipynb", ["x = 1", slow])
    with start_jupyter(root, lab=True, collaboration=True) as running:
        yield running


def test_stop_ends_the_run_between_steps(
    slow_server: RunningServer, browser: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    root = slow_server.root
    page = browser.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{slow_server.url}lab/tree/slow.ipynb?token={slow_server.token}")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
        run_first_cell(page)
        page.keyboard.press("Control+Enter")
        panel = page.locator(".planbook-panel")
        steps = panel.locator(".pb-step")
        expect(steps).to_have_count(2)
        panel.get_by_role("button", name="Approve all").click()

        # Step 1 waits for the flag: the panel shows the run and stays usable meanwhile.
        expect(steps.nth(0).locator(".pb-status-badge")).to_have_text("running")
        expect(panel.locator("progress")).to_be_visible()
        expect(panel.locator(".pb-progress-text")).to_contain_text("Running 1 of 2")
        stop = panel.get_by_role("button", name="Stop the run after the current step")
        stop.click()
        expect(panel.locator(".pb-progress-text")).to_contain_text("Stopping")
        (root.parent / "release.flag").write_text("go")

        expect(steps.nth(0).locator(".pb-status-badge")).to_have_text("done")
        expect(panel.locator(".pb-error")).to_contain_text("stopped on request")
        expect(steps.nth(1).locator(".pb-status-badge")).to_have_text("pending")
        expect(panel.locator("progress")).to_have_count(0)
        assert not (root / "after-stop.txt").exists()
        panel.screenshot(path=str(artifacts / "panel-stopped.png"))
    except BaseException:
        page.screenshot(path=str(artifacts / "panel-stop-failure.png"), full_page=True)
        raise
    finally:
        page.close()


SHOW_FIRST = """\
import planbook
s = planbook.session()
s.propose.write_file("a.txt", "1\\n", reason="the first note")
s.review()"""
SHOW_AGAIN = """\
s.propose.write_file("b.txt", "2\\n", reason="the second note")
s.review()"""


@pytest.fixture
def shown_twice_server(tmp_path: Path) -> Iterator[RunningServer]:
    root = tmp_path / "root"
    root.mkdir()
    make_notebook(root / "twice.ipynb", ["x = 1", SHOW_FIRST, SHOW_AGAIN])
    with start_jupyter(root, lab=True, collaboration=True) as running:
        yield running


def test_a_panel_shown_again_replaces_the_one_above_which_stays_one_line_after_a_reload(
    shown_twice_server: RunningServer, browser: Any, artifacts: Path
) -> None:
    """The older panel keeps no view in the kernel (each ``%plan`` used to keep a whole copy):
    its page shows the one line, before and after the page loads again from the kernel's
    widget state, and the newer panel shows the whole plan."""
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)
    server = shown_twice_server
    page = browser.new_page()
    page.set_default_timeout(60_000)

    def check_both() -> None:
        panels = page.locator(".planbook-panel")
        expect(panels).to_have_count(2)
        expect(panels.first.locator(".pb-superseded")).to_contain_text("replaced by a newer one")
        expect(panels.first.locator(".pb-step")).to_have_count(0)
        expect(panels.nth(1).locator(".pb-step")).to_have_count(2)
        expect(panels.nth(1).locator(".pb-header")).to_contain_text("2 pending")

    try:
        page.goto(f"{server.url}lab/tree/twice.ipynb?token={server.token}")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
        run_first_cell(page)
        page.keyboard.press("Shift+Enter")
        expect(page.locator(".planbook-panel .pb-step")).to_have_count(1)
        page.keyboard.press("Control+Enter")  # the last cell, in place: no new empty cell
        check_both()
        page.reload()
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
        check_both()
    except BaseException:
        page.screenshot(path=str(artifacts / "panel-shown-twice-failure.png"), full_page=True)
        raise
    finally:
        page.close()
    assert not (server.root / "a.txt").exists() and not (server.root / "b.txt").exists()
