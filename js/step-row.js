// planbook: one row of the review panel: a step with its toggles and its diff.

import { h, renderCell, renderDiff } from "./diff-view.js";
import { icon } from "./icons.js";

/**
 * @typedef {{ id: string, number: number, kind: string, target: string, reason: string,
 *   risk: string, status: string, error: string | null, language: string,
 *   cell: string | null, diff: import("./diff-view.js").Diff | null,
 *   cell_id?: string | null, checkpoint?: string | null,
 *   run_at_approval?: boolean, runs_later?: string | null,
 *   origin?: string | null, preview?: string | null, preview_off?: string,
 *   previewing?: boolean,
 *   hash?: string | null, approved_elsewhere?: string | null }} StepJSON
 * @typedef {{ selected: boolean, open: boolean, expanded: boolean, focused: boolean,
 *   mode: "unified" | "split", busy: boolean, first: boolean, last: boolean }} RowState
 * @typedef {{ toggleSelect: (id: string) => void, toggleSkip: (id: string) => void,
 *   toggleOpen: (id: string) => void, showMore: (id: string) => void,
 *   move: (id: string, delta: number) => void, focus: (id: string) => void,
 *   drop: (dragged: string, target: string, after: boolean) => void,
 *   goToCell: (cellId: string) => void, retry: (id: string) => void,
 *   preview: (id: string) => void,
 *   rollBackStep: (checkpoint: string) => void }} RowActions
 */

/** What each kind of step is called (the icon has the same name in icons.js). */
export const KIND = {
  insert_cell: "insert cell",
  edit_cell: "edit cell",
  delete_cell: "delete cell",
  move_cell: "move cell",
  run_cell: "run cell",
  write_file: "write file",
  edit_file: "edit file",
  delete_file: "delete file",
  shell: "shell command",
  mcp_call: "MCP call",
};

/**
 * A button with an inline SVG icon before its text.
 * @param {Document} doc
 * @param {string} name
 * @param {string} text
 * @param {string} key
 * @param {() => void} onClick
 * @param {string} [cls]
 */
export function iconButton(doc, name, text, key, onClick, cls = "pb-btn pb-small") {
  const b = button(doc, "", key, onClick, cls);
  b.append(icon(doc, name));
  if (text) b.append(h(doc, "span", "", text));
  return b;
}

/**
 * A pending shell step can be run once in an overlay to see what it would change; while its
 * preview runs (off the kernel's main thread) the button says so and waits.
 * @param {Document} doc
 * @param {StepJSON} step
 * @param {RowState} st
 * @param {RowActions} act
 */
function previewButton(doc, step, st, act) {
  const again = step.previewing ? "Previewing…" : step.preview ? "Preview again" : "Preview";
  const pv = button(doc, again, `step:${step.id}:preview`, () => act.preview(step.id),
    "pb-btn pb-small pb-preview-button");
  pv.setAttribute("aria-label", `${again}: what step ${step.number} would change`);
  pv.disabled = st.busy || Boolean(step.preview_off) || Boolean(step.previewing);
  if (step.preview_off) pv.title = step.preview_off;
  return pv;
}

/** Diffs past this many steps start folded, so a big plan renders fast. */
export const OPEN_LIMIT = 20;
/** Rows drawn whole at once; the rest start as one-line summaries (renderSummary), each
 * completed as it comes near the view: a 1,000-step plan first draws about what fits. */
export const EAGER_ROWS = 40;

/**
 * What a row says to a screen reader: its number, kind, target and status.
 * @param {StepJSON} step
 */
function rowLabel(step) {
  return `Step ${step.number}: ${KIND[/** @type {keyof KIND} */ (step.kind)] ?? step.kind} `
    + `${step.target}, ${step.status}`;
}

/**
 * A step as one line of text (its number, kind, target, change size, risk and status), in
 * a row that takes focus and is found by its key like a whole row: what a row out of view
 * shows until it comes near the view (a fraction of the elements and no listeners), when the
 * panel replaces it with ``renderStep``'s row.
 * @param {Document} doc
 * @param {StepJSON} step
 * @returns {HTMLLIElement}
 */
export function renderSummary(doc, step) {
  const li = /** @type {HTMLLIElement} */ (h(doc, "li",
    `pb-step pb-summary pb-status-${step.status}`));
  li.dataset.stepId = step.id;
  li.dataset.key = `step:${step.id}`;
  li.tabIndex = -1;
  li.setAttribute("aria-label", rowLabel(step));
  const kind = KIND[/** @type {keyof KIND} */ (step.kind)] ?? step.kind;
  const stat = step.diff && step.diff.kind !== "same"
    ? `  +${step.diff.added} −${step.diff.removed}` : "";
  li.textContent = `${step.number}  ${kind}  ${step.target}${stat}  ·  ${step.risk} risk  ·  `
    + step.status.replace("_", " ");
  return li;
}

