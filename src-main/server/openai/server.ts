/**
 * The OpenAI-compatible HTTP API of `marsrl serve-model` (issue #16), on plain node:http:
 *
 *   GET  /v1/models                 the served policies
 *   GET  /v1/models/{id}            one of them (404 otherwise)
 *   POST /v1/chat/completions       chat (messages rendered by the policy's chat template)
 *   POST /v1/completions            raw text continued
 *   GET  /health                    200 when serving (for pools' health checks; no token needed)
 *   GET  /metrics                   each policy's batching counters (batcher.ts BatcherStats), JSON
 *
 * Streaming is Server-Sent Events, `data: {chunk}` per event and `data: [DONE]` last, as the
 * OpenAI API streams. Concurrent requests to one policy are batched (batcher.ts).
 *
 * Security as `marsrl serve` (../security.ts): loopback by default; any other address needs a
 * token; the Host header must name this server (DNS rebinding) and browser requests from other
 * origins are refused. Without the right token: 401 with the API's error shape.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import { readBody } from '../body';
import { checkTokenStrength, hostAllowed, isLoopbackHost, isWildcardHost, originAllowed, presentedToken, tokensMatch, type RequestHeaders } from '../security';
import { RequestBatcher, type ChoiceUpdate, type DecodedChoice, type TokenInfo } from './batcher';
import type { DecodeEngine } from './engine';
import { ApiError, badRequest, parseChatRequest, parseCompletionRequest, type ParsedRequest } from './protocol';
import { ContextLengthError, PromptError, type ServedPolicy, type ServedPolicyInfo } from './policy';

export interface ModelServerOptions {
  /** With weights (decoded in this thread), or without where `engines` decodes them. */
  policies: Array<ServedPolicy | ServedPolicyInfo>;
  host?: string;
  port?: number;
  token?: string | null;
  /** Quiet window an idle server waits for more requests before it starts a batch, ms (default 0: at once). */
  batchWindowMs?: number;
  /** Most choices decoded in one batch (default 64). */
  maxBatchRows?: number;
  /** How long requests arriving during a batch may wait to join it together (batcher.ts joinDue; default 0). */
  joinWaitMs?: number;
  /**
   * Decoders by policy id, e.g. a ThreadEngine's (engine.ts); a policy without one is decoded by
   * a RequestBatcher in the server's own thread.
   */
  engines?: ReadonlyMap<string, DecodeEngine>;
  maxBodyBytes?: number;
  log?: (line: string) => void;
}

export interface ModelServer {
  url: string;
  /** `url` + `/v1`: what an OpenAI client takes as its base URL. */
  baseUrl: string;
  host: string;
  port: number;
  batchers: Map<string, DecodeEngine>;
  close(): Promise<void>;
}

interface Served {
  policy: ServedPolicyInfo;
  batcher: DecodeEngine;
}

