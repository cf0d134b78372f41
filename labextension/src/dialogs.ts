/**
 * Approval dialogs: a tool call that needs the user's consent waits for Approve or Reject.
 */
import { Dialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { LabSocket } from './connection';
import { RequestHandlers, RequestParams } from './protocol';

/**
 * Shows approval dialogs for the server and withdraws them when the server gives up.
 */
export class Approvals {
  constructor(connection: LabSocket) {
    connection.cancelled.connect((_, id) => this._open.get(id)?.reject());
  }

  /**
   * The answer to the server's approval requests.
   */
  readonly handlers = {
    confirm: (params, id) => this.confirm(params, id)
  } satisfies Partial<RequestHandlers>;

  /**
   * Ask the user; true only when the Approve button was pressed.
   */
  async confirm(
    params: RequestParams<'confirm'>,
    id: number
  ): Promise<boolean> {
    const body = new Widget();
    body.addClass('jp-MCP-approval');
    const intro = document.createElement('p');
    intro.textContent = 'An agent connected over MCP wants to run:';
    const tool = document.createElement('p');
    tool.className = 'jp-MCP-approval-tool';
    tool.textContent = `${params.title ?? params.tool} (${params.tool})`;
    const args = document.createElement('pre');
    args.className = 'jp-MCP-approval-arguments';
    args.textContent = params.arguments || '(no arguments)';
    body.node.append(intro, tool, args);
    const dialog = new Dialog<unknown>({
      title: 'Approve agent action?',
      body,
      buttons: [
        Dialog.cancelButton({ label: 'Reject' }),
        Dialog.okButton({ label: 'Approve' })
      ],
      hasClose: true
    });
    dialog.addClass('jp-MCP-approval-dialog');
    this._open.set(id, dialog);
    try {
      const result = await dialog.launch();
      return result.button.accept;
    } finally {
      this._open.delete(id);
    }
  }

  private _open = new Map<number, Dialog<unknown>>();
}
