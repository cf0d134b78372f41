/**
 * The variables view: a kernel's variables (as get_kernel_variables answers them) as a
 * sortable, filterable table.
 */
import { dataTable, IColumn } from './table';
import { IVariable, IVariablesData } from './types';
import { element } from './dom';

/** A variable's size: its length, or its shape as rows × columns. */
function sizeOf(variable: IVariable): string {
  if (Array.isArray(variable.shape)) {
    return variable.shape.join(' × ');
  }
  return variable.length === undefined ? '' : String(variable.length);
}

/** The variables view: a sortable, filterable table of a kernel's variables. */
export function renderVariables(data: IVariablesData): HTMLElement {
  const node = element('div', 'jp-MCPView-variables');
  if (data.path) {
    node.appendChild(
      element('div', 'jp-MCPView-title', `Variables of ${data.path}`)
    );
  }
  const columns: IColumn[] = [
    { key: 'name', title: 'Name' },
    { key: 'type', title: 'Type' },
    {
      key: 'size',
      title: 'Size',
      format: (_, row) => sizeOf(row as IVariable)
    },
    { key: 'value', title: 'Value' }
  ];
  const rows = data.variables.map(v => ({ ...v, size: sizeOf(v) }));
  node.appendChild(
    dataTable(rows, columns, { filter: true, noun: 'variables' })
  );
  if (data.omitted) {
    node.appendChild(
      element('p', 'jp-MCPView-note', `${data.omitted} more not shown.`)
    );
  }
  return node;
}
