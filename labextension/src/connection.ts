/**
 * The window's websocket to the server, kept open across server restarts.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { UUID } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import {
  IActivityRecord,
  IRequestMessage,
  IResponseMessage,
  IStateMessage,
  isRequestMethod,
  RequestHandlers,
  ServerMessage
} from './protocol';

const MIN_BACKOFF_MS = 250;

/**
 * The server asks to reload a document a tool wrote; `origin` names the notice.
 */
export interface IReloadNotice {
  path: string;
  origin: number | null;
}
const MAX_BACKOFF_MS = 10000;
const INTERACTION_THROTTLE_MS = 1000;

/**
 * This window's side of the lab socket (`{base_url}mcp/bridge`): state reports out, the
 * server's requests and notices in.
 */
export class LabSocket {
  /**
   * `settings` are the application's (`app.serviceManager.serverSettings`): its base and
   * websocket URLs, token and WebSocket class.
   */
  constructor(settings: ServerConnection.ISettings) {
    this._settings = settings;
    // A fresh id per page load; reconnections of this page keep it.
    this.windowId = UUID.uuid4().replace(/-/g, '');
    window.addEventListener('focus', this._onFocus);
    document.addEventListener('visibilitychange', this._onVisibility);
    // Focus events do not always come (headless browsers, embedded frames): a click or a key
    // in this window also makes it the one the user works in.
    document.addEventListener('pointerdown', this._onInteraction, true);
    document.addEventListener('keydown', this._onInteraction, true);
  }

  /**
   * This page's id, the same over reconnections.
   */
  readonly windowId: string;

  /**
   * Emitted when the link opens or closes.
   */
  get connectedChanged(): ISignal<this, boolean> {
    return this._connectedChanged;
  }

  /**
   * Emitted for each tool call the server reports (and the history on connect).
   */
  get activity(): ISignal<this, IActivityRecord> {
    return this._activity;
  }

  /**
   * Emitted after the history of each (re)connection, with that history: calls running then
   * are among it, marked running.
   */
  get welcomed(): ISignal<this, IActivityRecord[]> {
    return this._welcomed;
  }

  /**
   * Emitted when the server asks to reload a document written by a tool.
   */
  get reloadRequested(): ISignal<this, IReloadNotice> {
    return this._reloadRequested;
  }

  /**
   * Emitted with the server's breakpoints (every file) on connect and on each change.
   */
  get breakpoints(): ISignal<this, unknown[]> {
    return this._breakpoints;
  }

  /**
   * Emitted when the server withdraws a request (its timeout passed).
   */
  get cancelled(): ISignal<this, number> {
    return this._cancelled;
  }

  get isConnected(): boolean {
    return this._socket?.readyState === WebSocket.OPEN;
  }

  /**
   * Provide the answers to the server's requests, one for each of protocol.json.
   */
  setHandlers(handlers: RequestHandlers): void {
    this._handlers = handlers;
  }

  /**
   * Provide the full state sent after each (re)connection.
   */
  setStateProvider(provider: () => IStateMessage): void {
    this._stateProvider = provider;
  }

  /**
   * Open the link; it reopens by itself with exponential backoff.
   */
  start(): void {
    this._stopped = false;
    this._open();
  }

  /**
   * Close the link for good.
   */
  dispose(): void {
    this._stopped = true;
    window.removeEventListener('focus', this._onFocus);
    document.removeEventListener('visibilitychange', this._onVisibility);
    document.removeEventListener('pointerdown', this._onInteraction, true);
    document.removeEventListener('keydown', this._onInteraction, true);
    if (this._retry !== null) {
      window.clearTimeout(this._retry);
    }
    this._socket?.close();
  }

  /**
   * Send a message if the link is open (state reports are resent on reconnect anyway).
   */
  send(message: IStateMessage | IResponseMessage): void {
    this.sendMessage(message);
  }

  /**
   * Send any message the server understands (dropped while the link is down).
   */
  sendMessage(message: { type: string }): void {
    if (this._socket?.readyState === WebSocket.OPEN) {
      this._socket.send(JSON.stringify(message));
    }
  }

