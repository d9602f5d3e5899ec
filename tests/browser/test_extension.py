"""The in-cell review in real Chromium, in JupyterLab 4 and Notebook 7, against a real server
and kernel: each pending step shows on its cell and is approved or rejected there.

The steps are staged from the kernel (as the agent or a `%%propose` cell would); the person's
part is done in the page only: reading the badge and diff, clicking Approve and Reject, moving
between changes with the keyboard.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.support.browser import chromium_context
from tests.support.jupyter_server import RunningServer
from tests.support.labextension import expose_labextension

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]

_names = itertools.count(1)
DOCS = Path(__file__).resolve().parents[2] / "docs"

#: Staged from the kernel: an edit of c2 (run once approved), an insert after c1 (run once
#: approved), a delete of c3.
STAGE = """
%load_ext planbook
import planbook
s = planbook.session()
assert s.document.backend == "live", s.document.description
x = 1
s.propose.edit_cell("c2", "y = x * 6\\nprint('edited', y)", reason="show y", run=True)
s.propose.insert_cell("print('inserted', x + 41)", after="c1", reason="a new look", run=True)
s.propose.delete_cell("c3", reason="not needed")
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path_factory.mktemp("ext-root"))
    try:
        expose_labextension(Path(running.env["JUPYTER_DATA_DIR"]))
        running.start()
        yield running
    finally:
        running.close()


@pytest.fixture
def notebook(server: RunningServer) -> Iterator[str]:
    name = f"review{next(_names)}.ipynb"
    server.write_notebook(name, ["x = 1", "print(x)", "z = 'old'"], ids=["c1", "c2", "c3"])
    yield name
    server.end_sessions()


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[Any]:
    with chromium_context(tmp_path / "chromium", width=1100) as context:
        yield context.new_page()


