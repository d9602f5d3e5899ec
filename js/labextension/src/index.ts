/**
 * planbook's in-cell review for JupyterLab 4 and Notebook 7.
 *
 * For each notebook page: a link to its kernel (connection.ts) and the plan drawn on its cells
 * (cellreview.ts). Commands move between pending changes; the window events
 * `planbook:focus-cell` (from the plan panel's step rows) and `planbook:focus-step` (from a
 * cell's badge) tie the cells and the panel together. Where the kernel has not loaded planbook
 * nothing is shown.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { CellReview } from './cellreview';
import { KernelLink } from './connection';
import { PageDocument } from './pagedoc';
import { PROTOCOL } from './protocol';

/** Sent by the plan panel's step rows: select this cell. */
export const FOCUS_CELL_EVENT = 'planbook:focus-cell';

export const COMMANDS = {
  next: 'planbook:next-change',
  previous: 'planbook:previous-change'
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'planbook:cell-review',
  description: "Shows each pending step of planbook's plan on its cell, approved or rejected there.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, translator: ITranslator | null) => {
    const trans = (translator ?? nullTranslator).load('planbook');
    const reviews = new Map<NotebookPanel, CellReview>();

    tracker.widgetAdded.connect((_, panel) => {
      let review: CellReview;
      let page: PageDocument;
      const link = new KernelLink(
        panel.sessionContext,
        message => {
          if (page.handle(message)) {
            return; // the page's notebook (no collaboration): pagedoc.ts
          }
          if (message.type === 'plan') {
            review.show(message.protocol === PROTOCOL ? message : null);
          } else if (message.type === 'error' && !review.showError(message.step_id, message.message)) {
            Notification.error(`planbook: ${message.message}`, { autoClose: 8000 });
          }
        },
        () => {
          review?.show(null);
          page?.reset();
        }
      );
      review = new CellReview(
        panel,
        decision => {
          // what the person typed first: the kernel checks the step's target against it
          page.sendEdits();
          return link.send(decision);
        },
        trans
      );
      page = new PageDocument(panel, message => link.send(message));
      reviews.set(panel, review);
      panel.disposed.connect(() => {
        link.dispose();
        review.dispose();
        page.dispose();
        reviews.delete(panel);
      });
    });

    const current = (): CellReview | undefined => {
      const panel = tracker.currentWidget;
      return panel ? reviews.get(panel) : undefined;
    };
    const hasChanges = () => (current()?.plan?.steps.length ?? 0) > 0;
    app.commands.addCommand(COMMANDS.next, {
      label: trans.__('Next Planbook Change'),
      caption: trans.__('Select the next cell with a pending planbook step'),
      isEnabled: hasChanges,
      execute: () => current()?.go(1) ?? false
    });
    app.commands.addCommand(COMMANDS.previous, {
      label: trans.__('Previous Planbook Change'),
      caption: trans.__('Select the previous cell with a pending planbook step'),
      isEnabled: hasChanges,
      execute: () => current()?.go(-1) ?? false
    });
    for (const [command, keys] of [
      [COMMANDS.next, ['Alt ArrowDown']],
      [COMMANDS.previous, ['Alt ArrowUp']]
    ] as const) {
      app.commands.addKeyBinding({ command, keys: [...keys], selector: '.jp-Notebook.jp-mod-commandMode' });
    }

    window.addEventListener(FOCUS_CELL_EVENT, event => {
      const cellId = (event as CustomEvent<{ cellId?: unknown }>).detail?.cellId;
      if (typeof cellId !== 'string') {
        return;
      }
      const panels = [tracker.currentWidget, ...reviews.keys()].filter(
        (p): p is NotebookPanel => p !== null
      );
      for (const panel of panels) {
        if (reviews.get(panel)?.focusCell(cellId)) {
          app.shell.activateById(panel.id);
          return;
        }
      }
    });
  }
};

export default plugin;
