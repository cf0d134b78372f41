/**
 * The view's side of the MCP Apps protocol: JSON-RPC 2.0 over `postMessage` with the host
 * that shows the view (the chat client).
 *
 * The view asks `ui/initialize` and says `ui/notifications/initialized`; the host then sends
 * the tool's arguments (`ui/notifications/tool-input`) and its result
 * (`ui/notifications/tool-result`), and may change the host context (theme). The view reports
 * its size when it changes (`ui/notifications/size-changed`) and answers `ping` and
 * `ui/resource-teardown`. Only messages from the parent window are read.
 *
 * Written out (about a hundred lines) rather than taken from the ext-apps SDK, whose App
 * class with its dependencies would add some 540 kB to each page; the tests drive these
 * pages with that SDK's own host side (AppBridge).
 */

/** The Apps protocol revision this view speaks. */
export const PROTOCOL_VERSION = '2026-01-26';

/** What the host tells a view about where it is shown (the fields a view here reads). */
export interface IHostContext {
  theme?: 'light' | 'dark';
  styles?: { variables?: { [name: string]: string | undefined } };
  displayMode?: string;
  containerDimensions?: { [key: string]: number };
}

type Handler = (params: any) => void;

/** The view's connection to its host. */
export class HostConnection {
  constructor(
    private readonly _appInfo: { name: string; version: string },
    private readonly _target: Window = window.parent
  ) {
    window.addEventListener('message', this._onMessage);
  }

  /** The host's context, as of `ui/initialize` and its later changes. */
  hostContext: IHostContext = {};

  /** Call `handler` with the params of each notification `method` from the host. */
  on(method: string, handler: Handler): void {
    const list = this._handlers.get(method) ?? [];
    list.push(handler);
    this._handlers.set(method, list);
  }

  /** Ask the host `method`; its result, or an Error with the host's message. */
  request(method: string, params: unknown): Promise<any> {
    const id = this._nextId++;
    this._post({ jsonrpc: '2.0', id, method, params });
    return new Promise((resolve, reject) =>
      this._pending.set(id, { resolve, reject })
    );
  }

  /** Tell the host `method` (no answer). */
  notify(method: string, params: unknown = {}): void {
    this._post({ jsonrpc: '2.0', method, params });
  }

  /** The handshake: `ui/initialize`, then `initialized`; size reports start. */
  async connect(): Promise<void> {
    const result = await this.request('ui/initialize', {
      appCapabilities: { availableDisplayModes: ['inline'] },
      appInfo: this._appInfo,
      protocolVersion: PROTOCOL_VERSION
    });
    this.hostContext = { ...(result?.hostContext ?? {}) };
    this._emit('ui/notifications/host-context-changed', this.hostContext);
    this.notify('ui/notifications/initialized', {});
    this._reportSize();
  }

  private _post(message: unknown): void {
    this._target.postMessage(message, '*');
  }

  private _onMessage = (event: MessageEvent): void => {
    if (event.source !== this._target) {
      return;
    }
    const message = event.data;
    if (!message || message.jsonrpc !== '2.0') {
      return;
    }
    if (message.method === undefined && message.id !== undefined) {
      const pending = this._pending.get(message.id);
      if (pending) {
        this._pending.delete(message.id);
        if (message.error) {
          pending.reject(
            new Error(message.error.message ?? 'the host refused')
          );
        } else {
          pending.resolve(message.result);
        }
      }
      return;
    }
    if (typeof message.method !== 'string') {
      return;
    }
    if (message.id !== undefined) {
      this._answer(message.id, message.method);
      return;
    }
    if (message.method === 'ui/notifications/host-context-changed') {
      this.hostContext = { ...this.hostContext, ...(message.params ?? {}) };
    }
    this._emit(message.method, message.params ?? {});
  };

  private _answer(id: unknown, method: string): void {
    if (method === 'ping' || method === 'ui/resource-teardown') {
      this._post({ jsonrpc: '2.0', id, result: {} });
      return;
    }
    this._post({
      jsonrpc: '2.0',
      id,
      error: { code: -32601, message: `Method not found: ${method}` }
    });
  }

  private _emit(method: string, params: unknown): void {
    for (const handler of this._handlers.get(method) ?? []) {
      handler(params);
    }
  }

  private _reportSize(): void {
    let last = '';
    let scheduled = false;
    const send = (): void => {
      scheduled = false;
      const root = document.documentElement;
      const width = Math.ceil(root.scrollWidth);
      const height = Math.ceil(root.scrollHeight);
      const size = `${width}x${height}`;
      if (size !== last) {
        last = size;
        this.notify('ui/notifications/size-changed', { width, height });
      }
    };
    new ResizeObserver(() => {
      if (!scheduled) {
        scheduled = true;
        requestAnimationFrame(send);
      }
    }).observe(document.body);
    send();
  }

  private _nextId = 1;
  private _pending = new Map<unknown, { resolve: Handler; reject: Handler }>();
  private _handlers = new Map<string, Handler[]>();
}
