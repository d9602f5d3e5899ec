// planbook: the panel's smaller sections: header, progress, revisions, checkpoint timeline.

import { h, renderDiff } from "./diff-view.js";
import { button } from "./step-row.js";
import { askedBy } from "./questions.js";

/**
 * @typedef {{ plan_id: string | null, task: string, state: string, revision: number,
 *   mode: string, backend: string, backend_description: string,
 *   counts: Record<string, number>, warnings?: string[] }} Header
 * @typedef {{ running: boolean, total: number, done: number, current: string | null,
 *   stopping: boolean, message: string }} Progress
 * @typedef {{ id: string, seq: number, kind: string, label: string, step: number | null,
 *   at: string, active: boolean, writes?: string[] }} CheckpointJSON
 * @typedef {{ number: number, summary: string, feedback: string | null, steps: number }}
 *   RevisionJSON
 * @typedef {{ change: string, kind: string, target: string,
 *   diff: import("./diff-view.js").Diff }} RevisionChange
 * @typedef {{ from: number, to: number, changes: RevisionChange[] }} RevisionDiff
 */

/**
 * @param {Document} doc
 * @param {Header} head
 */
export function renderHeader(doc, head) {
  const box = h(doc, "header", "pb-header");
  const title = h(doc, "h3", "pb-title", head.task ? `Plan: ${head.task}` : "Plan");
  const meta = h(doc, "div", "pb-meta");
  meta.append(
    h(doc, "span", `pb-badge pb-state pb-state-${head.state}`, head.state.replace("_", " ")),
    h(doc, "span", "pb-badge", `revision ${head.revision}`),
    h(doc, "span", "pb-badge", `${head.mode} mode`),
  );
  if (head.backend) meta.append(h(doc, "span", "pb-badge", head.backend));
  const counts = h(doc, "ul", "pb-counts");
  counts.setAttribute("aria-label", "Step counts");
  for (const [name, n] of Object.entries(head.counts)) {
    const item = h(doc, "li", `pb-count pb-count-${name}`);
    item.append(h(doc, "strong", "", String(n)), ` ${name.replace("_", " ")}`);
    counts.append(item);
  }
  box.append(title, meta, counts);
  if (head.backend_description) {
    box.append(h(doc, "p", "pb-muted pb-backend", head.backend_description));
  }
  for (const warning of head.warnings ?? []) {
    const note = h(doc, "p", "pb-warning", warning);
    note.setAttribute("role", "alert");
    box.append(note);
  }
  return box;
}

/**
 * @param {Document} doc
 * @param {Progress} progress
 * @param {string} currentLabel
 * @param {() => void} onStop
 */
export function renderProgress(doc, progress, currentLabel, onStop) {
  const box = h(doc, "div", "pb-progress");
  box.setAttribute("role", "status");
  const bar = /** @type {HTMLProgressElement} */ (h(doc, "progress"));
  bar.max = Math.max(progress.total, 1);
  bar.value = progress.done;
  bar.setAttribute("aria-label", "Run progress");
  const text = progress.stopping
    ? "Stopping after the current step…"
    : `Running ${progress.done + (progress.current ? 1 : 0)} of ${progress.total}`
      + (currentLabel ? `: ${currentLabel}` : "");
  const stop = button(doc, "Stop", "action:stop", onStop, "pb-btn pb-danger");
  stop.disabled = progress.stopping;
  stop.setAttribute("aria-label", "Stop the run after the current step");
  box.append(bar, h(doc, "span", "pb-progress-text", text), stop);
  return box;
}

/**
 * @param {Document} doc
 * @param {CheckpointJSON[]} checkpoints
 * @param {{ confirming: string | null, busy: boolean, ask: (id: string | null) => void,
 *   rollback: (id: string) => void }} opts
 */
