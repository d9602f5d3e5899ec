// planbook: the review panel, an anywidget front end. Plain ES module, no build step.
// State comes from the kernel as one JSON trait (`view`); every action goes back as a custom
// message and the kernel answers with a new view (or an error in it). Only presentation state
// (selection, focus, folding, diff layout, a pending confirmation) lives here.

import { h } from "./diff-view.js";
import { commandFor } from "./keyboard.js";
import { renderAgent, renderHeader, renderProgress, renderRevisions, renderTimeline }
  from "./sections.js";
import { button, EAGER_ROWS, iconButton, OPEN_LIMIT, renderStep, renderSummary }
  from "./step-row.js";

/** Statuses the filter offers, in this order ("all" first). */
export const FILTERS = ["all", "pending", "skipped", "failed", "done", "rejected"];
/** From this many steps the list scrolls inside the panel, under a toolbar that stays. */
export const SCROLL_FROM = 8;
/** What a panel shows with no view to show (a replaced panel's, which the kernel let go). */
const NO_PLAN = Object.freeze({ header: null, steps: Object.freeze([]) });

/**
 * @typedef {{ header: import("./sections.js").Header,
 *   steps: import("./step-row.js").StepJSON[],
 *   checkpoints: import("./sections.js").CheckpointJSON[],
 *   revisions: import("./sections.js").RevisionJSON[],
 *   revision_diff: import("./sections.js").RevisionDiff | null,
 *   progress: import("./sections.js").Progress, error: string | null,
 *   offer?: { kind: string, checkpoint: string, writes?: string[], force?: boolean } | null,
 *   agent: import("./sections.js").AgentJSON | null }} View
 * @typedef {{ get(name: string): any, on(name: string, cb: Function): void,
 *   off(name: string, cb: Function): void, send(msg: object): void,
 *   set?(name: string, value: any): void, save_changes?(): void }} Model
 */

/**
 * Build the panel inside `el`; returns the cleanup function anywidget calls on removal.
 * @param {{ model: Model, el: HTMLElement }} ctx
 */
