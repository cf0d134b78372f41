/**
 * Tables people sort and filter: DataFrames' HTML tables made sortable, and tables built from
 * rows of JSON objects (variables, lists of results) with a filter box.
 *
 * A click on a column's header sorts the rows by it (again: the other way, a third time: as
 * they came); numbers sort as numbers, empty cells and NaN last.
 */

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?%?$/i;
const MISSING = new Set(['', 'nan', 'none', 'null', 'nat', '<na>']);

type Order = 'ascending' | 'descending' | 'none';

function sortKey(text: string): number | null {
  const trimmed = text.trim();
  return NUMBER.test(trimmed) ? parseFloat(trimmed) : null;
}

/** Compare two cell texts, numbers as numbers when the whole column is numeric. */
function compare(a: string, b: string, numeric: boolean): number {
  const missingA = MISSING.has(a.trim().toLowerCase());
  const missingB = MISSING.has(b.trim().toLowerCase());
  if (missingA || missingB) {
    return missingA === missingB ? 0 : missingA ? 1 : -1;
  }
  if (numeric) {
    return (sortKey(a) as number) - (sortKey(b) as number);
  }
  return a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' });
}

/** The cell of `row` at column `column`, counting column spans. */
function cellAt(
  row: HTMLTableRowElement,
  column: number
): HTMLTableCellElement | null {
  let at = 0;
  for (const cell of Array.from(row.cells)) {
    if (column < at + cell.colSpan) {
      return cell;
    }
    at += cell.colSpan;
  }
  return null;
}

/**
 * Sort `body`'s rows by `column`, in `order` (`none`: the original order, kept in
 * `original`). Missing cells sort last either way.
 */
function sortRows(
  body: HTMLTableSectionElement,
  original: HTMLTableRowElement[],
  column: number,
  order: Order
): void {
  let rows = original.slice();
  if (order !== 'none') {
    const texts = rows.map(row => cellAt(row, column)?.textContent ?? '');
    const present = texts.filter(t => !MISSING.has(t.trim().toLowerCase()));
    const numeric =
      present.length > 0 && present.every(t => sortKey(t) !== null);
    const indexed = rows.map((row, i) => ({ row, text: texts[i], i }));
    indexed.sort((x, y) => {
      const missingX = MISSING.has(x.text.trim().toLowerCase());
      const missingY = MISSING.has(y.text.trim().toLowerCase());
      if (missingX !== missingY) {
        return missingX ? 1 : -1;
      }
      const c = compare(x.text, y.text, numeric);
      return (order === 'ascending' ? c : -c) || x.i - y.i;
    });
    rows = indexed.map(entry => entry.row);
  }
  rows.forEach(row => body.appendChild(row));
}

/** Make the header cells of `headers` sort `body` when clicked. */
function sortOnClick(
  headers: HTMLTableCellElement[],
  body: HTMLTableSectionElement
): void {
  const original = Array.from(body.rows);
  let column = 0;
  headers.forEach(header => {
    const at = column;
    column += header.colSpan;
    if (header.colSpan !== 1) {
      return;
    }
    header.classList.add('jp-MCPView-sortable');
    header.tabIndex = 0;
    header.setAttribute('aria-sort', 'none');
    header.title = 'Sort by this column';
    const sort = (): void => {
      const current = header.getAttribute('aria-sort') as Order;
      const next: Order =
        current === 'none'
          ? 'ascending'
          : current === 'ascending'
            ? 'descending'
            : 'none';
      headers.forEach(
        h => h.hasAttribute('aria-sort') && h.setAttribute('aria-sort', 'none')
      );
      header.setAttribute('aria-sort', next);
      sortRows(body, original, at, next);
    };
    header.addEventListener('click', sort);
    header.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        sort();
      }
    });
  });
}

/**
 * Make an HTML table (a DataFrame's) sortable by its columns, when it has a header and rows
 * that sorting cannot break (no cell spanning several rows, as a MultiIndex makes).
 */
