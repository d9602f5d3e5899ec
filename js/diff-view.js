// planbook: render the structured hunks computed in Python as a unified or side-by-side diff.
// Lines are syntax-coloured (Python) and the changed characters inside a line are marked.

import { overlayRanges, tokenizeLine, tokenizeLines } from "./highlight.js";

/**
 * @typedef {{ type: "context" | "add" | "del", old: number | null, new: number | null,
 *   text: string, ranges: Array<[number, number]> }} DiffLine
 * @typedef {{ old_start: number, old_count: number, new_start: number, new_count: number,
 *   lines: DiffLine[] }} Hunk
 * @typedef {{ kind: string, hunks: Hunk[], added: number, removed: number, lines: number,
 *   fold_at: number, omitted: number }} Diff
 * @typedef {{ language: string, mode: "unified" | "split", expanded: boolean,
 *   onShowMore: () => void }} DiffOptions
 */

const MARK = { context: " ", add: "+", del: "−" };
const SPOKEN = { context: "unchanged", add: "added", del: "removed" };

/**
 * Create an element with a class and text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {Document} doc
 * @param {K} tag
 * @param {string} [cls]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(doc, tag, cls, text) {
  const node = doc.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * The code of one line: coloured tokens with changed ranges wrapped in <mark>.
 * @param {Document} doc
 * @param {import("./highlight.js").Token[]} tokens
 * @param {Array<[number, number]>} ranges
 */
function codeCell(doc, tokens, ranges) {
  const td = h(doc, "td", "pb-code");
  for (const piece of overlayRanges(tokens, ranges || [])) {
    const span = h(doc, piece.changed ? "mark" : "span", "", piece.text);
    const classes = [];
    if (piece.cls) classes.push(`pb-tok-${piece.cls}`);
    if (piece.changed) classes.push("pb-changed");
    span.className = classes.join(" ");
    td.append(span);
  }
  return td;
}

/**
 * Tokens for every line of a hunk: the old side (context + removed) and the new side
 * (context + added) are tokenized as separate streams so an open string carries correctly.
 * @param {Hunk} hunk
 * @param {string} language
 * @returns {import("./highlight.js").Token[][]}
 */
function hunkTokens(hunk, language) {
  if (language !== "python") return hunk.lines.map((l) => [{ text: l.text, cls: "" }]);
  let oldState = { open: /** @type {string | null} */ (null) };
  let newState = { open: /** @type {string | null} */ (null) };
  return hunk.lines.map((line) => {
    if (line.type === "del") {
      const out = tokenizeLine(line.text, oldState);
      oldState = out.state;
      return out.tokens;
    }
    const out = tokenizeLine(line.text, newState);
    newState = out.state;
    if (line.type === "context") oldState = out.state;
    return out.tokens;
  });
}

/**
 * Pair each run of removed lines with the run of added lines after it (as Python does).
 * @param {DiffLine[]} lines
 * @returns {Array<[number | null, number | null]>} indexes into `lines`
 */
export function pairRows(lines) {
  /** @type {Array<[number | null, number | null]>} */
  const rows = [];
  /** @type {number[]} */ let dels = [];
  /** @type {number[]} */ let adds = [];
  const flush = () => {
    for (let k = 0; k < Math.max(dels.length, adds.length); k += 1) {
      rows.push([k < dels.length ? dels[k] : null, k < adds.length ? adds[k] : null]);
    }
    dels = [];
    adds = [];
  };
  lines.forEach((line, i) => {
    if (line.type === "context") { flush(); rows.push([i, i]); }
    else if (line.type === "del") { if (adds.length) flush(); dels.push(i); }
    else adds.push(i);
  });
  flush();
  return rows;
}

/**
 * @param {Document} doc
 * @param {Diff} diff
 * @param {DiffOptions} opts
 * @returns {HTMLElement}
 */
