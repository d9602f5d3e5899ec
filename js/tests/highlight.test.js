import assert from "node:assert/strict";
import { test } from "node:test";
import { overlayRanges, tokenizeLine, tokenizeLines } from "../highlight.js";

const classes = (line) => tokenizeLine(line).tokens.filter((t) => t.cls)
  .map((t) => [t.text.trim(), t.cls]);

test("keywords, names after def, builtins, numbers, strings and comments get their colour", () => {
  assert.deepEqual(classes("def load(path): return len('x') + 42  # why"), [
    ["def", "keyword"], ["load", "def"], ["(", "op"], ["):", "op"], ["return", "keyword"],
    ["len", "builtin"], ["(", "op"], ["'x'", "str"], [")", "op"], ["+", "op"], ["42", "number"],
    ["# why", "comment"],
  ]);
});

test("a string keeps its quotes, escapes and prefix", () => {
  const toks = tokenizeLine(String.raw`x = f"a\"b" + r'c'`).tokens.filter((t) => t.cls === "str");
  assert.deepEqual(toks.map((t) => t.text), [String.raw`f"a\"b"`, "r'c'"]);
});

test("a triple-quoted string that spans lines colours every line until it closes", () => {
  const lines = tokenizeLines(['doc = """start', "middle if not", 'end""" + x'], "python");
  assert.equal(lines[1][0].cls, "str");
  assert.equal(lines[1][0].text, "middle if not");
  assert.equal(lines[2][0].text, 'end"""');
  assert.equal(lines[2].find((t) => t.text.trim() === "x").cls, "");
});

test("non-Python text is left plain", () => {
  assert.deepEqual(tokenizeLines(["def x"], "text"), [[{ text: "def x", cls: "" }]]);
});

test("changed ranges cut tokens so marked pieces keep their colour", () => {
  const { tokens } = tokenizeLine("x = 10");
  const pieces = overlayRanges(tokens, [[5, 6]]);
  assert.equal(pieces.map((p) => p.text).join(""), "x = 10");
  assert.deepEqual(pieces.filter((p) => p.changed).map((p) => [p.text, p.cls]), [["0", "number"]]);
});