def page_kernel(server: RunningServer, notebook: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for session in server.api("GET", "api/sessions"):
            if session["path"] == notebook and session.get("kernel"):
                return str(session["kernel"]["id"])
        time.sleep(0.2)
    raise AssertionError("the page started no kernel")


def run(server: RunningServer, kernel_id: str, code: str) -> str:
    result = server.execute(kernel_id, code, timeout=120)
    if result["error"]:
        raise AssertionError("\n".join(result["error"]["traceback"]))
    return str(result["stdout"])


def open_notebook(page: Any, server: RunningServer, notebook: str, ui: str) -> Any:
    # `reset`: a fresh lab workspace, not the tabs an earlier test left open
    path = "lab/tree" if ui == "lab" else "notebooks"
    page.goto(f"{server.url}{path}/{notebook}?reset&token={server.token}")
    panel = page.locator(".jp-NotebookPanel")
    expect(panel.locator(".jp-Cell")).to_have_count(3, timeout=90_000)
    return panel


def cell_with(panel: Any, text: str) -> Any:
    return panel.locator(".jp-Cell", has=panel.page.locator(".cm-content", has_text=text))


def box_css(number: int) -> str:
    return f".pb-cell-review[data-step-number='{number}']"


def box(panel: Any, number: int) -> Any:
    return panel.locator(box_css(number))


def cell_of(panel: Any, number: int) -> Any:
    """The cell that carries step ``number``'s box (for an insert: its anchor)."""
    return panel.locator(".jp-Cell", has=panel.page.locator(box_css(number)))


@pytest.mark.parametrize("ui", ["lab", "notebook7"])
def test_each_pending_step_is_reviewed_on_its_cell(
    server: RunningServer, notebook: str, browser_page: Any, ui: str, artifacts: Path
) -> None:
    page = browser_page
    panel = open_notebook(page, server, notebook, ui)
    kernel = page_kernel(server, notebook)
    run(server, kernel, STAGE)

    # step 1: the badge and the diff sit on the edited cell (c2, "print(x)")
    edit = box(panel, 1)
    expect(edit).to_be_visible()
    expect(edit.locator(".pb-cell-badge")).to_have_text("Step 1 · pending")
    edited_cell = cell_of(panel, 1)
    expect(edited_cell.locator(".jp-InputArea .cm-content")).to_have_text("print(x)")
    expect(edit.locator(".pb-cell-diff-del")).to_have_text(["-print(x)"])
    expect(edit.locator(".pb-cell-diff-add")).to_have_text(["+y = x * 6", "+print('edited', y)"])
    # step 2: a placeholder right below c1, not a cell of the notebook
    insert = box(panel, 2)
    expect(insert).to_have_class(re.compile(r"\bpb-placeholder\b"))
    host = cell_of(panel, 2)
    expect(host.locator(".jp-InputArea .cm-content")).to_have_text("x = 1")
    expect(insert).to_contain_text("not in the notebook until approved")
    expect(panel.locator(".jp-Cell")).to_have_count(3)
    # step 3: the deleted cell is struck through
    doomed = cell_of(panel, 3)
    expect(doomed).to_have_class(re.compile(r"\bpb-mod-delete\b"))
    expect(doomed.locator(".jp-InputArea .cm-content")).to_have_text("z = 'old'")
    if ui == "lab":
        page.screenshot(path=str(artifacts / "extension-review-lab.png"))

    # Approve on the edited cell: its source changes in the page and its output shows
    edited_cell = panel.locator(".jp-Cell").nth(1)
    edit.locator(".pb-cell-approve").click()
    expect(edited_cell.locator(".jp-InputArea .cm-content")).to_contain_text("y = x * 6")
    expect(edited_cell.locator(".jp-OutputArea-output")).to_contain_text("edited 6")
    expect(box(panel, 1)).to_have_count(0)

    # Reject on the deleted cell: it stays, no longer struck through
    box(panel, 3).locator(".pb-cell-reject").click()
    expect(box(panel, 3)).to_have_count(0)
    expect(panel.locator(".jp-Cell.pb-mod-delete")).to_have_count(0)
    expect(cell_with(panel, "z = 'old'")).to_have_count(1)

    # Approve the placeholder in place: a real cell at its position, run, with its output
    box(panel, 2).locator(".pb-cell-approve").click()
    expect(panel.locator(".jp-Cell")).to_have_count(4)
    second = panel.locator(".jp-Cell").nth(1)
    expect(second.locator(".jp-InputArea .cm-content")).to_have_text("print('inserted', x + 41)")
    expect(second.locator(".jp-OutputArea-output")).to_contain_text("inserted 42")
    expect(panel.locator(".pb-cell-review")).to_have_count(0)

    # the kernel agrees: every decision went through the Session
    statuses = run(server, kernel, "print([st.status for st in s.current_plan().steps])")
    assert statuses.strip() == "['done', 'done', 'rejected']"


def test_keyboard_moves_between_changes_and_the_badge_leads_to_the_panel(
    server: RunningServer, notebook: str, browser_page: Any
) -> None:
    page = browser_page
    panel = open_notebook(page, server, notebook, "lab")
    kernel = page_kernel(server, notebook)
    run(server, kernel, STAGE)
    expect(panel.locator(".pb-cell-review")).to_have_count(3)

    # notebook order: placeholder after c1 (step 2), c2 (step 1), c3 (step 3)
    panel.locator(".jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    current = panel.locator(".pb-cell-review.pb-mod-current")
    page.keyboard.press("Alt+ArrowDown")
    expect(current).to_have_attribute("data-step-number", "2")
    page.keyboard.press("Alt+ArrowDown")
    expect(current).to_have_attribute("data-step-number", "1")
    expect(panel.locator(".jp-Cell.jp-mod-active")).to_have_count(1)
    expect(panel.locator(".jp-Cell.jp-mod-active .jp-InputArea .cm-content")).to_have_text(
        "print(x)"
    )
    page.keyboard.press("Alt+ArrowDown")
    expect(current).to_have_attribute("data-step-number", "3")
    page.keyboard.press("Alt+ArrowUp")
    expect(current).to_have_attribute("data-step-number", "1")

    # the badge tells the panel which step to show
    page.evaluate(
        """() => { window.focused = [];
          window.addEventListener('planbook:focus-step', (e) => window.focused.push(e.detail)); }"""
    )
    box(panel, 3).locator(".pb-cell-badge").click()
    assert page.evaluate("window.focused")[0]["stepNumber"] == 3

    # the panel's step row asks for a cell: it is selected
    page.evaluate(
        "window.dispatchEvent(new CustomEvent('planbook:focus-cell', {detail: {cellId: 'c3'}}))"
    )
    expect(panel.locator(".jp-Cell.jp-mod-active .jp-InputArea .cm-content")).to_have_text(
        "z = 'old'"
    )


def test_nothing_shows_where_the_kernel_has_not_loaded_planbook(
    server: RunningServer, notebook: str, browser_page: Any
) -> None:
    page = browser_page
    panel = open_notebook(page, server, notebook, "lab")
    kernel = page_kernel(server, notebook)
    run(server, kernel, "import planbook\nplanbook.session().propose.delete_cell('c3')")
    # the plan exists, but the page hears of it only from a kernel that loaded the extension
    page.wait_for_timeout(1500)
    expect(panel.locator(".pb-cell-review")).to_have_count(0)
    run(server, kernel, "%load_ext planbook")
    expect(box(panel, 1)).to_be_visible()
    # a restarted kernel has not loaded planbook: what the page showed goes away
    page.get_by_role("menuitem", name="Kernel", exact=True).click()
    page.get_by_role("menuitem", name="Restart Kernel…").click()
    with contextlib.suppress(PlaywrightTimeout):  # JupyterLab may ask first
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=5_000)
    expect(panel.locator(".pb-cell-review")).to_have_count(0)


#: The pages the kernel sends the plan to after every change: one per open link.
OPEN_LINKS = "from planbook.surfaces.comm import channel\nprint(len(channel._LINKS))"
#: A page whose own close on the way out never reaches the kernel, as under load it may not.
LOST_CLOSE = "window.addEventListener('pagehide', e => e.stopImmediatePropagation(), true)"


def test_a_reloaded_page_leaves_the_kernel_one_page_to_tell(
    server: RunningServer, notebook: str, browser_page: Any
) -> None:
    """Each reload used to leave the old page's comm open in the kernel, which went on
    building and sending it the whole plan after every change: after a day of reloads, one
    staged step did that work once per reload. The page closes its comm as it goes, and a new
    load of the same tab has the kernel close what earlier loads left, even when their close
    was lost. A second tab is a page of its own: both are told."""
    page = browser_page
    page.add_init_script(LOST_CLOSE)
    panel = open_notebook(page, server, notebook, "lab")
    kernel = page_kernel(server, notebook)
    run(server, kernel, STAGE)
    expect(box(panel, 1)).to_be_visible()
    assert run(server, kernel, OPEN_LINKS).strip() == "1"
    for _ in range(3):
        page.reload()
        panel = page.locator(".jp-NotebookPanel")
        expect(box(panel, 3)).to_be_visible(timeout=90_000)
    run(server, kernel, "s.propose.insert_cell('w = 2', after='c1', reason='one more')")
    expect(box(panel, 4)).to_be_visible()
    assert run(server, kernel, OPEN_LINKS).strip() == "1"

    second = page.context.new_page()
    try:
        other = second.locator(".jp-NotebookPanel")
        second.goto(f"{server.url}lab/tree/{notebook}?token={server.token}")
        expect(box(other, 4)).to_be_visible(timeout=90_000)
        assert run(server, kernel, OPEN_LINKS).strip() == "2"
        run(server, kernel, "s.propose.insert_cell('v = 3', after='c1', reason='and one more')")
        expect(box(other, 5)).to_be_visible()
        expect(box(panel, 5)).to_be_visible()
    finally:
        second.close()
