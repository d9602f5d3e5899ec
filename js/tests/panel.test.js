import assert from "node:assert/strict";
import { test } from "node:test";
import { EAGER_ROWS } from "../step-row.js";
import { fakeObservers, makeView, mount, step } from "./helpers.js";

/** Each step's hash as the view carries it (helpers.step): what Approve sends back. */
const SHOWN = { s1: "h-s1", s2: "h-s2", s3: "h-s3" };

test("header shows task, state, revision, mode, backend and counts", (t) => {
  const p = mount();
  t.after(p.close);
  const head = p.$(".pb-header").textContent;
  for (const text of ["Plan: clean the data", "awaiting approval", "revision 2", "plan mode",
    "memory", "3 pending", "0 approved", "0 done", "0 failed", "memory: not saved"]) {
    assert.ok(head.includes(text), `header has ${text}`);
  }
  assert.equal(p.el.querySelector(".planbook-panel").getAttribute("data-lm-suppress-shortcuts"),
    "true");
});

test("session warnings (such as no OS sandbox) show in the header as alerts", (t) => {
  const view = makeView();
  view.header.warnings = ["no OS sandbox: `bwrap` was not found on PATH"];
  const p = mount(view);
  t.after(p.close);
  const note = p.$(".pb-header .pb-warning");
  assert.ok(note.textContent.includes("no OS sandbox"));
  assert.equal(note.getAttribute("role"), "alert");
});

test("one row per step with number, kind, target, reason, risk and its diff or cell", (t) => {
  const p = mount();
  t.after(p.close);
  const rows = p.$$(".pb-step");
  assert.equal(rows.length, 3);
  assert.equal(rows[0].querySelector(".pb-number").textContent, "1");
  assert.equal(rows[0].querySelector(".pb-kind").getAttribute("aria-label"), "edit cell");
  assert.equal(rows[0].querySelector(".pb-target").textContent, "cell c1: x = 1");
  assert.equal(rows[0].querySelector(".pb-reason").textContent, "because 1");
  assert.equal(rows[2].querySelector(".pb-risk-high").textContent, "high risk");
  assert.ok(rows[0].querySelector("table.pb-diff"));
  assert.equal(rows[1].querySelector(".pb-cell").getAttribute("aria-label"), "New cell");
  assert.match(rows[1].querySelector("pre").textContent, /import pandas as pd/);
});

test("Approve selected sends the ticked pending steps with the revision seen", (t) => {
  const p = mount();
  t.after(p.close);
  p.byKey("step:s2:select").click();
  assert.equal(p.byKey("action:approve").textContent, "Approve selected (2)");
  p.byKey("action:approve").click();
  assert.deepEqual(p.model.sent, [{ action: "approve", step_ids: ["s1", "s3"], revision: 2, shown: SHOWN }]);
});

test("with nothing selected, Approve selected explains instead of sending", (t) => {
  const p = mount();
  t.after(p.close);
  for (const id of ["s1", "s2", "s3"]) p.byKey(`step:${id}:select`).click();
  p.byKey("action:approve").click();
  assert.deepEqual(p.model.sent, []);
  assert.match(p.$(".pb-error").textContent, /Select at least one pending step/);
});

test("Skip and Unskip go to the kernel; a skipped step cannot be selected", (t) => {
  const p = mount();
  t.after(p.close);
  p.byKey("step:s2:skip").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "skip", step_id: "s2", revision: 2 });
  const v = makeView();
  v.steps[1].status = "skipped";
  p.model.setView(v);
  const skip = p.byKey("step:s2:skip");
  assert.equal(skip.textContent, "Unskip");
  assert.equal(skip.getAttribute("aria-pressed"), "true");
  assert.equal(p.byKey("step:s2:select").disabled, true);
  skip.click();
  assert.deepEqual(p.model.sent.at(-1), { action: "unskip", step_id: "s2", revision: 2 });
  p.byKey("action:approve").click();
  assert.deepEqual(p.model.sent.at(-1).step_ids, ["s1", "s3"]);
});

