/**
 * The clients the user allowed with OAuth (claude.ai, VS Code, ...): shown in the activity
 * panel with what each may use and when it was last used, each with a Revoke button.
 */
import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from './request';

/**
 * One grant, as `GET {base_url}mcp/oauth/grants` answers it.
 */
export interface IGrant {
  id: string;
  clientId: string;
  clientName: string;
  registration: 'metadata' | 'dynamic';
  redirectUri: string;
  scopes: string[];
  access: string;
  user: string;
  resource: string;
  created: number;
  lastUsed: number | null;
  expires: number;
}

const GRANTS_PATH = 'mcp/oauth/grants';

/**
 * The section of the activity panel that lists the grants (hidden when the server has OAuth
 * turned off).
 */
export class GrantsSection {
  constructor(settings: ServerConnection.ISettings) {
    this._settings = settings;
    this.node = document.createElement('section');
    this.node.className = 'jp-MCP-grants';
    this.node.hidden = true;
    const header = document.createElement('h2');
    header.className = 'jp-MCP-activity-header';
    header.textContent = 'Clients allowed with OAuth';
    this._empty = document.createElement('p');
    this._empty.className = 'jp-MCP-activity-empty';
    this._empty.textContent = 'No client has an OAuth grant.';
    this._list = document.createElement('ul');
    this._list.className = 'jp-MCP-grants-list';
    this.node.append(header, this._empty, this._list);
  }

  /**
   * The section's element, to be placed in the panel.
   */
  readonly node: HTMLElement;

  /**
   * Ask the server for the grants again and redraw them.
   */
  async refresh(): Promise<void> {
    let response: Response;
    try {
      response = await requestAPI(this._settings, GRANTS_PATH);
    } catch (reason) {
      console.warn('jupyter-mcp: could not list the OAuth grants', reason);
      return;
    }
    if (response.status === 404) {
      this.node.hidden = true; // OAuth is off on this server
      return;
    }
    if (!response.ok) {
      console.warn(
        'jupyter-mcp: listing the OAuth grants failed',
        response.status
      );
      return;
    }
    const { grants } = (await response.json()) as { grants: IGrant[] };
    this.node.hidden = false;
    this._empty.hidden = grants.length > 0;
    this._list.replaceChildren(...grants.map(grant => this._render(grant)));
  }

  private _render(grant: IGrant): HTMLLIElement {
    const item = document.createElement('li');
    item.className = 'jp-MCP-grant';
    item.dataset.grantId = grant.id;
    const head = document.createElement('div');
    head.className = 'jp-MCP-activity-head';
    const name = document.createElement('span');
    name.className = 'jp-MCP-grant-name';
    name.textContent = grant.clientName;
    const revoke = document.createElement('button');
    revoke.className = 'jp-MCP-grant-revoke jp-mod-styled jp-mod-warn';
    revoke.textContent = 'Revoke';
    revoke.title = `End ${grant.clientName}'s access: its next request fails`;
    revoke.addEventListener('click', () => void this._revoke(grant, revoke));
    head.append(name, revoke);
    const who = document.createElement('div');
    who.className = 'jp-MCP-grant-client';
    who.textContent =
      grant.registration === 'metadata'
        ? `metadata document ${grant.clientId}`
        : `registered itself (id ${grant.clientId})`;
    const access = document.createElement('div');
    access.className = 'jp-MCP-grant-access';
    access.textContent = `may use ${grant.access} (${grant.scopes.join(' ')})`;
    const when = document.createElement('div');
    when.className = 'jp-MCP-grant-when';
    when.textContent =
      `allowed ${formatTime(grant.created)} by ${grant.user} · last used ` +
      (grant.lastUsed ? formatTime(grant.lastUsed) : 'never');
    item.append(head, who, access, when);
    return item;
  }

  private async _revoke(
    grant: IGrant,
    button: HTMLButtonElement
  ): Promise<void> {
    button.disabled = true;
    try {
      const response = await requestAPI(
        this._settings,
        `${GRANTS_PATH}/${encodeURIComponent(grant.id)}`,
        { method: 'DELETE' }
      );
      if (!response.ok && response.status !== 404) {
        console.warn('jupyter-mcp: revoking failed', response.status);
      }
    } finally {
      await this.refresh();
    }
  }

  private _settings: ServerConnection.ISettings;
  private _empty: HTMLParagraphElement;
  private _list: HTMLUListElement;
}

function formatTime(seconds: number): string {
  return new Date(seconds * 1000).toLocaleString();
}
