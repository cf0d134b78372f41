/**
 * The active editor: the notebook or file editor focused last in this window, and the
 * requests that read and edit it through its document model.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { CodeEditor } from '@jupyterlab/codeeditor';
import { IDocumentWidget } from '@jupyterlab/docregistry';
import { FileEditor, IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import { DocumentChanges, withOrigin } from './changes';
import { IReloadNotice, LabSocket } from './connection';
import {
  ICellInfo,
  IDocumentInfo,
  ISelectionInfo,
  IStateMessage,
  RequestHandlers,
  RequestParams
} from './protocol';

type DocWidget = NotebookPanel | IDocumentWidget<FileEditor>;

const SELECTION_DEBOUNCE_MS = 150;
const HISTORY_SETTLE_MS = 2000;

/**
 * Tracks the active document and answers the editor requests of the server.
 */
export class ActiveEditor {
  constructor(
    private _app: JupyterFrontEnd,
    private _connection: LabSocket,
    private _notebooks: INotebookTracker,
    private _editors: IEditorTracker,
    private _changes: DocumentChanges
  ) {
    const shell = _app.shell;
    shell.currentChanged?.connect((_, args) => this._onCurrent(args.newValue));
    for (const tracker of [_notebooks, _editors] as const) {
      tracker.widgetAdded.connect((_, widget) =>
        this._watch(widget as DocWidget)
      );
      tracker.forEach(widget => this._watch(widget as DocWidget));
    }
    _notebooks.activeCellChanged.connect(() => this._watchSelection());
    this._onCurrent(shell.currentWidget);

    _connection.setStateProvider(() => this.state());
    _connection.reloadRequested.connect(
      (_, notice) => void this.reload(notice)
    );
  }

  /**
   * The answers to the server's editor requests.
   */
  readonly handlers = {
    readText: () => this.readText(),
    documentText: ({ path }) => this.documentText(path),
    replaceSelection: ({ text }, id) => this.replaceSelection(text, id),
    replaceDocument: (params, id) => this.replaceDocument(params, id),
    openFile: ({ path }) => this.openFile(path)
  } satisfies Partial<RequestHandlers>;

  /**
   * The document widget focused last, if it is still open.
   */
  get active(): DocWidget | null {
    return this._active;
  }

  /**
   * The full state report of this window.
   */
  state(): IStateMessage {
    return {
      type: 'state',
      active: this._active ? info(this._active) : null,
      open: this._documents().map(info),
      selection: this._selection()
    };
  }

  /**
   * The active document's text (unsaved edits included); notebooks as cells.
   */
  async readText(): Promise<unknown> {
    const widget = this._active;
    if (!widget) {
      return null;
    }
    // A document that is still loading has no text yet.
    await widget.context.ready;
    if (widget instanceof NotebookPanel) {
      const shared = widget.content.model?.sharedModel;
      if (!shared) {
        throw new Error('The notebook is still loading');
      }
      const cells: ICellInfo[] = shared.cells.map(cell => ({
        id: cell.id,
        cell_type: cell.cell_type as ICellInfo['cell_type'],
        source: cell.getSource(),
        metadata: cell.getMetadata() as { [key: string]: any }
      }));
      return {
        path: widget.context.localPath,
        type: 'notebook',
        cells,
        metadata: shared.getMetadata()
      };
    }
    return {
      path: widget.context.localPath,
      type: 'file',
      text: widget.content.model.sharedModel.getSource()
    };
  }

  /**
   * The text of the file open at `path` in a file editor here (unsaved edits included).
   */
  async documentText(path: string): Promise<unknown> {
    for (const widget of this._documents()) {
      if (
        !(widget instanceof NotebookPanel) &&
        widget.context.localPath === path
      ) {
        await widget.context.ready;
        return { path, text: widget.content.model.sharedModel.getSource() };
      }
    }
    return null;
  }

  /**
   * Replace the selection of the file editor, or of the active cell's editor.
   */
  async replaceSelection(text: string, requestId: number): Promise<unknown> {
    const widget = this._active;
    if (!widget) {
      return null;
    }
    await widget.context.ready;
    const editor = this._editorOf(widget);
    if (!editor) {
      throw new Error('No cell is active in the notebook; select a cell first');
    }
    withOrigin(requestId, () => {
      if (editor.replaceSelection) {
        editor.replaceSelection(text);
      } else {
        const range = editor.getSelection();
        const [from, to] = ordered(
          editor.getOffsetAt(range.start),
          editor.getOffsetAt(range.end)
        );
        editor.model.sharedModel.updateSource(from, to, text);
      }
    });
    return true;
  }

