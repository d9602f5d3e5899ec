"""A person's hands on a JupyterLab notebook page (Playwright): open it, type, run a cell, read
its editor and outputs, check that JupyterLab never asked "File Changed"."""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from playwright.sync_api import expect

from tests.support.jupyter_server import RunningServer

#: A cell's prompt once it ran ("[ ]:" before, "[*]:" while it runs).
RAN = re.compile(r"\[\d+\]:")


def open_notebook(page: Any, server: RunningServer, notebook: str, cells: int) -> Any:
    page.goto(f"{server.url}lab/tree/{notebook}?reset&token={server.token}")
    panel = page.locator(".jp-NotebookPanel")
    expect(panel.locator(".jp-Cell")).to_have_count(cells, timeout=90_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
        1, timeout=90_000
    )
    return panel


def editor(panel: Any, index: int) -> Any:
    return panel.locator(".jp-Cell").nth(index).locator(".jp-InputArea .cm-content")


def output(panel: Any, index: int) -> Any:
    return panel.locator(".jp-Cell").nth(index).locator(".jp-OutputArea-output")


def type_into(panel: Any, index: int, text: str, *, replace: bool = True) -> None:
    """Click into cell ``index`` and type (select all first unless ``replace`` is False)."""
    editor(panel, index).click()
    expect(editor(panel, index)).to_be_focused()
    keyboard = panel.page.keyboard
    if replace:
        keyboard.press("ControlOrMeta+a")
    else:
        keyboard.press("ControlOrMeta+End")
    keyboard.insert_text(text)


def run_cell(panel: Any, index: int, text: str, *, moves: int = 0) -> Any:
    """Type ``text`` into cell ``index``, run it (Shift+Enter); its output area. ``moves``:
    how far the cell moves meanwhile (a step inserts or removes a cell above it)."""
    type_into(panel, index, text)
    expect(editor(panel, index)).to_have_text(text.replace("\n", ""))
    panel.page.keyboard.press("Shift+Enter")
    index += moves
    out = output(panel, index)
    prompt = panel.locator(".jp-Cell").nth(index).locator(".jp-InputPrompt")
    expect(prompt).to_have_text(RAN)
    return out


def first_run(panel: Any) -> None:
    """Run the first cell (``x = 1``, harmless twice). Right after the page opens, JupyterLab
    sometimes drops a Shift+Enter although the kernel shows idle (the cell stays "[ ]:"), so
    this one is pressed again; every later run goes to a kernel that has answered."""
    prompt = panel.locator(".jp-Cell").first.locator(".jp-InputPrompt")
    for _ in range(3):
        editor(panel, 0).click()
        panel.page.keyboard.press("Shift+Enter")
        with contextlib.suppress(AssertionError):
            expect(prompt).to_have_text(RAN, timeout=10_000)
            return
    expect(prompt).to_have_text(RAN)


def no_file_changed_dialog(page: Any) -> None:
    expect(page.locator(".jp-Dialog")).to_have_count(0)


def saved(server: RunningServer, notebook: str) -> dict[str, Any]:
    return dict(json.loads((server.root / notebook).read_text()))
