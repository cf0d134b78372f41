/**
 * Side-by-side diffs: the texts before and after an edit, or a unified patch (git's), shown
 * as two columns with line numbers, changed words marked inside changed lines.
 *
 * jsdiff (the `diff` package) computes the hunks and parses patches; this module only lays
 * them out. Text goes in through `textContent`, never as markup.
 */
import {
  diffWordsWithSpace,
  parsePatch,
  structuredPatch,
  StructuredPatch
} from 'diff';

import { IDiffFile } from './types';
import { note } from './dom';

/** Lines of context around each change. */
const CONTEXT = 3;

/** One row of a side-by-side hunk: a line on the left, on the right, or both. */
interface IRow {
  kind: 'context' | 'change' | 'delete' | 'insert';
  oldNumber?: number;
  oldText?: string;
  newNumber?: number;
  newText?: string;
}

/** Pair a hunk's lines into rows: removals beside the additions that replace them. */
function rows(hunk: StructuredPatch['hunks'][number]): IRow[] {
  const out: IRow[] = [];
  let oldNumber = hunk.oldStart;
  let newNumber = hunk.newStart;
  let removed: string[] = [];
  let added: string[] = [];
  const flush = (): void => {
    const n = Math.max(removed.length, added.length);
    for (let i = 0; i < n; i++) {
      const row: IRow = { kind: 'change' };
      if (i < removed.length) {
        row.oldNumber = oldNumber++;
        row.oldText = removed[i];
      }
      if (i < added.length) {
        row.newNumber = newNumber++;
        row.newText = added[i];
      }
      if (row.oldText === undefined) {
        row.kind = 'insert';
      } else if (row.newText === undefined) {
        row.kind = 'delete';
      }
      out.push(row);
    }
    removed = [];
    added = [];
  };
  for (const line of hunk.lines) {
    const mark = line[0];
    const text = line.slice(1);
    if (mark === '-') {
      if (added.length) {
        flush();
      }
      removed.push(text);
    } else if (mark === '+') {
      added.push(text);
    } else if (mark === ' ') {
      flush();
      out.push({
        kind: 'context',
        oldNumber: oldNumber++,
        oldText: text,
        newNumber: newNumber++,
        newText: text
      });
    }
    // "\ No newline at end of file" says nothing a reader needs here.
  }
  flush();
  return out;
}

function numberCell(row: HTMLTableRowElement, value: number | undefined): void {
  const td = row.insertCell();
  td.className = 'jp-MCPView-diffNumber';
  td.textContent = value === undefined ? '' : String(value);
}

/** A text cell; in a changed line the words that differ from the other side are marked. */
function textCell(
  tr: HTMLTableRowElement,
  text: string | undefined,
  other: string | undefined,
  side: 'old' | 'new',
  kind: IRow['kind']
): void {
  const td = tr.insertCell();
  td.className = 'jp-MCPView-diffText';
  if (text === undefined) {
    td.classList.add('jp-MCPView-diffEmpty');
    return;
  }
  if (kind !== 'context') {
    td.classList.add(
      side === 'old' ? 'jp-MCPView-diffDeleted' : 'jp-MCPView-diffInserted'
    );
  }
  if (
    kind === 'change' &&
    other !== undefined &&
    text.length + other.length < 4000
  ) {
    const parts =
      side === 'old'
        ? diffWordsWithSpace(text, other)
        : diffWordsWithSpace(other, text);
    for (const part of parts) {
      if ((side === 'old' && part.added) || (side === 'new' && part.removed)) {
        continue;
      }
      const changed = side === 'old' ? part.removed : part.added;
      if (changed) {
        const mark = document.createElement('span');
        mark.className =
          side === 'old'
            ? 'jp-MCPView-diffWordDeleted'
            : 'jp-MCPView-diffWordInserted';
        mark.textContent = part.value;
        td.appendChild(mark);
      } else {
        td.appendChild(document.createTextNode(part.value));
      }
    }
    return;
  }
  td.textContent = text;
}