export function createPanel({ model, el }) {
  const doc = el.ownerDocument;
  const root = h(doc, "div", "planbook-panel");
  // Keep JupyterLab's notebook shortcuts (j, k, a, s...) from firing while the panel has focus.
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  root.setAttribute("role", "region");
  root.setAttribute("aria-label", "planbook review panel");
  el.append(root);

  /** The kernel behind this panel is gone (see onLive): nothing is offered any more. */
  let disconnected = false;
  const ui = {
    /** Steps the person unticked; every other pending step is selected. Kept in the
     * model's `deselected` too, so a re-render or another display of the panel agrees. */
    deselected: new Set(idList(model.get("deselected"))),
    /** Show only steps with this status ("all": every step). */
    filter: "all",
    /** The step a `planbook:focus-step` event pointed at, highlighted for a moment. */
    highlight: /** @type {string | null} */ (null),
    /** Steps whose diff is shown (or hidden) by choice; others follow OPEN_LIMIT. */
    openChoice: new Map(/** @type {Array<[string, boolean]>} */ ([])),
    expanded: new Set(/** @type {string[]} */ ([])),
    focus: /** @type {string | null} */ (null),
    mode: /** @type {"unified" | "split"} */ ("unified"),
    confirming: /** @type {string | null} */ (null),
    localError: /** @type {string | null} */ (null),
    stopping: false,
    feedback: "",
  };

  /**
   * The element of the panel with this data-key (keys survive a re-render; elements do not).
   * @param {string} key
   * @returns {HTMLElement | null}
   */
  const byKey = (key) => {
    for (const node of root.querySelectorAll("[data-key]")) {
      if (/** @type {HTMLElement} */ (node).dataset.key === key) return /** @type {HTMLElement} */ (node);
    }
    return null;
  };
  /** @type {{ view: any, live: any, merged: View } | null} */
  let mergeCache = null;
  /**
   * The view with the live overrides the kernel sends while steps run (statuses, progress,
   * error, agent), the same merge as planbook.panel.view.merge.
   * @returns {View}
   */
  const view = () => {
    const got = model.get("view");
    // A replaced panel's view is {}: the kernel lets it go. Shown as no plan, never a crash.
    const base = got && Array.isArray(got.steps) ? got : NO_PLAN;
    const live = model.get("live") || {};
    if (mergeCache && mergeCache.view === base && mergeCache.live === live) return mergeCache.merged;
    const merged = merge(base, live);
    mergeCache = { view: base, live, merged };
    return merged;
  };
  /** @param {object} msg */
  const send = (msg) => {
    ui.localError = null;
    model.send(msg);
  };
  const revision = () => view().header?.revision ?? 0;
  const busy = () => Boolean(view().progress?.running);
  /** @param {string} id */
  const stepOf = (id) => view().steps.find((s) => s.id === id);
  /** @param {import("./step-row.js").StepJSON} s */
  const isOpen = (s) => ui.openChoice.get(s.id) ?? view().steps.length <= OPEN_LIMIT;
  const selectedIds = () => view().steps
    .filter((s) => s.status === "pending" && !ui.deselected.has(s.id)).map((s) => s.id);

  /** @param {string[]} order */
  const reorder = (order) => send({ action: "reorder", order, revision: revision() });
  const saveDeselected = () => {
    if (typeof model.set !== "function") return;
    model.set("deselected", [...ui.deselected]);
    if (typeof model.save_changes === "function") model.save_changes();
  };
  const win = doc.defaultView;
  /** @param {import("./step-row.js").StepJSON} s */
  const shown = (s) => ui.filter === "all" || s.status === ui.filter;
  const actions = {
    /** @param {string} id */
    toggleSelect(id) {
      if (ui.deselected.has(id)) ui.deselected.delete(id); else ui.deselected.add(id);
      ui.focus = id;
      saveDeselected();
      render();
    },
    /** Ask the notebook (the JupyterLab extension listens) to scroll to this cell.
     * @param {string} cellId */
    goToCell(cellId) {
      win?.dispatchEvent(new win.CustomEvent("planbook:focus-cell", { detail: { cellId } }));
    },
    /** @param {string} id */
    retry(id) {
      if (busy()) return;
      ui.focus = id;
      send({ action: "retry", step_id: id, revision: revision() });
    },
    /** @param {string} id */
    preview(id) {
      if (busy()) return;
      ui.focus = id;
      ui.openChoice.set(id, true);
      send({ action: "preview", step_id: id, revision: revision() });
    },
    /** @param {string} checkpoint */
    rollBackStep(checkpoint) {
      if (busy()) return;
      send({ action: "rollback", checkpoint });
    },
    /** @param {string} id */
    toggleSkip(id) {
      const step = stepOf(id);
      if (!step) return;
      ui.focus = id;
      send({ action: step.status === "skipped" ? "unskip" : "skip", step_id: id,
        revision: revision() });
    },
    /** @param {string} id */
    toggleOpen(id) {
      const step = stepOf(id);
      if (step) ui.openChoice.set(id, !isOpen(step));
      render();
    },
    /** @param {string} id */
    showMore(id) { ui.expanded.add(id); render(); },
    /** @param {string} id @param {number} delta */
    move(id, delta) {
      const order = view().steps.map((s) => s.id);
      const i = order.indexOf(id);
      const j = i + delta;
      if (i < 0 || j < 0 || j >= order.length) return;
      [order[i], order[j]] = [order[j], order[i]];
      ui.focus = id;
      reorder(order);
    },
    /** @param {string} id */
    focus(id) {
      if (ui.focus === id) return;
      ui.focus = id;
      for (const li of root.querySelectorAll(".pb-step")) {
        const mine = /** @type {HTMLElement} */ (li).dataset.stepId === id;
        /** @type {HTMLElement} */ (li).tabIndex = mine ? 0 : -1;
        li.classList.toggle("pb-focused", mine);
      }
    },
    /** @param {string} dragged @param {string} target @param {boolean} after */
    drop(dragged, target, after) {
      const order = view().steps.map((s) => s.id).filter((x) => x !== dragged);
      const at = order.indexOf(target);
      if (at < 0) return;
      order.splice(after ? at + 1 : at, 0, dragged);
      ui.focus = dragged;
      reorder(order);
    },
  };

  /** Each rendered step's hash as the kernel computed it: an approval carries what the
   * person saw, so a step rewritten since is refused instead of run. */
  const shownHashes = () => {
    /** @type {Record<string, string>} */
    const out = {};
    for (const s of view().steps || []) if (s.hash) out[s.id] = s.hash;
    return out;
  };

  const approveSelected = () => {
    if (busy()) return;
    const ids = selectedIds();
    if (!ids.length) {
      ui.localError = "Select at least one pending step to approve (tick its box or press a).";
      render();
      return;
    }
    send({ action: "approve", step_ids: ids, revision: revision(), shown: shownHashes() });
  };

  /** JSON of each step object compared (a step object is never changed, only replaced). */
  const stepJson = new WeakMap(/** @type {Array<[object, string]>} */ ([]));
  /** @param {import("./step-row.js").StepJSON} step */
  const jsonOf = (step) => {
    let json = stepJson.get(step);
    if (json === undefined) {
      json = JSON.stringify(step);
      stepJson.set(step, json);
    }
    return json;
  };
  /**
   * @typedef {{ step: import("./step-row.js").StepJSON, state: string,
   *   st: import("./step-row.js").RowState, whole: boolean, li: HTMLLIElement }} Row
   */
  /** Rendered rows by step id: the step and row state they show, and whether the row is
   * whole or still its one-line summary (see completeRow). */
  let rowCache = new Map(/** @type {Array<[string, Row]>} */ ([]));
  /** The steps' scroll box, kept from one render to the next so that the observer below can
   * keep watching inside it while a run redraws the panel at every step. */
  const stepsBox = h(doc, "div", "pb-body");
  stepsBox.dataset.key = "steps-box";
  /** Completes summary rows as they come within 600 px of the view (none without one)... */
  let observer = /** @type {IntersectionObserver | null} */ (null);
  /** ...inside this scroll box (null: the page's view, for a plan too short to scroll)... */
  let observerRoot = /** @type {Element | null} */ (null);
  /** ...watching these summary rows. */
  const watched = new Set(/** @type {Element[]} */ ([]));

  /**
   * Replace a summary row by the whole row, keeping its focus, tab stop and highlight.
   * @param {Element} li
   */
  const completeRow = (li) => {
    const id = /** @type {HTMLElement} */ (li).dataset.stepId ?? "";
    const row = rowCache.get(id);
    if (!row || row.li !== li || row.whole) return;
    const whole = renderStep(doc, row.step, row.st, actions);
    whole.tabIndex = row.li.tabIndex;
    for (const cls of ["pb-focused", "pb-highlight"]) {
      whole.classList.toggle(cls, row.li.classList.contains(cls));
    }
    const focused = doc.activeElement === row.li;
    row.li.replaceWith(whole);
    rowCache.set(id, { ...row, whole: true, li: whole });
    if (focused) whole.focus({ preventScroll: true });
  };

  const textarea = /** @type {HTMLTextAreaElement} */ (h(doc, "textarea", "pb-feedback"));
  textarea.rows = 2;
  textarea.placeholder = "What should change? The agent drafts a new revision.";
  textarea.setAttribute("aria-label", "Feedback for a new revision");
  textarea.dataset.key = "revise:text";
  textarea.addEventListener("input", () => { ui.feedback = textarea.value; });

  function renderToolbar() {
    const bar = h(doc, "div", "pb-toolbar");
    bar.setAttribute("role", "toolbar");
    bar.setAttribute("aria-label", "Plan actions");
    const n = selectedIds().length;
    const open = view().steps.some((s) => s.status === "pending");
    const approve = button(doc, `Approve selected (${n})`, "action:approve", approveSelected,
      "pb-btn pb-primary");
    approve.title = "Ctrl+Enter";
    const all = button(doc, "Approve all", "action:approve_all",
      () => send({ action: "approve_all", revision: revision(), shown: shownHashes() }));
    const reject = button(doc, "Reject", "action:reject",
      () => send({ action: "reject", revision: revision() }), "pb-btn pb-danger");
    for (const b of [approve, all, reject]) b.disabled = busy() || !open;
    const layout = button(doc, ui.mode === "unified" ? "Side by side" : "Unified",
      "action:layout", () => { ui.mode = ui.mode === "unified" ? "split" : "unified"; render(); },
      "pb-btn pb-link");
    layout.setAttribute("aria-label", ui.mode === "unified"
      ? "Show diffs side by side" : "Show unified diffs");
    const steps = view().steps;
    const collapse = iconButton(doc, "collapse", "Collapse all", "action:collapse_all", () => {
      for (const s of steps) ui.openChoice.set(s.id, false);
      render();
    }, "pb-btn pb-link");
    const expand = iconButton(doc, "expand", "Expand all", "action:expand_all", () => {
      for (const s of steps) ui.openChoice.set(s.id, true);
      render();
    }, "pb-btn pb-link");
    const filter = /** @type {HTMLSelectElement} */ (h(doc, "select", "pb-filter"));
    filter.dataset.key = "action:filter";
    filter.setAttribute("aria-label", "Show steps with this status");
    for (const status of FILTERS) {
      const count = status === "all" ? steps.length
        : steps.filter((s) => s.status === status).length;
      if (status !== "all" && !count && ui.filter !== status) continue;
      const option = /** @type {HTMLOptionElement} */ (h(doc, "option", "",
        `${status === "all" ? "All steps" : status} (${count})`));
      option.value = status;
      option.selected = ui.filter === status;
      filter.append(option);
    }
    filter.addEventListener("change", () => { ui.filter = filter.value; render(); });
    const keys = h(doc, "span", "pb-muted pb-keys",
      "j/k move · a approve · s skip · Alt+↑/↓ reorder · Ctrl+Enter approve selected");
    bar.append(approve, all, reject, filter, collapse, expand, layout, keys);
    return bar;
  }

  function renderRevise() {
    const form = h(doc, "div", "pb-revise");
    textarea.value = ui.feedback;
    textarea.disabled = busy();
    const go = button(doc, "Revise", "action:revise", () => {
      const feedback = textarea.value.trim();
      if (!feedback) {
        ui.localError = "Write what should change before asking for a revision.";
        render();
        return;
      }
      send({ action: "revise", feedback, revision: revision() });
      ui.feedback = "";
      textarea.value = "";
    });
    go.disabled = busy();
    go.setAttribute("aria-label", "Revise the plan with this feedback");
    form.append(textarea, go);
    return form;
  }

  function render() {
    if (disconnected) {
      // The kernel restarted (or died): nothing here can reach it, so nothing is offered.
      const note = h(doc, "p", "pb-error pb-disconnected",
        "Disconnected: the kernel restarted, so this panel can no longer act. Run %plan again.");
      note.setAttribute("role", "alert");
      root.replaceChildren(note);
      return;
    }
    if (model.get("superseded") === true) {
      const note = h(doc, "p", "pb-muted pb-superseded",
        "This review panel was replaced by a newer one further down (`%plan` shows it again).");
      root.replaceChildren(note);
      return;
    }
    const keep = root.querySelector(".pb-scroll");
    const scrolled = keep ? keep.scrollTop : 0;
    const active = /** @type {HTMLElement | null} */ (doc.activeElement);
    const key = active && root.contains(active) ? active.dataset.key : undefined;
    const v = view();
    const parts = [];
    if (v.header) parts.push(renderHeader(doc, v.header));
    const error = ui.localError || v.error;
    if (error) {
      const box = h(doc, "div", "pb-error");
      box.setAttribute("role", "alert");
      box.append(h(doc, "span", "", error));
      const offer = ui.localError ? null : v.offer;
      if (offer && offer.kind === "force_rollback") {
        const force = button(doc, "Roll back anyway", "action:force_rollback",
          () => send({ action: "rollback", checkpoint: offer.checkpoint, force: true }),
          "pb-btn pb-small pb-danger");
        force.setAttribute("aria-label", "Roll back anyway, overwriting the later changes");
        box.append(force);
      }
      if (offer && offer.kind === "confirm_rollback") {
        // A received notebook's checkpoint: say what it writes before it is restored.
        const writes = (offer.writes || []).join(", ") || "nothing";
        box.append(h(doc, "span", "pb-confirm-writes", ` It writes: ${writes}.`));
        const restore = button(doc, "Restore anyway", "action:confirm_rollback",
          () => send({ action: "rollback", checkpoint: offer.checkpoint, force: !!offer.force,
            confirm: true }),
          "pb-btn pb-small pb-danger");
        restore.setAttribute("aria-label", `Restore the received checkpoint: writes ${writes}`);
        box.append(restore);
      }
      box.append(button(doc, "Dismiss", "action:dismiss", () => {
        if (ui.localError) ui.localError = null; else send({ action: "dismiss" });
        render();
      }, "pb-btn pb-small"));
      parts.push(box);
    }
    if (v.progress?.running) {
      const cur = v.progress.current ? stepOf(v.progress.current) : undefined;
      // A step that is running keeps the kernel busy, so the kernel may only read the Stop
      // when that step ends: say at once that the run will stop there.
      const progress = { ...v.progress, stopping: v.progress.stopping || ui.stopping };
      parts.push(renderProgress(doc, progress, cur ? `step ${cur.number} ${cur.target}` : "",
        () => { ui.stopping = true; send({ action: "stop" }); render(); }));
    }
    if (v.steps.length) {
      // The toolbar sticks to the top of the panel's own scroll box: in a long plan it stays
      // in view wherever the host (JupyterLab, Notebook 7, VS Code) clips its outputs.
      const body = stepsBox;
      body.className = v.steps.length >= SCROLL_FROM ? "pb-body pb-scroll" : "pb-body";
      body.replaceChildren(renderToolbar());
      const list = h(doc, "ol", "pb-steps");
      list.setAttribute("aria-label", "Steps (j/k to move, a approve, s skip, Alt+↑/↓ reorder)");
      const ids = v.steps.map((s) => s.id);
      if (!ui.focus || !ids.includes(ui.focus)) ui.focus = ids[0];
      /** @type {Map<string, Row>} */
      const rows = new Map();
      // Rows past the first EAGER_ROWS start as summaries where the page can tell what is in
      // view (an IntersectionObserver); the focused and highlighted steps are always whole.
      const lazy = typeof win?.IntersectionObserver === "function";
      v.steps.forEach((step, i) => {
        if (!shown(step)) return;
        const st = {
          selected: !ui.deselected.has(step.id), open: isOpen(step),
          expanded: ui.expanded.has(step.id), focused: false, mode: ui.mode,
          busy: busy(), first: i === 0, last: i === v.steps.length - 1,
        };
        const state = JSON.stringify(st);
        const whole = !lazy || rows.size < EAGER_ROWS || step.id === ui.focus
          || step.id === ui.highlight;
        // A row whose step and state did not change is reused: a run changes one step at a
        // time, and rebuilding 300 rows with their diffs for that is wasted work.
        const cached = rowCache.get(step.id);
        const same = cached && cached.state === state && (cached.whole || !whole)
          && (cached.step === step || jsonOf(cached.step) === jsonOf(step));
        const row = same ? { ...cached, step } : {
          step, state, st, whole,
          li: whole ? renderStep(doc, step, st, actions) : renderSummary(doc, step),
        };
        const focused = step.id === ui.focus;
        row.li.tabIndex = focused ? 0 : -1;
        row.li.classList.toggle("pb-focused", focused);
        row.li.classList.toggle("pb-highlight", step.id === ui.highlight);
        rows.set(step.id, row);
        list.append(row.li);
      });
      rowCache = rows;
      body.append(list);
      if (!rows.size) {
        body.append(h(doc, "p", "pb-muted pb-empty-filter", `No ${ui.filter} steps.`));
      }
      body.append(renderRevise());
      parts.push(body);
    } else {
      parts.push(h(doc, "p", "pb-muted pb-empty-plan",
        "No steps yet: changes the agent proposes in plan mode appear here."));
    }
    if (v.revisions && v.revisions.length > 1) {
      parts.push(renderRevisions(doc, v.revisions, v.revision_diff, {
        compare: (from, to) => send({ action: "show_revision_diff", from, to }),
        close: () => send({ action: "show_revision_diff", from: null, to: null }),
      }));
    }
    if (v.checkpoints && v.checkpoints.length) {
      parts.push(renderTimeline(doc, v.checkpoints, {
        confirming: ui.confirming, busy: busy(),
        ask: (id) => { ui.confirming = id; render(); },
        rollback: (id) => {
          ui.confirming = null;
          send({ action: "rollback", checkpoint: id });
          render();
        },
      }));
    }
    if (v.agent) {
      parts.push(renderAgent(doc, v.agent, {
        answer: (id, choice, text) => send({ action: "answer", decision_id: id, choice, text }),
        stop: () => send({ action: "stop_agent" }),
      }));
    }
    root.replaceChildren(...parts);
    watchSummaries();
    const box = root.querySelector(".pb-scroll");
    if (box && scrolled) box.scrollTop = scrolled;
    if (key) {
      const again = byKey(key);
      if (again && !(/** @type {HTMLButtonElement} */ (again).disabled)) again.focus();
      else if (ui.focus) byKey(`step:${ui.focus}`)?.focus();
    }
  }

  /** Watch the summary rows now drawn (and no others), completing each as it nears the
   * scroll box's view (or the page's, for a plan that does not scroll). */
  function watchSummaries() {
    const waiting = [...rowCache.values()].filter((row) => !row.whole).map((row) => row.li);
    const scroll = stepsBox.isConnected && stepsBox.classList.contains("pb-scroll")
      ? stepsBox : null;
    if (observer && observerRoot !== scroll) {
      observer.disconnect();
      observer = null;
      watched.clear();
    }
    const drawn = new Set(/** @type {Element[]} */ (waiting));
    for (const li of watched) {
      if (drawn.has(li)) continue;
      observer?.unobserve(li);
      watched.delete(li);
    }
    if (!waiting.length || !win) return;
    if (!observer) {
      const seen = new win.IntersectionObserver((entries) => {
        for (const entry of entries) {
          if (!entry.isIntersecting) continue;
          seen.unobserve(entry.target);
          watched.delete(entry.target);
          completeRow(entry.target);
        }
      }, { root: scroll, rootMargin: "600px 0px" });
      observer = seen;
      observerRoot = scroll;
    }
    for (const li of waiting) {
      if (watched.has(li)) continue;
      observer.observe(li);
      watched.add(li);
    }
  }

  /** @param {KeyboardEvent} event */
  function onKey(event) {
    const cmd = commandFor(event);
    if (!cmd) return;
    const steps = view().steps.filter(shown);
    const i = steps.findIndex((s) => s.id === ui.focus);
    const here = i >= 0 ? steps[i] : undefined;
    event.preventDefault();
    event.stopPropagation();
    if (cmd === "approve-selected") { approveSelected(); return; }
    if (cmd === "next" || cmd === "prev") {
      const j = Math.min(steps.length - 1, Math.max(0, i + (cmd === "next" ? 1 : -1)));
      if (!steps[j]) return;
      actions.focus(steps[j].id);
      byKey(`step:${steps[j].id}`)?.focus();
      return;
    }
    if (!here || busy()) return;
    if (cmd === "toggle-approve" && here.status === "pending") actions.toggleSelect(here.id);
    else if (cmd === "toggle-skip") actions.toggleSkip(here.id);
    else if (cmd === "move-up") actions.move(here.id, -1);
    else if (cmd === "move-down") actions.move(here.id, 1);
  }

  /** The extension's cell badge asks for a step: show it, scroll to it, highlight it.
   * @param {Event} event */
  const onFocusStep = (event) => {
    const number = /** @type {CustomEvent} */ (event).detail?.stepNumber;
    const target = view().steps.find((s) => s.number === number);
    if (!target || model.get("superseded") === true) return;
    if (!shown(target)) ui.filter = "all";
    ui.openChoice.set(target.id, true);
    ui.focus = target.id;
    ui.highlight = target.id;
    render();
    const row = byKey(`step:${target.id}`);
    row?.scrollIntoView?.({ block: "center" });
    row?.focus({ preventScroll: true });
    win?.setTimeout(() => {
      if (ui.highlight !== target.id) return;
      ui.highlight = null;
      byKey(`step:${target.id}`)?.classList.remove("pb-highlight");
    }, 2500);
  };
  const onDeselected = () => {
    ui.deselected = new Set(idList(model.get("deselected")));
    render();
  };

  const onChange = () => {
    if (!busy()) ui.stopping = false;
    const steps = view().steps || [];
    const ids = new Set(steps.map((s) => s.id));
    // Steps that left the plan are forgotten here only: the kernel's list keeps what another
    // display of the panel may still show.
    for (const id of ui.deselected) if (!ids.has(id)) ui.deselected.delete(id);
    if (ui.confirming && !(view().checkpoints || []).some((c) => c.id === ui.confirming)) {
      ui.confirming = null;
    }
    render();
  };
  /** The widget lost its kernel (a restart, a dead kernel): JupyterLab's widget manager sets
   * the model's `comm_live` to false and says so with `comm_live_update`. A model is live
   * from before its first view, and a new kernel means new models, so once the panel is
   * drawn this event only ever means "disconnected" (anywidget's model shows no `comm_live`
   * to read). */
  const onLive = () => {
    if (!disconnected) {
      disconnected = true;
      render();
    }
  };
  root.addEventListener("keydown", onKey);
  model.on("comm_live_update", onLive);
  model.on("change:view", onChange);
  model.on("change:live", onChange);
  model.on("change:deselected", onDeselected);
  model.on("change:superseded", onChange);
  win?.addEventListener("planbook:focus-step", onFocusStep);
  render();
  return () => {
    observer?.disconnect();
    model.off("comm_live_update", onLive);
    win?.removeEventListener("planbook:focus-step", onFocusStep);
    model.off("change:deselected", onDeselected);
    model.off("change:superseded", onChange);
    model.off("change:view", onChange);
    model.off("change:live", onChange);
    root.removeEventListener("keydown", onKey);
    root.remove();
  };
}

