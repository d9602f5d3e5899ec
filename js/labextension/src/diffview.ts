/**
 * A step's change drawn inside its cell: the kernel's line diff (the same hunks the panel
 * shows), one row per line, removed and added lines marked, changed characters highlighted.
 */
import { IDiff, IDiffLine } from './protocol';

function lineText(line: IDiffLine): HTMLElement {
  const code = document.createElement('span');
  code.className = 'pb-cell-diff-text';
  let at = 0;
  for (const [start, end] of line.ranges) {
    code.append(line.text.slice(at, start));
    const mark = document.createElement('mark');
    mark.textContent = line.text.slice(start, end);
    code.append(mark);
    at = end;
  }
  code.append(line.text.slice(at));
  return code;
}

const SIGN: Record<IDiffLine['type'], string> = { context: ' ', add: '+', del: '-' };

/** The diff as a `<div>`; an unchanged source says so instead of drawing nothing. */
export function renderDiff(diff: IDiff): HTMLElement {
  const box = document.createElement('div');
  box.className = 'pb-cell-diff';
  if (diff.kind === 'same') {
    box.textContent = 'The source stays as it is.';
    return box;
  }
  diff.hunks.forEach((hunk, index) => {
    if (index > 0) {
      const gap = document.createElement('div');
      gap.className = 'pb-cell-diff-gap';
      gap.textContent = '⋯';
      box.append(gap);
    }
    for (const line of hunk.lines) {
      const row = document.createElement('div');
      row.className = `pb-cell-diff-line pb-cell-diff-${line.type}`;
      row.dataset.type = line.type;
      const sign = document.createElement('span');
      sign.className = 'pb-cell-diff-sign';
      sign.textContent = SIGN[line.type];
      row.append(sign, lineText(line));
      box.append(row);
    }
  });
  if (diff.omitted > 0) {
    const more = document.createElement('div');
    more.className = 'pb-cell-diff-gap';
    more.textContent = `${diff.omitted} more lines: see the plan panel`;
    box.append(more);
  }
  return box;
}
