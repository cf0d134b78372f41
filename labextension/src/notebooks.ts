/**
 * Notebooks open in this window as the agent's notebook tools see and change them: the
 * live model (unsaved edits included), changed in one undoable transaction per tool call,
 * and a running cell's outputs shown as they arrive.
 */
// Types only (erased at build): the classes come from JupyterLab's shared packages.
import type { ICodeCellModel } from '@jupyterlab/cells';
import type * as nbformat from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { IOutputAreaModel } from '@jupyterlab/outputarea';
import type {
  ISharedCell,
  ISharedCodeCell,
  ISharedNotebook
} from '@jupyter/ydoc';

import { withOrigin } from './changes';
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
    notebookApply: (params, id) => this.apply(params, id),
    notebookRun: (params, id) => this.run(params, id)
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
  async apply(
    params: RequestParams<'notebookApply'>,
    requestId: number
  ): Promise<unknown> {
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
    withOrigin(requestId, () => {
      if (ops.every(op => op.op === 'source')) {
        for (const op of ops as { id: string; source: string }[]) {
          const cell = shared.cells[indexOf(shared, op.id)];
          cell.transact(() => updateSource(cell, op.source));
        }
        return;
      }
      shared.transact(() => {
        for (const op of ops) {
          applyOp(shared, op);
        }
      });
    });
    return true;
  }

  /**
   * Show a running cell: `started` clears it and shows [*], `outputs` shows its outputs so
   * far, `finished` sets its execution count. Not undoable, as when the user runs a cell.
   */
  async run(
    params: RequestParams<'notebookRun'>,
    requestId: number
  ): Promise<unknown> {
    const panel = this._panel(params.path);
    if (!panel) {
      return null;
    }
    await panel.context.ready;
    const model = this._codeCell(panel, params.cellId);
    if (!model) {
      throw new Error(
        `${params.path} has no code cell with id ${params.cellId}`
      );
    }
    // Through the cell's output area, as JupyterLab's own execution writes outputs: it keeps
    // the shared model in step (writing the shared outputs directly would be merged twice).
    withOrigin(requestId, () => {
      if (params.outputs) {
        showOutputs(model.outputs, params.outputs as nbformat.IOutput[]);
      }
      if (params.state === 'started') {
        model.executionCount = null;
        model.executionState = 'running';
      } else if (params.state === 'finished') {
        model.executionCount = params.executionCount ?? null;
        model.executionState = 'idle';
      }
    });
    return true;
  }

  private _codeCell(panel: NotebookPanel, id: string): ICodeCellModel | null {
    const cells = panel.content.model?.cells;
    if (!cells) {
      return null;
    }
    for (let i = 0; i < cells.length; i++) {
      const cell = cells.get(i);
      if (cell.id === id) {
        return cell.type === 'code' ? (cell as ICodeCellModel) : null;
      }
    }
    return null;
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

/**
 * Make the output area show `outputs`: outputs that did not change stay (no re-rendering),
 * the rest are set or added; fewer outputs than shown (a clear_output) start afresh.
 */
function showOutputs(
  area: IOutputAreaModel,
  outputs: nbformat.IOutput[]
): void {
  const shown = area.toJSON();
  if (outputs.length < shown.length) {
    area.clear();
  }
  for (let i = 0; i < outputs.length; i++) {
    if (i < area.length) {
      if (JSON.stringify(shown[i]) !== JSON.stringify(outputs[i])) {
        area.set(i, outputs[i]);
      }
    } else {
      area.add(outputs[i]);
    }
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
