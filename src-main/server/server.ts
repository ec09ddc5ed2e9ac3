/**
 * `marsrl serve`: the StudioApi over HTTP and the EventHub over a WebSocket, plus the built
 * renderer, so the same UI runs in any browser. Plain node:http and ws: the surface is three
 * routes and every byte of it is checked in this folder.
 *
 *   GET  /, /assets/*      the renderer (CSP header as in Electron)           renderer-route.ts
 *   GET  /?token=T         sets the token cookie and redirects to strip the   gate.ts
 *                          token from the URL
 *   POST /api/<method>     JSON array of arguments → { result } or a          api-route.ts
 *                          StudioErrorShape
 *   GET  /ws (upgrade)     pushed StudioEvents, one JSON text frame each      event-socket.ts
 *
 * Security (see security.ts, applied by gate.ts): loopback by default; any other address needs a
 * token; Host and Origin are checked on every request; bodies are bounded; only the methods of the
 * contract exist, and each call's arguments are validated by the shared dispatcher.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import type { StudioApi } from '#shared/contract';
import type { EventHub } from '../api/hub';
import { handleApiCall, type ApiRoute } from './api-route';
import { attachEventSocket, type EventSocket } from './event-socket';
import { admit } from './gate';
import { serveRenderer } from './renderer-route';
import { sendJson } from './responses';
import { checkTokenStrength, isLoopbackHost, isWildcardHost, type SecurityPolicy } from './security';

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

export async function createStudioServer(options: StudioServerOptions): Promise<StudioServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? null;
  checkExposure(host, token);
  const api: ApiRoute = {
    service: options.service,
    maxBody: options.maxBodyBytes ?? DEFAULT_MAX_BODY,
    log: options.log ?? ((line: string) => process.stderr.write(`${line}\n`)),
  };
  // Filled in once listening, when port 0 has become a real port.
  const policy: SecurityPolicy = { host, port: options.port ?? 0, token };

  const handle = async (request: http.IncomingMessage, response: http.ServerResponse): Promise<void> => {
    const url = admit(request, response, policy);
    if (url === null) return;
    if (url.pathname.startsWith('/api/')) await handleApiCall(request, response, url.pathname.slice('/api/'.length), api);
    else serveRenderer(request, response, url, options.rendererDir);
  };
  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      api.log(`[serve] request failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      if (!response.headersSent) sendJson(response, 500, { code: 'internal', message: 'internal error' });
      else response.destroy();
    });
  });
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  const events = attachEventSocket(server, options.hub, policy);

  await listen(server, host, options.port, events);
  policy.port = (server.address() as AddressInfo).port;
  return served(server, events, policy);
}

/** Off loopback anyone on the network could reach the API: a strong token is required there. */
function checkExposure(host: string, token: string | null): void {
  if (!isLoopbackHost(host) && token === null) {
    throw new Error(`refusing to listen on ${host} without a token: anyone on the network could reach the API; pass a token (or bind 127.0.0.1)`);
  }
  if (token !== null) {
    const weakness = checkTokenStrength(token);
    if (weakness) throw new Error(weakness);
  }
}

/** Binds, or fails with what to do about a port in use or an address this machine does not have. */
function listen(server: http.Server, host: string, port: number | undefined, events: EventSocket): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      events.close();
      if (error.code === 'EADDRINUSE') reject(new Error(`port ${port} on ${host} is already in use; choose another with --port (0 picks a free one)`));
      else if (error.code === 'EADDRNOTAVAIL') reject(new Error(`cannot bind ${host}: no such address on this machine`));
      else reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port ?? 0, host);
  });
}

function served(server: http.Server, events: EventSocket, policy: SecurityPolicy): StudioServer {
  const { host, port, token } = policy;
  const url = `http://${urlHost(host)}:${port}/`;
  let closing: Promise<void> | null = null;
  return {
    url,
    loginUrl: token === null ? url : `${url}?token=${encodeURIComponent(token)}`,
    host,
    port,
    token,
    close() {
      closing ??= new Promise<void>((resolve) => {
        events.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function urlHost(host: string): string {
  if (isWildcardHost(host)) return os.hostname();
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
