/**
 * `marsrl serve`: the StudioApi over HTTP and the EventHub over a WebSocket, plus the built
 * renderer, so the same UI runs in any browser. Plain node:http and ws: the surface is three
 * routes and every byte of it is checked here.
 *
 *   GET  /, /assets/*      the renderer (CSP header as in Electron)
 *   GET  /?token=T         sets the token cookie and redirects to strip the token from the URL
 *   POST /api/<method>     JSON array of arguments → { result } or a StudioErrorShape
 *   GET  /ws (upgrade)     pushed StudioEvents, one JSON text frame each
 *
 * Security (see security.ts): loopback by default; any other address needs a token; Host and
 * Origin are checked on every request; bodies are bounded; only the methods of the contract
 * exist, and each call's arguments are validated by the shared dispatcher.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { WebSocketServer, type WebSocket } from 'ws';
import type { StudioApi, StudioErrorShape } from '#shared/contract';
import { callStudio } from '../api/dispatch';
import { toErrorShape } from '#shared/errors';
import type { EventHub } from '../api/hub';
import { contentSecurityPolicy } from '#shared/csp';
import {
  authorized,
  checkTokenStrength,
  hostAllowed,
  isLoopbackHost,
  isWildcardHost,
  originAllowed,
  tokenCookie,
  tokensMatch,
  type RequestHeaders,
  type SecurityPolicy,
} from './security';
import { readBody } from './body';
import { messagePage, readStaticFile, rendererBuilt } from './static-files';

export interface StudioServerOptions {
  service: StudioApi;
  hub: EventHub;
  /** Address to bind; 127.0.0.1 by default. Anything but loopback requires `token`. */
  host?: string;
  /** 0 picks a free port (the tests do). */
  port?: number;
  token?: string | null;
  /** The built renderer (out/renderer); null serves the API alone. */
  rendererDir?: string | null;
  /** Largest request body accepted, in bytes. */
  maxBodyBytes?: number;
  /** Where request failures are logged (stderr by default). */
  log?: (line: string) => void;
}

export interface StudioServer {
  /** What to open in a browser, without the token. */
  url: string;
  /** The URL that logs a browser in (sets the cookie); equal to `url` without a token. */
  loginUrl: string;
  host: string;
  port: number;
  token: string | null;
  close(): Promise<void>;
}

const DEFAULT_MAX_BODY = 1024 * 1024;
/** A client that cannot keep up is dropped; it reconnects and refetches rather than lag further. */
const MAX_WS_BUFFER = 8 * 1024 * 1024;
const WS_HEARTBEAT_MS = 25_000;

const HTTP_STATUS: Record<StudioErrorShape['code'], number> = {
  invalid_request: 400,
  not_found: 404,
  conflict: 409,
  internal: 500,
};

/** Sent with every response: nothing here may be framed, sniffed, or read cross-origin. */
const BASE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': contentSecurityPolicy({ delivery: 'header' }),
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

function urlHost(host: string): string {
  if (isWildcardHost(host)) return os.hostname();
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly shape: StudioErrorShape,
  ) {
    super(shape.message);
  }
}

