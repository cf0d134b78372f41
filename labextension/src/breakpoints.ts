/**
 * Breakpoints of the server's store shown in JupyterLab's debugger, and the debugger's changes
 * (gutter clicks) sent back, for the notebook the debugger is attached to.
 */
import { IDebugger } from '@jupyterlab/debugger';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { LabSocket } from './connection';

/**
 * Breakpoints of one file as the server sends them.
 */
interface IFileBreakpoints {
  path: string;
  lines: number[];
  /**
   * For notebooks: lines inside each cell, by cell id.
   */
  cells?: { id: string; lines: number[] }[];
}

const PULL_DEBOUNCE_MS = 100;

/**
 * Mirrors breakpoints between the server and the debugger.
 */
export class BreakpointSync {
  constructor(
    private _connection: LabSocket,
    private _debugger: IDebugger,
    private _notebooks: INotebookTracker
  ) {
    _connection.breakpoints.connect((_, files) => {
      this._server = files as IFileBreakpoints[];
      void this._push();
    });
    _debugger.sessionChanged.connect(() => void this._push());
    _debugger.model.breakpoints.restored.connect(() => void this._push());
    _debugger.model.breakpoints.changed.connect(() => this._schedulePull());
  }

  /**
   * The notebook whose kernel the debugger is attached to, if it is started.
   */
  private _debugged(): NotebookPanel | null {
    const session = this._debugger.session;
    const kernel = session?.connection?.kernel?.id;
    if (!session?.isStarted || !kernel) {
      return null;
    }
    return (
      this._notebooks.find(
        panel => panel.sessionContext.session?.kernel?.id === kernel
      ) ?? null
    );
  }

  /**
   * Queue a push; pushes run one at a time, and no pull runs while any is queued (it would
   * report the debugger's state from before the server's change and undo that change).
   */
  private _push(): Promise<void> {
    this._pending++;
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
      this._timer = null;
    }
    this._queue = this._queue
      .then(() => this._pushNow())
      .catch(reason =>
        console.warn('jupyter-mcp: showing breakpoints failed', reason)
      )
      .finally(() => {
        this._pending--;
        // Changes the user made meanwhile (gutter clicks) are reported now.
        this._schedulePull();
      });
    return this._queue;
  }

  /**
   * Show the server's breakpoints in the debugged notebook (cells that differ only).
   */
  private async _pushNow(): Promise<void> {
    const panel = this._debugged();
    const shared = panel?.content.model?.sharedModel;
    if (!panel || !shared) {
      return;
    }
    const entry = this._server.find(f => f.path === panel.context.localPath);
    const wanted = new Map<string, number[]>();
    for (const cell of entry?.cells ?? []) {
      wanted.set(cell.id, cell.lines);
    }
    for (const cell of shared.cells) {
      if (cell.cell_type !== 'code') {
        continue;
      }
      const code = cell.getSource();
      const id = this._debugger.getCodeId(code);
      const lines = wanted.get(cell.id) ?? [];
      const current = this._debugger.model.breakpoints
        .getBreakpoints(id)
        .map(bp => bp.line ?? 0);
      if (sameLines(current, lines)) {
        continue;
      }
      await this._debugger.updateBreakpoints(
        code,
        lines.map(line => ({ line, verified: true, source: { path: id } }))
      );
    }
  }

  private _schedulePull(): void {
    if (this._pending > 0) {
      return;
    }
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
    }
    this._timer = window.setTimeout(() => {
      this._timer = null;
      this._pull();
    }, PULL_DEBOUNCE_MS);
  }

  /**
   * Tell the server which breakpoints the debugged notebook shows now.
   */
  private _pull(): void {
    if (this._pending > 0) {
      return;
    }
    const panel = this._debugged();
    const shared = panel?.content.model?.sharedModel;
    if (!panel || !shared) {
      return;
    }
    const cells = shared.cells.map(cell => {
      const lines =
        cell.cell_type === 'code'
          ? this._debugger.model.breakpoints
              .getBreakpoints(this._debugger.getCodeId(cell.getSource()))
              .map(bp => bp.line ?? 0)
              .filter(line => line > 0)
          : [];
      return {
        id: cell.id,
        cell_type: cell.cell_type,
        source: cell.getSource(),
        metadata: cell.getMetadata(),
        lines
      };
    });
    const path = panel.context.localPath;
    const known = this._server.find(f => f.path === path);
    const knownCells = new Map((known?.cells ?? []).map(c => [c.id, c.lines]));
    if (cells.every(c => sameLines(c.lines, knownCells.get(c.id) ?? []))) {
      return;
    }
    const message = {
      type: 'breakpointsChanged',
      path,
      kind: 'notebook',
      cells,
      metadata: shared.getMetadata()
    };
    this._connection.sendMessage(message);
  }

  private _server: IFileBreakpoints[] = [];
  private _pending = 0;
  private _queue: Promise<void> = Promise.resolve();
  private _timer: number | null = null;
}

function sameLines(a: number[], b: number[]): boolean {
  const x = [...a].sort((p, q) => p - q);
  const y = [...b].sort((p, q) => p - q);
  return x.length === y.length && x.every((value, index) => value === y[index]);
}
