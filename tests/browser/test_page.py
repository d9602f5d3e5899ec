"""Without jupyter-collaboration (JupyterLab's default install): the open page is the notebook.

A person works in real Chromium against a real server without the collaboration extension:
loads planbook, stages with `%%propose` cells (never saved yet), approves on the cell and with
`%approve`, types in another cell meanwhile, saves and reloads. Every approved change, the
person's edit, the magic cells and planbook's record are there; JupyterLab never asked "File
Changed"; a rollback lands in the page too; a target the person edited is refused in one line
with their text kept. The kernel-side protocol is in tests/test_page.py.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from planbook import Session
from planbook.documents.file import FileNotebook
from planbook.workspace.files import Workspace
from tests.support.jupyter_server import RunningServer
from tests.support.notebook_page import (
    editor,
    first_run,
    four_cells,
    no_file_changed_dialog,
    notebook_page,
    open_notebook,
    output,
    page_server,
    run_cell,
    saved,
    type_into,
)

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]

_names = itertools.count(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with page_server(tmp_path_factory.mktemp("page-root"), collaboration=False) as running:
        yield running


@pytest.fixture
def notebook(server: RunningServer) -> Iterator[str]:
    name = f"page{next(_names)}.ipynb"
    four_cells(server, name)
    yield name
    server.end_sessions()


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with notebook_page(tmp_path / "chromium") as opened:
        yield opened


def test_approved_changes_land_in_the_page_and_its_save_keeps_everything(
    server: RunningServer, notebook: str, page: Any
) -> None:
    panel = open_notebook(page, server, notebook, 4)
    first_run(panel)
    out = run_cell(panel, 3, "%load_ext planbook")
    expect(out).to_contain_text("opens at first use")
    # cells 4, 5, 6 are new: never saved, yet targeted and kept
    out = run_cell(
        panel, 4, "%%propose --after c1 --run --reason 'a new look'\nprint('inserted', x + 41)"
    )
    expect(out).to_contain_text("notebook: page:")  # the first magic says what it opened
    expect(out).to_contain_text("staged step 1")
    out = run_cell(panel, 5, "%%propose --replace c3 --reason newer\nz = 'new'")
    expect(out).to_contain_text("staged step 2")
    # Approve on the cell: step 2 (the edit of c3) lands in the page at once
    box = panel.locator(".pb-cell-review[data-step-number='2']")
    box.locator(".pb-cell-approve").click()
    expect(editor(panel, 2)).to_have_text("z = 'new'")
    expect(box).to_have_count(0)
    # the person types in another cell and does not save
    type_into(panel, 1, " # mine", replace=False)
    expect(editor(panel, 1)).to_have_text("print(x) # mine")
    # `%approve` runs step 1: a new cell after c1, run, its output in the page
    approved = run_cell(panel, 6, "%approve", moves=1)
    expect(editor(panel, 1)).to_have_text("print('inserted', x + 41)")
    expect(approved.first).to_contain_text("step 1")
    assert approved.count() == 1, approved.all_inner_texts()  # nothing on stderr
    expect(output(panel, 1)).to_contain_text("inserted 42")
    no_file_changed_dialog(page)

    page.keyboard.press("Escape")
    page.keyboard.press("ControlOrMeta+s")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)
    no_file_changed_dialog(page)
    snapshots = _snapshots_sent(page)
    page.reload()
    panel = open_notebook(page, server, notebook, 9)
    expected = [
        "x = 1",
        "print('inserted', x + 41)",
        "print(x) # mine",
        "z = 'new'",
        "%load_ext planbook",
        "%%propose --after c1 --run --reason 'a new look'print('inserted', x + 41)",
        "%%propose --replace c3 --reason newerz = 'new'",
        "%approve",
    ]
    for i, text in enumerate(expected):
        expect(editor(panel, i)).to_have_text(text)
    expect(output(panel, 1)).to_contain_text("inserted 42")
    nb = saved(server, notebook)
    sources = ["".join(c["source"]) for c in nb["cells"]]
    assert sources[:4] == ["x = 1", "print('inserted', x + 41)", "print(x) # mine", "z = 'new'"]
    record = nb["metadata"]["planbook"]
    (plan,) = record["plans"].values() if isinstance(record["plans"], dict) else record["plans"]
    statuses = [step["status"] for step in _steps(plan)]
    assert statuses == ["done", "done"], statuses
    # read as planbook reads them (a stored checkpoint leaves its default label to the step)
    on_disk = Session(FileNotebook(server.root / notebook), Workspace(server.root))
    labels = sorted(cp.label for cp in on_disk.checkpoints())
    assert labels == ["before step 1 (insert_cell)", "before step 2 (edit_cell)"], labels

    # roll back the last step (the insert): gone from the page, and from the file it saves;
    # the kernel sends changes to the reloaded page once it has its cells (a round trip after
    # the page opened its comm), and hears nothing while `%rollback` runs: sent before them,
    # the rollback is refused
    _wait_for(snapshots, page)
    rolled = run_cell(panel, 8, "%rollback", moves=-1)
    expect(rolled).to_contain_text("rolled back 1 step")
    expect(editor(panel, 1)).to_have_text("print(x) # mine")
    no_file_changed_dialog(page)
    page.keyboard.press("Escape")
    page.keyboard.press("ControlOrMeta+s")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)
    nb = saved(server, notebook)
    sources = ["".join(c["source"]) for c in nb["cells"]]
    assert "print('inserted', x + 41)" not in sources
    assert sources[:3] == ["x = 1", "print(x) # mine", "z = 'new'"]
    no_file_changed_dialog(page)


def _snapshots_sent(page: Any) -> list[int]:
    """From now on, one entry per full snapshot of its cells the page sends its kernel (the
    answer of js/labextension/src/pagedoc.ts to the kernel's "resync")."""
    sent: list[int] = []

    def frame(payload: str | bytes) -> None:
        raw = payload.encode() if isinstance(payload, str) else payload
        if b'"type":"cells","full":true' in raw:
            sent.append(len(sent) + 1)

    page.on(
        "websocket",
        lambda ws: ws.on("framesent", frame) if "/api/kernels/" in ws.url else None,
    )
    return sent


def _wait_for(snapshots: list[int], page: Any, seconds: float = 60.0) -> None:
    """Until the page sent its cells: what the kernel reads and sends changes against."""
    deadline = time.monotonic() + seconds
    while not snapshots:
        assert time.monotonic() < deadline, "the page never sent the kernel its cells"
        page.wait_for_timeout(100)  # lets Playwright deliver the page's frames


def _steps(plan: Any) -> list[dict[str, Any]]:
    revisions = plan.get("revisions") or []
    return list(revisions[-1]["steps"]) if revisions else list(plan.get("steps") or [])


def test_a_target_edited_after_staging_is_refused_and_the_text_kept(
    server: RunningServer, notebook: str, page: Any
) -> None:
    panel = open_notebook(page, server, notebook, 4)
    first_run(panel)
    run_cell(panel, 3, "%load_ext planbook")
    out = run_cell(panel, 4, "%%propose --replace c2\nprint('planned')")
    expect(out).to_contain_text("staged step 1")
    # the kernel reads the page, not the file: unsaved text and cells are listed
    out = run_cell(panel, 5, "%plan cells")
    expect(out).to_contain_text("%load_ext planbook")
    expect(out).to_contain_text("%%propose --replace c2")
    type_into(panel, 1, "print('mine')")
    out = run_cell(panel, 6, "%approve")
    expect(out.first).to_contain_text("c2")
    report = out.first.inner_text().strip().splitlines()
    assert len(report) == 1 and "c2" in report[0], report
    expect(editor(panel, 1)).to_have_text("print('mine')")
    no_file_changed_dialog(page)
    assert saved(server, notebook)["cells"][1]["source"] == "print(x)"  # nothing written


def test_a_target_typed_into_while_the_run_is_under_way_refuses_in_the_page(
    server: RunningServer, notebook: str, page: Any
) -> None:
    """The kernel cannot hear the page while `%approve` runs: the page itself refuses the
    change whose target the person is typing into, in one line, and keeps their text."""
    panel = open_notebook(page, server, notebook, 4)
    first_run(panel)
    run_cell(panel, 3, "%load_ext planbook")
    out = run_cell(
        panel, 4, "%%propose --after c1 --run\nimport time; time.sleep(4); print('slept')"
    )
    expect(out).to_contain_text("staged step 1")
    out = run_cell(panel, 5, "%%propose --replace c3\nz = 'planned'")
    expect(out).to_contain_text("staged step 2")
    type_into(panel, 6, "%approve")
    page.keyboard.press("Shift+Enter")
    # step 1's cell is in the page and sleeping: the person types into c3 meanwhile
    expect(editor(panel, 1)).to_contain_text("time.sleep(4)")
    type_into(panel, 3, "z = 'typed meanwhile'")
    toast = page.locator(".Toastify__toast", has_text="was not applied")
    expect(toast).to_have_count(1)
    line = toast.inner_text().strip()
    assert "\n" not in line and "'c3'" in line, line
    expect(output(panel, 1)).to_contain_text("slept")
    expect(editor(panel, 3)).to_have_text("z = 'typed meanwhile'")
    page.keyboard.press("Escape")
    page.keyboard.press("ControlOrMeta+s")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0)
    no_file_changed_dialog(page)
    assert "".join(saved(server, notebook)["cells"][3]["source"]) == "z = 'typed meanwhile'"
