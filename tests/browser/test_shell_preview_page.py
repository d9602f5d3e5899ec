"""A shell step's preview in the in-cell review, in real Chromium against a real server, kernel
and bubblewrap overlay: the box after the last cell shows what a staged `sed -i` would change
(its diff) before anything is approved, and Preview on a step without one fills it in while
the kernel stays free; the workspace changes only when a step is approved."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from planbook.workspace.overlay import overlay_probe
from tests.browser.test_extension import box, cell_of, open_notebook, page_kernel, run
from tests.support.jupyter_server import RunningServer
from tests.support.notebook_page import doc_shot, page_server

pytestmark = [
    pytest.mark.server,
    pytest.mark.kernel,
    pytest.mark.browser,
    pytest.mark.skipif(
        not overlay_probe().available, reason=f"no overlays here: {overlay_probe().reason}"
    ),
]

#: Two shell steps: a `sed -i` (short and local: previewed as it is staged) and a command that
#: takes a few seconds (not previewed until asked).
STAGE = """
%load_ext planbook
import planbook
s = planbook.session()
s.propose.shell("sed -i s/one/ONE/ notes.txt", reason="shout the first line")
s.propose.shell("sleep 3; printf 'made\\\\n' > made.txt", reason="make a file")
print([st.preview is not None for st in s.current_plan().steps])
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with page_server(tmp_path_factory.mktemp("shell-preview-root")) as running:
        yield running


@pytest.mark.parametrize("ui", ["lab", "notebook7"])
def test_a_shell_steps_box_shows_its_preview_and_previews_on_request(
    server: RunningServer, browser: Any, ui: str, artifacts: Path
) -> None:
    notebook = f"shell-{ui}.ipynb"
    server.write_notebook(notebook, ["x = 1", "print(x)", "z = 'old'"], ids=["c1", "c2", "c3"])
    (server.root / "notes.txt").write_text("one\ntwo\n")
    (server.root / "made.txt").unlink(missing_ok=True)
    try:
        review_shell_steps(browser.new_page(), server, notebook, ui, artifacts)
    finally:
        server.end_sessions()


def review_shell_steps(
    page: Any, server: RunningServer, notebook: str, ui: str, artifacts: Path
) -> None:
    """The person's part, in the page only: read the boxes, press Preview, then Approve."""
    panel = open_notebook(page, server, notebook, ui)
    kernel = page_kernel(server, notebook)
    assert run(server, kernel, STAGE).strip().endswith("[True, False]")

    # step 1, the staged `sed -i`: its box sits after the last cell and shows the file's diff
    sed = box(panel, 1)
    expect(sed).to_be_visible()
    expect(cell_of(panel, 1).locator(".jp-InputArea .cm-content")).to_have_text("z = 'old'")
    expect(sed.locator(".pb-shell-command")).to_have_text("sed -i s/one/ONE/ notes.txt")
    expect(sed.locator(".pb-shell-summary")).to_have_text("preview (exit 0): 1 changed")
    notes = sed.locator(".pb-shell-change[data-path='notes.txt']")
    expect(notes).to_have_attribute("data-kind", "changed")
    expect(notes.locator(".pb-cell-diff-del")).to_have_text(["-one"])
    expect(notes.locator(".pb-cell-diff-add")).to_have_text(["+ONE"])
    expect(sed.locator(".pb-cell-preview")).to_have_text("Preview again")
    assert (server.root / "notes.txt").read_text() == "one\ntwo\n", "nothing was applied"

    # step 2 has no preview yet: Preview runs it; meanwhile the box says so, the kernel is free
    slow = box(panel, 2)
    expect(slow).to_contain_text("Not previewed yet")
    slow.locator(".pb-cell-preview").click()
    expect(slow.locator(".pb-shell-previewing")).to_be_visible()
    expect(slow.locator(".pb-cell-preview")).to_be_disabled()
    expect(slow.locator(".pb-cell-approve")).to_be_disabled()
    began = time.monotonic()
    assert run(server, kernel, "print(40 + 2)").strip() == "42"
    answered = time.monotonic() - began
    assert answered < 2.5, f"the kernel waited for the preview: {answered:.1f} s"
    if ui == "lab":
        page.screenshot(path=str(artifacts / "shell-preview-running-lab.png"))
    made = slow.locator(".pb-shell-change[data-path='made.txt']")
    expect(made).to_have_attribute("data-kind", "created", timeout=30_000)
    expect(made.locator(".pb-cell-diff-add")).to_have_text(["+made"])
    expect(slow.locator(".pb-shell-previewing")).to_have_count(0)
    assert not (server.root / "made.txt").exists(), "a preview writes nothing to the workspace"
    if ui == "lab":
        page.screenshot(path=str(artifacts / "shell-preview-lab.png"))
        doc_shot("shell-preview", box(panel, 1), box(panel, 2))

    # approving on the box runs the command for real: now the file changes
    sed.locator(".pb-cell-approve").click()
    expect(box(panel, 1)).to_have_count(0)
    assert (server.root / "notes.txt").read_text() == "ONE\ntwo\n"
    matched = run(server, kernel, "print(s.current_plan().steps[0].preview.after_run)")
    assert matched.strip() == "the changes match the preview (same paths, content and modes)"
