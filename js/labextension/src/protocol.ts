/**
 * The messages between the page and the kernel (planbook/comm.py, planbook/comm_view.py).
 * The kernel sends the whole plan after every change; the page only draws it and sends the
 * person's decisions back, which the kernel checks exactly as it checks `%approve`.
 */

/** Name of the comm target on both sides. */
export const COMM_TARGET = 'planbook';
/** Version of the plan message this page understands. */
export const PROTOCOL = 1;

export type LineType = 'context' | 'add' | 'del';

export interface IDiffLine {
  type: LineType;
  old: number | null;
  new: number | null;
  text: string;
  ranges: [number, number][];
}

export interface IHunk {
  old_start: number;
  old_count: number;
  new_start: number;
  new_count: number;
  lines: IDiffLine[];
}

export interface IDiff {
  kind: 'same' | 'added' | 'deleted' | 'changed';
  hunks: IHunk[];
  added: number;
  removed: number;
  omitted: number;
}

export type Anchor =
  | { after: string }
  | { before: string }
  | { end: true }
  | { top: true };

/** One path a shell step's preview changed (planbook/surfaces/comm/shell_view.py). */
export interface IShellChange {
  path: string;
  kind: 'created' | 'changed' | 'deleted' | 'mode';
  entry: 'file' | 'folder' | 'symlink';
  /** Octal permission bits, as text. */
  mode_before: string | null;
  mode_after: string | null;
  /** A bounded unified diff, or one line saying why none (binary, too large, a symlink). */
  diff: string;
}

/** What running a shell step once in an overlay changed, or why it could not show it. */
export interface IShellPreview {
  summary: string;
  problem: string;
  exit_code: number | null;
  timed_out: boolean;
  output: string;
  changes: IShellChange[];
  /** Changes not listed (the panel lists them all). */
  more: number;
  after_run: string | null;
}

export interface IStep {
  number: number;
  id: string;
  kind: 'insert_cell' | 'edit_cell' | 'delete_cell' | 'move_cell' | 'run_cell' | 'shell';
  status: 'pending' | 'approved' | 'running' | 'failed' | 'skipped';
  /** The cell it changes; null for a shell step (drawn after the last cell). */
  cell_id: string | null;
  /** The cell's id as a person reads it (the shortest unique prefix, as `%plan cells`). */
  short_id?: string;
  cell_type: string | null;
  title: string;
  reason: string;
  /** Who proposed it from outside the kernel (an MCP client's name and version), if anyone. */
  origin?: string | null;
  /** The step's hash as the kernel computed it; Approve sends it back (what was shown). */
  hash?: string;
  risk: 'low' | 'medium' | 'high';
  error: string | null;
  runs: boolean;
  before: string;
  after: string;
  diff: IDiff | null;
  anchor?: Anchor;
  /** A shell step: its command, its preview, whether one runs now, why none can run. */
  command?: string;
  preview?: IShellPreview | null;
  previewing?: boolean;
  preview_off?: string;
}

/** A cell step that is history now: the page draws a short trace of it if it saw it pending. */
export interface IDecided {
  number: number;
  id: string;
  cell_id: string;
  status: 'done' | 'rejected' | 'rolled_back' | 'retried';
}

export interface IPlanMessage {
  type: 'plan';
  protocol: number;
  mode: string;
  plan: { id: string; revision: number; state: string } | null;
  steps: IStep[];
  decided?: IDecided[];
  /** Cells an approved edit changed without running them: cell id -> the step's number. */
  stale?: { [cellId: string]: number };
}

export interface IErrorMessage {
  type: 'error';
  message: string;
  step_id: string | null;
}

/** The kernel asks for this page's cells (no collaboration: the page is the notebook). */
export interface IResyncMessage {
  type: 'resync';
}

/** One approved change to apply to the page's model (planbook/documents/page.py). */
export interface IApplyMessage {
  type: 'apply';
  seq: number;
  /** The change the page must have applied last for this one to apply. */
  base: number;
  ops: any[];
  /** What the kernel read of each cell it changes. */
  expect: { [id: string]: { source: string; cell_type: string } };
  /** Cells that must still be there (where inserted or moved cells go). */
  anchors: string[];
}

export type KernelMessage = IPlanMessage | IErrorMessage | IResyncMessage | IApplyMessage;

/** A cell as the page's model gives it (nbformat JSON). */
export interface IPageCell {
  id: string;
  cell_type: string;
  source: string | string[];
  [key: string]: any;
}

export interface ICellsMessage {
  type: 'cells';
  full: boolean;
  seen: number;
  order: string[];
  cells: IPageCell[];
  metadata?: { [key: string]: any };
}

export interface IAppliedMessage {
  type: 'applied';
  seq: number;
  order: string[];
}

export interface IRefusedMessage {
  type: 'refused';
  seq: number;
  applied: number;
  message: string;
  snapshot: ICellsMessage | null;
}

/** What the page tells the kernel about its notebook. */
export type PageMessage = ICellsMessage | IAppliedMessage | IRefusedMessage;

/** What the page asks of the kernel. */
export interface IDecision {
  action: 'approve' | 'reject' | 'retry' | 'preview';
  step_id: string;
  revision: number;
  /** For approve: the step's hash as this page showed it; a step rewritten since is refused. */
  shown?: string;
}
