/**
 * The endpoint client's HTTP transport, on node:http / node:https with keep-alive agents (issue
 * #16). Node's fetch (undici behind the WHATWG API) cost more per call: a max_tokens 1 chat
 * request to `marsrl serve-model` in the same process took 1.71 ms with fetch and 1.37 ms through
 * this transport (median of 300, 2-core development machine; the decoding alone 0.99 ms). A
 * reasoning-system run makes thousands of short calls, and the serve bench's closed-loop clients
 * pay the difference on every round trip.
 *
 * Only what the client needs: one request, the status and headers, the body as text or as a
 * stream of chunks. Errors keep Node's `code` (ECONNREFUSED, ECONNRESET, …), which the client
 * names in its messages; an abort through `signal` (the client's idle timeout or the caller's
 * stop) destroys the socket, so a hung replica's connection is not reused.
 */
import http from 'node:http';
import https from 'node:https';

export interface TransportRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface TransportResponse {
  status: number;
  ok: boolean;
  header(name: string): string | null;
  /** The whole body as UTF-8 text. */
  text(): Promise<string>;
  /** The body as it arrives. */
  chunks(): AsyncIterable<Buffer>;
  /**
   * Done with the body. `finished` (the caller saw the end its protocol defines, e.g. SSE's
   * [DONE]): the rest is read and dropped, so the connection goes back to the pool. Otherwise the
   * connection is closed, not reused.
   */
  release(finished: boolean): void;
}

/**
 * Sockets are kept between requests. A free socket closes after 4 s idle, before the 5 s at which
 * Node's own servers (serve-model among them) drop an idle keep-alive connection, so a request
 * rarely meets a socket the server is closing (the client retries if it does).
 */
const agents = {
  http: new http.Agent({ keepAlive: true, timeout: 4000 }),
  https: new https.Agent({ keepAlive: true, timeout: 4000 }),
};

export function httpRequest(url: string, request: TransportRequest): Promise<TransportResponse> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  if (!secure && target.protocol !== 'http:') return Promise.reject(new Error(`unsupported protocol ${target.protocol} (use http:// or https://)`));
  const send = secure ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    const req = send(target, { method: request.method, headers, agent: secure ? agents.https : agents.http, signal: request.signal }, (res) => {
      const status = res.statusCode ?? 0;
      let consumed = false;
      const take = () => {
        if (consumed) throw new Error('the response body was already read');
        consumed = true;
        return res;
      };
      resolve({
        status,
        ok: status >= 200 && status < 300,
        header: (name) => {
          const value = res.headers[name.toLowerCase()];
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
        },
        text: async () => {
          const parts: Buffer[] = [];
          for await (const chunk of take()) parts.push(chunk as Buffer);
          return Buffer.concat(parts).toString('utf8');
        },
        chunks: () => take() as AsyncIterable<Buffer>,
        release: (finished) => {
          if (res.complete) return;
          if (finished) res.resume();
          else res.destroy();
        },
      });
    });
    req.on('error', reject);
    req.end(request.body);
  });
}