export function renderDiff(doc, diff, opts) {
  const wrap = h(doc, "div", "pb-diff-wrap");
  if (diff.kind === "same") {
    wrap.append(h(doc, "p", "pb-muted", "No change to the text."));
    return wrap;
  }
  const table = h(doc, "table", `pb-diff pb-${opts.mode}`);
  table.setAttribute("role", "table");
  const body = h(doc, "tbody");
  table.append(body);
  const limit = opts.expanded ? Infinity : diff.fold_at;
  let shown = 0;
  for (const hunk of diff.hunks) {
    if (shown >= limit) break;
    const head = h(doc, "tr", "pb-hunk");
    const cell = h(doc, "td", "", `@@ −${hunk.old_start},${hunk.old_count} `
      + `+${hunk.new_start},${hunk.new_count} @@`);
    cell.colSpan = 4;
    head.append(cell);
    body.append(head);
    const tokens = hunkTokens(hunk, opts.language);
    if (opts.mode === "split") {
      for (const [l, r] of pairRows(hunk.lines)) {
        if (shown >= limit) break;
        const tr = h(doc, "tr", "pb-row");
        for (const [idx, side] of /** @type {const} */ ([[l, "old"], [r, "new"]])) {
          if (idx === null) {
            tr.append(h(doc, "td", "pb-num pb-empty"), h(doc, "td", "pb-code pb-empty"));
            continue;
          }
          const line = hunk.lines[idx];
          const num = h(doc, "td", "pb-num", String(line[side] ?? ""));
          const code = codeCell(doc, tokens[idx], line.ranges);
          code.classList.add(`pb-${line.type}`);
          code.setAttribute("aria-label", `${SPOKEN[line.type]}: ${line.text}`);
          tr.append(num, code);
        }
        body.append(tr);
        shown += 1;
      }
    } else {
      hunk.lines.forEach((line, i) => {
        if (shown >= limit) return;
        const tr = h(doc, "tr", `pb-row pb-${line.type}`);
        const mark = h(doc, "td", "pb-mark", MARK[line.type]);
        mark.setAttribute("aria-label", SPOKEN[line.type]);
        tr.append(
          h(doc, "td", "pb-num", String(line.old ?? "")),
          h(doc, "td", "pb-num", String(line.new ?? "")),
          mark,
          codeCell(doc, tokens[i], line.ranges),
        );
        body.append(tr);
        shown += 1;
      });
    }
  }
  wrap.append(table);
  const total = opts.mode === "split"
    ? diff.hunks.reduce((n, hk) => n + pairRows(hk.lines).length, 0)
    : diff.lines;
  if (!opts.expanded && total > shown) {
    const more = h(doc, "button", "pb-more", `Show ${total - shown} more lines`);
    more.type = "button";
    more.addEventListener("click", () => opts.onShowMore());
    wrap.append(more);
  }
  if (diff.omitted > 0) {
    wrap.append(h(doc, "p", "pb-muted", `${diff.omitted} more lines are not shown: `
      + "the diff is too long for the panel."));
  }
  return wrap;
}

/**
 * A cell shown as a cell (an inserted cell, a cell to run, a shell command), folded like a diff.
 * @param {Document} doc
 * @param {string} text
 * @param {{ language: string, expanded: boolean, foldAt: number, onShowMore: () => void,
 *   label: string }} opts
 */
export function renderCell(doc, text, opts) {
  const wrap = h(doc, "div", "pb-cell");
  wrap.setAttribute("role", "group");
  wrap.setAttribute("aria-label", opts.label);
  const prompt = h(doc, "div", "pb-cell-prompt", opts.language === "shell" ? "$" : "[ ]:");
  prompt.setAttribute("aria-hidden", "true");
  const pre = h(doc, "pre", "pb-cell-source");
  const lines = text.split("\n");
  const shown = opts.expanded ? lines : lines.slice(0, opts.foldAt);
  tokenizeLines(shown, opts.language).forEach((tokens, i) => {
    if (i > 0) pre.append("\n");
    for (const tok of tokens) {
      pre.append(tok.cls ? h(doc, "span", `pb-tok-${tok.cls}`, tok.text) : tok.text);
    }
  });
  wrap.append(prompt, pre);
  if (shown.length < lines.length) {
    const more = h(doc, "button", "pb-more", `Show ${lines.length - shown.length} more lines`);
    more.type = "button";
    more.addEventListener("click", () => opts.onShowMore());
    wrap.append(more);
  }
  return wrap;
}
