/**
 * A scripted OpenAI-compatible server on loopback for fault tests (issue #16): each request takes
 * the next behaviour from a script (or the default once the script is used up), so a test says
 * exactly which attempt gets a 429, a 500, a hang, malformed JSON or a stream cut mid-response.
 * It checks the bearer key (401 when it differs, as an expired key gets) and the model name (404
 * for one it does not serve, as vLLM answers), and records every request it saw.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Behaviour =
  | { kind: 'ok'; text?: string }
  | { kind: 'status'; status: number; body?: string; headers?: Record<string, string> }
  | { kind: 'hang' }
  | { kind: 'malformed' }
  /** Streams `text` cut after `after` characters, then closes the connection without [DONE]. */
  | { kind: 'stream-cut'; after: number };

export interface SeenRequest {
  method: string;
  url: string;
  authorization: string | undefined;
  body: Record<string, unknown> | null;
}

export interface FaultServerOptions {
  model?: string;
  /** The key requests must carry; null accepts any. */
  key?: string | null;
  script?: Behaviour[];
  /** Text of successful answers (choice i answers `${text} ${i}` when n > 1). */
  text?: string;
  /** What `n`, `logprobs` and `seed` do: honoured by default. */
  ignoreN?: boolean;
  noLogprobs?: boolean;
  rejectTopK?: boolean;
  /** Answer successful requests after this many ms (a slow replica). */
  delayMs?: number;
  /** Milliseconds between streamed words (default 5; a slow model streams slowly). */
  wordDelayMs?: number;
}

export interface FaultServer {
  url: string;
  baseUrl: string;
  seen: SeenRequest[];
  script: Behaviour[];
  /** Requests being answered now, and the most at once so far. */
  active(): number;
  maxActive(): number;
  /** TCP connections accepted so far (a keep-alive client reuses one). */
  connections(): number;
  close(): Promise<void>;
}

export async function startFaultServer(opts: FaultServerOptions = {}): Promise<FaultServer> {
  const model = opts.model ?? 'fault-model';
  const seen: SeenRequest[] = [];
  const script = [...(opts.script ?? [])];
  const hanging = new Set<http.ServerResponse>();
  const text = opts.text ?? 'hello world';
  let active = 0;
  let maxActive = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> | null = null;
      if (chunks.length > 0) {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          body = null;
        }
      }
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, body });
      active++;
      maxActive = Math.max(maxActive, active);
      res.on('close', () => active--);
      if (opts.delayMs && req.method === 'POST') setTimeout(() => respond(body), opts.delayMs);
      else respond(body);
    });
    const respond = (body: Record<string, unknown> | null) => {
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      if (opts.key != null && req.headers.authorization !== `Bearer ${opts.key}`) {
        // OpenAI's own wording echoes part of the key it got; the client must scrub that.
        const got = (req.headers.authorization ?? '').replace(/^Bearer /, '');
        return json(401, { error: { message: `Incorrect API key provided: ${got}. The key has expired.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
      }
      if (req.method === 'GET' && req.url === '/v1/models') return json(200, { object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'fault' }] });
      const behaviour = script.shift() ?? { kind: 'ok' };
      if (behaviour.kind === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (behaviour.kind === 'status') {
        res.writeHead(behaviour.status, { 'content-type': 'application/json', ...(behaviour.headers ?? {}) });
        res.end(behaviour.body ?? JSON.stringify({ error: { message: `scripted ${behaviour.status}`, type: 'server_error', param: null, code: null } }));
        return;
      }
      if (behaviour.kind === 'malformed') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"choices": [{"index": 0, "message": {"content": "trunc');
        return;
      }
      if (!body || typeof body !== 'object') return json(400, { error: { message: 'body is not JSON', type: 'invalid_request_error', param: null, code: null } });
      if (body.model !== model) return json(404, { error: { message: `The model \`${String(body.model)}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 } });
      if (opts.rejectTopK && body.top_k !== undefined) return json(400, { error: { message: 'Unrecognized request argument supplied: top_k', type: 'invalid_request_error', param: 'top_k', code: null } });
      const chat = req.url === '/v1/chat/completions';
      const n = opts.ignoreN ? 1 : Number(body.n ?? 1);
      const answer = behaviour.kind === 'ok' && behaviour.text !== undefined ? behaviour.text : text;
      const texts = Array.from({ length: n }, (_, i) => (n > 1 ? `${answer} ${i}` : answer));
      const words = (t: string) => t.split(/(?= )/);
      const logprobsOf = (t: string) => (body.logprobs && !opts.noLogprobs ? { content: words(t).map((w, j) => ({ token: w, logprob: -0.5 * (j + 1), bytes: [...Buffer.from(w)], top_logprobs: [] })) } : null);
      const usage = { prompt_tokens: 7, completion_tokens: texts.reduce((s, t) => s + words(t).length, 0), total_tokens: 7 + texts.reduce((s, t) => s + words(t).length, 0) };
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const send = (value: unknown) => res.write(`data: ${JSON.stringify(value)}\n\n`);
        let sent = 0;
        const limit = behaviour.kind === 'stream-cut' ? behaviour.after : Infinity;
        // Words go out a few ms apart, as tokens would, so a cut lands after real deliveries.
        const pause = () => new Promise((resolve) => setTimeout(resolve, opts.wordDelayMs ?? 5));
        void (async () => {
        for (let i = 0; i < texts.length; i++) {
          for (const w of words(texts[i])) {
            await pause();
            if (sent + w.length > limit) {
              res.destroy();
              return;
            }
            sent += w.length;
            send({ id: 'x', object: chat ? 'chat.completion.chunk' : 'text_completion', model, choices: [chat ? { index: i, delta: { content: w }, finish_reason: null } : { index: i, text: w, finish_reason: null }] });
          }
          send({ id: 'x', object: 'chat.completion.chunk', model, choices: [chat ? { index: i, delta: {}, finish_reason: 'stop' } : { index: i, text: '', finish_reason: 'stop' }] });
        }
        send({ id: 'x', object: 'chat.completion.chunk', model, choices: [], usage });
        res.end('data: [DONE]\n\n');
        })();
        return;
      }
      json(200, {
        id: 'x',
        object: chat ? 'chat.completion' : 'text_completion',
        model,
        choices: texts.map((t, i) => (chat ? { index: i, message: { role: 'assistant', content: t }, finish_reason: 'stop', logprobs: logprobsOf(t) } : { index: i, text: t, finish_reason: 'stop', logprobs: null })),
        usage,
      });
    };
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    seen,
    script,
    active: () => active,
    maxActive: () => maxActive,
    connections: () => connections,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