/**
 * @param {Document} doc
 * @param {string} text
 * @param {string} key
 * @param {() => void} onClick
 * @param {string} [cls]
 */
export function button(doc, text, key, onClick, cls = "pb-btn") {
  const b = /** @type {HTMLButtonElement} */ (h(doc, "button", cls, text));
  b.type = "button";
  b.dataset.key = key;
  b.addEventListener("click", onClick);
  return b;
}

/**
 * @param {Document} doc
 * @param {StepJSON} step
 * @param {RowState} st
 * @param {RowActions} act
 * @returns {HTMLLIElement}
 */
export function renderStep(doc, step, st, act) {
  const li = /** @type {HTMLLIElement} */ (h(doc, "li", `pb-step pb-status-${step.status}`));
  li.dataset.stepId = step.id;
  li.dataset.key = `step:${step.id}`;
  li.tabIndex = st.focused ? 0 : -1;
  li.setAttribute("aria-label", rowLabel(step));
  if (st.focused) li.classList.add("pb-focused");
  li.addEventListener("focus", () => act.focus(step.id));

  const pending = step.status === "pending";
  const skipped = step.status === "skipped";
  const head = h(doc, "div", "pb-step-head");

  const grip = h(doc, "span", "pb-grip");
  grip.append(icon(doc, "grip"));
  grip.setAttribute("aria-hidden", "true");
  grip.title = "Drag to reorder (or Alt+↑/↓)";
  li.draggable = pending && !st.busy;

  const label = /** @type {HTMLLabelElement} */ (h(doc, "label", "pb-select"));
  const box = /** @type {HTMLInputElement} */ (h(doc, "input"));
  box.type = "checkbox";
  box.checked = pending && st.selected;
  box.disabled = !pending || st.busy;
  box.dataset.key = `step:${step.id}:select`;
  box.setAttribute("aria-label", `Approve step ${step.number}`);
  box.addEventListener("change", () => act.toggleSelect(step.id));
  label.append(box);

  const skip = button(doc, skipped ? "Unskip" : "Skip", `step:${step.id}:skip`,
    () => act.toggleSkip(step.id), "pb-btn pb-small");
  skip.setAttribute("aria-pressed", String(skipped));
  skip.setAttribute("aria-label", `${skipped ? "Unskip" : "Skip"} step ${step.number}`);
  skip.disabled = st.busy || !(pending || skipped);

  const num = h(doc, "span", "pb-number", String(step.number));
  const kindName = KIND[/** @type {keyof KIND} */ (step.kind)] ?? step.kind;
  const kind = h(doc, "span", "pb-kind");
  kind.append(icon(doc, step.kind));
  kind.title = kindName;
  kind.setAttribute("aria-label", kindName);
  kind.setAttribute("role", "img");
  const target = h(doc, "span", "pb-target", step.target);
  target.title = step.target;
  const cellId = step.cell_id;
  if (cellId) {
    // Clicking the cell a step changes asks the notebook (the extension) to scroll to it.
    target.classList.add("pb-target-link");
    target.title = `${step.target} (click: go to the cell)`;
    target.addEventListener("click", () => act.goToCell(cellId));
  }
  const risk = h(doc, "span", `pb-badge pb-risk-${step.risk}`, `${step.risk} risk`);
  const status = h(doc, "span", `pb-badge pb-status-badge`, step.status.replace("_", " "));

  const toggle = button(doc, st.open ? "Hide" : "Show", `step:${step.id}:open`,
    () => act.toggleOpen(step.id), "pb-btn pb-small pb-link");
  toggle.setAttribute("aria-expanded", String(st.open));
  toggle.setAttribute("aria-label", `${st.open ? "Hide" : "Show"} the change of step ${step.number}`);

  const up = iconButton(doc, "up", "", `step:${step.id}:up`, () => act.move(step.id, -1),
    "pb-btn pb-icon");
  up.setAttribute("aria-label", `Move step ${step.number} up`);
  up.disabled = st.first || !pending || st.busy;
  const down = iconButton(doc, "down", "", `step:${step.id}:down`, () => act.move(step.id, 1),
    "pb-btn pb-icon");
  down.setAttribute("aria-label", `Move step ${step.number} down`);
  down.disabled = st.last || !pending || st.busy;

  const extra = step.kind === "shell" && pending ? [previewButton(doc, step, st, act)] : [];
  if (step.diff && step.diff.kind !== "same") {
    const stat = h(doc, "span", "pb-stat");
    stat.append(h(doc, "span", "pb-stat-add", `+${step.diff.added}`), " ",
      h(doc, "span", "pb-stat-del", `−${step.diff.removed}`));
    stat.setAttribute("aria-label", `${step.diff.added} lines added, ${step.diff.removed} removed`);
    head.append(grip, label, num, kind, target, stat, risk, status, skip, ...extra, toggle, up,
      down);
  } else {
    head.append(grip, label, num, kind, target, risk, status, skip, ...extra, toggle, up, down);
  }
  li.append(head);
  if (step.origin) li.append(h(doc, "p", "pb-origin", `from ${step.origin}`));
  if (step.approved_elsewhere) {
    li.append(h(doc, "p", "pb-origin",
      `approved elsewhere by ${step.approved_elsewhere}: not run until you approve it here`));
  }
  if (step.reason) li.append(h(doc, "p", "pb-reason", step.reason));
  // A file that runs code later (a shadowing module, git's settings): why it waits for review.
  if (step.runs_later) li.append(h(doc, "p", "pb-reason", `runs code later: ${step.runs_later}`));
  if (step.error) {
    const err = h(doc, "p", "pb-step-error");
    err.append(icon(doc, "warning"), h(doc, "span", "", step.error));
    err.setAttribute("role", "alert");
    li.append(err);
  }
  if (step.status === "failed") li.append(renderNextActions(doc, step, st, act));
  if (st.open) {
    const body = h(doc, "div", "pb-step-body");
    if (step.cell !== null) {
      body.append(renderCell(doc, step.cell, {
        language: step.language, expanded: st.expanded, foldAt: 40,
        onShowMore: () => act.showMore(step.id),
        label: step.kind === "insert_cell" ? "New cell" : step.kind === "shell"
          ? "Command" : "Cell",
      }));
    } else if (step.diff) {
      body.append(renderDiff(doc, step.diff, {
        language: step.language, mode: st.mode, expanded: st.expanded,
        onShowMore: () => act.showMore(step.id),
      }));
    }
    if (step.preview) {
      const pre = h(doc, "pre", "pb-preview", step.preview);
      pre.setAttribute("aria-label", `Preview of step ${step.number}`);
      body.append(pre);
    } else if (step.preview_off) {
      body.append(h(doc, "p", "pb-reason", step.preview_off));
    }
    li.append(body);
  }

  li.addEventListener("dragstart", (ev) => {
    ev.dataTransfer?.setData("text/x-planbook-step", step.id);
    if (ev.dataTransfer) ev.dataTransfer.effectAllowed = "move";
    li.classList.add("pb-dragging");
  });
  li.addEventListener("dragend", () => li.classList.remove("pb-dragging"));
  li.addEventListener("dragover", (ev) => {
    if (!pending || st.busy) return;
    ev.preventDefault();
    li.classList.add("pb-drop");
  });
  li.addEventListener("dragleave", () => li.classList.remove("pb-drop"));
  li.addEventListener("drop", (ev) => {
    ev.preventDefault();
    li.classList.remove("pb-drop");
    const dragged = ev.dataTransfer?.getData("text/x-planbook-step");
    if (!dragged || dragged === step.id) return;
    const rect = li.getBoundingClientRect();
    const after = rect.height > 0 && ev.clientY > rect.top + rect.height / 2;
    act.drop(dragged, step.id, after);
  });
  return li;
}

