/**
 * Messages between a JupyterLab window and the server's `mcp/bridge` websocket.
 *
 * The keys mirror the Python side (`jupyter_mcp/lab/editor.py`) exactly. The requests the
 * server sends, and their parameters, are not restated here: they are typed from
 * `protocol.json`, the list the Python side reads too (`jupyter_mcp/lab/protocol.py`).
 */
import protocol from '../../jupyter_mcp/lab/protocol.json';

type Requests = (typeof protocol)['requests'];

/**
 * A request method the server may send.
 */
export type RequestMethod = keyof Requests;

/**
 * Fields given by example values, a name ending in `?` being optional: their types.
 */
type FieldsOf<T> = {
  [K in keyof T as K extends `${string}?` ? never : K]: T[K];
} & {
  [K in keyof T as K extends `${infer Name}?` ? Name : never]?: T[K];
};

/**
 * The parameters of request `M`.
 */
export type RequestParams<M extends RequestMethod> = FieldsOf<
  Requests[M]['params']
>;

/**
 * Answers request `M`; a thrown error becomes the tool's error message.
 */
export type RequestHandler<M extends RequestMethod> = (
  params: RequestParams<M>,
  requestId: number
) => unknown;

/**
 * An answer for every request (each module provides some of them).
 */
export type RequestHandlers = { [M in RequestMethod]: RequestHandler<M> };

/**
 * Whether the server's `method` is a request of protocol.json.
 */
export function isRequestMethod(method: string): method is RequestMethod {
  return Object.prototype.hasOwnProperty.call(protocol.requests, method);
}

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
 * Window → server: a document this window shows changed (see changes.ts).
 */
export interface IChangedMessage {
  type: 'changed';
  path: string;
  kind: 'file' | 'notebook';
  /**
   * The notebook cells that changed (inserted, moved and deleted ones included).
   */
  cells?: string[];
  /**
   * Whether the text may have changed (sources, cell types, metadata), not only outputs.
   */
  sources: boolean;
  /**
   * The server's requests and reload notices the change was made for.
   */
  origins: number[];
  /**
   * Whether the window's user made (part of) it.
   */
  user: boolean;
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
 * One tool call (running or finished), for the activity panel.
 */
export interface IActivityRecord {
  /**
   * The call's id: its running entry and its outcome share it.
   */
  id?: string | null;
  /**
   * True while the call runs (its outcome replaces this entry).
   */
  running?: boolean;
  tool: string;
  arguments: string;
  ok: boolean;
  error: string | null;
  durationMs: number;
  /**
   * Milliseconds since the epoch.
   */
  at: number;
  /**
   * Set when the call runs as an MCP task: it outlives the request that started it, and the
   * client collects its result later.
   */
  task?: IActivityTask | null;
}

/**
 * The MCP task a call runs as.
 */
export interface IActivityTask {
  /**
   * The task id (a run of cells has it as its executionId too).
   */
  id: string;
  /**
   * "working", then "completed", "failed" or "cancelled".
   */
  status: string;
  /**
   * What runs now (the cell, its last output line), or how it ended.
   */
  message?: string | null;
}

/**
 * Server → window: a request to answer.
 */
export interface IRequestMessage {
  type: 'request';
  id: number;
  method: string;
  params: { [key: string]: unknown };
}

/**
 * Server → window: any message.
 */
export type ServerMessage =
  | IRequestMessage
  | { type: 'cancel'; id: number }
  | { type: 'reload'; path: string; origin?: number }
  | { type: 'activity'; record: IActivityRecord }
  // The server gathers the panel's updates (~50 ms) and sends them as one: each entry's last
  // state, in the order the entries were first shown. 'activity' (one) is a server's before.
  | { type: 'activities'; records: IActivityRecord[] }
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
