/**
 * Messages between a JupyterLab window and the server's `mcp/bridge` websocket.
 *
 * The keys mirror the Python side (`jupyter_mcp/editor.py`) exactly.
 */

/**
 * A document as the server knows it: path relative to the server root.
 */
export interface IDocumentInfo {
  path: string;
  type: 'file' | 'notebook';
  dirty: boolean;
}

/**
 * A position in the active editor (0-based line and column).
 */
export interface IPositionInfo {
  line: number;
  column: number;
}

/**
 * The selection of the active editor.
 */
export interface ISelectionInfo {
  start: IPositionInfo;
  end: IPositionInfo;
  /**
   * The active cell's index, in a notebook.
   */
  cell?: number;
}

/**
 * Window → server: what the window shows.
 */
export interface IStateMessage {
  type: 'state';
  focus?: boolean;
  active?: IDocumentInfo | null;
  open?: IDocumentInfo[];
  selection?: ISelectionInfo | null;
}

/**
 * Window → server: the answer to a request.
 */
export interface IResponseMessage {
  type: 'response';
  id: number;
  result?: unknown;
  error?: string;
}

/**
 * One finished tool call, for the activity panel.
 */
export interface IActivityRecord {
  tool: string;
  arguments: string;
  ok: boolean;
  error: string | null;
  durationMs: number;
  /**
   * Milliseconds since the epoch.
   */
  at: number;
}

/**
 * Server → window: a request to answer.
 */
export interface IRequestMessage {
  type: 'request';
  id: number;
  method: string;
  params: { [key: string]: any };
}

/**
 * Server → window: any message.
 */
export type ServerMessage =
  | IRequestMessage
  | { type: 'cancel'; id: number }
  | { type: 'reload'; path: string }
  | { type: 'activity'; record: IActivityRecord }
  | { type: 'breakpoints'; files: unknown[] }
  | { type: 'welcome'; root: string; activity: IActivityRecord[] };

/**
 * A cell of the active notebook as sent to the server (no outputs).
 */
export interface ICellInfo {
  id: string;
  cell_type: 'code' | 'markdown' | 'raw';
  source: string;
  metadata?: { [key: string]: any };
}