/**
 * A list of step ids from a trait (anything else, as from an older kernel: none).
 * @param {unknown} value
 * @returns {string[]}
 */
function idList(value) {
  return Array.isArray(value) ? value.filter((x) => typeof x === "string") : [];
}

/**
 * Apply live overrides to a view.
 * @param {View} base
 * @param {{ steps?: Record<string, { status: string, error: string | null }>,
 *   progress?: View["progress"], error?: string | null, offer?: View["offer"],
 *   agent?: View["agent"] }} live
 * @returns {View}
 */
export function merge(base, live) {
  if (!live || !Object.keys(live).length) return base;
  const out = { ...base };
  const patches = live.steps;
  if (patches && Object.keys(patches).length) {
    out.steps = base.steps.map((s) => (patches[s.id] ? { ...s, ...patches[s.id] } : s));
    /** @type {Record<string, number>} */
    const counts = { pending: 0, approved: 0, done: 0, failed: 0 };
    for (const s of out.steps) counts[s.status] = (counts[s.status] ?? 0) + 1;
    out.header = { ...base.header, counts };
  }
  if ("progress" in live && live.progress) out.progress = live.progress;
  if ("error" in live) out.error = live.error ?? null;
  if ("offer" in live) out.offer = live.offer;
  if ("agent" in live) out.agent = live.agent ?? null;
  return out;
}

export default {
  /** @param {{ model: Model, el: HTMLElement }} ctx */
  render({ model, el }) {
    return createPanel({ model, el });
  },
};