  /**
   * Replace the whole document: a file as one minimal edit, a notebook cell by cell.
   */
  async replaceDocument(
    params: RequestParams<'replaceDocument'>,
    requestId: number
  ): Promise<unknown> {
    const widget = this._active;
    if (!widget) {
      return null;
    }
    await widget.context.ready;
    if (widget.context.localPath !== params.path) {
      throw new Error(
        `The active document changed to ${widget.context.localPath} while editing ${params.path}; nothing was changed`
      );
    }
    if (widget instanceof NotebookPanel) {
      const shared = widget.content.model?.sharedModel;
      if (!shared || !Array.isArray(params.cells)) {
        throw new Error('The notebook is still loading');
      }
      withOrigin(requestId, () =>
        updateCells(shared, params.cells as ICellInfo[])
      );
      return true;
    }
    const shared = widget.content.model.sharedModel;
    const old = shared.getSource();
    const text = String(params.text);
    let start = 0;
    const max = Math.min(old.length, text.length);
    while (start < max && old[start] === text[start]) {
      start++;
    }
    let end = 0;
    while (
      end < max - start &&
      old[old.length - 1 - end] === text[text.length - 1 - end]
    ) {
      end++;
    }
    if (start !== old.length - end || start !== text.length - end) {
      withOrigin(requestId, () =>
        shared.updateSource(
          start,
          old.length - end,
          text.slice(start, text.length - end)
        )
      );
    }
    return true;
  }

  /**
   * Open a file with the document manager and make it the active editor.
   */
  async openFile(path: string): Promise<unknown> {
    const widget = (await this._app.commands.execute('docmanager:open', {
      path
    })) as Widget | undefined;
    if (!widget) {
      throw new Error(`JupyterLab could not open ${path}`);
    }
    const document = widget as DocWidget;
    // A newly opened document clears its undo history once more after `ready` (when its
    // checkpoint is made); an edit made before that would not be undoable.
    const settled =
      document.context && !document.context.isReady
        ? historySettled(document)
        : Promise.resolve();
    this._app.shell.activateById(widget.id);
    if (document.context) {
      await document.context.ready;
    }
    if (document.revealed) {
      // The editor exists only once the widget is revealed.
      await document.revealed;
    }
    await settled;
    if (isDocWidget(widget, this._notebooks, this._editors)) {
      this._setActive(widget);
    }
    return true;
  }

  /**
   * Reload a document a tool wrote, unless it has unsaved edits (they are never lost).
   */
  async reload({ path, origin }: IReloadNotice): Promise<void> {
    for (const widget of this._documents()) {
      if (widget.context.localPath === path && !widget.context.model.dirty) {
        // The change the reload makes is the writing tool call's, not the user's.
        const done =
          origin !== null ? this._changes.expectReload(path, origin) : null;
        try {
          await widget.context.revert();
        } finally {
          done?.();
        }
      }
    }
  }

  private _documents(): DocWidget[] {
    const found: DocWidget[] = [];
    this._notebooks.forEach(widget => found.push(widget));
    this._editors.forEach(widget => found.push(widget));
    return found.filter(widget => !widget.isDisposed);
  }

  private _onCurrent(widget: Widget | null): void {
    if (widget && isDocWidget(widget, this._notebooks, this._editors)) {
      this._setActive(widget);
      this._connection.touch();
    }
  }

  private _setActive(widget: DocWidget): void {
    if (this._active === widget) {
      return;
    }
    this._active = widget;
    this._watchSelection();
    this._report();
  }

  private _watch(widget: DocWidget): void {
    if (this._watched.has(widget)) {
      return;
    }
    this._watched.add(widget);
    const report = () => this._report();
    void widget.context.ready.then(report);
    widget.context.model.stateChanged.connect((_, change) => {
      if (change.name === 'dirty') {
        report();
      }
    });
    widget.context.pathChanged.connect(report);
    widget.disposed.connect(() => {
      this._watched.delete(widget);
      if (this._active === widget) {
        // Fall back to the document of the same kind focused before, if any.
        const fallback =
          (this._notebooks.currentWidget as DocWidget | null) ??
          (this._editors.currentWidget as DocWidget | null);
        this._active = fallback && !fallback.isDisposed ? fallback : null;
        this._watchSelection();
      }
      report();
    });
    report();
  }

  private _watchSelection(): void {
    if (this._selectionModel) {
      this._selectionModel.selections.changed.disconnect(
        this._onSelection,
        this
      );
      this._selectionModel = null;
    }
    const editor = this._active ? this._editorOf(this._active) : null;
    if (editor) {
      this._selectionModel = editor.model;
      editor.model.selections.changed.connect(this._onSelection, this);
    }
    this._onSelection();
  }

