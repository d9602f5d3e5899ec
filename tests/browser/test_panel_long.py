"""A long plan in the panel, in Chromium: it opens with its first rows whole and the others as
one line each, and a row scrolled near the view is drawn whole, where a person can tick it.

The panel is loaded the way anywidget loads it (the joined ES module from a blob URL) on a
plain page, with a model that keeps what the panel sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planbook.documents.memory import MemoryNotebook
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.surfaces.widget.assets import css_path, esm_source
from planbook.surfaces.widget.panel import ReviewPanel
from planbook.workspace.files import Workspace

STEPS = 120

MOUNT = """
async ({ esm, view }) => {
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  const mod = await import(url);
  class Model {
    constructor(v) { this.state = { view: v }; this.cbs = new Map(); this.sent = []; }
    get(name) { return this.state[name]; }
    on(name, cb) { this.cbs.set(cb, name); }
    off(_n, cb) { this.cbs.delete(cb); }
    send(msg) { this.sent.push(msg); }
    set(name, v) { this.state[name] = v; }
    save_changes() {}
  }
  window.model = new Model(view);
  mod.default.render({ model: window.model, el: document.getElementById("host") });
}
"""


def _view(root: Path) -> dict[str, Any]:
    cells = [Cell(id=f"c{i}", source=f"value_{i} = load({i})\n") for i in range(STEPS)]
    session = Session(MemoryNotebook(cells), Workspace(root))
    for i in range(STEPS):
        session.propose.edit_cell(f"c{i}", f"value_{i} = load({i}, cache=True)\n", reason="cache")
    view: dict[str, Any] = ReviewPanel(session).view
    return view


def test_a_long_plan_draws_rows_whole_as_they_scroll_into_view(browser: Any, tmp_path: Path):
    view = _view(tmp_path)
    last = view["steps"][-1]["id"]
    page = browser.new_page()
    page.set_content(
        f"<!doctype html><html><head><style>{css_path().read_text()}</style></head>"
        "<body><div id='host' style='width:900px'></div></body></html>"
    )
    page.evaluate(MOUNT, {"esm": esm_source(), "view": view})
    assert page.locator(".pb-step").count() == STEPS, "every step is listed at once"
    assert page.locator(".pb-step.pb-summary").count() >= STEPS - 60
    row = page.locator(f"[data-key='step:{last}']")
    assert (
        row.get_attribute("aria-label")
        == f"Step {STEPS}: edit cell {view['steps'][-1]['target']}, pending"
    )
    assert "+1 −1" in (row.text_content() or "") and row.locator(".pb-step-head").count() == 0

    page.locator(".pb-scroll").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    row.locator(".pb-step-head").wait_for(timeout=10_000)  # drawn whole near the view
    row.get_by_role("checkbox").uncheck()
    page.get_by_role("button", name="Approve selected").click()
    sent = page.evaluate("window.model.sent.at(-1)")
    assert sent["action"] == "approve" and last not in sent["step_ids"]
    assert len(sent["step_ids"]) == STEPS - 1
    assert len(sent["shown"]) == STEPS, "the hash of every listed step goes with it"