  private _open(): void {
    const focusAge = (Date.now() - this._lastFocus) / 1000;
    let url =
      URLExt.join(this._settings.wsUrl, 'mcp', 'bridge') +
      `?window=${encodeURIComponent(this.windowId)}&focusAge=${focusAge.toFixed(3)}`;
    if (this._settings.token && this._settings.appendToken) {
      url += `&token=${encodeURIComponent(this._settings.token)}`;
    }
    const socket = new this._settings.WebSocket(url);
    this._socket = socket;
    socket.onopen = () => {
      this._attempts = 0;
      this._connectedChanged.emit(true);
      if (this._stateProvider) {
        this.send(this._stateProvider());
      }
    };
    socket.onmessage = event => {
      this._dispatch(event.data);
    };
    socket.onclose = () => {
      if (this._socket !== socket) {
        return;
      }
      this._socket = null;
      this._connectedChanged.emit(false);
      if (!this._stopped) {
        const delay = Math.min(
          MAX_BACKOFF_MS,
          MIN_BACKOFF_MS * 2 ** this._attempts
        );
        this._attempts += 1;
        this._retry = window.setTimeout(
          () => {
            this._retry = null;
            this._open();
          },
          delay * (0.75 + Math.random() * 0.5)
        );
      }
    };
  }

  private _dispatch(data: string): void {
    let message: ServerMessage;
    try {
      message = JSON.parse(data);
    } catch (e) {
      console.warn('jupyter-mcp: malformed lab socket message', e);
      return;
    }
    switch (message.type) {
      case 'request':
        void this._answer(message);
        break;
      case 'cancel':
        this._cancelled.emit(message.id);
        break;
      case 'reload':
        this._reloadRequested.emit({
          path: message.path,
          origin: message.origin ?? null
        });
        break;
      case 'activity':
        this._activity.emit(message.record);
        break;
      case 'activities':
        for (const record of message.records) {
          this._activity.emit(record);
        }
        break;
      case 'breakpoints':
        this._breakpoints.emit(message.files);
        break;
      case 'welcome':
        for (const record of message.activity) {
          // A running call is shown again: it may have started before the window left.
          if (record.at > this._lastSeen || record.running) {
            this._activity.emit(record);
          }
        }
        this._welcomed.emit(message.activity);
        break;
    }
    if (message.type === 'activity') {
      this._lastSeen = Math.max(this._lastSeen, message.record.at);
    } else if (message.type === 'activities' && message.records.length) {
      this._lastSeen = Math.max(
        this._lastSeen,
        ...message.records.map(record => record.at)
      );
    } else if (message.type === 'welcome' && message.activity.length) {
      this._lastSeen = Math.max(
        this._lastSeen,
        ...message.activity.map(record => record.at)
      );
    }
  }

  private async _answer(request: IRequestMessage): Promise<void> {
    const response: IResponseMessage = { type: 'response', id: request.id };
    try {
      if (!this._handlers || !isRequestMethod(request.method)) {
        throw new Error(`This JupyterLab window cannot do "${request.method}"`);
      }
      // The server checks each request's parameters against protocol.json before sending.
      const handler = this._handlers[request.method] as (
        params: unknown,
        requestId: number
      ) => unknown;
      const result = await handler(request.params, request.id);
      response.result = result === undefined ? null : result;
    } catch (e) {
      response.error = e instanceof Error ? e.message : String(e);
    }
    this.send(response);
  }

  private _onFocus = (): void => {
    this._lastFocus = Date.now();
    this.send({ type: 'state', focus: true });
  };

  private _onInteraction = (): void => {
    if (Date.now() - this._lastFocus > INTERACTION_THROTTLE_MS) {
      this._onFocus();
    }
  };

  private _onVisibility = (): void => {
    if (document.visibilityState === 'visible' && document.hasFocus()) {
      this._onFocus();
    }
  };

  /**
   * Mark this window as the one the user works in (the user switched documents in it).
   */
  touch(): void {
    this._onFocus();
  }

  private _settings: ServerConnection.ISettings;
  private _socket: WebSocket | null = null;
  private _stopped = false;
  private _attempts = 0;
  private _retry: number | null = null;
  private _lastFocus = Date.now();
  private _lastSeen = 0;
  private _handlers: RequestHandlers | null = null;
  private _stateProvider: (() => IStateMessage) | null = null;
  private _connectedChanged = new Signal<this, boolean>(this);
  private _activity = new Signal<this, IActivityRecord>(this);
  private _welcomed = new Signal<this, IActivityRecord[]>(this);
  private _reloadRequested = new Signal<this, IReloadNotice>(this);
  private _cancelled = new Signal<this, number>(this);
  private _breakpoints = new Signal<this, unknown[]>(this);
}