export function renderTimeline(doc, checkpoints, opts) {
  const box = h(doc, "section", "pb-timeline");
  box.setAttribute("aria-label", "Checkpoints");
  box.append(h(doc, "h4", "", "Checkpoints"));
  const list = h(doc, "ol", "pb-checkpoints");
  for (const cp of checkpoints) {
    const item = h(doc, "li", `pb-checkpoint${cp.active ? "" : " pb-inactive"}`);
    item.dataset.checkpoint = cp.id;
    const time = h(doc, "time", "pb-muted", cp.at.replace("T", " ").slice(0, 19));
    time.setAttribute("datetime", cp.at);
    item.append(h(doc, "span", "pb-cp-label", cp.label), " ", time);
    if (!cp.active) item.append(" ", h(doc, "span", "pb-badge", "undone"));
    if (opts.confirming === cp.id) {
      const ask = h(doc, "div", "pb-confirm");
      ask.setAttribute("role", "alertdialog");
      ask.setAttribute("aria-label", "Confirm rollback");
      ask.append(h(doc, "span", "", `Roll back to “${cp.label}”? Cells and files changed `
        + "since then return to how they were; variables in the kernel stay as they are."));
      const writes = (cp.writes || []).join(", ") || "nothing";
      ask.append(h(doc, "span", "pb-confirm-writes", ` It writes: ${writes}.`));
      const yes = button(doc, "Roll back", `cp:${cp.id}:yes`, () => opts.rollback(cp.id),
        "pb-btn pb-danger");
      const no = button(doc, "Cancel", `cp:${cp.id}:no`, () => opts.ask(null));
      ask.append(yes, no);
      item.append(ask);
    } else if (cp.active) {
      const b = button(doc, "Rollback", `cp:${cp.id}:rollback`, () => opts.ask(cp.id),
        "pb-btn pb-small");
      b.setAttribute("aria-label", `Rollback to ${cp.label}`);
      b.disabled = opts.busy;
      item.append(" ", b);
    }
    list.append(item);
  }
  box.append(list);
  return box;
}

/**
 * @param {Document} doc
 * @param {RevisionJSON[]} revisions
 * @param {RevisionDiff | null} diff
 * @param {{ compare: (from: number, to: number) => void, close: () => void }} opts
 */
export function renderRevisions(doc, revisions, diff, opts) {
  const box = h(doc, "section", "pb-revisions");
  box.setAttribute("aria-label", "Revisions");
  const form = h(doc, "div", "pb-rev-form");
  /** @param {string} key @param {number} value @param {string} text */
  const select = (key, value, text) => {
    const label = h(doc, "label", "pb-rev-label", text);
    const sel = /** @type {HTMLSelectElement} */ (h(doc, "select"));
    sel.dataset.key = key;
    for (const rev of revisions) {
      const opt = /** @type {HTMLOptionElement} */ (h(doc, "option", "", `revision ${rev.number}`
        + (rev.feedback ? `: ${rev.feedback.slice(0, 40)}` : "")));
      opt.value = String(rev.number);
      opt.selected = rev.number === value;
      sel.append(opt);
    }
    label.append(sel);
    return { label, sel };
  };
  const last = revisions[revisions.length - 1].number;
  const from = select("rev:from", diff ? diff.from : last - 1, "Compare ");
  const to = select("rev:to", diff ? diff.to : last, " with ");
  const show = button(doc, "Show changes", "rev:show",
    () => opts.compare(Number(from.sel.value), Number(to.sel.value)));
  form.append(from.label, to.label, show);
  box.append(form);
  if (diff) {
    const list = h(doc, "ul", "pb-rev-changes");
    list.setAttribute("aria-label", `Changes from revision ${diff.from} to ${diff.to}`);
    for (const ch of diff.changes) {
      const item = h(doc, "li", `pb-rev-change pb-rev-${ch.change}`);
      item.append(h(doc, "span", "pb-badge", ch.change), " ",
        h(doc, "span", "pb-target", `${ch.kind.replace("_", " ")} ${ch.target}`));
      if (ch.change !== "same") {
        item.append(renderDiff(doc, ch.diff, {
          language: "text", mode: "unified", expanded: true, onShowMore: () => {},
        }));
      }
      list.append(item);
    }
    if (!diff.changes.length) list.append(h(doc, "li", "pb-muted", "No steps in either."));
    box.append(list, button(doc, "Hide changes", "rev:close", opts.close, "pb-btn pb-small"));
  }
  return box;
}

