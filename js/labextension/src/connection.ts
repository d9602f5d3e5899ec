/**
 * One notebook page's link to its kernel: a comm on the target `planbook`.
 *
 * Either side may open it. The page tries when its kernel is ready (the kernel refuses quietly
 * while planbook is not loaded: then nothing is shown), and the kernel opens one itself on
 * `%load_ext planbook`, so a page open before the extension was loaded hears of it at once;
 * the page answers that one with a comm of its own (see `answer`).
 * A restart or a new kernel drops the link and what it showed.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { CommsOverSubshells, Kernel } from '@jupyterlab/services';
import {
  COMM_TARGET,
  IDecision,
  KernelMessage as PlanbookMessage,
  PageMessage,
  PROTOCOL
} from './protocol';

/** Where this browser tab keeps its identity across reloads. */
const TAB_KEY = 'planbook:tab';

/**
 * This browser tab across its reloads, and this load of it. The kernel closes the links an
 * earlier load of the same tab left open: a reload does not always get its comm's close out
 * before the page goes (`onPageHide`), and each link left open had the kernel send the whole
 * plan once more after every change. A tab opened anew or duplicated is a tab of its own.
 */
export const PAGE = pageIdentity();

function pageIdentity(): { tab: string; load: string } {
  const load = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
  let tab = load;
  try {
    const navigation = performance.getEntriesByType('navigation')[0] as
      | PerformanceNavigationTiming
      | undefined;
    const kept = window.sessionStorage.getItem(TAB_KEY);
    if (navigation?.type === 'reload' && kept) {
      tab = kept;
    }
    window.sessionStorage.setItem(TAB_KEY, tab);
  } catch {
    // no session storage (a privacy setting): each load is a tab of its own
  }
  return { tab, load };
}

export class KernelLink {
  constructor(
    private readonly context: ISessionContext,
    private readonly onMessage: (message: PlanbookMessage) => void,
    private readonly onReset: () => void
  ) {
    context.kernelChanged.connect(this.onKernelChanged, this);
    context.statusChanged.connect(this.onStatus, this);
    window.addEventListener('pagehide', this.onPageHide);
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
    window.removeEventListener('pagehide', this.onPageHide);
    this.context.kernelChanged.disconnect(this.onKernelChanged, this);
    this.context.statusChanged.disconnect(this.onStatus, this);
    this.drop();
  }

  /**
   * The page is going away (a reload, the browser tab closed): close the comm, so the kernel
   * stops sending this page the plan after every change. Nothing else tells it: a comm left
   * open by each reload had the kernel build and send the whole plan once more per event.
   * A page kept for going back (`persisted`) keeps its link.
   */
  private readonly onPageHide = (event: PageTransitionEvent): void => {
    if (!event.persisted) {
      this.drop();
    }
  };

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
    kernel.registerCommTarget(COMM_TARGET, comm => this.answer(kernel, comm));
    this.open(kernel);
  }

  /** A comm of this page's own, on the kernel's main shell. */
  private open(kernel: Kernel.IKernelConnection): void {
    const comm = kernel.createComm(COMM_TARGET);
    this.adopt(comm);
    comm.open({ protocol: PROTOCOL, page: PAGE } as any);
  }

  /**
   * The kernel opened a comm (`%load_ext planbook`): answered with one of our own. JupyterLab
   * builds the kernel's comm and starts a subshell for it before this page can say no (the
   * handler's constructor asks for one, and the answer lands after we turned it off), and a
   * subshell's messages are handled on another thread of the kernel: the person's edits sent
   * before a run could then reach the kernel after `%approve` checked its targets. A comm the
   * page creates is turned to the main shell before anything is sent on it, so every message
   * reaches the kernel in the order the page sent it, runs of cells included.
   */
  private answer(kernel: Kernel.IKernelConnection, theirs: Kernel.IComm): void {
    theirs.commsOverSubshells = CommsOverSubshells.Disabled;
    this.open(kernel);
    try {
      theirs.close();
    } catch {
      // the kernel is gone already
    }
  }

  private adopt(comm: Kernel.IComm): void {
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
