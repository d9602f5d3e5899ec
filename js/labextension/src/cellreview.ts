/**
 * The plan drawn on one notebook's cells: a review box on each cell a pending step changes
 * (badge, diff, Approve and Reject), a placeholder for each pending insert at its future
 * position, a struck-through source for a pending delete.
 *
 * Everything hangs off cells found by id in the notebook's model, never by DOM position, and
 * none of it is part of the model: a placeholder is not a cell, so it is never saved or run.
 */
import { Cell, CodeCell, CodeCellModel, ICodeCellModel } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';
import { PanelLayout, Widget } from '@lumino/widgets';
import { renderDiff } from './diffview';
import { previewLabel, renderShell } from './shellbox';
import { IDecided, IDecision, IPlanMessage, IStep } from './protocol';

/** Sent on `window` when a cell's badge is clicked: the plan panel shows that step. */
export const FOCUS_STEP_EVENT = 'planbook:focus-step';

const CELL_PENDING = 'pb-mod-has-change';
const CELL_DELETE = 'pb-mod-delete';
/** How long the trace of a decision stays on its cell (it fades out meanwhile, in CSS). */
const TRACE_MS = 6000;

/** One change shown in the page, in the order it appears in the notebook. */
interface IShown {
  step: IStep;
  box: Widget;
  cell: Cell;
  /** Position in the notebook: the host cell's index, +/- a fraction for placeholders. */
  position: number;
}

export class CellReview {
  constructor(
    readonly panel: NotebookPanel,
    private readonly decide: (decision: IDecision) => boolean,
    private readonly trans: TranslationBundle
  ) {
    panel.content.model?.cells.changed.connect(this.schedule, this);
    panel.content.modelChanged.connect(() => {
      panel.content.model?.cells.changed.connect(this.schedule, this);
      this.schedule();
    });
  }

  /** The plan as the kernel sent it last, or null when planbook is not loaded there. */
  get plan(): IPlanMessage | null {
    return this.message;
  }

  show(message: IPlanMessage | null): void {
    const same = JSON.stringify(message) === JSON.stringify(this.message);
    if (same) {
      return; // the kernel says so after every event: redrawing would only move the buttons
    }
    this.noteDecisions(this.message, message);
    this.message = message;
    this.errors.clear();
    this.render();
  }

  /** Steps this page showed that are decided now: a short trace on their cells. */
  private noteDecisions(before: IPlanMessage | null, after: IPlanMessage | null): void {
    const seen = new Set((before?.steps ?? []).map(s => s.id));
    for (const decided of after?.decided ?? []) {
      if (seen.has(decided.id)) {
        this.traces.set(decided.cell_id, { decided, until: Date.now() + TRACE_MS });
        window.setTimeout(() => this.schedule(), TRACE_MS + 50);
      }
    }
  }

  showError(stepId: string | null, text: string): boolean {
    if (stepId === null || !this.shown.some(s => s.step.id === stepId)) {
      return false;
    }
    this.errors.set(stepId, text);
    this.render();
    return true;
  }

  /** Select the next (+1) or previous (-1) change after the active cell; false if none. */
  go(direction: 1 | -1): boolean {
    if (this.shown.length === 0) {
      return false;
    }
    let index: number;
    if (this.cursor === null) {
      const active = this.panel.content.activeCellIndex;
      const ahead = this.shown.findIndex(s => s.position >= active);
      index = direction === 1 ? (ahead === -1 ? this.shown.length - 1 : ahead) : ahead - 1;
      if (direction === -1 && ahead === -1) {
        index = this.shown.length - 1;
      }
    } else {
      index = this.cursor + direction;
    }
    index = Math.max(0, Math.min(this.shown.length - 1, index));
    this.focus(index);
    return true;
  }

  /** Select the cell (or placeholder) with this id; false when this notebook has none. */
  focusCell(cellId: string): boolean {
    const index = this.shown.findIndex(s => s.step.kind === 'insert_cell' && s.step.cell_id === cellId);
    if (index !== -1) {
      this.focus(index);
      return true;
    }
    const cells = this.panel.content.widgets;
    const at = cells.findIndex(c => c.model.id === cellId);
    if (at === -1) {
      return false;
    }
    this.select(cells[at]);
    const first = this.shown.findIndex(s => s.cell === cells[at]);
    this.cursor = first === -1 ? null : first;
    return true;
  }