/**
 * @typedef {{ id: string, kind: string, question: string, options: string[],
 *   allow_text: boolean, origin?: string, received?: string | null }} DecisionJSON
 * @typedef {{ activity?: string[], todos?: Array<{ text: string, status: string,
 *   steps: number[] }>, decisions?: DecisionJSON[], running?: boolean }} AgentJSON
 */

const TODO_MARK = { done: "☑", in_progress: "◐", cancelled: "✕", pending: "☐" };

/**
 * Agent activity, its todo list and the questions it waits on (answerable here).
 * @param {Document} doc
 * @param {AgentJSON} agent
 * @param {{ answer: (id: string, choice: string, text: string | null) => void,
 *   stop: () => void }} opts
 */
export function renderAgent(doc, agent, opts) {
  const box = h(doc, "section", "pb-agent");
  box.setAttribute("aria-label", "Agent");
  const head = h(doc, "h4", "", agent.running ? "Agent (working…)" : "Agent");
  if (agent.running) {
    const stop = button(doc, "Stop agent", "action:stop_agent", opts.stop, "pb-btn pb-small");
    stop.setAttribute("aria-label", "Stop the agent; the steps it staged are kept");
    head.append(" ", stop);
  }
  box.append(head);
  for (const d of agent.decisions ?? []) {
    const ask = h(doc, "div", "pb-decision");
    ask.setAttribute("role", "group");
    ask.setAttribute("aria-label", `Question ${d.id}`);
    ask.append(h(doc, "p", "pb-question", d.question));
    const by = askedBy(doc, d);
    if (by) ask.append(by);
    const row = h(doc, "div", "pb-toolbar");
    /** @type {HTMLInputElement | null} */
    let input = null;
    if (d.allow_text || d.kind === "approval") {
      input = h(doc, "input", "pb-answer-text");
      input.type = "text";
      input.dataset.key = `decision:${d.id}:text`;
      input.placeholder = d.allow_text ? "Your answer" : "Reason (optional)";
      input.setAttribute("aria-label", `Answer or reason for ${d.id}`);
    }
    const field = input;
    const text = () => (field && field.value.trim()) || null;
    for (const option of d.options) {
      const b = button(doc, option, `decision:${d.id}:${option}`,
        () => opts.answer(d.id, option, text()), "pb-btn pb-small");
      b.setAttribute("aria-label", `Answer ${option}`);
      row.append(b);
    }
    if (field) {
      row.append(field);
      if (d.allow_text) {
        const send = button(doc, "Send", `decision:${d.id}:send`, () => {
          const typed = text();
          if (typed) opts.answer(d.id, typed, null);
        }, "pb-btn pb-small");
        send.setAttribute("aria-label", `Send the typed answer to ${d.id}`);
        row.append(send);
      }
    }
    ask.append(row);
    box.append(ask);
  }
  if (agent.todos?.length) {
    const list = h(doc, "ul", "pb-todos");
    list.setAttribute("aria-label", "Agent's todo list");
    for (const todo of agent.todos) {
      const mark = TODO_MARK[/** @type {keyof TODO_MARK} */ (todo.status)] ?? "☐";
      const steps = todo.steps.length ? ` (step ${todo.steps.join(", ")})` : "";
      const item = h(doc, "li", `pb-todo-${todo.status}`, `${mark} ${todo.text}${steps}`);
      list.append(item);
    }
    box.append(list);
  }
  if (agent.activity?.length) {
    const list = h(doc, "ul", "pb-agent-list");
    list.setAttribute("aria-label", "Agent activity");
    for (const text of agent.activity.slice(-8)) list.append(h(doc, "li", "", text));
    box.append(list);
  }
  return box;
}
