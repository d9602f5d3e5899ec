// The panel as an overview of a long plan: filter, collapse/expand all, a toolbar that stays,
// selections that survive re-rendering, what a failed step offers, the extension's events.

import assert from "node:assert/strict";
import test from "node:test";
import { FakeModel, makeView, mount, step } from "./helpers.js";

const thirty = () => makeView({
  steps: Array.from({ length: 30 }, (_, i) => step(`s${i + 1}`, i + 1, {
    status: i < 3 ? "done" : i === 3 ? "failed" : "pending",
    error: i === 3 ? "cell 'c4' raised NameError: name 'df' is not defined" : null,
    cell_id: `c${i + 1}`, checkpoint: i < 4 ? `cp-${i + 1}` : null,
  })),
});

test("a long plan scrolls inside the panel under its toolbar", (t) => {
  const p = mount(thirty());
  t.after(p.close);
  const box = p.$(".pb-body.pb-scroll");
  assert.ok(box, "30 steps scroll in their own box");
  assert.equal(box.firstElementChild.className, "pb-toolbar", "the toolbar heads the box");
  assert.equal(p.$$(".pb-step").length, 30);
});

test("filter by status shows only those steps; an empty filter says so", (t) => {
  const p = mount(thirty());
  t.after(p.close);
  const filter = p.$(".pb-filter");
  const options = [...filter.options].map((o) => o.textContent);
  assert.deepEqual(options, ["All steps (30)", "pending (26)", "failed (1)", "done (3)"]);
  filter.value = "failed";
  filter.dispatchEvent(new p.window.Event("change"));
  assert.deepEqual(p.$$(".pb-step").map((li) => li.dataset.stepId), ["s4"]);
  p.model.setView(makeView({ steps: [step("s1", 1)] }));  // the failed step is gone
  assert.equal(p.$$(".pb-step").length, 0);
  assert.match(p.$(".pb-empty-filter").textContent, /No failed steps/);
});

test("collapse all and expand all fold every step", (t) => {
  const p = mount();
  t.after(p.close);
  assert.equal(p.$$(".pb-step-body").length, 3);
  p.byKey("action:collapse_all").click();
  assert.equal(p.$$(".pb-step-body").length, 0);
  p.byKey("action:expand_all").click();
  assert.equal(p.$$(".pb-step-body").length, 3);
});

test("unticked steps stay unticked in a new rendering of the same panel", (t) => {
  const view = makeView();
  const model = new FakeModel(view);
  const first = mount(view, model);
  first.byKey("step:s2:select").click();
  assert.deepEqual(model.get("deselected"), ["s2"], "kept in the model, saved to the kernel");
  assert.ok(model.saved >= 1);
  first.close();
  const again = mount(view, model);  // %plan shown again, or the page reloaded
  t.after(again.close);
  assert.equal(again.byKey("step:s2:select").checked, false);
  assert.equal(again.byKey("step:s1:select").checked, true);
  again.byKey("action:approve").click();
  assert.deepEqual(model.sent.at(-1).step_ids, ["s1", "s3"]);
});

test("a superseded panel shrinks to one line and stops showing the plan", (t) => {
  const p = mount();
  t.after(p.close);
  p.model.set("superseded", true);
  assert.equal(p.$$(".pb-step").length, 0);
  assert.match(p.$(".pb-superseded").textContent, /replaced by a newer one/);
});

test("a replaced panel lets its view go: emptied, and mounted again empty, it is one line", (t) => {
  const p = mount();
  t.after(p.close);
  // The kernel sends the three together; whichever the page applies first, nothing throws.
  p.model.set("view", {});
  p.model.set("live", {});
  p.model.set("superseded", true);
  assert.equal(p.$$(".pb-step").length, 0);
  assert.match(p.$(".pb-superseded").textContent, /replaced by a newer one/);
  const model = new FakeModel({});
  model.state.superseded = true;
  const again = mount({}, model);  // the page loaded again from the kernel's state
  t.after(again.close);
  assert.equal(again.$$(".planbook-panel > *").length, 1);
  assert.match(again.$(".pb-superseded").textContent, /replaced by a newer one/);
});

test("a failed step offers go to cell, retry and roll back this step", (t) => {
  const p = mount(thirty());
  t.after(p.close);
  /** @type {any[]} */
  const asked = [];
  p.window.addEventListener("planbook:focus-cell", (e) => asked.push(e.detail));
  const row = p.$('[data-step-id="s4"]');
  assert.equal(row.querySelectorAll(".pb-next-actions button").length, 3);
  assert.equal(p.$$(".pb-next-actions").length, 1, "only the failed step offers them");
  p.byKey("step:s4:goto").click();
  assert.deepEqual(asked, [{ cellId: "c4" }]);
  p.byKey("step:s4:retry").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "retry", step_id: "s4", revision: 2 });
  p.byKey("step:s4:rollback").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "rollback", checkpoint: "cp-4" });
});

test("clicking the cell a step changes asks the notebook to go to that cell", (t) => {
  const p = mount(thirty());
  t.after(p.close);
  /** @type {any[]} */
  const asked = [];
  p.window.addEventListener("planbook:focus-cell", (e) => asked.push(e.detail));
  p.$('[data-step-id="s7"] .pb-target').click();
  assert.deepEqual(asked, [{ cellId: "c7" }]);
});

test("planbook:focus-step from a cell badge shows, opens and highlights that step", (t) => {
  const p = mount(thirty());
  t.after(p.close);
  p.byKey("action:collapse_all").click();
  const filter = p.$(".pb-filter");
  filter.value = "failed";
  filter.dispatchEvent(new p.window.Event("change"));
  p.window.dispatchEvent(new p.window.CustomEvent("planbook:focus-step",
    { detail: { stepNumber: 17 } }));
  const row = p.$('[data-step-id="s17"]');
  assert.ok(row, "the filter is lifted so the step can be shown");
  assert.ok(row.classList.contains("pb-highlight"));
  assert.ok(row.querySelector(".pb-step-body"), "its change is unfolded");
  assert.equal(p.document.activeElement, row);
  p.window.dispatchEvent(new p.window.CustomEvent("planbook:focus-step",
    { detail: { stepNumber: 99 } }));  // no such step: nothing happens
  assert.ok(p.$('[data-step-id="s17"]').classList.contains("pb-highlight"));
});

test("icons are inline SVG, never emoji or symbol glyphs", (t) => {
  const p = mount(thirty());
  t.after(p.close);
  assert.ok(p.$(".pb-kind svg"), "the kind of a step is an SVG icon");
  for (const node of p.$$(".pb-kind, .pb-grip, .pb-icon, .pb-next-actions button")) {
    assert.match(node.textContent, /^[\x20-\x7e]*$/, node.outerHTML.slice(0, 80));
  }
});
