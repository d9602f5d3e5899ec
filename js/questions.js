// planbook: what the panel adds to a question an agent outside the kernel asked over MCP:
// who asked it, and whether the notebook carries an answer given elsewhere (no authority).

import { h } from "./diff-view.js";

/**
 * @typedef {{ kind: string, origin?: string, received?: string | null }} AskedJSON
 */

/**
 * The line under an MCP client's question, or null for the agent's own decisions.
 * @param {Document} doc
 * @param {AskedJSON} d
 * @returns {HTMLElement | null}
 */
export function askedBy(doc, d) {
  if (d.kind !== "person_question") return null;
  let text = `Asked by ${d.origin || "an MCP client"}; answer with a button or your own words`;
  if (d.received) {
    text += ` (the notebook carries an answer from ${d.received}, not given here: yours counts)`;
  }
  return h(doc, "p", "pb-asked-by", text);
}
