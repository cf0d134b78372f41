/**
 * Notebooks open in this window as the agent's notebook tools see and change them: the
 * live model (unsaved edits included), changed in one undoable transaction per tool call,
 * and a running cell's outputs shown as they arrive.
 */
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type {
  ISharedCell,
  ISharedCodeCell,
  ISharedNotebook
} from '@jupyter/ydoc';

import { RequestHandlers, RequestParams } from './protocol';

/**
 * A cell as the server sends it: nbformat v4, with an id.
 */
interface ICellJSON {
  id: string;
  cell_type: 'code' | 'markdown' | 'raw';
  source: string;
  metadata?: { [key: string]: any };
  outputs?: any[];
  execution_count?: number | null;
  attachments?: { [key: string]: any };
}

/**
 * One step of a change, applied in order (see jupyter_mcp/lab/live_notebooks.py).
 */
type Op =
  | { op: 'delete'; id: string }
  | { op: 'insert'; index: number; cell: ICellJSON }
  | { op: 'move'; id: string; index: number }
  | { op: 'replace'; id: string; cell: ICellJSON }
  | { op: 'source'; id: string; source: string }
  | { op: 'metadata'; id: string; metadata: { [key: string]: any } }
  | {
      op: 'outputs';
      id: string;
      outputs: any[];
      execution_count: number | null;
    };

/**
 * Answers the notebook requests for the notebooks open in this window.
 */
export class LiveNotebooks {
  constructor(private _notebooks: INotebookTracker) {}

  readonly handlers = {
    notebookSnapshot: ({ path }) => this.snapshot(path),
    notebookApply: params => this.apply(params),
    notebookRun: params => this.run(params)
  } satisfies Partial<RequestHandlers>;

  /**
   * The whole notebook at `path` as the window has it; null when it is not open here.
   */
  async snapshot(path: string): Promise<unknown> {
    const shared = await this._shared(path);
    if (!shared) {
      return null;
    }
    const json = shared.toJSON();
    return {
      path,
      nbformat: json.nbformat,
      nbformat_minor: json.nbformat_minor,
      metadata: json.metadata,
      cells: shared.cells.map(cell => cell.toJSON())
    };
  }

  /**
   * Apply a tool's change so that one undo reverts it: a change of cell sources only through
   * each cell's own history (Ctrl+Z in the cell's editor undoes it), any other change in one
   * transaction of the notebook (undone from the notebook, Z in command mode or Edit > Undo).
   */
  async apply(params: RequestParams<'notebookApply'>): Promise<unknown> {
    const shared = await this._shared(params.path);
    if (!shared) {
      return null;
    }
    const ops = params.ops as unknown as Op[];
    for (const op of ops) {
      if ('id' in op && indexOf(shared, op.id) < 0) {
        throw new Error(`${params.path} has no cell with id ${op.id}`);
      }
    }
    if (ops.every(op => op.op === 'source')) {
      for (const op of ops as { id: string; source: string }[]) {
        const cell = shared.cells[indexOf(shared, op.id)];
        cell.transact(() => updateSource(cell, op.source));
      }
      return true;
    }
    shared.transact(() => {
      for (const op of ops) {
        applyOp(shared, op);
      }
    });
    return true;
  }

  /**
   * Show a running cell: `started` clears it and shows [*], `outputs` shows its outputs so
   * far, `finished` sets its execution count. Not undoable, as when the user runs a cell.
   */
  async run(params: RequestParams<'notebookRun'>): Promise<unknown> {
    const shared = await this._shared(params.path);
    if (!shared) {
      return null;
    }
    const cell = shared.cells.find(c => c.id === params.cellId);
    if (!cell || cell.cell_type !== 'code') {
      throw new Error(
        `${params.path} has no code cell with id ${params.cellId}`
      );
    }
    const code = cell as ISharedCodeCell;
    if (params.outputs) {
      showOutputs(code, params.outputs as any[]);
    }
    shared.transact(() => {
      if (params.state === 'started') {
        code.execution_count = null;
        code.executionState = 'running';
      } else if (params.state === 'finished') {
        code.execution_count = params.executionCount ?? null;
        code.executionState = 'idle';
      }
    }, false);
    return true;
  }

