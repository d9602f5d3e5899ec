/**
 * The page as planbook's notebook, for a server without jupyter-collaboration
 * (planbook/documents/page.py): the kernel keeps a mirror of this page's cells, which this
 * module fills (a snapshot when asked, then the cells the person changes), and sends each
 * approved change as one `apply` message, applied here in one model transaction. The page is
 * then dirty like after any edit: the person's save (or JupyterLab's autosave) writes it. The
 * extension does not save by itself: two saves in flight make JupyterLab ask "File Changed"
 * (the second compares the file's hash with the one the first has not reported yet), so a
 * save of its own would race the person's Ctrl+S.
 *
 * The kernel does not wait for the answer (its shell is busy while `%approve` runs), so each
 * change says what the kernel expected of the cells it touches; a cell the person changed
 * meanwhile refuses the whole change, and every later one built on it, in one line, and the
 * kernel gets this page's state back. Nothing the person typed is overwritten.
 */
import { Notification } from '@jupyterlab/apputils';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { ISharedNotebook } from '@jupyter/ydoc';
import {
  IApplyMessage,
  ICellsMessage,
  IPageCell,
  PageMessage
} from './protocol';

/** Milliseconds the person's typing is gathered before the kernel hears of it. */
const FLUSH_DELAY = 150;

type Json = any;

class Refusal extends Error {}

export class PageDocument {
  constructor(
    private readonly panel: NotebookPanel,
    private readonly send: (message: PageMessage) => boolean
  ) {
    NotebookActions.executionScheduled.connect(this.onExecution, this);
    panel.sessionContext.statusChanged.connect(this.onStatus, this);
  }

  /** The kernel's message about the page's notebook; false if it was not one. */
  handle(message: { type: string }): boolean {
    if (message.type === 'resync') {
      this.active = true;
      this.watch();
      this.sendCells(true);
      return true;
    }
    if (message.type === 'apply') {
      this.apply(message as IApplyMessage);
      return true;
    }
    return false;
  }

  /** Send the person's edits now (before a decision, so the kernel checks against them). */
  sendEdits(): void {
    this.flush();
  }

  /** A new kernel or link: it knows nothing applied here. */
  reset(): void {
    this.active = false;
    this.applied = 0;
    this.cancelFlush();
  }

  dispose(): void {
    NotebookActions.executionScheduled.disconnect(this.onExecution, this);
    this.panel.sessionContext.statusChanged.disconnect(this.onStatus, this);
    this.cancelFlush();
  }

  private get shared(): ISharedNotebook | null {
    return this.panel.content.model?.sharedModel ?? null;
  }

  private watch(): void {
    const model = this.panel.content.model;
    if (model === null || this.watched === model) {
      return;
    }
    this.watched = model;
    model.contentChanged.connect(() => this.scheduleFlush());
    model.cells.changed.connect(() => this.scheduleFlush());
  }

  private onExecution(_: unknown, args: { notebook: unknown }): void {
    // The kernel must know the running cell (and what the person typed) before it runs.
    if (this.active && args.notebook === this.panel.content) {
      this.flush();
    }
  }

  private onStatus(_: unknown, status: string): void {
    if (status === 'idle' && this.heldWhileBusy) {
      this.scheduleFlush();
    }
  }

  private cellsNow(): IPageCell[] {
    const shared = this.shared;
    return shared ? (shared.cells.map(c => c.toJSON()) as unknown as IPageCell[]) : [];
  }

  private scheduleFlush(): void {
    if (!this.active || this.applying) {
      return;
    }
    if (this.panel.sessionContext.session?.kernel?.status === 'busy') {
      // The kernel reads nothing of ours until its cell ends: gather the changes (a cell's
      // streaming outputs above all) and send them once, when it is idle.
      this.heldWhileBusy = true;
      return;
    }
    this.heldWhileBusy = false;
    this.cancelFlush();
    this.flushTimer = window.setTimeout(() => this.flush(), FLUSH_DELAY);
  }

  private cancelFlush(): void {
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
  }

  /** Send the cells that changed since the kernel last heard of them. */
  private flush(): void {
    this.cancelFlush();
    this.heldWhileBusy = false;
    if (this.active) {
      this.sendCells(false);
    }
  }

  private sendCells(full: boolean): void {
    const cells = this.cellsNow();
    const order = cells.map(c => c.id);
    const changed: IPageCell[] = [];
    const seen = new Map<string, string>();
    for (const cell of cells) {
      const text = JSON.stringify(cell);
      seen.set(cell.id, text);
      if (full || this.known.get(cell.id) !== text) {
        changed.push(cell);
      }
    }
    const sameOrder = JSON.stringify(order) === JSON.stringify(this.knownOrder);
    if (!full && changed.length === 0 && sameOrder) {
      return;
    }
    const message: ICellsMessage = {
      type: 'cells',
      full,
      seen: this.applied,
      order,
      cells: changed
    };
    if (full) {
      message.metadata = (this.shared?.getMetadata() ?? {}) as Json;
    }
    if (this.send(message)) {
      this.known = seen;
      this.knownOrder = order;
    }
  }

  private remember(): void {
    const cells = this.cellsNow();
    this.known = new Map(cells.map(c => [c.id, JSON.stringify(c)]));
    this.knownOrder = cells.map(c => c.id);
  }

