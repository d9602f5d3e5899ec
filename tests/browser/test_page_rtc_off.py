"""jupyter-collaboration installed but switched off (`--YDocExtension.disable_rtc=True`).

Its endpoints still answer, so a kernel that only asked "is the collaboration API there?" edited
a room no page followed: the approved cell never appeared, `%approve` said done while the page
kept the old code, and the person's save met "File Changed". planbook reads the server's page
settings instead: the open page is the notebook (the in-cell review's page backend), and
`%load_ext` says so, and why, in one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.jupyter_server import RTC_OFF, JupyterServerError, RunningServer
from tests.support.notebook_page import (
    doc_shot,
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
)

pytestmark = [pytest.mark.server, pytest.mark.kernel, pytest.mark.browser]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with page_server(
        tmp_path_factory.mktemp("rtc-off-root"), collaboration=True, extra_args=[RTC_OFF]
    ) as running:
        yield running


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    with notebook_page(tmp_path / "chromium") as opened:
        yield opened


def test_with_collaboration_switched_off_the_page_is_the_notebook(
    server: RunningServer, page: Any
) -> None:
    # the collaboration API answers on this server (what fooled the kernel before)
    with pytest.raises(JupyterServerError, match="HTTP 405"):
        server.api("GET", "api/collaboration/session/off.ipynb")
    four_cells(server, "off.ipynb")
    try:
        panel = open_notebook(page, server, "off.ipynb", 4)
        first_run(panel)
        run_cell(panel, 3, "%load_ext planbook")
        out = run_cell(panel, 4, "%%propose --after c1 --reason 'a new look'\nprint('new', x)")
        # the first magic says what it opened
        expect(out).to_contain_text("notebook: page:")
        expect(out).to_contain_text("disable_rtc")
        assert "live:" not in out.first.inner_text()
        expect(out).to_contain_text("staged step 1")
        out = run_cell(panel, 5, "%%propose --replace c3\nz = 'new'")
        expect(out).to_contain_text("staged step 2")
        # approve on the cell: the new cell appears in the page, right after c1
        placeholder = panel.locator(".pb-cell-review[data-step-number='1']")
        placeholder.locator(".pb-cell-approve").click()
        expect(panel.locator(".jp-Cell")).to_have_count(8)
        expect(editor(panel, 1)).to_have_text("print('new', x)")
        expect(placeholder).to_have_count(0)
        # `%approve` changes the page's code
        out = run_cell(panel, 7, "%approve")
        expect(out.first).to_contain_text("step 2")
        expect(editor(panel, 3)).to_have_text("z = 'new'")
        no_file_changed_dialog(page)
        cells = panel.locator(".jp-Cell")
        doc_shot("rtc-off", cells.nth(0), cells.nth(4))
        # the person's save: no "File Changed", and every cell they typed is in the file
        page.keyboard.press("Escape")
        page.keyboard.press("ControlOrMeta+s")
        expect(page.locator(".jp-mod-dirty")).to_have_count(0)
        no_file_changed_dialog(page)
        sources = ["".join(c["source"]) for c in saved(server, "off.ipynb")["cells"]]
        assert sources[:4] == ["x = 1", "print('new', x)", "print(x)", "z = 'new'"], sources
        assert sources[4] == "%load_ext planbook"
        assert sources[5].startswith("%%propose --after c1") and sources[7] == "%approve"
        page.reload()
        panel = open_notebook(page, server, "off.ipynb", 9)  # Shift+Enter added one
        expect(editor(panel, 3)).to_have_text("z = 'new'")
        expect(output(panel, 5)).to_contain_text("notebook: page:")  # the first magic's
    finally:
        server.end_sessions()
