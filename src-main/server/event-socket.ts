/**
 * `GET /ws` (upgrade): the EventHub's StudioEvents pushed to every browser, one JSON text frame
 * each, behind the same gate as the API (security.ts). Clients only listen.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { EventHub } from '../api/hub';
import { authorized, hostAllowed, originAllowed, type RequestHeaders, type SecurityPolicy } from './security';

/** A client that cannot keep up is dropped; it reconnects and refetches rather than lag further. */
const MAX_WS_BUFFER = 8 * 1024 * 1024;
const WS_HEARTBEAT_MS = 25_000;

export interface EventSocket {
  /** Stop pushing: the hub is left, every client dropped. */
  close(): void;
}

export function attachEventSocket(server: http.Server, hub: EventHub, policy: SecurityPolicy): EventSocket {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false });
  server.on('upgrade', (request, socket, head) => {
    const refusal = upgradeRefusal(request, policy);
    if (refusal) return refuseUpgrade(socket, refusal.status, refusal.reason);
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  });
  const unsubscribeHub = broadcast(hub, wss);
  const heartbeat = keepAlive(wss);
  return {
    close() {
      clearInterval(heartbeat);
      unsubscribeHub();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}

function upgradeRefusal(request: http.IncomingMessage, policy: SecurityPolicy): { status: number; reason: string } | null {
  const headers = request.headers as RequestHeaders;
  const pathname = (request.url ?? '').split('?')[0];
  if (pathname !== '/ws') return { status: 404, reason: 'Not Found' };
  if (!hostAllowed(headers, policy)) return { status: 421, reason: 'Misdirected Request' };
  if (!originAllowed(headers)) return { status: 403, reason: 'Forbidden' };
  if (!authorized(headers, policy)) return { status: 401, reason: 'Unauthorized' };
  return null;
}

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/**
 * Every pushed event gets one sequence number for all clients (issue #17): a client sees a gap
 * when it missed events (then it reloads what it shows) and can check their order.
 */
function broadcast(hub: EventHub, wss: WebSocketServer): () => void {
  let sequence = 0;
  return hub.subscribe((event) => {
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
}

/** A client that misses a ping's pong for a whole heartbeat is gone (a sleeping laptop, a cut network). */
function keepAlive(wss: WebSocketServer): NodeJS.Timeout {
  const alive = new WeakMap<WebSocket, boolean>();
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
  return heartbeat;
}
