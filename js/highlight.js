// planbook: a small Python syntax colouriser for the review panel's diffs.
// Line by line (diffs show lines, not files) with one piece of state carried between lines:
// whether a triple-quoted string is still open. Good enough to read code, not a parser.

/** @typedef {{ text: string, cls: string }} Token */
/** @typedef {{ open: string | null }} LineState */

const KEYWORDS = new Set((
  "False None True and as assert async await break class continue def del elif else except " +
  "finally for from global if import in is lambda nonlocal not or pass raise return try while " +
  "with yield match case"
).split(" "));

const BUILTINS = new Set((
  "print len range enumerate zip map filter sorted list dict set tuple str int float bool " +
  "open isinstance getattr setattr hasattr super type object min max sum abs any all repr " +
  "round iter next self cls"
).split(" "));

const STRING_START = /^([rRbBfFuU]{0,2})('''|"""|'|")/;
const NUMBER = /^(0[xXoObB][\da-fA-F_]+|\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?j?|\.\d[\d_]*)/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const OPERATOR = /^(==|!=|<=|>=|->|\*\*|\/\/|:=|[-+*/%@&|^~<>=!.,:;()[\]{}])/;

/**
 * Find where a string opened with `quote` ends in `text` starting at `from`.
 * @param {string} text
 * @param {number} from
 * @param {string} quote
 * @returns {number} index just after the closing quote, or -1 if it does not close here
 */
function stringEnd(text, from, quote) {
  let i = from;
  while (i < text.length) {
    if (text[i] === "\\") { i += 2; continue; }
    if (text.startsWith(quote, i)) return i + quote.length;
    i += 1;
  }
  return -1;
}

/**
 * Split one line of Python into coloured tokens.
 * @param {string} line
 * @param {LineState} [state] carried from the previous line (an open triple-quoted string)
 * @returns {{ tokens: Token[], state: LineState }}
 */
export function tokenizeLine(line, state = { open: null }) {
  /** @type {Token[]} */
  const tokens = [];
  let i = 0;
  let open = state.open;
  /** @param {string} text @param {string} cls */
  const push = (text, cls) => {
    const last = tokens[tokens.length - 1];
    if (last && last.cls === cls) last.text += text;
    else tokens.push({ text, cls });
  };
  if (open) {
    const end = stringEnd(line, 0, open);
    if (end < 0) return { tokens: [{ text: line, cls: "str" }], state: { open } };
    push(line.slice(0, end), "str");
    i = end;
    open = null;
  }
  let prevName = "";
  while (i < line.length) {
    const rest = line.slice(i);
    const ch = line[i];
    if (ch === " " || ch === "\t") {
      const m = /^[ \t]+/.exec(rest);
      push(m ? m[0] : ch, "");
      i += m ? m[0].length : 1;
      continue;
    }
    if (ch === "#") { push(rest, "comment"); break; }
    const s = STRING_START.exec(rest);
    if (s) {
      const quote = s[2];
      const end = stringEnd(line, i + s[0].length, quote);
      if (end < 0) {
        push(rest, "str");
        if (quote.length === 3) open = quote;
        break;
      }
      push(line.slice(i, end), "str");
      i = end;
      prevName = "";
      continue;
    }
    if (ch === "@" && line.slice(0, i).trim() === "") {
      const m = /^@[\w.]+/.exec(rest);
      if (m) { push(m[0], "decorator"); i += m[0].length; continue; }
    }
    const n = NUMBER.exec(rest);
    if (n && !/[A-Za-z_]/.test(line[i - 1] || "")) {
      push(n[0], "number");
      i += n[0].length;
      continue;
    }
    const w = NAME.exec(rest);
    if (w) {
      const word = w[0];
      let cls = "";
      if (KEYWORDS.has(word)) cls = "keyword";
      else if (prevName === "def" || prevName === "class") cls = "def";
      else if (BUILTINS.has(word)) cls = "builtin";
      push(word, cls);
      prevName = word;
      i += word.length;
      continue;
    }
    const o = OPERATOR.exec(rest);
    push(o ? o[0] : ch, "op");
    i += o ? o[0].length : 1;
    prevName = "";
  }
  return { tokens, state: { open } };
}

/**
 * Tokenize several lines in order, carrying the string state between them.
 * @param {string[]} lines
 * @param {string} language "python" is coloured; anything else comes back as plain text
 * @returns {Token[][]}
 */
export function tokenizeLines(lines, language) {
  if (language !== "python") return lines.map((text) => [{ text, cls: "" }]);
  /** @type {LineState} */
  let state = { open: null };
  return lines.map((line) => {
    const out = tokenizeLine(line, state);
    state = out.state;
    return out.tokens;
  });
}

/**
 * Cut tokens at the edges of changed ranges, so each piece is one colour and either changed
 * or not. Ranges are [start, end) character offsets into the line.
 * @param {Token[]} tokens
 * @param {Array<[number, number]>} ranges
 * @returns {Array<{ text: string, cls: string, changed: boolean }>}
 */
export function overlayRanges(tokens, ranges) {
  /** @type {Array<{ text: string, cls: string, changed: boolean }>} */
  const out = [];
  let pos = 0;
  const inRange = (/** @type {number} */ at) => ranges.some(([a, b]) => at >= a && at < b);
  const cuts = new Set(ranges.flat());
  for (const tok of tokens) {
    let start = 0;
    for (let k = 1; k <= tok.text.length; k += 1) {
      if (k === tok.text.length || cuts.has(pos + k)) {
        const text = tok.text.slice(start, k);
        if (text) out.push({ text, cls: tok.cls, changed: inRange(pos + start) });
        start = k;
      }
    }
    pos += tok.text.length;
  }
  return out;
}
