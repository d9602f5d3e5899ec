/**
 * A shell step's part of its box: the command, and its preview (what running it once in an
 * overlay changed, as the kernel's bounded text: files created, changed with their diff,
 * deleted, modes changed, the exit code and output), "previewing…" while one runs, or why
 * none can run. Only text is set here (textContent), never HTML: the command, paths, diffs
 * and output are whatever the command or a received notebook made them.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { IShellChange, IShellPreview, IStep } from './protocol';

function el(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A unified diff's text, one row per line, marked as the cell diffs are. */
function unifiedDiff(text: string): HTMLElement {
  const box = el('div', 'pb-cell-diff pb-shell-diff');
  for (const line of text.replace(/\n$/, '').split('\n')) {
    const header = line.startsWith('+++') || line.startsWith('---') || line.startsWith('@@');
    const type = header ? 'gap' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'context';
    const row = el('div', `pb-cell-diff-line pb-cell-diff-${type}`);
    row.dataset.type = type;
    row.append(el('span', 'pb-cell-diff-text', line));
    box.append(row);
  }
  return box;
}

function change(c: IShellChange, trans: TranslationBundle): HTMLElement {
  const item = el('div', `pb-shell-change pb-shell-${c.kind}`);
  item.dataset.path = c.path;
  item.dataset.kind = c.kind;
  const what = {
    created: trans.__('created'),
    changed: trans.__('changed'),
    deleted: trans.__('deleted'),
    mode: trans.__('mode changed')
  }[c.kind];
  const head = el('div', 'pb-shell-change-head');
  head.append(el('span', 'pb-shell-change-kind', what), ' ', el('code', 'pb-shell-path', c.path));
  if (c.kind === 'mode') {
    head.append(' ', el('span', 'pb-shell-mode', `${c.mode_before ?? '-'} → ${c.mode_after}`));
  }
  item.append(head);
  if (c.diff.includes('\n')) {
    item.append(unifiedDiff(c.diff));
  } else if (c.diff) {
    item.append(el('div', 'pb-cell-review-note', c.diff)); // binary, too large, a symlink
  }
  return item;
}

function preview(p: IShellPreview, trans: TranslationBundle): HTMLElement {
  const box = el('div', 'pb-shell-preview');
  box.setAttribute('aria-label', trans.__('Preview'));
  box.append(el('div', p.problem ? 'pb-shell-summary pb-shell-problem' : 'pb-shell-summary', p.summary));
  for (const c of p.changes) {
    box.append(change(c, trans));
  }
  if (p.more > 0) {
    box.append(el('div', 'pb-cell-diff-gap', trans.__('%1 more changes: see the plan panel', p.more)));
  }
  if (p.output) {
    box.append(el('pre', 'pb-shell-output', p.output));
  }
  if (p.after_run) {
    box.append(el('div', 'pb-cell-review-note', trans.__('After the run: %1', p.after_run)));
  }
  return box;
}

/** What a shell step's box shows under its head. */
export function renderShell(step: IStep, trans: TranslationBundle): HTMLElement {
  const part = el('div', 'pb-shell');
  part.append(el('pre', 'pb-shell-command', step.command ?? ''));
  if (step.previewing) {
    const note = el(
      'div',
      'pb-cell-review-note pb-shell-previewing',
      trans.__('Previewing… the command runs once in an overlay; nothing reaches the workspace.')
    );
    note.setAttribute('role', 'status');
    part.append(note);
  } else if (step.preview) {
    part.append(preview(step.preview, trans));
  } else if (step.preview_off) {
    part.append(el('div', 'pb-cell-review-note pb-shell-off', step.preview_off));
  } else if (step.status === 'pending') {
    part.append(
      el(
        'div',
        'pb-cell-review-note',
        trans.__('Not previewed yet: Preview runs it once in an overlay to show what it would change.')
      )
    );
  }
  return part;
}

/** The Preview button's label, or null when this step offers none. */
export function previewLabel(step: IStep, trans: TranslationBundle): string | null {
  if (step.kind !== 'shell' || step.status !== 'pending' || step.preview_off) {
    return null;
  }
  if (step.previewing) {
    return trans.__('Previewing…');
  }
  return step.preview ? trans.__('Preview again') : trans.__('Preview');
}