export async function createStudioServer(options: StudioServerOptions): Promise<StudioServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? null;
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const { service, hub } = options;

  if (!isLoopbackHost(host) && token === null) {
    throw new Error(`refusing to listen on ${host} without a token: anyone on the network could reach the API; pass a token (or bind 127.0.0.1)`);
  }
  if (token !== null) {
    const weakness = checkTokenStrength(token);
    if (weakness) throw new Error(weakness);
  }

  // Filled in once listening, when port 0 has become a real port.
  const policy: SecurityPolicy = { host, port: options.port ?? 0, token };

  const send = (response: http.ServerResponse, status: number, headers: Record<string, string>, body?: string | Buffer): void => {
    response.writeHead(status, { ...BASE_HEADERS, ...headers });
    response.end(body);
  };
  const sendJson = (response: http.ServerResponse, status: number, value: unknown): void => {
    send(response, status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }, JSON.stringify(value));
  };
  const sendPage = (response: http.ServerResponse, status: number, title: string, paragraphs: string[], head = false): void => {
    const body = messagePage(title, paragraphs);
    send(response, status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }, head ? undefined : body);
  };

  async function handleApi(request: http.IncomingMessage, response: http.ServerResponse, method: string): Promise<void> {
    if (request.method !== 'POST') {
      send(response, 405, { Allow: 'POST', 'Content-Type': 'application/json; charset=utf-8' }, JSON.stringify({ code: 'invalid_request', message: 'API calls are POST requests' }));
      return;
    }
    const contentType = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (contentType !== 'application/json') {
      // A cross-site form can only send "simple" content types; demanding JSON forces a CORS
      // preflight, which this server never answers.
      request.resume();
      sendJson(response, 415, { code: 'invalid_request', message: 'API calls must send Content-Type: application/json' });
      return;
    }
    let args: unknown;
    try {
      const body = await readBody(request, maxBody, () => new HttpFailure(413, { code: 'invalid_request', message: `request body is larger than ${maxBody} bytes` }));
      const text = body.toString('utf8').trim();
      args = text === '' ? [] : JSON.parse(text);
    } catch (error) {
      if (error instanceof HttpFailure) {
        sendJson(response, error.status, error.shape);
        return;
      }
      sendJson(response, 400, { code: 'invalid_request', message: `request body is not valid JSON: ${(error as Error).message}` });
      return;
    }
    try {
      const result = await callStudio(service, method, args);
      sendJson(response, 200, { result: result === undefined ? null : result });
    } catch (error) {
      const shape = toErrorShape(error);
      if (shape.code === 'internal') log(`[serve] ${method} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      sendJson(response, HTTP_STATUS[shape.code], shape);
    }
  }

  function handleStatic(request: http.IncomingMessage, response: http.ServerResponse, url: URL): void {
    const head = request.method === 'HEAD';
    if (request.method !== 'GET' && !head) {
      send(response, 405, { Allow: 'GET, HEAD' });
      return;
    }
    if (!rendererBuilt(options.rendererDir)) {
      sendPage(response, 503, 'The interface is not built', [
        'This server answers the API, but the browser interface has not been built yet.',
        'In the MarsRL Studio folder run: npm run build   (then reload this page)',
      ], head);
      return;
    }
    const file = readStaticFile(options.rendererDir as string, url.pathname);
    if (!file) {
      sendPage(response, 404, 'Not found', [`Nothing is served at ${url.pathname}.`], head);
      return;
    }
    send(
      response,
      200,
      { 'Content-Type': file.contentType, 'Cache-Control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache' },
      head ? undefined : file.body,
    );
  }

  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const headers = request.headers as RequestHeaders;
    if (!hostAllowed(headers, policy)) {
      sendPage(response, 421, 'Wrong host', [`This server only answers requests addressed to it by its own name, not to the Host ${JSON.stringify(String(headers.host ?? ''))}. Open the URL marsrl serve printed.`]);
      return;
    }
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://server.invalid');
    } catch {
      sendPage(response, 400, 'Bad request', ['The request URL is malformed.']);
      return;
    }
    const isApi = url.pathname.startsWith('/api/');

    // The printed URL carries the token once; it is traded for a cookie and stripped at once,
    // so it does not linger in the address bar, the history or a screenshot.
    const loginToken = url.searchParams.get('token');
    if (!isApi && loginToken !== null && token !== null && (request.method === 'GET' || request.method === 'HEAD')) {
      if (!tokensMatch(loginToken, token)) {
        sendPage(response, 401, 'Wrong token', ['The token in this URL does not match. Copy the URL printed by marsrl serve again.']);
        return;
      }
      url.searchParams.delete('token');
      response.setHeader('Set-Cookie', tokenCookie(token, policy.port));
      send(response, 303, { Location: `${url.pathname}${url.search}`, 'Cache-Control': 'no-store' });
      return;
    }

    if (isApi && !originAllowed(headers)) {
      sendJson(response, 403, { code: 'invalid_request', message: `cross-origin requests are refused (Origin ${JSON.stringify(String(headers.origin ?? ''))} is not this server); call the API from the page marsrl serve printed, or from a client that sends no Origin` });
      return;
    }
    if (!authorized(headers, policy)) {
      if (isApi) {
        sendJson(response, 401, { code: 'invalid_request', message: 'this server needs its access token (Authorization: Bearer TOKEN, or open the URL marsrl serve printed)' });
      } else {
        sendPage(response, 401, 'Access token needed', [
          'This MarsRL Studio server is protected by an access token.',
          'Open the full URL that marsrl serve printed when it started (it ends in ?token=…); it logs this browser in.',
        ], request.method === 'HEAD');
      }
      return;
    }
    if (isApi) {
      await handleApi(request, response, url.pathname.slice('/api/'.length));
      return;
    }
    handleStatic(request, response, url);
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`[serve] request failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      if (!response.headersSent) sendJson(response, 500, { code: 'internal', message: 'internal error' });
      else response.destroy();
    });
  });
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;

  // --- WebSocket: pushed events --------------------------------------------------------------
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false });
  const alive = new WeakMap<WebSocket, boolean>();

  const refuseUpgrade = (socket: import('node:stream').Duplex, status: number, reason: string): void => {
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };

  server.on('upgrade', (request, socket, head) => {
    const headers = request.headers as RequestHeaders;
    const pathname = (request.url ?? '').split('?')[0];
    if (pathname !== '/ws') return refuseUpgrade(socket, 404, 'Not Found');
    if (!hostAllowed(headers, policy)) return refuseUpgrade(socket, 421, 'Misdirected Request');
    if (!originAllowed(headers)) return refuseUpgrade(socket, 403, 'Forbidden');
    if (!authorized(headers, policy)) return refuseUpgrade(socket, 401, 'Unauthorized');
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  });

  // Every pushed event gets one sequence number for all clients (issue #17): a client sees a gap
  // when it missed events (then it reloads what it shows) and can check their order.
  let sequence = 0;
  const unsubscribeHub = hub.subscribe((event) => {
    const frame = JSON.stringify({ ...event, seq: ++sequence });
    for (const ws of wss.clients) {
      if (ws.readyState !== ws.OPEN) continue;
      if (ws.bufferedAmount > MAX_WS_BUFFER) {
        ws.terminate();
        continue;
      }
      ws.send(frame);
    }
  });

  wss.on('connection', (ws: WebSocket) => {
    alive.set(ws, true);
    ws.on('pong', () => alive.set(ws, true));
    // Clients only listen; anything they send is ignored (maxPayload bounds it).
    ws.on('message', () => {});
    ws.on('error', () => ws.terminate());
  });

  const heartbeat = setInterval(() => {
    for (const ws of wss.clients) {
      if (alive.get(ws) === false) {
        ws.terminate();
        continue;
      }
      alive.set(ws, false);
      ws.ping();
    }
  }, WS_HEARTBEAT_MS);
  heartbeat.unref();

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      unsubscribeHub();
      if (error.code === 'EADDRINUSE') reject(new Error(`port ${options.port} on ${host} is already in use; choose another with --port (0 picks a free one)`));
      else if (error.code === 'EADDRNOTAVAIL') reject(new Error(`cannot bind ${host}: no such address on this machine`));
      else reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(options.port ?? 0, host);
  });
  policy.port = (server.address() as AddressInfo).port;

  const url = `http://${urlHost(host)}:${policy.port}/`;
  let closing: Promise<void> | null = null;

  return {
    url,
    loginUrl: token === null ? url : `${url}?token=${encodeURIComponent(token)}`,
    host,
    port: policy.port,
    token,
    close() {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(heartbeat);
        unsubscribeHub();
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