export async function createModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? null;
  checkServeOptions(opts, host, token);
  const served = servedPolicies(opts);
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxBody = opts.maxBodyBytes ?? 4 * 1024 * 1024;
  let port = opts.port ?? 0;
  // Completion ids only need to be unique, not secret: one random prefix per server and a counter
  // (crypto.randomBytes per request cost 0.035 ms of the server thread, 1% of a quick request).
  const idPrefix = crypto.randomBytes(6).toString('hex');
  let idCounter = 0;

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const e = error instanceof ApiError ? error : new ApiError(500, `internal error: ${(error as Error).message}`, 'server_error');
      if (!(error instanceof ApiError)) log(`serve-model: ${req.method} ${req.url}: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) sendJson(res, e.status, e.toBody());
      else res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const headers = req.headers as RequestHeaders;
    if (!hostAllowed(headers, { host, port, token })) throw new ApiError(403, 'the Host header does not name this server', 'invalid_request_error', null, 'host_not_allowed');
    const pathname = requestPath(req.url);
    if (req.method === 'GET' && pathname === '/health') return sendJson(res, 200, { status: 'ok' });
    if (!originAllowed(headers)) throw new ApiError(403, 'cross-origin requests are not allowed', 'invalid_request_error', null, 'origin_not_allowed');
    if (token !== null && !tokensMatch(presentedToken(headers, port), token)) {
      throw new ApiError(401, 'missing or wrong API key: send "Authorization: Bearer TOKEN" with the token marsrl serve-model printed', 'invalid_request_error', null, 'invalid_api_key');
    }
    if (req.method === 'GET' && pathname === '/metrics') {
      // Event-loop utilization since start: near 1 when decoding and HTTP keep the one thread busy.
      return sendJson(res, 200, { eventLoop: performance.eventLoopUtilization(), models: Object.fromEntries([...served].map(([id, s]) => [id, { ...s.batcher.stats }])) });
    }
    if (req.method === 'GET' && pathname === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [...served.values()].map((s) => modelCard(s.policy)) });
    }
    const one = /^\/v1\/models\/(.+)$/.exec(pathname);
    if (req.method === 'GET' && one) {
      const s = served.get(decodeURIComponent(one[1]));
      if (!s) throw unknownModel(decodeURIComponent(one[1]));
      return sendJson(res, 200, modelCard(s.policy));
    }
    const chat = pathname === '/v1/chat/completions';
    if (chat || pathname === '/v1/completions') {
      if (req.method !== 'POST') throw new ApiError(405, `${pathname} takes POST`, 'invalid_request_error');
      const body = await readJson(req, maxBody);
      return generate(chat, body, req, res);
    }
    throw new ApiError(404, `no route ${req.method} ${pathname}; this server has /v1/models, /v1/chat/completions, /v1/completions, /health and /metrics`, 'invalid_request_error', null, 'not_found');
  }

  async function generate(chat: boolean, body: unknown, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const model = (body as { model?: unknown } | null)?.model;
    const s = typeof model === 'string' ? served.get(model) : undefined;
    const context = s?.policy.context ?? 1;
    const defaults = { maxTokens: context, maxN: 64 };
    const parsed = chat ? parseChatRequest(body, defaults) : parseCompletionRequest(body, defaults);
    if (!s) throw unknownModel(parsed.model);
    let prompt: number[];
    try {
      // `context` as the limit: a prompt that cannot fit is refused before it is tokenized in full.
      prompt = 'messages' in parsed ? s.policy.tokenizer.chatPrompt(parsed.messages, parsed.chatTemplateKwargs, context) : s.policy.tokenizer.encodeText((parsed as { prompt: string }).prompt, context);
    } catch (error) {
      if (error instanceof ContextLengthError) throw badRequest(`${error.message}; model ${parsed.model} has a context of ${context}, which leaves no room to answer`, error.param, 'context_length_exceeded');
      if (error instanceof PromptError) throw badRequest(error.message, error.param);
      throw error;
    }
    if (prompt.length >= context) throw badRequest(`the prompt has ${prompt.length} tokens; model ${parsed.model} has a context of ${context}, which leaves no room to answer`, chat ? 'messages' : 'prompt', 'context_length_exceeded');
    // The answer may use what the context leaves: a larger max_tokens ends with finish_reason "length".
    parsed.params.maxTokens = Math.min(parsed.params.maxTokens, context - prompt.length);
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${idPrefix}${(idCounter++).toString(16).padStart(12, '0')}`;
    const created = Math.floor(Date.now() / 1000);
    const usageOf = (choices: DecodedChoice[]) => {
      const completion = choices.reduce((a, c) => a + c.ids.length, 0);
      return { prompt_tokens: prompt.length, completion_tokens: completion, total_tokens: prompt.length + completion };
    };
    // A client that goes away stops its rows at the next step instead of holding the batch.
    let closed = false;
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) {
        closed = true;
        gone.abort();
      }
    });
    if (!parsed.stream) {
      const choices = await s.batcher.submit({ prompt, params: parsed.params, signal: gone.signal });
      if (closed) return;
      return sendJson(res, 200, {
        id,
        object: chat ? 'chat.completion' : 'text_completion',
        created,
        model: parsed.model,
        choices: choices.map((c) => (chat ? chatChoice(c, parsed) : completionChoice(c, parsed))),
        usage: usageOf(choices),
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const send = (value: unknown) => res.write(`data: ${JSON.stringify(value)}\n\n`);
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id, object: chat ? 'chat.completion.chunk' : 'text_completion', created, model: parsed.model, choices, ...extra });
    if (chat) {
      for (let i = 0; i < parsed.params.n; i++) send(chunk([{ index: i, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
    }
    const onUpdate = (u: ChoiceUpdate) => {
      if (closed) return;
      if (u.delta.length === 0 && u.tokens.length === 0 && !u.finishReason) return;
      const lp = parsed.logprobs ? (chat ? chatLogprobs(u.tokens) : completionLogprobs(u.tokens, 0)) : null;
      send(chunk([chat ? { index: u.index, delta: u.delta ? { content: u.delta } : {}, logprobs: lp, finish_reason: u.finishReason } : { index: u.index, text: u.delta, logprobs: lp, finish_reason: u.finishReason }]));
    };
    const choices = await s.batcher.submit({ prompt, params: parsed.params, onUpdate, signal: gone.signal });
    if (closed) return;
    if (parsed.includeUsage) send(chunk([], { usage: usageOf(choices) }));
    res.end('data: [DONE]\n\n');
  }

  port = await listen(server, port, host);
  const url = serverUrl(host, port);
  return {
    url,
    baseUrl: `${url}/v1`,
    host,
    port,
    batchers: new Map([...served].map(([k, v]) => [k, v.batcher])),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A server off loopback needs a strong token; every policy id is served once. */
function checkServeOptions(opts: ModelServerOptions, host: string, token: string | null): void {
  if (!isLoopbackHost(host) && token === null) throw new Error(`serving on ${host} (not loopback) requires a token: pass --token or set MARSRL_TOKEN`);
  if (token !== null) {
    const weak = checkTokenStrength(token);
    if (weak) throw new Error(`token: ${weak}`);
  }
  if (opts.policies.length === 0) throw new Error('no policy to serve');
  const ids = new Set<string>();
  for (const p of opts.policies) {
    if (ids.has(p.id)) throw new Error(`two policies are served as ${JSON.stringify(p.id)}; give them distinct ids`);
    ids.add(p.id);
  }
}

/** Each policy with its decoder: the engine given for it, else a batcher in this thread. */
function servedPolicies(opts: ModelServerOptions): Map<string, Served> {
  return new Map<string, Served>(
    opts.policies.map((policy) => {
      const engine = opts.engines?.get(policy.id);
      if (engine) return [policy.id, { policy, batcher: engine }];
      if (!('model' in policy)) throw new Error(`policy ${JSON.stringify(policy.id)} has neither weights in this thread nor a decode engine`);
      return [policy.id, { policy, batcher: new RequestBatcher(policy.model, policy.tokenizer, { windowMs: opts.batchWindowMs, maxRows: opts.maxBatchRows, joinWaitMs: opts.joinWaitMs }) }];
    }),
  );
}

/** Listens on `host:port` (0: any free port) and resolves to the port bound. */
async function listen(server: http.Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** The URL a client uses: a wildcard bind is reached on loopback, an IPv6 host in brackets. */
function serverUrl(host: string, port: number): string {
  const shownHost = isWildcardHost(host) ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shownHost}:${port}`;
}

function unknownModel(model: string): ApiError {
  return new ApiError(404, `The model \`${model}\` does not exist; GET /v1/models lists the served ones`, 'invalid_request_error', 'model', 'model_not_found');
}

function modelCard(p: ServedPolicyInfo) {
  return { id: p.id, object: 'model', created: p.created, owned_by: 'marsrl-studio', max_model_len: p.context };
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * The request target's path. An origin-form target ("/v1/models?x") is cut at the query by hand;
 * anything else (absolute-form, dot segments, percent-escapes) goes through URL's normalisation.
 * The hand path saves a URL parse per request on the hot path (0.02 ms of the server thread).
 */
function requestPath(target: string | undefined): string {
  const raw = target ?? '/';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  if (path.startsWith('/') && !/[%.\\]|\/\//.test(path)) return path;
  return new URL(raw, 'http://placeholder').pathname;
}

/** The body as JSON (Content-Type application/json), at most `maxBytes`. */
async function readJson(req: http.IncomingMessage, maxBytes: number): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type)) throw badRequest(`the body must be JSON (Content-Type: application/json), got ${JSON.stringify(type)}`, null);
  const body = await readBody(req, maxBytes, () => new ApiError(413, `the body is over ${maxBytes} bytes`, 'invalid_request_error'));
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch (error) {
    throw badRequest(`the body is not valid JSON: ${(error as Error).message}`, null);
  }
}

function chatLogprobs(tokens: TokenInfo[]) {
  const bytes = (t: string) => [...Buffer.from(t, 'utf8')];
  return { content: tokens.map((t) => ({ token: t.token, logprob: t.logprob, bytes: bytes(t.token), top_logprobs: t.top.map((a) => ({ token: a.token, logprob: a.logprob, bytes: bytes(a.token) })) })), refusal: null };
}

function completionLogprobs(tokens: TokenInfo[], offset: number) {
  const textOffset: number[] = [];
  let at = offset;
  for (const t of tokens) {
    textOffset.push(at);
    at += t.token.length;
  }
  return {
    tokens: tokens.map((t) => t.token),
    token_logprobs: tokens.map((t) => t.logprob),
    top_logprobs: tokens.map((t) => Object.fromEntries(t.top.map((a) => [a.token, a.logprob]))),
    text_offset: textOffset,
  };
}

function chatChoice(c: DecodedChoice, parsed: ParsedRequest) {
  return { index: c.index, message: { role: 'assistant', content: c.text, refusal: null }, logprobs: parsed.logprobs ? chatLogprobs(c.tokens) : null, finish_reason: c.finishReason };
}

function completionChoice(c: DecodedChoice, parsed: ParsedRequest) {
  return { index: c.index, text: c.text, logprobs: parsed.logprobs ? completionLogprobs(c.tokens, 0) : null, finish_reason: c.finishReason };
}
