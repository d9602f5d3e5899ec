"""How fast the review panel shows a plan of 300 steps in Chromium.

Measures, in one run and one page, the time to first render (render call to the first painted
frame) of the panel, and of a plain HTML table with the same 300 rows as the baseline, and
reports the ratio; also the part before the frame (building the DOM and its layout), since
waiting for the frame adds about the same to both, and the time to re-render after a step's
status changes (what happens on every step of a run). The panel is loaded the way anywidget
loads it: the joined ES module imported from a blob URL.

    python benchmarks/bench_panel.py [--steps 300] [--repeat 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planbook.documents.base import Cell  # noqa: E402
from planbook.documents.memory import MemoryNotebook  # noqa: E402
from planbook.sessions.session import Session  # noqa: E402
from planbook.surfaces.widget.assets import css_path, esm_source  # noqa: E402
from planbook.workspace.files import Workspace  # noqa: E402
from tests.support.browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

PAGE_SCRIPT = """
async ({ esm, view, repeat }) => {
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  const mod = await import(url);
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  class Model {
    constructor(v) { this.state = { view: v, live: {} }; this.cbs = new Set(); }
    get(name) { return this.state[name]; }
    on(_n, cb) { this.cbs.add(cb); }
    off(_n, cb) { this.cbs.delete(cb); }
    send() {}
    set(name, v) { this.state[name] = v; for (const cb of this.cbs) cb(); }
  }
  const host = document.getElementById("host");
  const panel = async () => {
    host.replaceChildren();
    const el = document.createElement("div");
    host.append(el);
    const model = new Model(view);
    const t0 = performance.now();
    const cleanup = mod.default.render({ model, el });
    void el.offsetHeight;
    const sync = performance.now() - t0;
    await frame();
    const first = performance.now() - t0;
    // What a run sends per step: a small live override, not the whole view.
    const progress = { running: true, total: 2, done: 0, current: view.steps[0].id,
      stopping: false, message: "" };
    model.set("live", { steps: { [view.steps[0].id]: { status: "running", error: null } },
      progress });
    await frame();
    const t1 = performance.now();
    model.set("live", { steps: { [view.steps[0].id]: { status: "done", error: null },
      [view.steps[1].id]: { status: "running", error: null } },
      progress: { ...progress, done: 1, current: view.steps[1].id } });
    void el.offsetHeight;
    const updateSync = performance.now() - t1;
    void el.offsetHeight;
    await frame();
    const update = performance.now() - t1;
    cleanup();
    return { first, sync, update, updateSync };
  };
  const table = async () => {
    host.replaceChildren();
    const t0 = performance.now();
    const t = document.createElement("table");
    const body = document.createElement("tbody");
    for (const s of view.steps) {
      const tr = document.createElement("tr");
      for (const text of [s.number, s.kind, s.target, s.reason, s.risk, s.status]) {
        const td = document.createElement("td");
        td.textContent = String(text);
        tr.append(td);
      }
      body.append(tr);
    }
    t.append(body);
    host.append(t);
    void t.offsetHeight;
    const sync = performance.now() - t0;
    await frame();
    return { first: performance.now() - t0, sync };
  };
  await panel(); await table();  // warm up: module compile, style caches
  const out = { panel: [], panelSync: [], update: [], updateSync: [], table: [], tableSync: [] };
  for (let i = 0; i < repeat; i += 1) {
    const p = await panel();
    out.panel.push(p.first);
    out.panelSync.push(p.sync);
    out.update.push(p.update);
    out.updateSync.push(p.updateSync);
    const t = await table();
    out.table.push(t.first);
    out.tableSync.push(t.sync);
  }
  return out;
}
"""


def plan_view(steps: int) -> dict[str, Any]:
    """A real Session with `steps` staged edits (cells and files), as the widget would send."""
    import tempfile

    from planbook.surfaces.widget.panel import ReviewPanel

    cells = [
        Cell(id=f"c{i}", source=f"value_{i} = load({i})\nprint(value_{i})") for i in range(steps)
    ]
    # Removed once the view is built: a folder left in the system temp dir is what the test
    # suite's leftovers check reports when a benchmark runs beside it.
    with tempfile.TemporaryDirectory(prefix="planbook-bench-") as tmp:
        return _staged_view(cells, Path(tmp), steps, ReviewPanel)


def _staged_view(cells: list[Cell], root: Path, steps: int, panel: Any) -> dict[str, Any]:
    session = Session(MemoryNotebook(cells), Workspace(root))
    for i in range(steps):
        if i % 3 == 2:
            session.propose.write_file(
                f"out/file_{i}.py",
                f"def f{i}(x):\n    return x * {i}\n",
                reason=f"write helper {i}",
            )
        else:
            session.propose.edit_cell(
                f"c{i}",
                f"value_{i} = load({i}, cache=True)\nprint(value_{i}.head())",
                reason=f"cache load {i}",
            )
    view: dict[str, Any] = panel(session).view
    return view


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """From ``benchmarks/run.py`` (no ``argv``): 1,000 steps, and the goal row."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300 if argv is not None else 1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args([] if argv is None else argv)

    from playwright.sync_api import sync_playwright

    view = plan_view(args.steps)
    html = (
        f"<!doctype html><html><head><style>{css_path().read_text()}</style></head>"
        "<body><div id='host' style='width:900px'></div></body></html>"
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.set_content(html)
            raw = page.evaluate(
                PAGE_SCRIPT, {"esm": esm_source(), "view": view, "repeat": args.repeat}
            )
        finally:
            browser.close()
    panel = statistics.median(raw["panel"])
    update = statistics.median(raw["update"])
    table = statistics.median(raw["table"])
    panel_sync = statistics.median(raw["panelSync"])
    table_sync = statistics.median(raw["tableSync"])
    result = {
        "steps": args.steps,
        "repeat": args.repeat,
        "view_json_kb": round(len(json.dumps(view)) / 1024, 1),
        "panel_first_render_ms": round(panel, 1),
        "table_first_render_ms": round(table, 1),
        "ratio_panel_to_table": round(panel / table, 2),
        "panel_dom_and_layout_ms": round(panel_sync, 1),
        "table_dom_and_layout_ms": round(table_sync, 1),
        "panel_update_after_step_ms": round(update, 1),
        "panel_update_dom_and_layout_ms": round(statistics.median(raw["updateSync"]), 1),
    }
    if args.json:
        print(json.dumps(result))
        return []
    for key, value in result.items():
        print(f"{key:32} {value}")
    from benchmarks.floors import row

    ms = [v / 1000 for v in raw["panel"]]
    return [
        row(
            f"panel's first render of {args.steps:,} steps (Chromium)",
            ms,
            [v / 1000 for v in raw["table"]],
            "a plain HTML table of the same rows",
            300.0,
            absolute=True,
        )
    ]


if __name__ == "__main__":
    main(sys.argv[1:])
