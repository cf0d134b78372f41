/**
 * A tool result as people would rather look at it: the view its data names (cell outputs,
 * variables, a diff), else its value laid out — lists of objects as sortable, filterable
 * tables, diffs side by side, pictures as pictures, the rest as text.
 *
 * The MCP Apps pages and the notebook's `application/vnd.jupyter-mcp.result+json` renderer
 * (the IPython extension's results) both draw through here.
 */
import { renderDiff } from './diff';
import { IOutputContext, renderCellOutputs } from './outputs';
import { IKeyOrder, renderValue } from './value';
import { renderVariables } from './variables';
import {
  imagesOf,
  ISanitizer,
  IToolResult,
  viewDataOf,
  ViewData
} from './types';
import { element } from './dom';

/** The view its data names. */
export function renderView(
  data: ViewData,
  context: IOutputContext
): HTMLElement {
  if (data.view === 'cell-outputs') {
    return renderCellOutputs(data, context);
  }
  if (data.view === 'variables') {
    return renderVariables(data);
  }
  return renderDiff(data.files);
}

/** What the notebook renderer is given for one tool result (the IPython extension's). */
export interface IResultBundle {
  tool: string;
  /** The tool's answer as Python got it. */
  value?: unknown;
  /** The order of its tables' keys (see IKeyOrder). */
  order?: IKeyOrder;
  result: IToolResult;
}

/** A tool result: its view when it has one, else its value; then its pictures. */
export function renderResult(
  bundle: IResultBundle,
  sanitizer: ISanitizer
): HTMLElement {
  const node = element('div', 'jp-MCPView-result');
  const result = bundle.result ?? {};
  const images = imagesOf(result);
  if (result.isError) {
    const box = element('div', 'jp-MCPView-error');
    box.appendChild(
      element('div', 'jp-MCPView-errorName', `${bundle.tool} failed`)
    );
    const text = (result.content ?? []).map(b => b.text ?? '').join('\n');
    box.appendChild(element('pre', 'jp-MCPView-traceback', text));
    node.appendChild(box);
    return node;
  }
  const data = viewDataOf(result);
  if (data) {
    node.appendChild(renderView(data, { sanitizer, images }));
    return node;
  }
  const value =
    bundle.value !== undefined
      ? bundle.value
      : (result.structuredContent ??
        (result.content ?? []).find(b => b.type === 'text')?.text);
  node.appendChild(renderValue(value, bundle.order));
  for (const image of images) {
    const img = document.createElement('img');
    img.className = 'jp-MCPView-picture';
    img.alt = `${bundle.tool} picture`;
    img.src = `data:${image.mimeType};base64,${image.data}`;
    node.appendChild(img);
  }
  return node;
}
