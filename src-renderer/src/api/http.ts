/**
 * StudioBridge over HTTP + WebSocket, for the renderer served by `marsrl serve`. Calls are
 * `POST /api/<method>` with the arguments as a JSON array (the server validates them with the
 * same dispatcher as Electron's IPC); pushed events arrive on one shared WebSocket at `/ws`,
 * reconnected with backoff when it drops. Authentication is the HttpOnly cookie the printed URL
 * set, which the browser sends with both; this code never sees the token.
 */
import { STUDIO_METHODS, type ConfigIssue, type StudioBridge, type StudioErrorShape, type StudioEvent } from '#shared/contract';

/** A failed call, with the server's code and field issues kept for the caller. */
export class StudioRequestError extends Error {
  readonly code: StudioErrorShape['code'];
  readonly issues: ConfigIssue[] | undefined;
  readonly status: number;

  constructor(shape: StudioErrorShape, status: number) {
    super(shape.message);
    this.name = 'StudioRequestError';
    this.code = shape.code;
    this.issues = shape.issues;
    this.status = status;
  }
}

export type ConnectionState = 'connecting' | 'open' | 'closed';

export interface HttpStudioClient extends StudioBridge {
  /** Connection state of the event socket, for the status bar; listener gets every change. */
  onConnection(listener: (state: ConnectionState, reconnected: boolean) => void): () => void;
  close(): void;
}

export interface HttpClientOptions {
  /** Where the server is; the page's own origin by default. */
  baseUrl?: string;
  fetchImpl?: typeof fetch;
  webSocketImpl?: typeof WebSocket;
  /** Reconnect delays grow from the first to the last, then stay there (ms). */
  backoffMs?: readonly number[];
}

const DEFAULT_BACKOFF = [250, 500, 1000, 2000, 4000];

function isErrorShape(value: unknown): value is StudioErrorShape {
  return typeof value === 'object' && value !== null && typeof (value as StudioErrorShape).code === 'string' && typeof (value as StudioErrorShape).message === 'string';
}

export function createHttpStudioClient(options: HttpClientOptions = {}): HttpStudioClient {
  const base = new URL(options.baseUrl ?? window.location.origin);
  const fetchImpl = options.fetchImpl ?? window.fetch.bind(window);
  const WebSocketImpl = options.webSocketImpl ?? window.WebSocket;
  const backoff = options.backoffMs ?? DEFAULT_BACKOFF;

  async function call(method: string, args: unknown[]): Promise<unknown> {
    // JSON turns a trailing undefined into null, which is not "left out"; drop them.
    const list = args.slice();
    while (list.length > 0 && list[list.length - 1] === undefined) list.pop();
    let response: Response;
    try {
      response = await fetchImpl(new URL(`/api/${method}`, base).toString(), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(list),
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch (error) {
      throw new StudioRequestError({ code: 'internal', message: `cannot reach the server (${(error as Error).message}); is marsrl serve still running?` }, 0);
    }
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      // A proxy's HTML error page, or an empty body.
    }
    if (response.ok && body !== null && typeof body === 'object' && 'result' in body) {
      return (body as { result: unknown }).result;
    }
    if (isErrorShape(body)) throw new StudioRequestError(body, response.status);
    throw new StudioRequestError({ code: 'internal', message: `${method} failed: HTTP ${response.status} ${response.statusText}` }, response.status);
  }

  // --- pushed events ------------------------------------------------------------------------
  const listeners = new Set<(event: StudioEvent) => void>();
  const connectionListeners = new Set<(state: ConnectionState, reconnected: boolean) => void>();
  let socket: WebSocket | null = null;
  let state: ConnectionState = 'closed';
  let attempt = 0;
  let everOpened = false;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;
  let closed = false;

  const setState = (next: ConnectionState, reconnected = false) => {
    state = next;
    for (const listener of connectionListeners) listener(next, reconnected);
  };

  function connect(): void {
    if (closed || socket) return;
    const url = new URL('/ws', base);
    url.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
    setState('connecting');
    const ws = new WebSocketImpl(url.toString());
    socket = ws;
    ws.onopen = () => {
      const reconnected = everOpened;
      everOpened = true;
      attempt = 0;
      // Events pushed while disconnected are lost; listeners refetch on `reconnected`.
      setState('open', reconnected);
    };
    ws.onmessage = (message: MessageEvent) => {
      let event: StudioEvent;
      try {
        event = JSON.parse(String(message.data)) as StudioEvent;
      } catch {
        return;
      }
      for (const listener of [...listeners]) {
        try {
          listener(event);
        } catch (error) {
          console.error('[studio] event listener failed', error);
        }
      }
    };
    ws.onclose = () => {
      socket = null;
      if (closed) {
        setState('closed');
        return;
      }
      setState('connecting');
      const delay = backoff[Math.min(attempt, backoff.length - 1)];
      attempt++;
      retryTimer = setTimeout(() => {
        retryTimer = null;
        connect();
      }, delay);
    };
  }

  function disconnect(): void {
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    if (socket) {
      const ws = socket;
      socket = null;
      ws.onclose = null;
      ws.close();
    }
    setState('closed');
  }

  const client: Record<string, unknown> = {};
  for (const method of STUDIO_METHODS) client[method] = (...args: unknown[]) => call(method, args);
  client.onEvent = (listener: (event: StudioEvent) => void) => {
    listeners.add(listener);
    connect();
    // The socket stays open without listeners: views come and go on every navigation, and a
    // reconnect each time would make every view refetch.
    return () => listeners.delete(listener);
  };
  client.onConnection = (listener: (state: ConnectionState, reconnected: boolean) => void) => {
    connectionListeners.add(listener);
    // Whoever watches the connection wants it up: a page loaded directly on a view that has no
    // event listener of its own (the trajectory browser, the new-run form) said "Offline" (issue 18).
    connect();
    listener(state, false);
    return () => connectionListeners.delete(listener);
  };
  client.close = () => {
    closed = true;
    disconnect();
  };
  return client as unknown as HttpStudioClient;
}