test("Approve all, Reject and Revise send their messages; revise carries the feedback", (t) => {
  const p = mount();
  t.after(p.close);
  p.byKey("action:approve_all").click();
  p.byKey("action:reject").click();
  const box = p.byKey("revise:text");
  box.value = "use polars instead";
  box.dispatchEvent(new p.window.Event("input"));
  p.byKey("action:revise").click();
  assert.deepEqual(p.model.sent, [
    { action: "approve_all", revision: 2, shown: SHOWN },
    { action: "reject", revision: 2 },
    { action: "revise", feedback: "use polars instead", revision: 2 },
  ]);
  p.model.sent.length = 0;
  p.byKey("action:revise").click();
  assert.deepEqual(p.model.sent, [], "empty feedback is not sent");
  assert.match(p.$(".pb-error").textContent, /Write what should change/);
});

test("typing in the feedback box survives a refresh from the kernel", (t) => {
  const p = mount();
  t.after(p.close);
  const box = p.byKey("revise:text");
  box.focus();
  box.value = "half a thought";
  box.dispatchEvent(new p.window.Event("input"));
  p.key(box, "j");
  p.model.setView(makeView());
  assert.equal(p.byKey("revise:text").value, "half a thought");
  assert.equal(p.document.activeElement, p.byKey("revise:text"));
  assert.equal(p.model.sent.length, 0, "keys typed in the box are not commands");
});

test("reorder by the move buttons sends the new order", (t) => {
  const p = mount();
  t.after(p.close);
  assert.equal(p.byKey("step:s1:up").disabled, true);
  p.byKey("step:s1:down").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "reorder", order: ["s2", "s1", "s3"],
    revision: 2 });
});

test("reorder by drag and drop puts the dragged step before the drop target", (t) => {
  const p = mount();
  t.after(p.close);
  const data = new Map();
  const dataTransfer = { setData: (k, v) => data.set(k, v), getData: (k) => data.get(k) ?? "",
    effectAllowed: "" };
  const fire = (node, type) => {
    const ev = new p.window.Event(type, { bubbles: true, cancelable: true });
    Object.defineProperty(ev, "dataTransfer", { value: dataTransfer });
    Object.defineProperty(ev, "clientY", { value: 0 });
    node.dispatchEvent(ev);
    return ev;
  };
  const rows = () => p.$$(".pb-step");
  assert.equal(rows()[2].draggable, true);
  fire(rows()[2], "dragstart");
  assert.equal(fire(rows()[0], "dragover").defaultPrevented, true, "a pending step is a target");
  fire(rows()[0], "drop");
  assert.deepEqual(p.model.sent.at(-1), { action: "reorder", order: ["s3", "s1", "s2"],
    revision: 2 });
});

test("keyboard: j/k move, a toggles approval, s skips, Alt+Down reorders, Ctrl+Enter approves",
  (t) => {
    const p = mount();
    t.after(p.close);
    const row = (id) => p.byKey(`step:${id}`);
    row("s1").focus();
    p.key(row("s1"), "j");
    assert.equal(p.document.activeElement, row("s2"));
    assert.equal(row("s2").tabIndex, 0);
    p.key(row("s2"), "j");
    p.key(row("s3"), "k");
    assert.equal(p.document.activeElement, row("s2"));
    p.key(row("s2"), "a");
    assert.equal(p.byKey("step:s2:select").checked, false);
    assert.equal(p.document.activeElement, row("s2"), "focus stays on the row after re-render");
    p.key(row("s2"), "s");
    assert.deepEqual(p.model.sent.at(-1), { action: "skip", step_id: "s2", revision: 2 });
    p.key(row("s2"), "ArrowDown", { altKey: true });
    assert.deepEqual(p.model.sent.at(-1).order, ["s1", "s3", "s2"]);
    p.key(row("s2"), "Enter", { ctrlKey: true });
    assert.deepEqual(p.model.sent.at(-1), { action: "approve", step_ids: ["s1", "s3"],
      revision: 2, shown: SHOWN });
  });

test("show more unfolds a long diff; Hide folds the step away", (t) => {
  const many = Array.from({ length: 60 }, (_, i) => ({ type: "add", old: null, new: i + 1,
    text: `v${i} = ${i}`, ranges: [] }));
  const v = makeView();
  v.steps[0].diff = { ...v.steps[0].diff, hunks: [{ old_start: 0, old_count: 0, new_start: 1,
    new_count: 60, lines: many }], lines: 60, added: 60, removed: 0 };
  const p = mount(v);
  t.after(p.close);
  const first = () => p.$$(".pb-step")[0];
  assert.equal(first().querySelectorAll("tr.pb-row").length, 40);
  first().querySelector("button.pb-more").click();
  assert.equal(first().querySelectorAll("tr.pb-row").length, 60);
  p.byKey("step:s1:open").click();
  assert.equal(first().querySelector("table"), null);
  assert.equal(p.byKey("step:s1:open").getAttribute("aria-expanded"), "false");
});

