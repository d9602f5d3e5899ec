"""The attacker's catalogue in a real JupyterLab in Chromium: a received notebook whose plan
carries every markup payload (in the task, the summary, each step's reason, a cell's new source
and a shell command), shown as ``pb.plan`` (the markdown bundle), as the review panel and as the
in-cell review; then an agent run (a scripted model) writes the payloads as its text and its
tool calls' arguments, shown as the agent's live view and in its panel.

Each payload, if it ever ran, would set ``window.__pwned`` and write ``pwned.txt`` through
Jupyter's contents API with the page's credentials; some would load from a host nothing
listens on. None of that may happen, and the payloads must show as the text they are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.documents.file import FileNotebook
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.attack.payloads import ELSEWHERE, MARKUP
from tests.browser.test_panel_browser import run_first_cell
from tests.support.jupyter_server import RunningServer
from tests.support.labextension import expose_labextension

pytestmark = [pytest.mark.browser, pytest.mark.server, pytest.mark.kernel]

PAYLOADS = [payload for _, payload in MARKUP]
JOINED = "\n".join(PAYLOADS)

SHOW = """\
%load_ext planbook
import planbook
s = planbook.session()
display(s.plan)
s.review()"""

AGENT = f"""\
import tempfile
from pathlib import Path
from planbook.agent.run import plan_task
from planbook.agents import Scripted
from planbook.documents.base import Cell
from planbook.documents.memory import MemoryNotebook
from planbook.sessions.session import Session
from planbook.surfaces.widget.panel import ReviewPanel
from planbook.workspace.files import Workspace
PAYLOADS = {json.dumps(PAYLOADS)}
JOINED = "\\n".join(PAYLOADS)
s2 = Session(MemoryNotebook([Cell(id="a1", source="y = 1")]), Workspace(Path(tempfile.mkdtemp())))
display(ReviewPanel.for_session(s2))
calls = [("insert_cell", {{"source": p, "after": "a1", "reason": p}}) for p in PAYLOADS]
calls += [("read_file", {{"path": p}}) for p in PAYLOADS[-20:]]
calls += [("present_plan", {{"summary": JOINED}})]
run = await plan_task(s2, JOINED, model=Scripted(calls, final=JOINED))
display(run)"""

#: Elements that would mean a payload became markup (planbook's own icons aside).
ACTIVE = (
    "img, script, iframe, style, object, embed, details, animate, math, mjx-container, "
    "a:not(.jp-InternalAnchorLink), svg:not(.pb-icon-svg), [onerror], [onload], [ontoggle]"
)
SURFACES = ".jp-RenderedMarkdown, .planbook-panel, .pb-cell-review"


def write_received_notebook(path: Path) -> None:
    """A notebook whose stored plan carries every payload, made by someone else's planbook."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for cell_id, source in [("c1", "x = 1"), ("c2", "print(x)"), ("c3", SHOW), ("c4", AGENT)]:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)
    sender = Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )
    sender.new_plan(JOINED)
    for payload in PAYLOADS:
        sender.propose.edit_cell("c1", payload, reason=payload)
        sender.propose.shell(payload, reason=payload)
    sender.set_summary(JOINED)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    root = tmp_path / "root"
    root.mkdir()
    write_received_notebook(root / "hostile.ipynb")
    running = RunningServer(root, lab=True, collaboration=True)
    try:
        expose_labextension(Path(running.env["JUPYTER_DATA_DIR"]))
        running.start()
        yield running
    finally:
        running.close()


def test_no_payload_runs_loads_or_links_in_any_sink(
    server: RunningServer, browser: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=90_000)
    page = browser.new_page()
    page.set_default_timeout(90_000)
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    def nothing_ran(where: str) -> None:
        time.sleep(3)  # an onerror, onload or fetch would have happened by now
        ran = {
            "window.__pwned": page.evaluate("window.__pwned"),
            "dialogs": dialogs,
            "pwned.txt written": (server.root / "pwned.txt").exists(),
            "requests": [u for u in requests if "pwned" in u or u.startswith(ELSEWHERE[:20])],
            "active elements": page.evaluate(
                """([surfaces, active]) => [...document.querySelectorAll(surfaces)]
                    .flatMap((s) => [...s.querySelectorAll(active)])
                    .map((n) => n.outerHTML.slice(0, 120))""",
                [SURFACES, ACTIVE],
            ),
        }
        assert {k: v for k, v in ran.items() if v} == {}, where

    try:
        page.goto(f"{server.url}lab/tree/hostile.ipynb?reset&token={server.token}")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
        run_first_cell(page)
        page.keyboard.press("Shift+Enter")  # print(x)
        page.keyboard.press("Shift+Enter")  # pb.plan and the panel
        cells = page.locator(".jp-Notebook .jp-Cell")
        shown = cells.nth(2)
        expect(shown.locator(".jp-RenderedMarkdown").first).to_contain_text("onerror")
        expect(shown.locator(".planbook-panel .pb-step")).to_have_count(2 * len(PAYLOADS))
        review = page.locator(".pb-cell-review")
        expect(review.first).to_be_visible()
        nothing_ran("pb.plan, the panel and the in-cell review")

        page.keyboard.press("Control+Enter")  # the agent, in place: no new empty cell
        agent = cells.nth(3)
        expect(agent.locator(".jp-RenderedMarkdown").last).to_contain_text("planbook agent")
        expect(agent.locator(".planbook-panel .pb-step")).to_have_count(len(PAYLOADS))
        nothing_ran("the agent's view and its panel")
        page.screenshot(path=str(artifacts / "markup-payloads.png"), full_page=True)

        # ...and each payload shows as the text it is: the reviewer can read what is stored
        # (textContent: JupyterLab skips drawing cells out of view, so innerText can be empty)
        plan_text = shown.locator(".jp-RenderedMarkdown").first.text_content() or ""
        assert "<script>" in plan_text and "<img src=x onerror=" in plan_text
        assert "javascript:" in plan_text and "</details>" in plan_text
        agent_text = agent.locator(".jp-RenderedMarkdown").last.text_content() or ""
        assert "<img src=x onerror=" in agent_text and "|<img src=x onerror=" in agent_text
        reasons = review.locator(".pb-cell-review-reason")
        assert "<img src=x onerror=" in reasons.first.text_content() or ""
        # the shell steps' boxes (after the last cell) show each command as its text
        commands = review.locator(".pb-shell-command")
        expect(commands).to_have_count(len(PAYLOADS))
        assert "<img src=x onerror=" in "".join(commands.all_text_contents())
    except BaseException:
        page.screenshot(path=str(artifacts / "markup-payloads-failure.png"), full_page=True)
        raise
    finally:
        page.close()
        server.end_sessions()
