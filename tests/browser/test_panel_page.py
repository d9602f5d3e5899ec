"""The panel's front end in real Chromium, without Jupyter: loaded from a blob URL as anywidget
loads it, with a fake model. Narrow output areas, themes and the keyboard."""

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
async ({ esm, view }) => {
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  const mod = await import(url);
  window.sent = [];
  const cbs = new Set();
  window.model = {
    v: view, traits: {}, get(name) { return name === "view" ? this.v : this.traits[name]; },
    on(_n, cb) { cbs.add(cb); }, off(_n, cb) { cbs.delete(cb); },
    send(msg) { window.sent.push(msg); },
    set(name, value) { this.traits[name] = value; }, save_changes() {},
  };
  mod.default.render({ model: window.model, el: document.getElementById("host") });
}
"""

LONG = "result = " + " + ".join(f"compute_something_long({i})" for i in range(12))


@pytest.fixture
def view(tmp_path: Path) -> dict[str, Any]:
    cells = [Cell(id="c1", source="x = 1"), Cell(id="c2", source="print(x)")]
    session = Session(MemoryNotebook(cells), Workspace(tmp_path))
    session.propose.edit_cell("c1", LONG, reason="a very long line " * 8)
    session.propose.write_file(
        "a/deeply/nested/folder/with/a/long/name/output_file.py",
        "def f():\n    return 1\n",
        reason="a file",
    )
    session.propose.insert_cell("y = 2", after="c2", reason="short")
    result: dict[str, Any] = ReviewPanel(session).view
    return result


@pytest.fixture
def page(browser: Any, view: dict[str, Any]) -> Iterator[Any]:
    def open_page(width: int, theme: str = "") -> Any:
        page = browser.new_page()
        page.set_content(
            f"<!doctype html><html><head><style>{css_path().read_text()}</style>"
            f"<style>{theme}</style></head><body style='margin:0'>"
            f"<div id='host' style='width:{width}px'></div></body></html>"
        )
        page.evaluate(MOUNT, {"esm": esm_source(), "view": view})
        page.wait_for_selector(".planbook-panel .pb-step")
        return page

    yield open_page


def test_a_narrow_output_area_wraps_instead_of_overflowing(page: Any, artifacts: Path):
    p = page(320)
    overflow = p.evaluate("""() => {
      const host = document.getElementById('host');
      const wide = [...host.querySelectorAll('*')].filter(
        (n) => n.getBoundingClientRect().right > host.getBoundingClientRect().right + 1
          && !n.closest('.pb-step-body'));
      return { scroll: host.scrollWidth, client: host.clientWidth,
               wide: wide.map((n) => n.className).slice(0, 5) };
    }""")
    assert overflow["scroll"] <= overflow["client"], overflow
    assert overflow["wide"] == [], overflow
    p.locator(".planbook-panel").screenshot(path=str(artifacts / "panel-narrow.png"))


def test_colours_come_from_the_jupyterlab_theme_variables(page: Any):
    dark = (
        ":root { --jp-ui-font-color1: rgb(230, 230, 230); --jp-layout-color1: rgb(17, 17, 17);"
        " --jp-brand-color1: rgb(10, 132, 255); }"
    )
    p = page(800, dark)
    colours = p.evaluate("""() => {
      const root = getComputedStyle(document.querySelector('.planbook-panel'));
      const primary = getComputedStyle(document.querySelector('.pb-primary'));
      return [root.color, root.backgroundColor, primary.backgroundColor];
    }""")
    assert colours == ["rgb(230, 230, 230)", "rgb(17, 17, 17)", "rgb(10, 132, 255)"]


def test_keyboard_moves_focus_and_toggles_in_a_real_browser(page: Any):
    p = page(800)
    p.locator(".pb-step").first.locator(".pb-reason").click()
    assert p.evaluate("document.activeElement.dataset.key").startswith("step:")
    p.keyboard.press("j")
    p.keyboard.press("j")
    third = p.evaluate("document.activeElement.getAttribute('aria-label')")
    assert third.startswith("Step 3:")
    p.keyboard.press("a")
    p.keyboard.press("k")
    p.keyboard.press("s")
    p.keyboard.press("Control+Enter")
    sent = p.evaluate("window.sent")
    ids = p.evaluate("window.model.v.steps.map((s) => s.id)")
    shown = p.evaluate(
        "Object.fromEntries(window.model.v.steps.filter((s) => s.hash).map((s) => [s.id, s.hash]))"
    )
    assert sent == [
        {"action": "skip", "step_id": ids[1], "revision": 1},
        {"action": "approve", "step_ids": [ids[0], ids[1]], "revision": 1, "shown": shown},
    ]


def test_dragging_a_step_onto_another_reorders_in_a_real_browser(page: Any):
    p = page(800)
    ids = p.evaluate("window.model.v.steps.map((s) => s.id)")
    steps = p.locator(".pb-step")
    steps.nth(2).locator(".pb-grip").drag_to(
        steps.nth(0).locator(".pb-step-head"), target_position={"x": 40, "y": 2}
    )
    assert p.evaluate("window.sent") == [
        {"action": "reorder", "order": [ids[2], ids[0], ids[1]], "revision": 1}
    ]