  private apply(message: IApplyMessage): void {
    if (message.base !== this.applied) {
      // built on a change this page refused (or never saw): refused with it
      this.send({
        type: 'refused',
        seq: message.seq,
        applied: this.applied,
        message: 'an earlier change was refused',
        snapshot: null
      });
      return;
    }
    this.flush(); // what the person typed first, so it is never folded into planbook's change
    const shared = this.shared;
    try {
      if (shared === null) {
        throw new Refusal('the page has no notebook model');
      }
      this.check(message);
      this.applying = true;
      try {
        shared.transact(() => {
          for (const op of message.ops) {
            this.applyOp(shared, op);
          }
        });
      } finally {
        this.applying = false;
      }
    } catch (error) {
      const text = error instanceof Refusal ? error.message : `could not apply it: ${error}`;
      const line = `planbook: a change from the kernel was not applied: ${text}; nothing of it was applied and your edits are kept: review the plan and approve again`;
      Notification.error(line, { autoClose: 15000 });
      this.known = new Map();
      const snapshot = this.snapshotMessage();
      this.send({
        type: 'refused',
        seq: message.seq,
        applied: this.applied,
        message: text,
        snapshot
      });
      this.remember();
      return;
    }
    this.applied = message.seq;
    this.remember();
    this.send({ type: 'applied', seq: message.seq, order: this.knownOrder });
  }

  private snapshotMessage(): ICellsMessage {
    const cells = this.cellsNow();
    return {
      type: 'cells',
      full: true,
      seen: this.applied,
      order: cells.map(c => c.id),
      cells,
      metadata: (this.shared?.getMetadata() ?? {}) as Json
    };
  }

  /** Refuse, before anything is applied, a change whose targets are not as the kernel read them. */
  private check(message: IApplyMessage): void {
    const byId = new Map(this.cellsNow().map(c => [c.id, c]));
    for (const [id, expected] of Object.entries(message.expect)) {
      const cell = byId.get(id);
      if (cell === undefined) {
        throw new Refusal(`cell '${id}' is no longer in the page`);
      }
      const source = Array.isArray(cell.source) ? cell.source.join('') : cell.source;
      if (source !== expected.source || cell.cell_type !== expected.cell_type) {
        throw new Refusal(`cell '${id}' was changed in the page after the kernel read it`);
      }
    }
    for (const id of message.anchors) {
      if (!byId.has(id)) {
        throw new Refusal(`cell '${id}' (where a cell goes) is no longer in the page`);
      }
    }
  }

  private ids(shared: ISharedNotebook): string[] {
    return shared.cells.map(c => c.getId());
  }

  private indexOf(shared: ISharedNotebook, id: string): number {
    const i = this.ids(shared).indexOf(id);
    if (i < 0) {
      throw new Refusal(`cell '${id}' is no longer in the page`);
    }
    return i;
  }

  private after(shared: ISharedNotebook, after: string | null): number {
    return after === null ? 0 : this.indexOf(shared, after) + 1;
  }

  private applyOp(shared: ISharedNotebook, op: Json): void {
    switch (op.op) {
      case 'insert':
        shared.insertCell(this.after(shared, op.after), op.cell);
        return;
      case 'delete':
        shared.deleteCell(this.indexOf(shared, op.id));
        return;
      case 'move': {
        const from = this.indexOf(shared, op.id);
        const cell = shared.getCell(from).toJSON();
        shared.deleteCell(from);
        shared.insertCell(this.after(shared, op.after), cell as Json);
        return;
      }
      case 'replace': {
        const i = this.indexOf(shared, op.id);
        const old = shared.getCell(i);
        if (old.cell_type !== op.cell.cell_type) {
          shared.deleteCell(i);
          shared.insertCell(i, op.cell);
          return;
        }
        if (old.getSource() !== op.cell.source) {
          old.setSource(op.cell.source);
        }
        if (JSON.stringify(old.getMetadata()) !== JSON.stringify(op.cell.metadata)) {
          old.setMetadata(op.cell.metadata);
        }
        if (op.cell.cell_type === 'code') {
          const code = old as Json;
          if (JSON.stringify(code.getOutputs()) !== JSON.stringify(op.cell.outputs)) {
            code.setOutputs(op.cell.outputs);
          }
          if (code.execution_count !== op.cell.execution_count) {
            code.execution_count = op.cell.execution_count;
          }
        }
        return;
      }
      case 'meta':
        shared.setMetadata(op.key, op.value);
        return;
      case 'meta_part': {
        const current = shared.getMetadata(op.key);
        const value: Json =
          current && typeof current === 'object' && !Array.isArray(current)
            ? JSON.parse(JSON.stringify(current))
            : {};
        for (const change of op.changes) {
          setPath(value, change.path, change.delete ? undefined : change.value, !!change.delete);
        }
        shared.setMetadata(op.key, value);
        return;
      }
      default:
        throw new Refusal(`unknown operation ${JSON.stringify(op.op)}`);
    }
  }

  private active = false;
  private applying = false;
  private heldWhileBusy = false;
  private applied = 0;
  private known = new Map<string, string>();
  private knownOrder: string[] = [];
  private watched: unknown = null;
  private flushTimer: number | null = null;
}

function setPath(root: Json, path: string[], value: Json, remove: boolean): void {
  let node = root;
  for (const part of path.slice(0, -1)) {
    const child = node[part];
    if (child === null || typeof child !== 'object' || Array.isArray(child)) {
      if (remove) {
        return;
      }
      node[part] = {};
    }
    node = node[part];
  }
  const last = path[path.length - 1];
  if (remove) {
    delete node[last];
  } else {
    node[last] = value;
  }
}
