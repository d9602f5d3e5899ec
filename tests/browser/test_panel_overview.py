"""A 30-step plan in real Chromium (the panel's module loaded as anywidget loads it, with a model
that keeps traits as anywidget's does): the toolbar stays in view while the steps scroll, the
extension's ``planbook:focus-step`` brings a row into view, a failed step asks the notebook to
go to its cell, and an unticked step stays unticked when the panel is drawn again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planbook.documents.memory import MemoryNotebook
from planbook.model.cell import Cell
from planbook.sessions.session import Session
from planbook.surfaces.widget.assets import css_path, esm_source
from planbook.surfaces.widget.panel import ReviewPanel
from planbook.workspace.files import Workspace

pytestmark = pytest.mark.browser

MOUNT = """
async ({ esm, state }) => {
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  window.mod = await import(url);
  window.sent = [];
  window.cellRequests = [];
  window.addEventListener("planbook:focus-cell", (e) => window.cellRequests.push(e.detail));
  const cbs = new Map();
  window.model = {
    state, get(name) { return this.state[name]; },
    on(name, cb) { if (!cbs.has(name)) cbs.set(name, new Set()); cbs.get(name).add(cb); },
    off(name, cb) { cbs.get(name)?.delete(cb); },
    send(msg) { window.sent.push(msg); },
    set(name, value) {
      this.state[name] = value;
      for (const cb of cbs.get(`change:${name}`) ?? []) cb();
    },
    save_changes() {},
  };
  const el = document.getElementById("host");
  window.cleanup = window.mod.default.render({ model: window.model, el });
}
"""


@pytest.fixture
def state(tmp_path: Path) -> dict[str, Any]:
    """A real panel's state: 30 steps, the first of which ran and failed (no kernel here)."""
    cells = [Cell(id=f"cell{n:02d}", source=f"x{n} = {n}") for n in range(1, 31)]
    session = Session(MemoryNotebook(cells), Workspace(tmp_path))
    for n in range(1, 31):
        session.propose.edit_cell(f"#{n}", f"x{n} = {n} * 2", reason=f"double x{n}", run=n == 1)
    session.approve(1)
    panel = ReviewPanel(session)
    return {"view": panel.view, "live": {}, "deselected": [], "superseded": False}


@pytest.fixture
def page(browser: Any, state: dict[str, Any]) -> Iterator[Any]:
    p = browser.new_page()
    p.set_viewport_size({"width": 1000, "height": 700})
    p.set_content(
        f"<!doctype html><html><head><style>{css_path().read_text()}</style></head>"
        "<body style='margin:0'><div id='host' style='width:900px'></div></body></html>"
    )
    p.evaluate(MOUNT, {"esm": esm_source(), "state": state})
    p.wait_for_selector(".planbook-panel .pb-step")
    yield p
    p.close()


def visible_in(p: Any, inner: str, outer: str) -> bool:
    return bool(
        p.evaluate(
            """([inner, outer]) => {
              const a = document.querySelector(inner).getBoundingClientRect();
              const b = document.querySelector(outer).getBoundingClientRect();
              return a.top >= b.top - 1 && a.bottom <= b.bottom + 1 && a.height > 0;
            }""",
            [inner, outer],
        )
    )


def test_the_toolbar_stays_in_view_while_thirty_steps_scroll(page: Any, artifacts: Path):
    assert page.locator(".pb-step").count() == 30
    page.locator(".pb-scroll").evaluate("(box) => { box.scrollTop = box.scrollHeight; }")
    assert page.locator(".pb-scroll").evaluate("(box) => box.scrollTop") > 500
    assert visible_in(page, ".pb-toolbar", ".pb-scroll")
    assert visible_in(page, ".pb-toolbar", "body")
    page.get_by_role("button", name="Collapse all").click()  # still reachable, and works
    assert page.locator(".pb-step-body").count() == 0
    page.locator(".planbook-panel").screenshot(path=str(artifacts / "panel-30-steps.png"))


def test_focus_step_from_a_cell_badge_scrolls_to_the_row_and_highlights_it(page: Any):
    page.evaluate(
        "window.dispatchEvent(new CustomEvent('planbook:focus-step', {detail: {stepNumber: 25}}))"
    )
    row = page.locator(".pb-step.pb-highlight")
    assert row.count() == 1 and row.get_attribute("aria-label").startswith("Step 25:")
    key = row.get_attribute("data-key")
    assert visible_in(page, f"[data-key='{key}'] .pb-step-head", ".pb-scroll")
    assert page.evaluate("document.activeElement.dataset.key") == key


def test_a_failed_step_goes_to_its_cell_and_offers_retry_and_rollback(page: Any):
    failed = page.locator(".pb-step.pb-status-failed")
    assert failed.count() == 1
    assert "needs an IPython kernel" in failed.locator(".pb-step-error").inner_text()
    failed.get_by_role("button", name="Go to the cell of step 1").click()
    assert page.evaluate("window.cellRequests") == [{"cellId": "cell01"}]
    failed.get_by_role("button", name="Retry step 1").click()
    sent = page.evaluate("window.sent")
    assert sent[-1]["action"] == "retry"
    failed.get_by_role("button", name="Roll back step 1").click()
    assert page.evaluate("window.sent")[-1]["action"] == "rollback"


def test_filter_and_an_unticked_step_survive_drawing_the_panel_again(page: Any):
    page.locator(".pb-step").nth(3).get_by_role("checkbox").uncheck()
    page.locator(".pb-filter").select_option("failed")
    assert page.locator(".pb-step").count() == 1
    # The output is drawn again (a re-run %plan, a reload): a new view of the same model.
    page.evaluate(
        "() => { window.cleanup(); window.mod.default.render("
        "{ model: window.model, el: document.getElementById('host') }); }"
    )
    assert page.locator(".pb-step").count() == 30
    assert not page.locator(".pb-step").nth(3).get_by_role("checkbox").is_checked()
    assert page.locator(".pb-step").nth(4).get_by_role("checkbox").is_checked()
