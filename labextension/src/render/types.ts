/**
 * The data tool results carry for their views, as `jupyter_mcp/views/data.py` makes it
 * (`_meta["jupyter-mcp/view"]` of a result), and the MCP result blocks a renderer reads.
 */

/** A content block of an MCP tool result (the ones a renderer shows). */
export interface IContentBlock {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
}

/** An MCP `CallToolResult`, as a host hands it to a view. */
export interface IToolResult {
  content?: IContentBlock[];
  structuredContent?: unknown;
  isError?: boolean;
  _meta?: { [key: string]: unknown };
}

/** One output of a cell, bounded by the server. */
export interface IOutput {
  outputType: string;
  /** stream */
  name?: string;
  text?: string;
  truncated?: boolean;
  /** error */
  ename?: string;
  evalue?: string;
  traceback?: string[];
  /** execute_result, display_data */
  data?: { [mime: string]: unknown };
  metadata?: { [mime: string]: { [key: string]: unknown } };
  /** The position of the output's picture among the result's image blocks. */
  contentImage?: number;
  /** Why (part of) the output is not shown. */
  omitted?: string;
}

/** One cell and its outputs. */
export interface ICellOutputs {
  cellId?: string | null;
  cellType?: string;
  executionCount?: number | null;
  status?: string;
  outputs: IOutput[];
  outputsOmitted?: number;
}

/** The cell-outputs view's data. */
export interface ICellOutputsData {
  view: 'cell-outputs';
  path?: string;
  cells: ICellOutputs[];
  omitted?: number;
}

/** One variable of a kernel (as get_kernel_variables answers it). */
export interface IVariable {
  name: string;
  type: string;
  value: string;
  length?: number;
  shape?: number[];
  [key: string]: unknown;
}

/** The variables view's data. */
export interface IVariablesData {
  view: 'variables';
  path?: string;
  variables: IVariable[];
  omitted?: number;
}

/** One file (or cell) of a diff: its texts before and after, or a unified patch. */
export interface IDiffFile {
  path?: string;
  before?: string;
  after?: string;
  patch?: string;
  omitted?: string;
}

/** The diff view's data. */
export interface IDiffData {
  view: 'diff';
  files: IDiffFile[];
}

export type ViewData = ICellOutputsData | IVariablesData | IDiffData;

/** Where a result carries its view's data. */
export const VIEW_DATA_KEY = 'jupyter-mcp/view';

/**
 * What a renderer needs from its host: HTML sanitizing (JupyterLab's sanitizer, the same
 * class in a view page and the application's own in JupyterLab).
 */
export interface ISanitizer {
  sanitize(dirty: string): string;
}

/** The result's image blocks, in order. */
export function imagesOf(result: IToolResult): IContentBlock[] {
  return (result.content ?? []).filter(block => block.type === 'image');
}

/** The view data a result carries, if any. */
export function viewDataOf(result: IToolResult): ViewData | null {
  const data = result._meta?.[VIEW_DATA_KEY] as ViewData | undefined;
  return data && typeof data === 'object' && 'view' in data ? data : null;
}
