// planbook: the panel's icons as inline SVG (currentColor), so they render the same with any
// font: emoji and rare symbols show as empty boxes where no font has them.

const SVG = "http://www.w3.org/2000/svg";

/** 16x16 outline paths; "fill:" marks a filled shape. */
export const PATHS = {
  insert_cell: ["M8 3v10M3 8h10"],
  edit_cell: ["M3 13l.8-3.2L10.5 3 13 5.5 6.2 12.2z", "M9 4.5 11.5 7"],
  delete_cell: ["M3 5h10M6 5V3h4v2M4.5 5l.7 8h5.6l.7-8"],
  move_cell: ["M8 2v12M5 5l3-3 3 3M5 11l3 3 3-3"],
  run_cell: ["fill:M5 3l8 5-8 5z"],
  write_file: ["M4 2h5l3 3v9H4z", "M9 2v3h3"],
  edit_file: ["M4 2h5l3 3v3M4 2v12h4", "M9 14l.5-2 3.5-3.5 1.5 1.5L11 13.5z"],
  delete_file: ["M4 2h5l3 3v9H4z", "M6 8l4 4M10 8l-4 4"],
  shell: ["M2 3h12v10H2z", "M4 6l2 2-2 2M8 10h4"],
  mcp_call: ["M6 2v4M10 2v4M4 6h8v2a4 4 0 0 1-8 0z", "M8 12v2"],
  grip: ["fill:M6 3h1.5v1.5H6zM9 3h1.5v1.5H9zM6 7h1.5v1.5H6zM9 7h1.5v1.5H9zM6 11h1.5v1.5H6zM9 11h1.5v1.5H9z"],
  up: ["M8 13V3M4 7l4-4 4 4"],
  down: ["M8 3v10M4 9l4 4 4-4"],
  goto: ["M2 8h9M8 5l3 3-3 3", "M13 3v10"],
  retry: ["M13 8a5 5 0 1 1-1.6-3.7", "M12 2v3h-3"],
  undo: ["M6 3 3 6l3 3", "M3 6h6.5a3.5 3.5 0 0 1 0 7H6"],
  expand: ["M4 6l4 4 4-4"],
  collapse: ["M4 10l4-4 4 4"],
  warning: ["M8 2 1.5 13.5h13z", "M8 6v4M8 11.5v.5"],
};

/** Each icon is built once per document, then cloned: a plan of 300 steps draws over a
 * thousand icons, and building each from its paths cost more than the rest of its row.
 * @type {WeakMap<Document, Map<string, SVGSVGElement>>} */
const TEMPLATES = new WeakMap();

/**
 * @param {Document} doc
 * @param {string} name
 * @returns {SVGSVGElement}
 */
function template(doc, name) {
  let byName = TEMPLATES.get(doc);
  if (!byName) {
    byName = new Map();
    TEMPLATES.set(doc, byName);
  }
  let svg = byName.get(name);
  if (!svg) {
    svg = /** @type {SVGSVGElement} */ (doc.createElementNS(SVG, "svg"));
    svg.setAttribute("viewBox", "0 0 16 16");
    svg.setAttribute("width", "14");
    svg.setAttribute("height", "14");
    svg.setAttribute("class", `pb-icon-svg pb-icon-${name}`);
    svg.setAttribute("aria-hidden", "true");
    const paths = PATHS[/** @type {keyof typeof PATHS} */ (name)] ?? ["M4 8h8"];
    for (const spec of paths) {
      const path = doc.createElementNS(SVG, "path");
      const filled = spec.startsWith("fill:");
      path.setAttribute("d", filled ? spec.slice(5) : spec);
      path.setAttribute("fill", filled ? "currentColor" : "none");
      path.setAttribute("stroke", filled ? "none" : "currentColor");
      path.setAttribute("stroke-width", "1.5");
      path.setAttribute("stroke-linecap", "round");
      path.setAttribute("stroke-linejoin", "round");
      svg.append(path);
    }
    byName.set(name, svg);
  }
  return svg;
}

/**
 * An inline SVG icon; decorative (aria-hidden) unless a label is given.
 * @param {Document} doc
 * @param {keyof typeof PATHS | string} name
 * @param {string} [label]
 * @returns {SVGSVGElement}
 */
export function icon(doc, name, label) {
  const svg = /** @type {SVGSVGElement} */ (template(doc, name).cloneNode(true));
  if (label) {
    svg.removeAttribute("aria-hidden");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
  }
  return svg;
}