  private _onSelection(): void {
    if (this._selectionTimer !== null) {
      window.clearTimeout(this._selectionTimer);
    }
    this._selectionTimer = window.setTimeout(() => {
      this._selectionTimer = null;
      this._connection.send({ type: 'state', selection: this._selection() });
    }, SELECTION_DEBOUNCE_MS);
  }

  private _selection(): ISelectionInfo | null {
    const widget = this._active;
    const editor = widget ? this._editorOf(widget) : null;
    if (!widget || !editor) {
      return null;
    }
    const range = editor.getSelection();
    const selection: ISelectionInfo = {
      start: { line: range.start.line, column: range.start.column },
      end: { line: range.end.line, column: range.end.column }
    };
    if (widget instanceof NotebookPanel) {
      selection.cell = widget.content.activeCellIndex;
    }
    return selection;
  }

  private _editorOf(widget: DocWidget): CodeEditor.IEditor | null {
    if (widget instanceof NotebookPanel) {
      return widget.content.activeCell?.editor ?? null;
    }
    return widget.content.editor;
  }

  private _report(): void {
    const state = this.state();
    this._connection.send(state);
  }

  private _active: DocWidget | null = null;
  private _watched = new Set<DocWidget>();
  private _selectionModel: CodeEditor.IModel | null = null;
  private _selectionTimer: number | null = null;
}

function isDocWidget(
  widget: Widget,
  notebooks: INotebookTracker,
  editors: IEditorTracker
): widget is DocWidget {
  return (
    notebooks.has(widget) || editors.has(widget as IDocumentWidget<FileEditor>)
  );
}

function info(widget: DocWidget): IDocumentInfo {
  return {
    path: widget.context.localPath,
    type: widget instanceof NotebookPanel ? 'notebook' : 'file',
    dirty: widget.context.model.dirty
  };
}

/**
 * Resolves once a newly opened document has cleared its undo history for the last time, or
 * after a short time when that does not happen. Call it before the document is ready.
 *
 * JupyterLab clears the history of a new document after `context.ready`, once its checkpoint
 * is made; an edit made before that would silently drop out of the undo history. The clear is
 * a no-op (and emits nothing) when the history is empty, so the call itself is observed.
 */
function historySettled(widget: DocWidget): Promise<void> {
  const shared = widget.context.model.sharedModel as {
    clearUndoHistory(): void;
  };
  const original = shared.clearUndoHistory;
  return new Promise<void>(resolve => {
    // Clears in `ready` callbacks registered before this one (the editor's own) come first.
    let ready = false;
    void widget.context.ready.then(() => {
      ready = true;
    });
    const done = () => {
      if (shared.clearUndoHistory === patched) {
        shared.clearUndoHistory = original;
      }
      window.clearTimeout(timer);
      resolve();
    };
    const patched = function (this: unknown) {
      original.call(shared);
      if (ready) {
        window.setTimeout(done, 0);
      }
    };
    shared.clearUndoHistory = patched;
    const timer = window.setTimeout(done, HISTORY_SETTLE_MS);
  });
}

function ordered(a: number, b: number): [number, number] {
  return a <= b ? [a, b] : [b, a];
}

/**
 * Make the notebook's cells those of `target` in one transaction: cells are matched by id
 * (moved when needed), sources updated only where they changed, so unchanged cells keep their
 * outputs, and new cells inserted.
 */
function updateCells(
  shared: NonNullable<NotebookPanel['content']['model']>['sharedModel'],
  target: ICellInfo[]
): void {
  const wanted = new Set(target.map(cell => cell.id));
  shared.transact(() => {
    for (let i = shared.cells.length - 1; i >= 0; i--) {
      if (!wanted.has(shared.cells[i].id)) {
        shared.deleteCell(i);
      }
    }
    target.forEach((cell, index) => {
      let at = -1;
      for (let j = index; j < shared.cells.length; j++) {
        if (shared.cells[j].id === cell.id) {
          at = j;
          break;
        }
      }
      if (at > index) {
        shared.moveCell(at, index);
      }
      const existing = at >= 0 ? shared.cells[index] : undefined;
      if (existing && existing.cell_type === cell.cell_type) {
        if (existing.getSource() !== cell.source) {
          existing.setSource(cell.source);
        }
        return;
      }
      if (existing) {
        shared.deleteCell(index);
      }
      shared.insertCell(index, {
        cell_type: cell.cell_type,
        source: cell.source,
        id: cell.id ?? undefined,
        metadata: {}
      } as any);
    });
  });
}