test("the layout button switches every diff to side by side", (t) => {
  const p = mount();
  t.after(p.close);
  assert.ok(p.$("table.pb-unified"));
  p.byKey("action:layout").click();
  assert.ok(p.$("table.pb-split"));
  assert.equal(p.$("table.pb-unified"), null);
});

test("a big plan starts with diffs folded so it renders fast", (t) => {
  const steps = Array.from({ length: 300 }, (_, i) => step(`s${i}`, i + 1));
  const p = mount(makeView({ steps }));
  t.after(p.close);
  assert.equal(p.$$(".pb-step").length, 300);
  assert.equal(p.$$("table.pb-diff").length, 0);
  const sized = p.$$(".pb-step").filter((li) => li.querySelector(".pb-stat-add")
    ? li.querySelector(".pb-stat")?.textContent === "+1 −1" : li.textContent.includes("+1 −1"));
  assert.equal(sized.length, 300, "each row still says how big its change is");
});

/** 300 steps mounted where the page reports what comes into view (a fake observer). */
const lazyPanel = (t) => {
  const seen = fakeObservers();
  const steps = Array.from({ length: 300 }, (_, i) => step(`s${i}`, i + 1));
  const p = mount(makeView({ steps }), undefined, (w) => {
    /** @type {any} */ (w).IntersectionObserver = seen.FakeObserver;
  });
  t.after(p.close);
  return { p, seen };
};

test("rows out of view start as one-line summaries that still list every step", (t) => {
  const { p, seen } = lazyPanel(t);
  const rows = p.$$(".pb-step");
  assert.equal(rows.length, 300, "every step is listed");
  assert.equal(p.$$(".pb-step-head").length, EAGER_ROWS, "only the first rows are drawn whole");
  assert.equal(seen.watching(), 300 - EAGER_ROWS);
  const last = rows[299];
  assert.ok(last.classList.contains("pb-summary"));
  assert.equal(last.textContent, "300  edit cell  cell c300: x = 300  +1 −1  ·  low risk  ·  pending");
  assert.equal(last.getAttribute("aria-label"), "Step 300: edit cell cell c300: x = 300, pending");
  assert.equal(last.dataset.key, "step:s299");
});

test("a summary row is drawn whole when it comes near the view, keeping the focus", (t) => {
  const { p, seen } = lazyPanel(t);
  const row = () => p.byKey("step:s45");
  p.key(p.byKey("step:s0"), "j");  // j moves the focus one row down, forty-five times
  for (let i = 0; i < 44; i += 1) p.key(p.document.activeElement, "j");
  assert.equal(p.document.activeElement, row(), "a summary row takes the focus");
  seen.show(row());
  assert.ok(row().querySelector(".pb-step-head"), "now whole: toggles, badges, buttons");
  assert.equal(p.document.activeElement, row(), "the whole row has the focus");
  assert.equal(row().tabIndex, 0);
  assert.equal(seen.watching(), 300 - EAGER_ROWS - 1);
  row().querySelector("input[type=checkbox]").click();  // and it acts like any whole row
  assert.deepEqual(JSON.parse(JSON.stringify(p.model.state.deselected)), ["s45"]);
});

test("approving a lazily drawn plan carries the hash of every step it lists", (t) => {
  const { p } = lazyPanel(t);
  p.byKey("action:approve_all").click();
  const sent = /** @type {any} */ (p.model.sent.at(-1));
  assert.equal(sent.action, "approve_all");
  assert.equal(Object.keys(sent.shown).length, 300);
  assert.equal(sent.shown.s299, "h-s299", "a summary row's step counts: its line lists it");
});

test("revision switcher asks for a comparison and shows what changed", (t) => {
  const p = mount();
  t.after(p.close);
  p.byKey("rev:show").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "show_revision_diff", from: 1, to: 2 });
  p.model.setView(makeView({ revision_diff: { from: 1, to: 2, changes: [
    { change: "added", kind: "write_file", target: "out.txt", diff: step("x", 1).diff },
    { change: "same", kind: "edit_cell", target: "cell c1", diff: step("x", 1).diff },
  ] } }));
  const changes = p.$$(".pb-rev-change");
  assert.equal(changes.length, 2);
  assert.match(changes[0].textContent, /added\s+write file out\.txt/);
  assert.ok(changes[0].querySelector("table"));
  assert.equal(changes[1].querySelector("table"), null);
  p.byKey("rev:close").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "show_revision_diff", from: null, to: null });
});