/**
 * What a failed step offers next: go to its cell, retry it, roll it back.
 * @param {Document} doc
 * @param {StepJSON} step
 * @param {RowState} st
 * @param {RowActions} act
 */
function renderNextActions(doc, step, st, act) {
  const bar = h(doc, "div", "pb-next-actions");
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", `What to do about step ${step.number}`);
  const cellId = step.cell_id;
  if (cellId) {
    const go = iconButton(doc, "goto", "Go to cell", `step:${step.id}:goto`,
      () => act.goToCell(cellId));
    go.setAttribute("aria-label", `Go to the cell of step ${step.number}`);
    bar.append(go);
  }
  const retry = iconButton(doc, "retry", "Retry", `step:${step.id}:retry`,
    () => act.retry(step.id));
  retry.setAttribute("aria-label", `Retry step ${step.number}`);
  retry.disabled = st.busy;
  bar.append(retry);
  const checkpoint = step.checkpoint;
  if (checkpoint) {
    const back = iconButton(doc, "undo", "Roll back this step", `step:${step.id}:rollback`,
      () => act.rollBackStep(checkpoint), "pb-btn pb-small pb-danger");
    back.setAttribute("aria-label", `Roll back step ${step.number}`);
    back.disabled = st.busy;
    bar.append(back);
  }
  return bar;
}
