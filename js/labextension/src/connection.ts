/**
 * One notebook page's link to its kernel: a comm on the target `planbook`.
 *
 * Either side may open it. The page tries when its kernel is ready (the kernel refuses quietly
 * while planbook is not loaded: then nothing is shown), and the kernel opens one itself on
 * `%load_ext planbook`, so a page open before the extension was loaded hears of it at once.
 * A restart or a new kernel drops the link and what it showed.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { CommsOverSubshells, Kernel, KernelMessage } from '@jupyterlab/services';
import {
  COMM_TARGET,
  IDecision,
  KernelMessage as PlanbookMessage,
  PageMessage,
  PROTOCOL
} from './protocol';

export class KernelLink {
  constructor(
    private readonly context: ISessionContext,
    private readonly onMessage: (message: PlanbookMessage) => void,
    private readonly onReset: () => void
  ) {
    context.kernelChanged.connect(this.onKernelChanged, this);
    context.statusChanged.connect(this.onStatus, this);
    void context.ready.then(() => this.attach(context.session?.kernel ?? null));
  }

  /** Whether a kernel with planbook loaded is listening. */
  get connected(): boolean {
    return this.comm !== null && !this.comm.isDisposed;
  }

  send(decision: IDecision | PageMessage): boolean {
    if (!this.connected) {
      return false;
    }
    this.comm!.send(decision as any);
    return true;
  }

  dispose(): void {
    this.context.kernelChanged.disconnect(this.onKernelChanged, this);
    this.context.statusChanged.disconnect(this.onStatus, this);
    this.drop();
  }

  private onKernelChanged(
    _: ISessionContext,
    change: { newValue: Kernel.IKernelConnection | null }
  ): void {
    this.drop();
    this.attach(change.newValue);
  }

  private onStatus(_: ISessionContext, status: Kernel.Status): void {
    // 'starting': a kernel restarted by someone else (another page, the REST API) says so
    // first; a new kernel has not loaded planbook.
    if (['restarting', 'autorestarting', 'dead', 'starting'].includes(status)) {
      this.drop();
    }
  }

  private attach(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === null || this.kernels.has(kernel)) {
      return;
    }
    this.kernels.add(kernel);
    kernel.registerCommTarget(COMM_TARGET, (comm, msg) => this.adopt(comm, msg));
    const comm = kernel.createComm(COMM_TARGET);
    this.adopt(comm, null);
    comm.open({ protocol: PROTOCOL } as any);
  }

  private adopt(comm: Kernel.IComm, opened: KernelMessage.ICommOpenMsg | null): void {
    if (this.comm !== null && this.comm !== comm && !this.comm.isDisposed) {
      this.comm.close();
    }
    // Decisions run on the kernel's main thread anyway, so they take the main shell: a
    // subshell would only add a thread, and JupyterLab shares one per comm target and kernel
    // across connections, which lost our messages ("Unknown subshell_id") after a restart of
    // the link.
    comm.commsOverSubshells = CommsOverSubshells.Disabled;
    this.comm = comm;
    comm.onMsg = msg => {
      if (this.comm === comm) {
        this.onMessage(msg.content.data as unknown as PlanbookMessage);
      }
    };
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.onReset();
      }
    };
    const data = opened?.content.data as unknown as PlanbookMessage | undefined;
    if (data && data.type) {
      this.onMessage(data);
    }
  }

  private drop(): void {
    const comm = this.comm;
    this.comm = null;
    if (comm !== null && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone already: nothing to tell it
      }
    }
    this.onReset();
  }

  private comm: Kernel.IComm | null = null;
  private kernels = new WeakSet<Kernel.IKernelConnection>();
}
