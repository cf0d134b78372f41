/**
 * A tool's value laid out for people: lists of objects as sortable (and, when long,
 * filterable) tables, objects as their fields, diffs side by side, text as text.
 */
import { looksLikeDiff, renderDiff } from './diff';
import { cellText, columnsOf, dataTable } from './table';

function element(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function isRecord(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value laid out: tables for lists, diffs side by side, text as text. */
export function renderValue(value: unknown): HTMLElement {
  if (typeof value === 'string') {
    if (looksLikeDiff(value)) {
      return renderDiff([{ patch: value }]);
    }
    return element('pre', 'jp-MCP-text', value);
  }
  if (Array.isArray(value)) {
    if (!value.length) {
      return element('p', 'jp-MCP-note', 'Nothing (an empty list).');
    }
    if (value.every(isRecord)) {
      return dataTable(value, columnsOf(value), { filter: value.length > 5 });
    }
    return dataTable(
      value.map(item => ({ value: item })),
      [{ key: 'value', title: 'Value' }],
      { filter: value.length > 5 }
    );
  }
  if (isRecord(value)) {
    const node = element('div', 'jp-MCP-record');
    const scalars: { [key: string]: unknown }[] = [];
    const parts: HTMLElement[] = [];
    for (const [key, item] of Object.entries(value)) {
      if (key === 'diff' && typeof item === 'string') {
        parts.push(renderDiff([{ patch: item }]));
      } else if (Array.isArray(item) && item.length && item.every(isRecord)) {
        const part = element('div', 'jp-MCP-field');
        part.appendChild(
          element('div', 'jp-MCP-fieldName', `${key} (${item.length})`)
        );
        part.appendChild(
          dataTable(item, columnsOf(item), { filter: item.length > 5 })
        );
        parts.push(part);
      } else if (typeof item === 'string' && item.includes('\n')) {
        const part = element('div', 'jp-MCP-field');
        part.appendChild(element('div', 'jp-MCP-fieldName', key));
        part.appendChild(element('pre', 'jp-MCP-text', item));
        parts.push(part);
      } else {
        scalars.push({ key, value: cellText(item) });
      }
    }
    if (scalars.length) {
      const table = dataTable(scalars, [
        { key: 'key', title: 'Field' },
        { key: 'value', title: 'Value' }
      ]);
      table.classList.add('jp-MCP-fields');
      node.appendChild(table);
    }
    parts.forEach(part => node.appendChild(part));
    return node;
  }
  return element('pre', 'jp-MCP-text', cellText(value));
}