export function makeSortable(table: HTMLTableElement): void {
  const head = table.tHead;
  const body = table.tBodies[0];
  if (!head || !body || table.tBodies.length !== 1 || body.rows.length < 2) {
    return;
  }
  if (
    Array.from(body.querySelectorAll('td, th')).some(
      c => (c as HTMLTableCellElement).rowSpan > 1
    )
  ) {
    return;
  }
  const lastRow = head.rows[head.rows.length - 1];
  const width = (row: HTMLTableRowElement): number =>
    Array.from(row.cells).reduce((n, cell) => n + cell.colSpan, 0);
  if (!lastRow || width(lastRow) !== width(body.rows[0])) {
    return;
  }
  table.classList.add('jp-MCPView-sortableTable');
  sortOnClick(Array.from(lastRow.cells), body);
}

/** A column of a built table: the key in each row and its header. */
export interface IColumn {
  key: string;
  title: string;
  /** Right-aligned, as numbers are. */
  numeric?: boolean;
  /** The cell's text, when not the value's own. */
  format?: (value: unknown, row: { [key: string]: unknown }) => string;
}

/** A value as a table cell shows it. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) {
    return '';
  }
  if (typeof value === 'string') {
    return value;
  }
  if (typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  return JSON.stringify(value);
}

/** The columns of rows of objects: every key, in the order they first appear. */
export function columnsOf(rows: { [key: string]: unknown }[]): IColumn[] {
  const keys: string[] = [];
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      if (!keys.includes(key)) {
        keys.push(key);
      }
    }
  }
  return keys.map(key => ({
    key,
    title: key,
    numeric: rows.every(
      row => row[key] === undefined || typeof row[key] === 'number'
    )
  }));
}

/** Options of {@link dataTable}. */
export interface ITableOptions {
  /** A filter box above the table: rows whose text has every word typed stay. */
  filter?: boolean;
  /** What the rows are, for the count ("3 of 12 variables"). */
  noun?: string;
}

/** A sortable (and filterable) table of `rows`. */
export function dataTable(
  rows: { [key: string]: unknown }[],
  columns: IColumn[] = columnsOf(rows),
  options: ITableOptions = {}
): HTMLElement {
  const box = document.createElement('div');
  box.className = 'jp-MCPView-dataTable';
  const table = document.createElement('table');
  table.className = 'jp-MCPView-table';
  const head = table.createTHead().insertRow();
  for (const column of columns) {
    const th = document.createElement('th');
    th.textContent = column.title;
    if (column.numeric) {
      th.classList.add('jp-MCPView-numeric');
    }
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const column of columns) {
      const td = tr.insertCell();
      const text = column.format
        ? column.format(row[column.key], row)
        : cellText(row[column.key]);
      td.textContent = text.length > 300 ? text.slice(0, 299) + '…' : text;
      if (text.length > 300) {
        td.title = text;
      }
      if (column.numeric) {
        td.classList.add('jp-MCPView-numeric');
      }
    }
  }
  sortOnClick(Array.from(head.cells), body);
  if (options.filter) {
    const bar = document.createElement('div');
    bar.className = 'jp-MCPView-tableBar';
    const input = document.createElement('input');
    input.type = 'search';
    input.className = 'jp-MCPView-filter';
    input.placeholder = 'Filter';
    input.setAttribute('aria-label', 'Filter the rows');
    const count = document.createElement('span');
    count.className = 'jp-MCPView-count';
    const noun = options.noun ?? 'rows';
    const update = (): void => {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      let shown = 0;
      for (const tr of Array.from(body.rows)) {
        const text = (tr.textContent ?? '').toLowerCase();
        const keep = words.every(word => text.includes(word));
        tr.hidden = !keep;
        shown += keep ? 1 : 0;
      }
      count.textContent =
        shown === rows.length
          ? `${rows.length} ${noun}`
          : `${shown} of ${rows.length} ${noun}`;
    };
    input.addEventListener('input', update);
    update();
    bar.append(input, count);
    box.appendChild(bar);
  }
  box.appendChild(table);
  return box;
}
