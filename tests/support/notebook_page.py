"""A person's hands on a JupyterLab notebook page (Playwright): open it, type, run a cell, read
its editor and outputs, check that JupyterLab never asked "File Changed"."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.support.browser import chromium_context
from tests.support.jupyter_server import RunningServer
from tests.support.labextension import expose_labextension
from tests.support.mcp_http import with_endpoint

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
    how far the cell moves meanwhile (a step inserts or removes a cell above it).

    Right after a page (re)opens, JupyterLab sometimes drops a Shift+Enter (see
    ``first_run``): the cell keeps "[ ]:" and its text where it was. Then it is pressed again,
    and only then: a cell that started ("[*]:") or moved away is never run twice."""
    type_into(panel, index, text)
    flat = text.replace("\n", "")
    expect(editor(panel, index)).to_have_text(flat)
    for _ in range(3):
        panel.page.keyboard.press("Shift+Enter")
        if not _still_unrun(panel, index, flat, seconds=5.0):
            break
        editor(panel, index).click()
    index += moves
    expect(editor(panel, index)).to_have_text(flat)  # the step moved it (if it does) first
    prompt = panel.locator(".jp-Cell").nth(index).locator(".jp-InputPrompt")
    expect(prompt).to_have_text(RAN)
    return output(panel, index)


def _still_unrun(panel: Any, index: int, flat: str, *, seconds: float) -> bool:
    """Whether cell ``index`` still holds ``flat`` with its "[ ]:" prompt after ``seconds``
    (JupyterLab marks a cell "[*]:" the moment it sends it to the kernel)."""
    cell = panel.locator(".jp-Cell").nth(index)
    deadline = time.monotonic() + seconds
    while True:
        prompt = (cell.locator(".jp-InputPrompt").text_content(timeout=5_000) or "").strip()
        source = cell.locator(".jp-InputArea .cm-content").text_content(timeout=5_000) or ""
        if prompt != "[ ]:" or source != flat:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.1)


def first_run(panel: Any) -> None:
    """Run the first cell (``x = 1``, harmless twice). Right after the page opens, JupyterLab
    sometimes drops a Shift+Enter although the kernel shows idle (the cell stays "[ ]:"), so
    this one is pressed again; every later run goes to a kernel that has answered."""
    prompt = panel.locator(".jp-Cell").first.locator(".jp-InputPrompt")
    dialog = panel.page.locator(".jp-Dialog")
    for _ in range(3):
        if dialog.count() and "Select Kernel" in dialog.first.inner_text():
            # on a loaded machine JupyterLab sometimes asks for the kernel it was told to
            # start (the notebook names python3): a person picks the one offered
            dialog.first.locator(".jp-mod-accept").click()
            expect(dialog).to_have_count(0)
            expect(
                panel.page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")
            ).to_have_count(1, timeout=90_000)
        if dialog.count():
            raise AssertionError(f"a dialog covers the page: {dialog.first.inner_text()!r}")
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


#: A folder for the pictures docs/in-the-page.md shows: set, the page tests save them there
#: (`PLANBOOK_DOC_THEME=dark` for the dark ones); unset, nothing is saved.
DOC_SHOTS = os.environ.get("PLANBOOK_DOC_SHOTS")
DOC_THEME = os.environ.get("PLANBOOK_DOC_THEME", "light")


def use_doc_theme(server: RunningServer) -> None:
    """Before the server starts: JupyterLab's dark theme when the pictures are the dark ones."""
    if DOC_THEME != "dark":
        return
    settings = Path(server.env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": "JupyterLab Dark"}))


def doc_shot(name: str, *parts: Any) -> None:
    """Save the smallest picture holding ``parts`` (locators) as docs' ``name``-<theme>.png."""
    if not DOC_SHOTS or not parts:
        return
    parts[0].scroll_into_view_if_needed()  # a clip is taken from what the window shows
    boxes = [box for part in parts if (box := part.bounding_box()) is not None]
    if not boxes:
        return
    left = min(b["x"] for b in boxes)
    top = min(b["y"] for b in boxes)
    right = max(b["x"] + b["width"] for b in boxes)
    bottom = max(b["y"] + b["height"] for b in boxes)
    page = parts[0].page
    page.wait_for_timeout(300)  # let a redraw settle
    Path(DOC_SHOTS).mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(Path(DOC_SHOTS) / f"{name}-{DOC_THEME}.png"),
        clip={"x": left, "y": top, "width": right - left, "height": bottom - top},
    )


@contextlib.contextmanager
def page_server(root: Path, *, mcp: bool = False, **options: Any) -> Iterator[RunningServer]:
    """A Jupyter server (``RunningServer`` options) whose pages load this tree's in-cell
    review extension, in the docs' theme, with planbook's MCP endpoint when ``mcp``; closed
    afterwards."""
    running = RunningServer(root, **options)
    if mcp:
        with_endpoint(running)
    try:
        expose_labextension(Path(running.env["JUPYTER_DATA_DIR"]))
        use_doc_theme(running)
        running.start()
        yield running
    finally:
        running.close()


@contextlib.contextmanager
def notebook_page(profile: Path) -> Iterator[Any]:
    """A Chromium page tall enough for a notebook of a dozen cells."""
    with chromium_context(profile, width=1100, height=1400) as context:
        yield context.new_page()


def four_cells(server: RunningServer, name: str) -> Path:
    """The notebook the page tests start from: c1 ``x = 1``, c2 ``print(x)``, c3
    ``z = 'old'`` and an empty c4."""
    return server.write_notebook(
        name, ["x = 1", "print(x)", "z = 'old'", ""], ids=["c1", "c2", "c3", "c4"]
    )
