/**
 * Document changes in this window, reported to the server as they happen (before any save),
 * so that agents subscribed to a notebook, a cell or a file hear that the user changed it.
 *
 * Each report names the document, the notebook cells that changed (source, type, outputs,
 * execution count, metadata; inserted, moved and deleted ones) and whether the text may have
 * changed; and who made it: the ids of the server's requests (or reload notices) this window
 * was applying, or the user. The first change of a document is reported at once; those that
 * follow within a short while are gathered into one report at its end, so a burst of
 * keystrokes costs a few reports a second.
 */
import type { CellChange, ISharedCell, NotebookChange } from '@jupyter/ydoc';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { LabSocket } from './connection';
import { IChangedMessage } from './protocol';

const REPORT_DELAY_MS = 100;
const RELOAD_ORIGIN_MS = 5000;

let applying: number[] = [];

/**
 * Run `change` (synchronous) as part of the server's request `origin`: the document changes
 * it makes are reported as that request's, not the user's.
 */
export function withOrigin<T>(origin: number, change: () => T): T {
  applying = [...applying, origin];
  try {
    return change();
  } finally {
    applying = applying.filter(id => id !== origin);
  }
}

interface IPending {
  kind: 'file' | 'notebook';
  cells: Set<string> | null;
  sources: boolean;
  origins: Set<number>;
  user: boolean;
}

/**
 * Watches the notebooks and file editors of this window and reports their changes.
 */
export class DocumentChanges {
  constructor(
    private _connection: LabSocket,
    notebooks: INotebookTracker,
    editors: IEditorTracker
  ) {
    notebooks.widgetAdded.connect((_, panel) => this._watchNotebook(panel));
    notebooks.forEach(panel => this._watchNotebook(panel));
    editors.widgetAdded.connect((_, widget) => this._watchEditor(widget));
    editors.forEach(widget => this._watchEditor(widget));
  }

  /**
   * The changes of the document at `path` in the next few seconds (until `done` is called)
   * come from the server's reload notice `origin`.
   */
  expectReload(path: string, origin: number): () => void {
    this._reloads.set(path, origin);
    const timer = window.setTimeout(() => done(), RELOAD_ORIGIN_MS);
    const done = () => {
      window.clearTimeout(timer);
      if (this._reloads.get(path) === origin) {
        this._reloads.delete(path);
      }
    };
    return done;
  }

  private _watchNotebook(panel: NotebookPanel): void {
    void panel.context.ready.then(() => {
      const shared = panel.content.model?.sharedModel;
      if (!shared || panel.isDisposed) {
        return;
      }
      const path = () => panel.context.localPath;
      const watchCell = (cell: ISharedCell) => {
        cell.changed.connect((_, change: CellChange) => {
          const sources = !!(change.sourceChange || change.metadataChange);
          const outputs = !!(
            change.outputsChange ||
            change.streamOutputChange ||
            change.executionCountChange ||
            change.attachmentsChange
          );
          if (sources || outputs) {
            this._note(path(), 'notebook', [cell.id], sources);
          }
        });
      };
      shared.cells.forEach(watchCell);
      shared.changed.connect((_, change: NotebookChange) => {
        if (change.cellsChange) {
          const touched: string[] = [];
          const before = new Set(this._ids.get(shared) ?? []);
          for (const delta of change.cellsChange) {
            for (const cell of delta.insert ?? []) {
              watchCell(cell);
              touched.push(cell.id); // inserted, or moved (deleted and inserted again)
            }
          }
          const now = shared.cells.map(cell => cell.id);
          for (const id of before) {
            if (!now.includes(id)) {
              touched.push(id);
            }
          }
          this._ids.set(shared, now);
          this._note(path(), 'notebook', touched, true);
        }
        if (change.metadataChange || change.nbformatChanged) {
          this._note(path(), 'notebook', [], true);
        }
      });
      this._ids.set(
        shared,
        shared.cells.map(cell => cell.id)
      );
    });
  }

  private _watchEditor(widget: IEditorTracker['currentWidget']): void {
    if (!widget) {
      return;
    }
    void widget.context.ready.then(() => {
      if (widget.isDisposed) {
        return;
      }
      widget.content.model.sharedModel.changed.connect((_, change) => {
        if (change.sourceChange) {
          this._note(widget.context.localPath, 'file', null, true);
        }
      });
    });
  }

  private _note(
    path: string,
    kind: 'file' | 'notebook',
    cells: string[] | null,
    sources: boolean
  ): void {
    let pending = this._pending.get(path);
    if (!pending) {
      pending = {
        kind,
        cells: kind === 'notebook' ? new Set() : null,
        sources: false,
        origins: new Set(),
        user: false
      };
      this._pending.set(path, pending);
    }
    for (const id of cells ?? []) {
      pending.cells?.add(id);
    }
    pending.sources = pending.sources || sources;
    const reload = this._reloads.get(path);
    const origins = reload !== undefined ? [...applying, reload] : applying;
    if (origins.length) {
      origins.forEach(origin => pending!.origins.add(origin));
    } else {
      pending.user = true;
    }
    if (!this._timers.has(path)) {
      // The model's signals come in the change's own turn: report once they all came.
      window.setTimeout(() => this._report(path), 0);
    }
  }

  private _report(path: string): void {
    const pending = this._pending.get(path);
    if (this._timers.has(path) && pending) {
      return; // sent at the end of the quiet time that runs
    }
    if (!pending) {
      return;
    }
    this._pending.delete(path);
    // What comes in the next moment waits for its end, and goes in one report.
    this._timers.set(
      path,
      window.setTimeout(() => {
        this._timers.delete(path);
        this._report(path);
      }, REPORT_DELAY_MS)
    );
    const message: IChangedMessage = {
      type: 'changed',
      path,
      kind: pending.kind,
      sources: pending.sources,
      origins: [...pending.origins],
      user: pending.user
    };
    if (pending.cells) {
      message.cells = [...pending.cells];
    }
    this._connection.sendMessage(message);
  }

  private _pending = new Map<string, IPending>();
  private _timers = new Map<string, number>();
  private _reloads = new Map<string, number>();
  private _ids = new WeakMap<object, string[]>();
}
