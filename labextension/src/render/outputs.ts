/**
 * Notebook cell outputs as JupyterLab shows them, from the bounded data a result carries:
 * streams and tracebacks with their colours, HTML (sanitized, tables sortable), Markdown,
 * LaTeX as its text, SVG and pictures, JSON, charts from Plotly and Vega JSON.
 *
 * A rich type that cannot be shown (too large for a view, a chart the bundled libraries
 * cannot draw) falls back on the output's picture, then on its text, and says why.
 */
import { marked } from 'marked';

import { appendAnsi } from './ansi';
import { drawChart, isChart } from './charts';
import { safeFragment } from './sanitize';
import { makeSortable } from './table';
import {
  ICellOutputs,
  ICellOutputsData,
  IContentBlock,
  IOutput,
  ISanitizer
} from './types';
import { element, note } from './dom';

/** The rich types drawn, in order of preference after the charts. */
const RICH_ORDER = [
  'text/html',
  'text/markdown',
  'text/latex',
  'image/svg+xml',
  'image/png',
  'image/jpeg',
  'image/gif',
  'application/json',
  'text/plain'
];

/** What outputs need from where they are shown. */
export interface IOutputContext {
  sanitizer: ISanitizer;
  /** The result's image content blocks, in order (an output names its picture's position). */
  images: IContentBlock[];
}

