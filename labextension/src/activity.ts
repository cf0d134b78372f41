/**
 * Visibility: a status-bar item (agent connected, last call) and a panel of recent calls.
 */
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { LabSocket } from './connection';
import { GrantsSection } from './grants';
import { IActivityRecord } from './protocol';

/**
 * How recent the last call must be for the status bar to say an agent is connected.
 */
const AGENT_RECENT_MS = 5 * 60 * 1000;
/**
 * Rows kept in the activity panel.
 */
const MAX_ROWS = 200;
/**
 * How often the list of OAuth grants is asked for again while the panel is shown.
 */
const GRANTS_REFRESH_MS = 15000;

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
  <g class="jp-icon3" fill="#616161">
    <path d="M1 8h3l2-5 4 10 2-5h3v1.5h-2l-3 7.5-4-10-1 2.5H1z"/>
  </g>
</svg>`;

export const activityIcon = new LabIcon({
  name: 'jupyter-mcp:activity',
  svgstr: ICON_SVG
});

/**
 * The status-bar item: "MCP: agent connected · last: get_file_text_by_path".
 */
export class MCPStatus extends Widget {
  constructor(connection: LabSocket) {
    super();
    this.addClass('jp-MCP-status');
    this.node.title = 'jupyter-mcp: click to show recent tool calls';
    this._connection = connection;
    connection.connectedChanged.connect(() => this.refresh());
    connection.activity.connect((_, record) => {
      this._last = record;
      this.refresh();
    });
    // Turn "agent connected" back into "ready" once the agent has been quiet for a while.
    this._timer = window.setInterval(() => this.refresh(), 30000);
    this.refresh();
  }

  /**
   * Redraw the text from the connection and the last call.
   */
  refresh(): void {
    let text: string;
    if (!this._connection.isConnected) {
      text = 'MCP: offline';
    } else if (this._last && Date.now() - this._last.at < AGENT_RECENT_MS) {
      const outcome = this._last.running
        ? ' (running)'
        : this._last.task?.status === 'cancelled'
          ? ' (cancelled)'
          : this._last.ok
            ? ''
            : ' (failed)';
      text = `MCP: agent connected · last: ${this._last.tool}${outcome}`;
    } else {
      text = 'MCP: ready';
    }
    this.node.textContent = text;
  }

  dispose(): void {
    window.clearInterval(this._timer);
    super.dispose();
  }

  private _connection: LabSocket;
  private _last: IActivityRecord | null = null;
  private _timer: number;
}

/**
 * The activity panel: the clients allowed with OAuth, then recent tool calls, newest first. A
 * call that runs for a while shows as running (with its time so far) until its outcome
 * replaces the entry. A call that runs as an MCP task shows its task (id, what runs now) from
 * the moment the client is given the task, long after the request that started it was
 * answered, until the task ends.
 */
export class ActivityPanel extends Widget {
  constructor(connection: LabSocket, settings: ServerConnection.ISettings) {
    super();
    this.id = 'jupyter-mcp-activity';
    this.addClass('jp-MCP-activity');
    this.title.icon = activityIcon;
    this.title.caption = 'MCP activity: recent tool calls of agents';
    const header = document.createElement('h2');
    header.className = 'jp-MCP-activity-header';
    header.textContent = 'MCP activity';
    this._empty = document.createElement('p');
    this._empty.className = 'jp-MCP-activity-empty';
    this._empty.textContent = 'No tool calls yet.';
    this._list = document.createElement('ul');
    this._list.className = 'jp-MCP-activity-list';
    this._grants = new GrantsSection(settings);
    this.node.append(this._grants.node, header, this._empty, this._list);
    connection.activity.connect((_, record) => {
      this.add(record);
      this._refreshGrantsSoon();
    });
    connection.welcomed.connect((_, records) => this._resync(records));
    this._timer = window.setInterval(() => this._tick(), 1000);
  }

  /**
   * A call may come from a client allowed a moment ago, and changes when one was last used:
   * ask for the grants again shortly (once for a burst of calls) while the panel is shown.
   */
  private _refreshGrantsSoon(): void {
    if (!this.isVisible || this._grantsSoon) {
      return;
    }
    this._grantsSoon = window.setTimeout(() => {
      this._grantsSoon = 0;
      void this._grants.refresh();
    }, 1000);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._grants.refresh();
    this._grantsTimer = window.setInterval(
      () => void this._grants.refresh(),
      GRANTS_REFRESH_MS
    );
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    window.clearInterval(this._grantsTimer);
  }

  /**
   * Add one call at the top, or put its outcome in place of its running entry.
   */
  add(record: IActivityRecord): void {
    const item = render(record);
    const previous = record.id ? this._running.get(record.id) : undefined;
    if (previous?.isConnected) {
      previous.replaceWith(item);
    } else {
      this._list.prepend(item);
    }
    if (record.id) {
      if (record.running) {
        this._running.set(record.id, item);
      } else {
        this._running.delete(record.id);
      }
    }
    while (this._list.children.length > MAX_ROWS) {
      this._list.lastElementChild?.remove();
    }
    this._empty.hidden = true;
  }

  dispose(): void {
    window.clearInterval(this._timer);
    window.clearInterval(this._grantsTimer);
    super.dispose();
  }

  /**
   * After a (re)connection: a call shown as running that the server no longer runs, and whose
   * outcome never came (the server restarted), ended without this window seeing how.
   */
  private _resync(records: IActivityRecord[]): void {
    const running = new Set(
      records.filter(r => r.running && r.id).map(r => r.id)
    );
    for (const [id, item] of [...this._running]) {
      if (!running.has(id)) {
        this._running.delete(id);
        item.classList.remove('jp-mod-running');
        const result = item.querySelector('.jp-MCP-activity-result');
        if (result) {
          result.textContent = 'ended; its outcome was not received';
        }
      }
    }
  }

  /**
   * Advance the time shown on running entries.
   */
  private _tick(): void {
    for (const item of this._running.values()) {
      const since = Number(item.dataset.runningSince);
      const duration = item.querySelector('.jp-MCP-activity-duration');
      if (duration && since) {
        duration.textContent = `running ${formatDuration(Date.now() - since)}`;
      }
    }
  }

  private _list: HTMLUListElement;
  private _empty: HTMLParagraphElement;
  private _running = new Map<string, HTMLLIElement>();
  private _timer: number;
  private _grants: GrantsSection;
  private _grantsTimer = 0;
  private _grantsSoon = 0;
}

/**
 * One entry: the tool and, beside it (below it when the name is long), its duration and time;
 * then the arguments and the outcome. Every part wraps, so nothing is cut in a narrow sidebar.
 */
function render(record: IActivityRecord): HTMLLIElement {
  const item = document.createElement('li');
  const state = record.running
    ? 'jp-mod-running'
    : record.ok
      ? 'jp-mod-ok'
      : 'jp-mod-error';
  item.className = `jp-MCP-activity-item ${state}`;
  const head = document.createElement('div');
  head.className = 'jp-MCP-activity-head';
  const tool = document.createElement('span');
  tool.className = 'jp-MCP-activity-tool';
  tool.textContent = record.tool;
  const meta = document.createElement('span');
  meta.className = 'jp-MCP-activity-meta';
  const duration = document.createElement('span');
  duration.className = 'jp-MCP-activity-duration';
  duration.textContent = record.running
    ? `running ${formatDuration(record.durationMs)}`
    : formatDuration(record.durationMs);
  const time = document.createElement('span');
  time.className = 'jp-MCP-activity-time';
  time.textContent = new Date(record.at).toLocaleTimeString();
  meta.append(duration, ' · ', time);
  head.append(tool, meta);
  item.append(head);
  if (record.task) {
    item.classList.add('jp-mod-task');
    item.dataset.taskId = record.task.id;
    const task = document.createElement('div');
    task.className = 'jp-MCP-activity-task';
    task.textContent = `task ${record.task.id.slice(0, 8)} · ${record.task.status}`;
    task.title = `MCP task ${record.task.id}`;
    item.append(task);
  }
  if (record.arguments) {
    const args = document.createElement('div');
    args.className = 'jp-MCP-activity-arguments';
    args.textContent = record.arguments;
    item.append(args);
  }
  const result = document.createElement('div');
  result.className = 'jp-MCP-activity-result';
  result.textContent = record.running
    ? record.task?.message || 'running…'
    : record.task?.status === 'cancelled'
      ? 'cancelled'
      : record.ok
        ? 'ok'
        : `error: ${record.error ?? ''}`;
  item.append(result);
  if (record.running) {
    // The window's own clock from here on: the server's may differ.
    item.dataset.runningSince = String(Date.now() - record.durationMs);
  }
  return item;
}

function formatDuration(ms: number): string {
  return ms < 1000
    ? `${ms.toFixed(ms < 10 ? 1 : 0)} ms`
    : `${(ms / 1000).toFixed(2)} s`;
}
