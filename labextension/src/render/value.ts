/**
 * A tool's value laid out for people: lists of objects as sortable (and, when long,
 * filterable) tables, objects as their fields, diffs side by side, text as text.
 */
import { looksLikeDiff, renderDiff } from './diff';
import { cellText, columnsOf, dataTable, IColumn } from './table';
import { element } from './dom';

function isRecord(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The order of the keys a value's tables show, as the tool gave them (a saved notebook sorts
 * its JSON's keys): `columns` of a list of objects, or an object's `fields` and the `columns`
 * of the lists of objects in it.
 */
export interface IKeyOrder {
  columns?: string[] | { [field: string]: string[] };
  fields?: string[];
}

/** `keys` in `order` first (the ones it names), then the rest as they come. */
function ordered(keys: string[], order?: unknown): string[] {
  if (!Array.isArray(order)) {
    return keys;
  }
  const known = order.filter(key => keys.includes(key));
  return [...known, ...keys.filter(key => !known.includes(key))];
}

function columnsIn(
  rows: { [key: string]: unknown }[],
  order?: unknown
): IColumn[] {
  const columns = columnsOf(rows);
  const keys = ordered(
    columns.map(column => column.key),
    order
  );
  return keys.map(key => columns.find(column => column.key === key) as IColumn);
}

/** A value laid out: tables for lists, diffs side by side, text as text. */
export function renderValue(
  value: unknown,
  order: IKeyOrder = {}
): HTMLElement {
  if (typeof value === 'string') {
    if (looksLikeDiff(value)) {
      return renderDiff([{ patch: value }]);
    }
    return element('pre', 'jp-MCPView-text', value);
  }
  if (Array.isArray(value)) {
    if (!value.length) {
      return element('p', 'jp-MCPView-note', 'Nothing (an empty list).');
    }
    if (value.every(isRecord)) {
      return dataTable(value, columnsIn(value, order.columns), {
        filter: value.length > 5
      });
    }
    return dataTable(
      value.map(item => ({ value: item })),
      [{ key: 'value', title: 'Value' }],
      { filter: value.length > 5 }
    );
  }
  if (isRecord(value)) {
    const node = element('div', 'jp-MCPView-record');
    const scalars: { [key: string]: unknown }[] = [];
    const parts: HTMLElement[] = [];
    const nested = isRecord(order.columns) ? order.columns : {};
    for (const key of ordered(Object.keys(value), order.fields)) {
      const item = value[key];
      if (key === 'diff' && typeof item === 'string') {
        parts.push(renderDiff([{ patch: item }]));
      } else if (Array.isArray(item) && item.length && item.every(isRecord)) {
        const part = element('div', 'jp-MCPView-field');
        part.appendChild(
          element('div', 'jp-MCPView-fieldName', `${key} (${item.length})`)
        );
        part.appendChild(
          dataTable(item, columnsIn(item, nested[key]), {
            filter: item.length > 5
          })
        );
        parts.push(part);
      } else if (typeof item === 'string' && item.includes('\n')) {
        const part = element('div', 'jp-MCPView-field');
        part.appendChild(element('div', 'jp-MCPView-fieldName', key));
        part.appendChild(element('pre', 'jp-MCPView-text', item));
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
      table.classList.add('jp-MCPView-fields');
      node.appendChild(table);
    }
    parts.forEach(part => node.appendChild(part));
    return node;
  }
  return element('pre', 'jp-MCPView-text', cellText(value));
}
