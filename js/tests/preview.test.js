// A shell step's preview in the panel: the Preview button asks the kernel, the preview's text
// shows in the open step, and where overlays are off the button says why and does nothing.

import assert from "node:assert/strict";
import test from "node:test";
import { makeView, mount, step } from "./helpers.js";

const shell = (/** @type {Record<string, unknown>} */ extra) => makeView({
  steps: [
    step("s1", 1, { kind: "shell", target: "sed -i s/a/b/ f.txt", cell: "sed -i s/a/b/ f.txt",
      diff: null, language: "shell", ...extra }),
    step("s2", 2),
  ],
});

test("a pending shell step offers Preview and asks the kernel for it", (t) => {
  const p = mount(shell({ preview: null, preview_off: "" }));
  t.after(p.close);
  const button = p.byKey("step:s1:preview");
  assert.equal(button.textContent, "Preview");
  assert.equal(p.byKey("step:s2:preview"), undefined, "only shell steps are previewed");
  button.click();
  assert.deepEqual(p.model.sent.at(-1), { action: "preview", step_id: "s1", revision: 2 });
});

test("a preview shows in the step and can be run again", (t) => {
  const text = "# preview (exit 0): 1 changed\n# changed f.txt\n-a\n+b\n";
  const p = mount(shell({ preview: text, preview_off: "" }));
  t.after(p.close);
  assert.equal(p.byKey("step:s1:preview").textContent, "Preview again");
  assert.equal(p.$('[data-step-id="s1"] .pb-preview').textContent, text);
});

test("without overlays the button is off and says why", (t) => {
  const why = "previews and shell rollback are off: no overlays: user namespaces are off";
  const p = mount(shell({ preview: null, preview_off: why }));
  t.after(p.close);
  const button = p.byKey("step:s1:preview");
  assert.equal(button.disabled, true);
  assert.equal(button.title, why);
  assert.match(p.$('[data-step-id="s1"]').textContent, /user namespaces are off/);
});

test("while its preview runs the step says so and a second one cannot be asked", (t) => {
  const p = mount(shell({ preview: null, preview_off: "", previewing: true }));
  t.after(p.close);
  const button = p.byKey("step:s1:preview");
  assert.equal(button.textContent, "Previewing…");
  assert.equal(button.disabled, true);
  const sent = p.model.sent.length;
  button.click();
  assert.equal(p.model.sent.length, sent, "a disabled button sends nothing");
  assert.equal(p.byKey("step:s2:skip").disabled, false, "the other steps stay usable");
});
