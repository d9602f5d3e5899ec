// A question an MCP client asked, in the panel: who asked it, its options as buttons, a field
// for the person's own words, and its text shown as text (never as markup).

import assert from "node:assert/strict";
import test from "node:test";
import { makeView, mount } from "./helpers.js";

const asked = (/** @type {Record<string, unknown>} */ extra = {}) => makeView({ agent: {
  decisions: [
    { id: "q1", kind: "person_question", question: "<img src=x onerror=alert(1)> drop rows?",
      options: ["yes", "no"], allow_text: true, origin: "claude-code 2.1.0 (MCP)",
      received: null, ...extra },
  ],
} });

test("an MCP client's question shows who asked and is answered by button or words", (t) => {
  const p = mount(asked());
  t.after(p.close);
  const box = p.$(".pb-decision");
  assert.equal(box.querySelector(".pb-question").textContent,
    "<img src=x onerror=alert(1)> drop rows?");
  assert.equal(box.querySelector("img"), null, "the question's text is never markup");
  assert.match(box.querySelector(".pb-asked-by").textContent, /^Asked by claude-code 2\.1\.0/);
  p.byKey("decision:q1:no").click();
  p.byKey("decision:q1:text").value = "only the 2023 rows";
  p.byKey("decision:q1:send").click();
  assert.deepEqual(p.model.sent, [
    { action: "answer", decision_id: "q1", choice: "no", text: null },
    { action: "answer", decision_id: "q1", choice: "only the 2023 rows", text: null },
  ]);
});

test("an answer the notebook carries from elsewhere is said to carry no weight", (t) => {
  const p = mount(asked({ received: "mallory@far" }));
  t.after(p.close);
  assert.match(p.$(".pb-asked-by").textContent, /answer from mallory@far, not given here/);
});

test("the agent's own decisions get no asked-by line", (t) => {
  const p = mount(makeView({ agent: { decisions: [
    { id: "d1", kind: "question", question: "Which chart?", options: ["bar"], allow_text: false },
  ] } }));
  t.after(p.close);
  assert.equal(p.$(".pb-asked-by"), null);
});
