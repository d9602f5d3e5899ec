// Test helpers: a happy-dom window, a fake anywidget model and a view like the kernel sends.

import { Window } from "happy-dom";
import { createPanel } from "../panel.js";

/**
 * @param {{ type: string, old: number | null, new: number | null, text: string,
 *   ranges?: Array<[number, number]> }[]} lines
 */
export function diffOf(lines, extra = {}) {
  const full = lines.map((l) => ({ ranges: [], ...l }));
  return {
    kind: "changed",
    hunks: [{ old_start: 1, old_count: 2, new_start: 1, new_count: 2, lines: full }],
    added: full.filter((l) => l.type === "add").length,
    removed: full.filter((l) => l.type === "del").length,
    lines: full.length,
    fold_at: 40,
    omitted: 0,
    ...extra,
  };
}

export function step(id, number, extra = {}) {
  return {
    id, number, kind: "edit_cell", target: `cell c${number}: x = ${number}`,
    reason: `because ${number}`, risk: "low", status: "pending", error: null,
    language: "python", cell: null, hash: `h-${id}`,
    diff: diffOf([
      { type: "del", old: 1, new: null, text: `x = ${number}`, ranges: [[4, 5]] },
      { type: "add", old: null, new: 1, text: `x = ${number}0`, ranges: [[4, 6]] },
    ]),
    ...extra,
  };
}

export function makeView(extra = {}) {
  return {
    header: {
      plan_id: "p1", task: "clean the data", state: "awaiting_approval", revision: 2,
      mode: "plan", backend: "memory", backend_description: "memory: not saved",
      counts: { pending: 3, approved: 0, done: 0, failed: 0 },
    },
    steps: [
      step("s1", 1),
      step("s2", 2, { kind: "insert_cell", cell: "import pandas as pd\ndf = pd.read_csv('a.csv')",
        diff: null, risk: "medium" }),
      step("s3", 3, { kind: "write_file", target: "out.txt", language: "text", risk: "high" }),
    ],
    checkpoints: [],
    revisions: [
      { number: 1, summary: "", feedback: null, steps: 2 },
      { number: 2, summary: "", feedback: "use pandas", steps: 3 },
    ],
    revision_diff: null,
    progress: { running: false, total: 0, done: 0, current: null, stopping: false, message: "" },
    error: null,
    agent: null,
    ...extra,
  };
}

export class FakeModel {
  constructor(view) {
    this.state = { view };
    /** @type {Map<string, Set<Function>>} */
    this.handlers = new Map();
    /** @type {object[]} */
    this.sent = [];
  }
  get(name) { return this.state[name]; }
  on(name, cb) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(cb);
  }
  off(name, cb) { this.handlers.get(name)?.delete(cb); }
  send(msg) { this.sent.push(msg); }
  set(name, value) {
    this.state[name] = value;
    for (const cb of this.handlers.get(`change:${name}`) ?? []) cb();
  }
  save_changes() { this.saved = (this.saved ?? 0) + 1; }
  setView(view) {
    this.state.view = view;
    for (const cb of this.handlers.get("change:view") ?? []) cb();
  }
  setLive(live) {
    this.state.live = live;
    for (const cb of this.handlers.get("change:live") ?? []) cb();
  }
}

/**
 * Mount a panel on a fresh document; returns what a test needs. `prepare` runs on the window
 * before the panel is built (to install a fake IntersectionObserver, say).
 * @param {(window: Window) => void} [prepare]
 */
export function mount(view = makeView(), model = new FakeModel(view), prepare = undefined) {
  const window = new Window();
  prepare?.(window);
  const document = window.document;
  const el = document.createElement("div");
  document.body.append(el);
  const cleanup = createPanel({ model, el });
  const $ = (sel) => el.querySelector(sel);
  const $$ = (sel) => [...el.querySelectorAll(sel)];
  const byKey = (key) => $$("[data-key]").find((n) => n.dataset.key === key);
  const key = (target, k, opts = {}) => {
    target.dispatchEvent(new window.KeyboardEvent("keydown", { key: k, bubbles: true,
      cancelable: true, ...opts }));
  };
  const close = () => { cleanup(); window.close(); };
  return { window, document, el, model, $, $$, byKey, key, close, cleanup };
}

/**
 * An IntersectionObserver the test drives: `show(el)` tells every observer watching `el`
 * that it came into view (happy-dom's own never reports anything).
 */
export function fakeObservers() {
  /** @type {Set<{ cb: Function, watched: Set<Element> }>} */
  const live = new Set();
  class FakeObserver {
    constructor(cb) { this.me = { cb, watched: new Set() }; live.add(this.me); }
    observe(el) { this.me.watched.add(el); }
    unobserve(el) { this.me.watched.delete(el); }
    disconnect() { this.me.watched.clear(); live.delete(this.me); }
    takeRecords() { return []; }
  }
  const show = (el) => {
    for (const me of [...live]) {
      if (me.watched.has(el)) me.cb([{ target: el, isIntersecting: true }]);
    }
  };
  const watching = () => [...live].reduce((n, me) => n + me.watched.size, 0);
  return { FakeObserver, show, watching };
}