test("rollback asks for confirmation first; Cancel sends nothing", (t) => {
  const checkpoints = [
    { id: "cp-1", seq: 1, kind: "step", label: "before step 1", step: 1,
      at: "2026-11-22T01:00:00+00:00", active: true },
    { id: "cp-2", seq: 2, kind: "step", label: "before step 3", step: 3,
      at: "2026-11-22T01:00:01+00:00", active: true },
  ];
  const p = mount(makeView({ checkpoints }));
  t.after(p.close);
  p.byKey("cp:cp-1:rollback").click();
  assert.deepEqual(p.model.sent, []);
  assert.match(p.$(".pb-confirm").textContent, /Roll back to “before step 1”\?/);
  p.byKey("cp:cp-1:no").click();
  assert.equal(p.$(".pb-confirm"), null);
  assert.deepEqual(p.model.sent, []);
  p.byKey("cp:cp-1:rollback").click();
  p.byKey("cp:cp-1:yes").click();
  assert.deepEqual(p.model.sent, [{ action: "rollback", checkpoint: "cp-1" }]);
  assert.equal(p.$(".pb-confirm"), null);
});

test("while executing: progress, live statuses, Stop, and actions disabled", (t) => {
  const v = makeView({ progress: { running: true, total: 3, done: 1, current: "s2",
    stopping: false, message: "" } });
  v.steps[0].status = "done";
  v.steps[1].status = "running";
  v.steps[1].kind = "edit_cell";
  const p = mount(v);
  t.after(p.close);
  const bar = p.$("progress");
  assert.equal(bar.value, 1);
  assert.equal(bar.max, 3);
  assert.match(p.$(".pb-progress-text").textContent, /Running 2 of 3: step 2/);
  assert.equal(p.byKey("action:approve").disabled, true);
  assert.equal(p.$$(".pb-step")[1].querySelector(".pb-status-badge").textContent, "running");
  p.key(p.byKey("step:s3"), "Enter", { ctrlKey: true });
  assert.deepEqual(p.model.sent, [], "Ctrl+Enter does nothing while running");
  p.byKey("action:stop").click();
  assert.deepEqual(p.model.sent, [{ action: "stop" }]);
  assert.match(p.$(".pb-progress-text").textContent, /Stopping after the current step/,
    "the panel says so at once, before the busy kernel reads the message");
  assert.equal(p.byKey("action:stop").disabled, true);
  p.model.setView(makeView());
  assert.equal(p.$("progress"), null);
});

test("a failed step shows its error; a panel error is an alert that can be dismissed", (t) => {
  const v = makeView({ error: "step 9 does not exist: the plan has steps 1 to 3" });
  v.steps[2].status = "failed";
  v.steps[2].error = "NameError: name 'pd' is not defined";
  const p = mount(v);
  t.after(p.close);
  assert.equal(p.$(".pb-error").getAttribute("role"), "alert");
  assert.match(p.$(".pb-error").textContent, /step 9 does not exist/);
  assert.match(p.$(".pb-step-error").textContent, /NameError/);
  p.byKey("action:dismiss").click();
  assert.deepEqual(p.model.sent, [{ action: "dismiss" }]);
});

test("an empty plan says where steps will come from; cleanup detaches", (t) => {
  const p = mount(makeView({ steps: [], revisions: [] }));
  t.after(() => p.window.close());
  assert.match(p.$(".pb-empty-plan").textContent, /No steps yet/);
  p.cleanup();
  assert.equal(p.el.children.length, 0);
  assert.equal(p.model.handlers.get("change:view").size, 0);
});

test("every button has a text or an aria-label", (t) => {
  const p = mount(makeView({ checkpoints: [{ id: "cp-1", seq: 1, kind: "step",
    label: "before step 1", step: 1, at: "2026-11-22T01:00:00+00:00", active: true }] }));
  t.after(p.close);
  for (const b of p.$$("button")) {
    assert.ok((b.getAttribute("aria-label") || b.textContent).trim(), b.outerHTML);
    assert.equal(b.type, "button");
  }
});