function asText(value: unknown): string {
  if (Array.isArray(value)) {
    return value.join('');
  }
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function ansiBlock(className: string, text: string): HTMLElement {
  const pre = element('pre', className);
  appendAnsi(pre, text);
  return pre;
}

function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function picture(
  src: string,
  metadata?: { [key: string]: unknown }
): HTMLElement {
  const img = document.createElement('img');
  img.className = 'jp-MCPView-picture';
  img.alt = 'output picture';
  img.src = src;
  if (metadata) {
    if (typeof metadata.width === 'number') {
      img.width = metadata.width;
    }
    if (typeof metadata.height === 'number') {
      img.height = metadata.height;
    }
  }
  return img;
}

/** The output's picture as a data URI (from its data, or the result's image blocks). */
function pictureOf(output: IOutput, context: IOutputContext): string | null {
  for (const mime of ['image/png', 'image/jpeg', 'image/gif']) {
    const data = output.data?.[mime];
    if (typeof data === 'string') {
      return `data:${mime};base64,${data.replace(/\s/g, '')}`;
    }
  }
  if (output.contentImage !== undefined) {
    const block = context.images[output.contentImage];
    if (block?.data && block.mimeType?.startsWith('image/')) {
      return `data:${block.mimeType};base64,${block.data}`;
    }
  }
  return null;
}

/** An HTML output, sanitized, its tables sortable. */
export function htmlBlock(
  html: string,
  sanitizer: ISanitizer,
  className = 'jp-MCPView-html'
): HTMLElement {
  const node = element('div', className);
  node.appendChild(safeFragment(sanitizer, html));
  node
    .querySelectorAll('table')
    .forEach(table => makeSortable(table as HTMLTableElement));
  return node;
}

/** Markdown, rendered by marked (as JupyterLab does) and sanitized. */
export function markdownBlock(
  text: string,
  sanitizer: ISanitizer
): HTMLElement {
  const html = marked.parse(text, { async: false, gfm: true }) as string;
  return htmlBlock(html, sanitizer, 'jp-MCPView-markdown');
}

function dataOutput(output: IOutput, context: IOutputContext): HTMLElement {
  const box = element('div', 'jp-MCPView-output');
  const data = output.data ?? {};
  const chart = Object.keys(data).find(isChart);
  const fallback = (reason?: string): void => {
    box.replaceChildren();
    if (reason) {
      box.appendChild(note(`Chart not drawn: ${reason}.`));
    }
    const src = pictureOf(output, context);
    if (src) {
      box.appendChild(picture(src));
    } else if (typeof data['text/plain'] === 'string') {
      box.appendChild(
        ansiBlock('jp-MCPView-text', data['text/plain'] as string)
      );
    }
  };
  if (chart) {
    const target = element('div', 'jp-MCPView-chart');
    box.appendChild(target);
    drawChart(target, chart, data[chart]).catch(error =>
      fallback(error?.message ?? String(error))
    );
    return box;
  }
  for (const mime of RICH_ORDER) {
    const value = data[mime];
    const isPicture = mime.startsWith('image/') && mime !== 'image/svg+xml';
    if (
      value === undefined &&
      !(isPicture && output.contentImage !== undefined)
    ) {
      continue;
    }
    if (mime === 'text/html') {
      box.appendChild(htmlBlock(asText(value), context.sanitizer));
    } else if (mime === 'text/markdown') {
      box.appendChild(markdownBlock(asText(value), context.sanitizer));
    } else if (mime === 'text/latex') {
      box.appendChild(element('pre', 'jp-MCPView-latex', asText(value)));
    } else if (mime === 'image/svg+xml') {
      // As a picture: an SVG shown by <img> runs no script and loads nothing.
      box.appendChild(
        picture(`data:image/svg+xml;base64,${base64(asText(value))}`)
      );
    } else if (isPicture) {
      const src = pictureOf(output, context);
      if (!src) {
        continue;
      }
      box.appendChild(picture(src, output.metadata?.[mime]));
    } else if (mime === 'application/json') {
      box.appendChild(
        element('pre', 'jp-MCPView-json', JSON.stringify(value, null, 2))
      );
    } else {
      box.appendChild(ansiBlock('jp-MCPView-text', asText(value)));
    }
    break;
  }
  if (output.omitted) {
    box.appendChild(note(`Not shown: ${output.omitted}.`));
  }
  return box;
}

/** One output. */
export function renderOutput(
  output: IOutput,
  context: IOutputContext
): HTMLElement {
  if (output.outputType === 'stream') {
    const stderr = output.name === 'stderr';
    const pre = ansiBlock(
      stderr ? 'jp-MCPView-stream jp-MCPView-stderr' : 'jp-MCPView-stream',
      output.text ?? ''
    );
    return pre;
  }
  if (output.outputType === 'error') {
    const box = element('div', 'jp-MCPView-error');
    box.appendChild(
      element(
        'div',
        'jp-MCPView-errorName',
        `${output.ename}: ${output.evalue}`
      )
    );
    if (output.traceback?.length) {
      box.appendChild(
        ansiBlock('jp-MCPView-traceback', output.traceback.join('\n'))
      );
    }
    return box;
  }
  return dataOutput(output, context);
}

function cellBlock(cell: ICellOutputs, context: IOutputContext): HTMLElement {
  const box = element('section', 'jp-MCPView-cell');
  const header = element('header', 'jp-MCPView-cellHeader');
  const count = cell.executionCount ?? ' ';
  header.appendChild(element('span', 'jp-MCPView-prompt', `[${count}]:`));
  if (cell.cellId) {
    header.appendChild(
      element('span', 'jp-MCPView-cellId', `cell ${cell.cellId}`)
    );
  }
  if (cell.status && cell.status !== 'ok') {
    header.appendChild(
      element(
        'span',
        `jp-MCPView-cellStatus jp-MCPView-cellStatus-${cell.status}`,
        cell.status
      )
    );
  }
  box.appendChild(header);
  const outputs = element('div', 'jp-MCPView-outputs');
  if (!cell.outputs.length) {
    outputs.appendChild(
      note(
        cell.cellType && cell.cellType !== 'code'
          ? `A ${cell.cellType} cell.`
          : 'No output.'
      )
    );
  }
  cell.outputs.forEach((output, i) => {
    if (cell.outputsOmitted && i === Math.floor(cell.outputs.length / 2)) {
      outputs.appendChild(
        note(`${cell.outputsOmitted} outputs in between are not shown.`)
      );
    }
    outputs.appendChild(renderOutput(output, context));
  });
  box.appendChild(outputs);
  return box;
}

/** The cell-outputs view: every cell of the result with its outputs. */
export function renderCellOutputs(
  data: ICellOutputsData,
  context: IOutputContext
): HTMLElement {
  const node = element('div', 'jp-MCPView-cellOutputs');
  if (data.path) {
    node.appendChild(element('div', 'jp-MCPView-title', data.path));
  }
  if (!data.cells.length) {
    node.appendChild(note('No cell ran.'));
  }
  for (const cell of data.cells) {
    node.appendChild(cellBlock(cell, context));
  }
  return node;
}