function fileTable(patch: StructuredPatch): HTMLTableElement {
  const table = document.createElement('table');
  table.className = 'jp-MCPView-diffTable';
  const colgroup = document.createElement('colgroup');
  for (const cls of [
    'jp-MCPView-diffNumberCol',
    '',
    'jp-MCPView-diffNumberCol',
    ''
  ]) {
    const col = document.createElement('col');
    if (cls) {
      col.className = cls;
    }
    colgroup.appendChild(col);
  }
  table.appendChild(colgroup);
  const body = table.createTBody();
  patch.hunks.forEach((hunk, i) => {
    if (i > 0 || hunk.oldStart > 1) {
      const gap = body.insertRow();
      gap.className = 'jp-MCPView-diffGap';
      const td = gap.insertCell();
      td.colSpan = 4;
      td.textContent = `⋯ line ${hunk.oldStart} → line ${hunk.newStart}`;
    }
    for (const row of rows(hunk)) {
      const tr = body.insertRow();
      tr.className = `jp-MCPView-diffRow-${row.kind}`;
      numberCell(tr, row.oldNumber);
      textCell(tr, row.oldText, row.newText, 'old', row.kind);
      numberCell(tr, row.newNumber);
      textCell(tr, row.newText, row.oldText, 'new', row.kind);
    }
  });
  return table;
}

/** The name a patch gives its file: the new one (or the old, for a deletion), no a/ b/. */
function patchName(patch: StructuredPatch, fallback?: string): string {
  const strip = (name?: string): string | undefined =>
    name && name !== '/dev/null' ? name.replace(/^[ab]\//, '') : undefined;
  return fallback ?? strip(patch.newFileName) ?? strip(patch.oldFileName) ?? '';
}

function section(
  name: string,
  patch: StructuredPatch | null,
  message?: string
): HTMLElement {
  const box = document.createElement('section');
  box.className = 'jp-MCPView-diffFile';
  const header = document.createElement('header');
  header.className = 'jp-MCPView-diffHeader';
  header.textContent = name || 'Diff';
  if (patch) {
    let added = 0;
    let removed = 0;
    for (const hunk of patch.hunks) {
      for (const line of hunk.lines) {
        added += line[0] === '+' ? 1 : 0;
        removed += line[0] === '-' ? 1 : 0;
      }
    }
    const stats = document.createElement('span');
    stats.className = 'jp-MCPView-diffStats';
    stats.textContent = `+${added} −${removed}`;
    header.appendChild(stats);
  }
  box.appendChild(header);
  if (message) {
    box.appendChild(note(message));
  }
  if (patch && patch.hunks.length) {
    box.appendChild(fileTable(patch));
  } else if (patch && !message) {
    box.appendChild(note('No differences.'));
  }
  return box;
}

/** Lines a server appends to a cut patch ("[… diff cut at N characters …]"). */
function splitNotes(patch: string): { patch: string; notes: string[] } {
  const notes: string[] = [];
  const kept = patch.split('\n').filter(line => {
    if (/^\[… .* …\]$/.test(line.trim())) {
      notes.push(line.trim());
      return false;
    }
    return true;
  });
  return { patch: kept.join('\n'), notes };
}

/** The side-by-side diff of `files` (texts before and after, or patches). */
export function renderDiff(files: IDiffFile[]): HTMLElement {
  const node = document.createElement('div');
  node.className = 'jp-MCPView-diff';
  if (!files.length) {
    node.appendChild(note('No differences.'));
  }
  for (const file of files) {
    const name = file.path ?? '';
    if (file.omitted) {
      node.appendChild(section(name, null, `Not shown: ${file.omitted}.`));
    } else if (file.before !== undefined && file.after !== undefined) {
      const patch = structuredPatch(
        name,
        name,
        file.before,
        file.after,
        '',
        '',
        {
          context: CONTEXT
        }
      );
      node.appendChild(section(name, patch));
    } else if (file.patch !== undefined) {
      const { patch, notes } = splitNotes(file.patch);
      let parsed: StructuredPatch[];
      try {
        parsed = parsePatch(patch);
      } catch (error) {
        const box = section(
          name,
          null,
          `The patch could not be read (${error}); as text:`
        );
        const pre = document.createElement('pre');
        pre.className = 'jp-MCPView-text';
        pre.textContent = file.patch;
        box.appendChild(pre);
        node.appendChild(box);
        continue;
      }
      const real = parsed.filter(
        p => p.hunks.length || p.oldFileName || p.newFileName
      );
      if (!real.length) {
        node.appendChild(
          section(name, { hunks: [] } as any, 'No differences.')
        );
      }
      real.forEach(p =>
        node.appendChild(section(patchName(p, file.path), p, notes.join(' ')))
      );
    }
  }
  return node;
}

/** Whether `text` reads as a unified diff (git's or difflib's). */
export function looksLikeDiff(text: string): boolean {
  return (
    /^(diff --git |--- .*\n\+\+\+ |@@ -\d)/m.test(text) &&
    /\n@@ -\d+(,\d+)? \+\d+/.test(text)
  );
}
