// planbook: the panel's keyboard map. j/k move between steps, a toggles a step's approval,
// s skips it, Alt+Up/Down reorders it, Ctrl+Enter (Cmd+Enter) approves the selected steps.

/** @typedef {"next" | "prev" | "toggle-approve" | "toggle-skip" | "move-up" | "move-down" |
 *   "approve-selected"} Command */

/**
 * Which panel command a key press means, or null to let it through.
 * Typing in a text box is never taken over, except Ctrl+Enter there does nothing special.
 * @param {KeyboardEvent} event
 * @returns {Command | null}
 */
export function commandFor(event) {
  const target = /** @type {HTMLElement | null} */ (event.target);
  const tag = target && target.tagName ? target.tagName.toLowerCase() : "";
  const typing = tag === "textarea" || tag === "input" && target?.getAttribute("type") === "text"
    || tag === "select" || Boolean(target?.isContentEditable);
  if (typing) return null;
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter") return "approve-selected";
  if (event.ctrlKey || event.metaKey) return null;
  if (event.altKey && event.key === "ArrowUp") return "move-up";
  if (event.altKey && event.key === "ArrowDown") return "move-down";
  if (event.altKey || event.shiftKey) return null;
  switch (event.key) {
    case "j": return "next";
    case "k": return "prev";
    case "a": return "toggle-approve";
    case "s": return "toggle-skip";
    default: return null;
  }
}
