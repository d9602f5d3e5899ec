import assert from "node:assert/strict";
import { test } from "node:test";
import { Window } from "happy-dom";
import { pairRows, renderCell, renderDiff } from "../diff-view.js";
import { diffOf } from "./helpers.js";

const doc = () => new Window().document;
const lines = [
  { type: "context", old: 1, new: 1, text: "import os" },
  { type: "del", old: 2, new: null, text: "x = 1", ranges: [[4, 5]] },
  { type: "add", old: null, new: 2, text: "x = 2", ranges: [[4, 5]] },
  { type: "add", old: null, new: 3, text: "y = 3" },
];
const opts = { language: "python", mode: "unified", expanded: false, onShowMore: () => {} };

test("unified view: one row per line with numbers, +/− marks and the changed characters marked", () => {
  const d = doc();
  const node = renderDiff(d, diffOf(lines), opts);
  const rows = [...node.querySelectorAll("tr.pb-row")];
  assert.equal(rows.length, 4);
  assert.deepEqual(rows.map((r) => r.querySelector(".pb-mark").textContent), [" ", "−", "+", "+"]);
  assert.deepEqual(rows.map((r) => r.className.split(" ")[1]), ["pb-context", "pb-del", "pb-add",
    "pb-add"]);
  assert.equal(rows[1].querySelector("mark.pb-changed").textContent, "1");
  assert.equal(rows[2].querySelector("mark.pb-changed").textContent, "2");
  assert.equal(rows[0].querySelector(".pb-tok-keyword").textContent, "import");
  assert.match(node.querySelector(".pb-hunk").textContent, /@@ −1,2 \+1,2 @@/);
});

test("side-by-side view pairs a removed line with the added line that replaces it", () => {
  assert.deepEqual(pairRows(lines.map((l) => ({ ranges: [], ...l }))),
    [[0, 0], [1, 2], [null, 3]]);
  const node = renderDiff(doc(), diffOf(lines), { ...opts, mode: "split" });
  const rows = [...node.querySelectorAll("tr.pb-row")];
  assert.equal(rows.length, 3);
  const cells = rows[1].querySelectorAll(".pb-code");
  assert.equal(cells[0].textContent, "x = 1");
  assert.equal(cells[1].textContent, "x = 2");
  assert.ok(rows[2].querySelector(".pb-empty"), "an added line has an empty left side");
});

test("a long diff is folded behind a Show more button that asks to expand", () => {
  const many = Array.from({ length: 50 }, (_, i) => ({ type: "add", old: null, new: i + 1,
    text: `line ${i}` }));
  let asked = 0;
  const node = renderDiff(doc(), diffOf(many), { ...opts, onShowMore: () => { asked += 1; } });
  assert.equal(node.querySelectorAll("tr.pb-row").length, 40);
  const more = node.querySelector("button.pb-more");
  assert.equal(more.textContent, "Show 10 more lines");
  more.click();
  assert.equal(asked, 1);
  const open = renderDiff(doc(), diffOf(many), { ...opts, expanded: true });
  assert.equal(open.querySelectorAll("tr.pb-row").length, 50);
  assert.equal(open.querySelector("button.pb-more"), null);
});

test("a diff cut in Python says how many lines are not shown", () => {
  const node = renderDiff(doc(), diffOf(lines, { omitted: 1234 }), { ...opts, expanded: true });
  assert.match(node.textContent, /1234 more lines are not shown/);
});

test("an inserted cell is shown as a cell, coloured and folded", () => {
  const text = Array.from({ length: 45 }, (_, i) => `print(${i})`).join("\n");
  const node = renderCell(doc(), text, { language: "python", expanded: false, foldAt: 40,
    onShowMore: () => {}, label: "New cell" });
  assert.equal(node.getAttribute("aria-label"), "New cell");
  assert.equal(node.querySelector("pre").textContent.split("\n").length, 40);
  assert.equal(node.querySelector(".pb-tok-builtin").textContent, "print");
  assert.equal(node.querySelector("button.pb-more").textContent, "Show 5 more lines");
});