  dispose(): void {
    this.clear();
  }

  private focus(index: number): void {
    const shown = this.shown[index];
    this.cursor = index;
    for (const s of this.shown) {
      s.box.node.classList.toggle('pb-mod-current', s === shown);
    }
    this.select(shown.cell);
    shown.box.node.scrollIntoView({ block: 'center' });
  }

  private select(cell: Cell): void {
    const notebook = this.panel.content;
    const at = notebook.widgets.indexOf(cell);
    if (at === -1) {
      return;
    }
    notebook.deselectAll();
    notebook.activeCellIndex = at;
    notebook.mode = 'command';
    // keyboard focus on the cell, as command mode has it, so the next key press moves on
    // (scrollToCell would activate the cell, which puts its editor in edit mode)
    cell.node.focus({ preventScroll: true });
    void notebook.scrollToItem(at, 'center');
  }

  private schedule(): void {
    if (this.pending) {
      return;
    }
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  private clear(keep?: Map<string, Widget>): void {
    for (const s of this.shown) {
      const key = this.key(s.step);
      if (keep && !keep.has(key)) {
        keep.set(key, s.box); // may be put back where it was, unchanged
      } else {
        s.box.dispose();
      }
    }
    for (const cell of this.marked) {
      cell.removeClass(CELL_PENDING);
      cell.removeClass(CELL_DELETE);
    }
    this.notes.forEach(note => note.dispose());
    this.notes = [];
    this.shown = [];
    this.marked = [];
  }

  private render(): void {
    const current = this.cursor !== null ? this.shown[this.cursor]?.step.id : undefined;
    // Boxes whose step did not change are reused, so a button under the pointer stays the
    // same element while the plan is redrawn around it.
    this.reusable = new Map();
    this.clear(this.reusable);
    this.cursor = null;
    const message = this.message;
    const cells = this.panel.content.widgets;
    const byId = new Map<string, Cell>();
    cells.forEach(c => byId.set(c.model.id, c));
    if (message === null || message.plan === null) {
      this.reusable.forEach(box => box.dispose());
      this.reusable.clear();
      this.drawTraces(byId);
      return;
    }
    /** Pending inserts placed so far: their cell id -> the placeholder. */
    const placeholders = new Map<string, IShown>();
    this.watchCells();
    for (const step of message.steps) {
      // An insert whose cell is in the notebook (approved, running, failed) is drawn on that
      // cell, like every other step: one place for a step's box, above the cell's code.
      // A shell step has no cell: its box goes after the last cell, as an insert at the end.
      const cellId = step.cell_id ?? '';
      const shown =
        step.kind === 'shell' || (step.kind === 'insert_cell' && !byId.has(cellId))
          ? this.placeholder(step, byId, placeholders)
          : this.onCell(step, byId.get(cellId));
      if (shown) {
        this.shown.push(shown);
        if (step.kind === 'insert_cell') {
          placeholders.set(cellId, shown);
        }
      }
    }
    this.reusable.forEach(box => box.dispose());
    this.reusable.clear();
    this.drawTraces(byId);
    this.drawStale(message, byId);
    this.keepTrust(message);
    this.shown.sort((a, b) => a.position - b.position);
    if (current !== undefined) {
      const again = this.shown.findIndex(s => s.step.id === current);
      if (again !== -1) {
        this.cursor = again;
        this.shown[again].box.node.classList.add('pb-mod-current');
      }
    }
  }

  /**
   * Put ``widget`` where every box goes: at the top of the cell, above its code. A cell the
   * notebook has not drawn yet (JupyterLab draws cells as they scroll into view) has no parts
   * to put it between: false, and the plan is drawn again once the cell is.
   */
  private atTop(cell: Cell, widget: Widget): boolean {
    const input = cell.inputArea?.parent ?? null;
    const layout = cell.layout as PanelLayout;
    const at = input !== null ? layout.widgets.indexOf(input) : -1;
    if (at === -1) {
      void cell.ready.then(() => this.schedule());
      return false;
    }
    layout.insertWidget(at, widget);
    return true;
  }

  /** "Step N · done" (rejected, rolled back, retried) on a cell this page saw it pending on. */
  private drawTraces(byId: Map<string, Cell>): void {
    const now = Date.now();
    for (const [cellId, trace] of [...this.traces]) {
      const cell = byId.get(cellId);
      if (trace.until <= now || cell === undefined) {
        this.traces.delete(cellId);
        continue;
      }
      const note = new Widget();
      note.addClass('pb-cell-trace');
      note.addClass(`pb-trace-${trace.decided.status}`);
      note.node.dataset.stepNumber = String(trace.decided.number);
      note.node.setAttribute('role', 'status');
      note.node.style.animationDuration = `${trace.until - now}ms`;
      const word = {
        done: this.trans.__('done'),
        rejected: this.trans.__('rejected'),
        rolled_back: this.trans.__('rolled back'),
        retried: this.trans.__('retried')
      }[trace.decided.status];
      note.node.textContent = this.trans.__('Step %1 · %2', trace.decided.number, word);
      if (this.atTop(cell, note)) {
        this.notes.push(note);
      } else {
        note.dispose();
      }
    }
  }

  /**
   * A notebook the person trusts stays trusted: a cell planbook wrote (inserted, or gave
   * outputs the kernel produced) arrives without JupyterLab's per-cell trust, which would turn
   * the notebook "Not Trusted" after an approval. Only planbook's own cells are trusted, and
   * only when every other cell is: a notebook the person never trusted stays as it was.
   */
  private keepTrust(message: IPlanMessage): void {
    const ours = new Set([
      ...message.steps.filter(s => s.status !== 'pending' && s.cell_id !== null).map(s => s.cell_id),
      ...(message.decided ?? []).map(d => d.cell_id)
    ]);
    const cells = [...(this.panel.content.model?.cells ?? [])];
    const untrusted = cells.filter(c => !c.trusted);
    if (untrusted.length > 0 && untrusted.every(c => ours.has(c.id))) {
      untrusted.forEach(c => (c.trusted = true));
    }
  }

  /** An approved edit that did not run: its cell's output is from the code before. */
  private drawStale(message: IPlanMessage, byId: Map<string, Cell>): void {
    for (const [cellId, number] of Object.entries(message.stale ?? {})) {
      const cell = byId.get(cellId);
      if (!(cell instanceof CodeCell)) {
        continue;
      }
      if (cell.inputArea === null) {
        void cell.ready.then(() => this.schedule()); // not drawn yet: once it is
        continue;
      }
      const model = cell.model as ICodeCellModel;
      if (!model.isDirty || model.outputs.length === 0) {
        continue; // run since (or nothing to mislead): JupyterLab's own state says it
      }
      const note = new Widget();
      note.addClass('pb-cell-stale');
      note.node.dataset.stepNumber = String(number);
      note.node.textContent = this.trans.__(
        'Output from the code before step %1 changed this cell: run the cell to update it.',
        number
      );
      const layout = cell.layout as PanelLayout;
      const outputs = cell.outputArea?.parent ?? null;
      const at = outputs !== null ? layout.widgets.indexOf(outputs) : -1;
      layout.insertWidget(at === -1 ? layout.widgets.length : at, note);
      this.notes.push(note);
    }
  }

  /**
   * Follow each code cell's state: a cell the kernel ran for planbook gets its outputs and
   * count without JupyterLab executing it, so JupyterLab would keep it marked modified (its
   * source changed while it had a count). A new count from the kernel means the outputs are
   * of the code now in the cell: it is clean, exactly as after a run of the person's.
   */
  private watchCells(): void {
    for (const cell of this.panel.content.widgets) {
      const model = cell.model;
      if (model.type !== 'code' || this.watched.has(model)) {
        continue;
      }
      this.watched.add(model);
      const code = model as ICodeCellModel;
      code.stateChanged.connect((_, change) => {
        // A run gives the cell a newer count; a count rewritten as the kernel last knew it
        // (an edit that did not run carries the cell's count along) is not a run.
        const ran =
          change.name === 'executionCount' &&
          typeof change.newValue === 'number' &&
          (typeof change.oldValue !== 'number' || change.newValue > change.oldValue);
        if (ran && code instanceof CodeCellModel && code.executionState !== 'running') {
          if (code.isDirty) {
            code.isDirty = false;
          }
        }
        if (change.name === 'isDirty' && this.message?.stale?.[code.id] !== undefined) {
          this.schedule();
        }
      });
      code.outputs.changed.connect(() => {
        if (this.message?.stale?.[code.id] !== undefined) {
          this.schedule();
        }
      });
    }
  }

  private onCell(step: IStep, cell: Cell | undefined): IShown | null {
    if (cell === undefined) {
      return null; // not in this page (yet): the panel still lists it
    }
    const box = this.box(step, false);
    // right above the cell's input (so after boxes of earlier steps on this cell)
    if (!this.atTop(cell, box)) {
      box.dispose();
      return null;
    }
    cell.addClass(CELL_PENDING);
    if (step.kind === 'delete_cell' && step.status === 'pending') {
      cell.addClass(CELL_DELETE);
    }
    this.marked.push(cell);
    return { step, box, cell, position: this.index(cell) + step.number * 1e-6 };
  }

  private placeholder(
    step: IStep,
    byId: Map<string, Cell>,
    placed: Map<string, IShown>
  ): IShown | null {
    const anchor = step.anchor ?? { end: true };
    const box = this.box(step, true);
    const place = (host: Cell, at: number, position: number): IShown => {
      (host.layout as PanelLayout).insertWidget(at, box);
      return { step, box, cell: host, position };
    };
    if ('after' in anchor || 'before' in anchor) {
      const target = 'after' in anchor ? anchor.after : anchor.before;
      const before = 'before' in anchor;
      const chained = placed.get(target);
      if (chained) {
        // next to another pending insert: beside its placeholder, in the same host
        const layout = chained.cell.layout as PanelLayout;
        const at = layout.widgets.indexOf(chained.box) + (before ? 0 : 1);
        const position = chained.position + (before ? -1e-3 : 1e-3);
        return place(chained.cell, at, position);
      }
      const host = byId.get(target);
      if (host === undefined) {
        box.dispose();
        return null;
      }
      const layout = host.layout as PanelLayout;
      if (before) {
        const ahead = this.shown.filter(s => s.cell === host && s.position < this.index(host));
        return place(host, ahead.length, this.index(host) - 0.5 + step.number * 1e-6);
      }
      return place(host, layout.widgets.length, this.index(host) + 0.5 + step.number * 1e-6);
    }
    const cells = this.panel.content.widgets;
    if (cells.length === 0) {
      box.dispose();
      return null;
    }
    const last = cells[cells.length - 1];
    const layout = last.layout as PanelLayout;
    return place(last, layout.widgets.length, this.index(last) + 0.5 + step.number * 1e-6);
  }

  private index(cell: Cell): number {
    return this.panel.content.widgets.indexOf(cell);
  }

  /** The box of one step: badge, what and why, the diff, the decisions, an error. */
  private key(step: IStep): string {
    const revision = this.message?.plan?.revision ?? 0;
    return `${revision}|${this.errors.get(step.id) ?? ''}|${JSON.stringify(step)}`;
  }

  private box(step: IStep, placeholder: boolean): Widget {
    const reused = this.reusable.get(this.key(step));
    if (reused !== undefined) {
      this.reusable.delete(this.key(step));
      reused.node.classList.remove('pb-mod-current');
      return reused;
    }
    const trans = this.trans;
    const box = new Widget();
    box.addClass('pb-cell-review');
    box.addClass(`pb-status-${step.status}`);
    box.addClass(`pb-kind-${step.kind}`);
    if (placeholder && step.kind !== 'shell') {
      box.addClass('pb-placeholder');
    }
    const node = box.node;
    node.dataset.stepId = step.id;
    node.dataset.stepNumber = String(step.number);
    node.dataset.cellId = step.cell_id ?? '';
    node.setAttribute('role', 'group');
    node.setAttribute('aria-label', trans.__('Planbook step %1: %2', step.number, step.title));

    const head = document.createElement('div');
    head.className = 'pb-cell-review-head';
    const badge = document.createElement('button');
    badge.className = 'pb-cell-badge';
    badge.type = 'button';
    badge.title = trans.__('Show step %1 in the plan panel', step.number);
    badge.textContent = trans.__('Step %1 · %2', step.number, step.status);
    badge.addEventListener('click', () => {
      window.dispatchEvent(
        new CustomEvent(FOCUS_STEP_EVENT, { detail: { stepNumber: step.number, stepId: step.id } })
      );
    });
    const title = document.createElement('span');
    title.className = 'pb-cell-review-title';
    title.textContent = step.kind === 'shell'
      ? trans.__('Shell command, run in the workspace once approved')
      : placeholder
      ? trans.__('Proposed new %1 cell (not in the notebook until approved)', step.cell_type ?? 'code')
      : step.title;
    head.append(badge, title);
    if (step.risk !== 'low') {
      const risk = document.createElement('span');
      risk.className = `pb-cell-risk pb-risk-${step.risk}`;
      risk.textContent = trans.__('%1 risk', step.risk);
      head.append(risk);
    }
    if (step.origin) {
      const origin = document.createElement('span');
      origin.className = 'pb-cell-review-origin';
      origin.textContent = trans.__('from %1', step.origin);
      head.append(origin);
    }
    node.append(head);

    if (step.reason) {
      const reason = document.createElement('div');
      reason.className = 'pb-cell-review-reason';
      reason.textContent = step.reason;
      node.append(reason);
    }
    if (step.kind === 'shell') {
      node.append(renderShell(step, trans));
    } else if (step.diff) {
      node.append(renderDiff(step.diff));
    } else if (step.kind === 'delete_cell') {
      const note = document.createElement('div');
      note.className = 'pb-cell-review-note';
      note.textContent = trans.__('This cell will be deleted (a checkpoint keeps it).');
      node.append(note);
    } else if (step.kind === 'run_cell') {
      const note = document.createElement('div');
      note.className = 'pb-cell-review-note';
      note.textContent = trans.__('This cell will be run.');
      node.append(note);
    }
    if (step.runs && step.kind !== 'run_cell' && step.status === 'pending') {
      const note = document.createElement('div');
      note.className = 'pb-cell-review-note';
      note.textContent = trans.__('Runs once approved.');
      node.append(note);
    }
    const error = this.errors.get(step.id) ?? step.error;
    if (error) {
      const line = document.createElement('div');
      line.className = 'pb-cell-review-error';
      line.setAttribute('role', 'alert');
      line.textContent = error;
      node.append(line);
    }
    const offers = step.status === 'pending' || step.status === 'failed';
    if (offers && this.message?.plan) {
      const revision = this.message.plan.revision;
      const actions = document.createElement('div');
      actions.className = 'pb-cell-review-actions';
      const button = (label: string, action: IDecision['action'], cls: string) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = `jp-Button pb-cell-${action} ${cls}`;
        b.textContent = label;
        b.addEventListener('click', () => {
          actions.querySelectorAll('button').forEach(x => ((x as HTMLButtonElement).disabled = true));
          const shown = action === 'approve' ? { shown: step.hash ?? '' } : {};
          if (!this.decide({ action, step_id: step.id, revision, ...shown })) {
            this.showError(step.id, trans.__('The kernel is not listening: is planbook still loaded?'));
          }
        });
        return b;
      };
      if (step.status === 'failed') {
        actions.append(button(trans.__('Retry'), 'retry', 'jp-mod-accept'));
      } else {
        actions.append(
          button(trans.__('Approve'), 'approve', 'jp-mod-accept'),
          button(trans.__('Reject'), 'reject', 'jp-mod-reject')
        );
        const preview = previewLabel(step, trans);
        if (preview !== null) {
          actions.append(button(preview, 'preview', ''));
        }
        if (step.previewing) {
          // approve once the preview shows what it does (the kernel refuses it before)
          actions.querySelectorAll('.pb-cell-approve, .pb-cell-preview').forEach(b => {
            (b as HTMLButtonElement).disabled = true;
          });
        }
      }
      node.append(actions);
    }
    return box;
  }

  private traces = new Map<string, { decided: IDecided; until: number }>();
  private notes: Widget[] = [];
  private watched = new WeakSet<object>();
  private message: IPlanMessage | null = null;
  private shown: IShown[] = [];
  private marked: Cell[] = [];
  private errors = new Map<string, string>();
  private cursor: number | null = null;
  private pending = false;
  private reusable = new Map<string, Widget>();
}