  private async _shared(path: string): Promise<ISharedNotebook | null> {
    const panel = this._panel(path);
    if (!panel) {
      return null;
    }
    await panel.context.ready;
    const shared = panel.content.model?.sharedModel;
    if (!shared) {
      throw new Error(`${path} is still loading in JupyterLab`);
    }
    return shared;
  }

  private _panel(path: string): NotebookPanel | null {
    let found: NotebookPanel | null = null;
    this._notebooks.forEach(panel => {
      if (!found && !panel.isDisposed && panel.context.localPath === path) {
        found = panel;
      }
    });
    return found;
  }
}

function indexOf(shared: ISharedNotebook, id: string): number {
  return shared.cells.findIndex(cell => cell.id === id);
}

/**
 * Replace a cell's source by the one edit that differs (common head and tail kept), so the
 * user's cursor and the rest of the text stay where they are.
 */
function updateSource(cell: ISharedCell, source: string): void {
  const old = cell.getSource();
  let start = 0;
  const max = Math.min(old.length, source.length);
  while (start < max && old[start] === source[start]) {
    start++;
  }
  let end = 0;
  while (
    end < max - start &&
    old[old.length - 1 - end] === source[source.length - 1 - end]
  ) {
    end++;
  }
  if (start !== old.length - end || start !== source.length - end) {
    cell.updateSource(
      start,
      old.length - end,
      source.slice(start, source.length - end)
    );
  }
}

function applyOp(shared: ISharedNotebook, op: Op): void {
  switch (op.op) {
    case 'delete':
      shared.deleteCell(indexOf(shared, op.id));
      break;
    case 'insert':
      shared.insertCell(op.index, op.cell as any);
      break;
    case 'move':
      shared.moveCell(indexOf(shared, op.id), op.index);
      break;
    case 'replace': {
      const index = indexOf(shared, op.id);
      shared.deleteCell(index);
      shared.insertCell(index, op.cell as any);
      break;
    }
    case 'source':
      updateSource(shared.cells[indexOf(shared, op.id)], op.source);
      break;
    case 'metadata':
      shared.cells[indexOf(shared, op.id)].setMetadata(op.metadata);
      break;
    case 'outputs': {
      const cell = shared.cells[indexOf(shared, op.id)] as ISharedCodeCell;
      cell.setOutputs(op.outputs);
      cell.execution_count = op.execution_count;
      break;
    }
  }
}

/**
 * A shared code cell that can append to a stream output in place (@jupyter/ydoc's YCodeCell).
 */
type IStreamingCodeCell = ISharedCodeCell & {
  appendStreamOutput?: (index: number, text: string) => void;
};

/**
 * Bring a running cell's outputs to `next` with as few changes as possible: identical
 * leading outputs stay, a stream that grew gets the new text appended, the rest is removed
 * and then added. Replacing all outputs in one change would not do: JupyterLab applies a
 * replacement as "add the new, then remove the old", and adding a stream next to a stream
 * of the same name merges the two, so the old and new text would both be removed.
 */
function showOutputs(code: IStreamingCodeCell, next: any[]): void {
  const old = code.getOutputs() as any[];
  let same = 0;
  while (
    same < old.length &&
    same < next.length &&
    JSON.stringify(old[same]) === JSON.stringify(next[same])
  ) {
    same++;
  }
  if (same === old.length - 1 && same < next.length) {
    const before = old[same];
    const after = next[same];
    const text = (value: any): string =>
      Array.isArray(value) ? value.join('') : String(value ?? '');
    if (
      code.appendStreamOutput !== undefined &&
      before.output_type === 'stream' &&
      after.output_type === 'stream' &&
      before.name === after.name &&
      text(after.text).startsWith(text(before.text))
    ) {
      const grown = text(after.text).slice(text(before.text).length);
      if (grown) {
        code.appendStreamOutput(same, grown);
      }
      same++;
    }
  }
  if (same < old.length) {
    code.updateOutputs(same, old.length, []);
  }
  if (same < next.length) {
    code.updateOutputs(same, same, next.slice(same));
  }
}