test("a refresh rebuilds only the rows whose step changed", (t) => {
  const p = mount();
  t.after(p.close);
  const [first, second] = p.$$(".pb-step");
  const v = makeView();
  v.steps[1].status = "done";
  p.model.setView(v);
  const [first2, second2] = p.$$(".pb-step");
  assert.equal(first2, first, "an unchanged row is the same element");
  assert.notEqual(second2, second);
  assert.equal(second2.querySelector(".pb-status-badge").textContent, "done");
  first2.querySelector(".pb-more, [data-key='step:s1:open']").click();
  assert.notEqual(p.$$(".pb-step")[0], first, "a row whose own state changed is rebuilt");
});

test("the agent's questions can be answered; its todos and activity are listed", (t) => {
  const p = mount(makeView({ agent: {
    activity: ["read cell c1", "staged step 2"],
    todos: [{ text: "load data", status: "done", steps: [1] },
      { text: "plot", status: "in_progress", steps: [] }],
    decisions: [
      { id: "d1", kind: "question", question: "Which chart?", options: ["bar", "line"],
        allow_text: true },
      { id: "d2", kind: "approval", question: "Run shell `ls`?", options: ["approve", "deny"],
        allow_text: false },
    ],
  } }));
  t.after(p.close);
  const agent = p.$(".pb-agent");
  assert.match(agent.textContent, /☑ load data \(step 1\)/);
  assert.match(agent.textContent, /◐ plot/);
  assert.match(agent.textContent, /staged step 2/);
  p.byKey("decision:d1:bar").click();
  const reason = p.byKey("decision:d2:text");
  reason.value = "not now";
  p.byKey("decision:d2:deny").click();
  const typed = p.byKey("decision:d1:text");
  typed.value = "a scatter plot";
  p.byKey("decision:d1:send").click();
  assert.deepEqual(p.model.sent, [
    { action: "answer", decision_id: "d1", choice: "bar", text: null },
    { action: "answer", decision_id: "d2", choice: "deny", text: "not now" },
    { action: "answer", decision_id: "d1", choice: "a scatter plot", text: null },
  ]);
  p.key(typed, "j");
  assert.equal(p.model.sent.length, 3, "typing an answer is not a panel command");
  assert.equal(p.byKey("action:stop_agent"), undefined, "no Stop agent when none runs");
  p.model.setView(makeView({ agent: { running: true } }));
  assert.match(p.$(".pb-agent h4").textContent, /working/);
  p.byKey("action:stop_agent").click();
  assert.deepEqual(p.model.sent.at(-1), { action: "stop_agent" });
});

test("a refused rollback offers to roll back anyway", (t) => {
  const p = mount(makeView({ error: "cell:c1 changed after the step ran",
    offer: { kind: "force_rollback", checkpoint: "cp-1" } }));
  t.after(p.close);
  p.byKey("action:force_rollback").click();
  assert.deepEqual(p.model.sent, [{ action: "rollback", checkpoint: "cp-1", force: true }]);
});

test("live updates during a run override statuses, counts and progress", (t) => {
  const p = mount();
  t.after(p.close);
  const progress = { running: true, total: 2, done: 0, current: "s1", stopping: false,
    message: "" };
  p.model.setLive({ steps: { s1: { status: "running", error: null } }, progress });
  const untouched = p.$$(".pb-step")[2];
  p.model.setLive({
    steps: { s1: { status: "done", error: null }, s2: { status: "running", error: null } },
    progress: { ...progress, done: 1, current: "s2" },
  });
  const badges = p.$$(".pb-status-badge").map((b) => b.textContent);
  assert.deepEqual(badges, ["done", "running", "pending"]);
  assert.match(p.$(".pb-header").textContent, /1 pending/);
  assert.match(p.$(".pb-header").textContent, /1 done/);
  assert.match(p.$(".pb-progress-text").textContent, /Running 2 of 2/);
  assert.equal(p.$$(".pb-step")[2], untouched, "rows the run did not touch are kept");
  p.model.setLive({ steps: { s3: { status: "failed", error: "boom" } }, error: "step 3 failed" });
  assert.match(p.$(".pb-step-error").textContent, /boom/);
  assert.match(p.$(".pb-error").textContent, /step 3 failed/);
  p.model.setLive({});
  assert.deepEqual(p.$$(".pb-status-badge").map((b) => b.textContent),
    ["pending", "pending", "pending"]);
});
