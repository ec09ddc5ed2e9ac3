/**
 * A client for one OpenAI-compatible endpoint (vLLM, SGLang, Ollama, llama.cpp's server, or
 * `marsrl serve-model`), written on node:http with keep-alive connections (http-transport.ts,
 * issue #16).
 *
 * - The API key is never held by the config or this object: `apiKeyEnv` names an environment
 *   variable, read at each call, and every message built from a server's answer goes through
 *   `redactSecret`, so events and errors never carry it.
 * - The key is sent only to a host its variable is approved for on this machine
 *   (key-approvals.ts, issue #36): every request of every kind (calls, retries, probes, health
 *   checks) passes `send`, which refuses before connecting when the approval is missing. Redirects
 *   are never followed (node:http does not), so a 30x to another host cannot carry the key; it is
 *   reported with the address it pointed to.
 * - Retries (`retries` more attempts after the first) on 429, 5xx, timeouts, network errors,
 *   malformed bodies and streams cut before their end, with exponential backoff and equal jitter
 *   (half the delay fixed, half random: a synchronised burst of clients spreads out yet never
 *   retries at once); a 429's Retry-After (seconds or an HTTP date) is a floor on the wait.
 *   400/401/403/404 are not retried: the request or the key is wrong, repeating cannot help.
 * - The timeout is an idle timeout: it restarts whenever bytes arrive, so a long stream that keeps
 *   producing is not cut, and a replica that stops answering is.
 * - Streaming (SSE, `stream: true`) reports each text delta to `onChunk` as it arrives; if the
 *   stream is cut and retried, `onChunk` first receives `{ restart: true }` so a caller that fills
 *   segments as they arrive can drop what it had.
 * - Sampling parameters the server lacks (found by `probe`) are left out of requests.
 *
 * Request and response fields follow the OpenAI API reference (chat/completions, completions,
 * models) and vLLM's extensions (top_k, min_p, chat_template_kwargs).
 */
import { redactSecret, type ServedEventSink } from './events';
import { httpRequest, type TransportResponse } from './http-transport';
import { loadKeyApprovals, type KeyApprovals } from './key-approvals';
import { maxOf, pushAll } from '../util/arrays';

/** Sampling parameters sent with each request; any may be overridden per call. */
export interface EndpointSampling {
  temperature?: number;
  top_p?: number;
  /** vLLM / SGLang / llama.cpp extension (not in OpenAI's API). */
  top_k?: number;
  /** vLLM / SGLang / llama.cpp extension. */
  min_p?: number;
  max_tokens?: number;
  seed?: number;
  /** Choices per request (a whole group in one request where the server supports it). */
  n?: number;
  stop?: string[];
  /** Keep the sampled tokens' log-probabilities. */
  logprobs?: boolean;
  /** Alternatives per position (0–20) when logprobs is on. */
  top_logprobs?: number;
  /** Chat-template options, e.g. Qwen3's `{ enable_thinking: false }` (vLLM / SGLang). */
  chat_template_kwargs?: Record<string, unknown>;
  /** Decode to max_tokens through the end-of-sequence token (vLLM / SGLang): fixed-length outputs. */
  ignore_eos?: boolean;
  /** Tokens before a stop token or stop sequence may end a choice (vLLM / SGLang). */
  min_tokens?: number;
}

export interface EndpointClientOptions {
  /** The endpoint's configured name: events and errors use it (never the key). */
  name: string;
  /** Base URL including the API prefix, e.g. `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  model: string;
  /** Name of the environment variable holding the API key; null for servers without one. */
  apiKeyEnv?: string | null;
  /** Idle timeout per attempt, ms. Default 60 000. */
  timeoutMs?: number;
  /** Attempts after the first. Default 3. */
  retries?: number;
  /** First backoff delay, ms (doubled per attempt). Default 500. */
  backoffBaseMs?: number;
  /** Largest backoff delay and largest Retry-After honoured, ms. Default 30 000. */
  backoffMaxMs?: number;
  sampling?: EndpointSampling;
  /** Parameters the server lacks (from `probe`): dropped from every request. */
  unsupported?: Iterable<UnsupportedFeature>;
  onEvent?: ServedEventSink;
  /** Where the key is read from at call time. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Which variables may be sent to which hosts. Default: this machine's approvals file, read once when first needed. */
  keyApprovals?: KeyApprovals;
  /** The config field this client's URL comes from, for refusals (`base_url`, `replicas.0`). Default `base_url`. */
  urlField?: string;
  /** Random numbers in [0, 1) for the jitter. Default Math.random. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** User message of the probe's tiny request (a policy with a narrow alphabet needs its own). Default "Say hi.". */
  probePrompt?: string;
}

export type UnsupportedFeature = 'logprobs' | 'n' | 'seed' | 'top_k' | 'min_p' | 'chat_template_kwargs' | 'stream' | 'usage';

export interface TokenLogprob {
  token: string;
  logprob: number;
  top?: Array<{ token: string; logprob: number }>;
}

export interface ChoiceResult {
  index: number;
  text: string;
  finishReason: string | null;
  /** Present when logprobs were asked for and the server returned them. */
  logprobs?: TokenLogprob[];
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface EndpointResult {
  choices: ChoiceResult[];
  /** From the server's `usage`; null when it sent none. */
  usage: Usage | null;
  model: string;
  /** Attempts made (1 when the first succeeded). */
  attempts: number;
  latencyMs: number;
}

export interface StreamChunk {
  index: number;
  /** The new text of choice `index`. */
  delta: string;
  /** What was received so far, of every choice, is void (the stream was cut and the request is sent again). */
  restart?: boolean;
}

export interface CallOptions {
  sampling?: EndpointSampling;
  signal?: AbortSignal;
  /** Stream the answer, calling this with every text delta. */
  onChunk?: (chunk: StreamChunk) => void;
}

export type ChatRole = 'system' | 'user' | 'assistant';
export interface ChatTurn {
  role: ChatRole;
  content: string;
}

export type EndpointErrorKind = 'http' | 'timeout' | 'network' | 'malformed' | 'stream_cut' | 'aborted' | 'config';

/** A request that failed for good (after the retries it was allowed). */
export class EndpointError extends Error {
  constructor(
    message: string,
    readonly endpoint: string,
    readonly kind: EndpointErrorKind,
    readonly status: number | null,
    readonly retryable: boolean,
    readonly attempts: number,
    /** For 429: the wait the server asked for, ms. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'EndpointError';
  }
}

export interface ProbeReport {
  endpoint: string;
  reachable: boolean;
  /** Models `/models` lists (empty when it could not be read). */
  models: string[];
  modelServed: boolean;
  /** Features the server rejected, ignored or did not return: leave them out of requests. */
  missing: UnsupportedFeature[];
  /** Human-readable findings, one per line (what is missing and why we think so). */
  notes: string[];
  /** Why the probe failed, when it did (unreachable, 401, model not served …). */
  error: string | null;
}

const DEFAULTS = { timeoutMs: 60_000, retries: 3, backoffBaseMs: 500, backoffMaxMs: 30_000 };

/** Cumulative accounting of one client (token counts from the servers' `usage`). */
export interface ClientTotals {
  requests: number;
  failures: number;
  retries: number;
  promptTokens: number;
  completionTokens: number;
}

export class EndpointClient {
  readonly name: string;
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKeyEnv: string | null;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly sampling: EndpointSampling;
  readonly unsupported: Set<UnsupportedFeature>;
  readonly totals: ClientTotals = { requests: 0, failures: 0, retries: 0, promptTokens: 0, completionTokens: 0 };
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly onEvent: ServedEventSink;
  private readonly env: NodeJS.ProcessEnv;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly probePrompt: string;
  private keyApprovals: KeyApprovals | null;
  private readonly urlField: string;

  constructor(opts: EndpointClientOptions) {
    this.name = opts.name;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.model = opts.model;
    this.apiKeyEnv = opts.apiKeyEnv ?? null;
    this.timeoutMs = opts.timeoutMs ?? DEFAULTS.timeoutMs;
    this.retries = opts.retries ?? DEFAULTS.retries;
    this.backoffBaseMs = opts.backoffBaseMs ?? DEFAULTS.backoffBaseMs;
    this.backoffMaxMs = opts.backoffMaxMs ?? DEFAULTS.backoffMaxMs;
    this.sampling = { ...(opts.sampling ?? {}) };
    this.unsupported = new Set(opts.unsupported ?? []);
    this.onEvent = opts.onEvent ?? (() => {});
    this.env = opts.env ?? process.env;
    this.random = opts.random ?? Math.random;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.probePrompt = opts.probePrompt ?? 'Say hi.';
    this.keyApprovals = opts.keyApprovals ?? null;
    this.urlField = opts.urlField ?? 'base_url';
  }

  /** A chat completion (`POST {baseUrl}/chat/completions`). */
  chat(messages: ChatTurn[], opts: CallOptions = {}): Promise<EndpointResult> {
    return this.request('chat/completions', { messages }, opts);
  }

  /** A text completion (`POST {baseUrl}/completions`): the prompt continued as is. */
  complete(prompt: string, opts: CallOptions = {}): Promise<EndpointResult> {
    return this.request('completions', { prompt }, opts);
  }

  /** `GET {baseUrl}/models`: the ids the server serves. */
  async listModels(signal?: AbortSignal): Promise<string[]> {
    const res = await this.attemptOnce('models', null, signal ?? null);
    const body = res.body as { data?: Array<{ id?: unknown }> };
    if (!body || !Array.isArray(body.data)) throw new EndpointError(`endpoint ${this.name}: ${this.baseUrl}/models did not return a model list`, this.name, 'malformed', 200, false, 1);
    return body.data.map((m) => String(m.id));
  }

  /**
   * Capability probe, run before a run starts: the model list, then one tiny request asking for
   * everything this client may use (n = 2, logprobs with 2 alternatives, a seed, top_k, min_p).
   * A 400 naming a parameter marks it missing and the request is sent again without it; a 200
   * that drops a feature (one choice for n = 2, no logprobs) marks that missing too; the seeded
   * request is sent twice at temperature 1 and differing answers mean the seed is not honoured.
   * Never throws: what failed is in `error`.
   */
  async probe(): Promise<ProbeReport> {
    const report: ProbeReport = { endpoint: this.name, reachable: false, models: [], modelServed: false, missing: [], notes: [], error: null };
    const keyProblem = this.keyProblem();
    if (keyProblem) {
      report.error = keyProblem;
      return report;
    }
    try {
      report.models = await this.listModels();
      report.reachable = true;
    } catch (error) {
      const e = error as EndpointError;
      report.reachable = e.kind === 'http' || e.kind === 'malformed';
      report.error = e.message;
      if (e.status === 401 || e.status === 403 || e.kind === 'network' || e.kind === 'timeout') return report;
      report.notes.push(`${this.baseUrl}/models could not be read; the model name is checked by a request instead`);
    }
    report.modelServed = report.models.includes(this.model);
    if (report.models.length > 0 && !report.modelServed) {
      report.error = `endpoint ${this.name}: model ${JSON.stringify(this.model)} is not served at ${this.baseUrl} (it serves ${report.models.map((m) => JSON.stringify(m)).join(', ')})`;
      return report;
    }
    const wanted: EndpointSampling = { max_tokens: 2, temperature: 1, n: 2, logprobs: true, top_logprobs: 2, seed: 1234, top_k: 40, min_p: 0.01 };
    const dropped = new Set<UnsupportedFeature>();
    const optional: UnsupportedFeature[] = ['top_k', 'min_p', 'seed', 'n', 'logprobs', 'chat_template_kwargs'];
    let first: EndpointResult | null = null;
    for (let tries = 0; tries <= optional.length && !first; tries++) {
      try {
        first = await this.requestWith('chat/completions', { messages: [{ role: 'user', content: this.probePrompt }] }, { sampling: wanted }, dropped, 0);
      } catch (error) {
        const e = error as EndpointError;
        const named = e.status === 400 || e.status === 422 ? optional.find((f) => !dropped.has(f) && mentions(e.message, f)) : undefined;
        if (!named) {
          report.error = e.message;
          return report;
        }
        dropped.add(named);
        report.notes.push(`rejects ${named}: ${e.message}`);
      }
    }
    if (!first) return report;
    report.reachable = true;
    report.modelServed = true;
    if (!dropped.has('n') && first.choices.length < 2) {
      dropped.add('n');
      report.notes.push(`ignores n: asked for 2 choices, got ${first.choices.length} (a group is sent as separate requests)`);
    }
    if (!dropped.has('logprobs') && !first.choices.every((c) => c.logprobs && c.logprobs.length > 0)) {
      dropped.add('logprobs');
      report.notes.push('returns no logprobs');
    }
    if (first.usage === null) {
      dropped.add('usage');
      report.notes.push('sends no usage: token counts are not known');
    }
    if (!dropped.has('seed')) {
      try {
        const again = await this.requestWith('chat/completions', { messages: [{ role: 'user', content: this.probePrompt }] }, { sampling: wanted }, dropped, 0);
        if (again.choices.map((c) => c.text).join('\u0000') !== first.choices.map((c) => c.text).join('\u0000')) {
          dropped.add('seed');
          report.notes.push('does not honour seed: two seeded requests at temperature 1 answered differently');
        }
      } catch (error) {
        report.notes.push(`second seeded request failed: ${(error as Error).message}`);
      }
    }
    report.missing = [...dropped];
    this.onEvent({
      level: report.missing.length > 0 ? 'warning' : 'info',
      kind: 'served/probe',
      message: report.missing.length > 0 ? `endpoint ${this.name} lacks ${report.missing.join(', ')}` : `endpoint ${this.name} supports every feature probed`,
      data: { endpoint: this.name, baseUrl: this.baseUrl, model: this.model, missing: report.missing, notes: report.notes },
    });
    return report;
  }

  /**
   * The fix for a missing or unapproved key, or null when the key is present and approved for this
   * client's host (or none is configured).
   */
  keyProblem(): string | null {
    if (this.apiKeyEnv === null) return null;
    const key = this.env[this.apiKeyEnv];
    if (key === undefined || key === '') return `endpoint ${this.name}: the environment variable ${this.apiKeyEnv} (api_key_env) is not set; export it with the endpoint's API key`;
    const approvals = this.approvals();
    if (!approvals.allows(this.apiKeyEnv, this.baseUrl)) {
      const field = this.urlField === 'base_url' ? 'api_key_env' : `${this.urlField} (api_key_env ${this.apiKeyEnv})`;
      return `endpoint ${this.name}: ${approvals.refusal(this.apiKeyEnv, this.baseUrl, field)}`;
    }
    return null;
  }

  private approvals(): KeyApprovals {
    this.keyApprovals ??= loadKeyApprovals();
    return this.keyApprovals;
  }

  private async request(path: string, payload: Record<string, unknown>, opts: CallOptions): Promise<EndpointResult> {
    const sampling = { ...this.sampling, ...(opts.sampling ?? {}) };
    const n = sampling.n ?? 1;
    if (n <= 1 || !this.unsupported.has('n')) return this.requestWith(path, payload, opts, this.unsupported, this.retries);
    // A server without `n` gets the group as n requests of one choice; a seed, where honoured,
    // is offset per choice so the choices differ and stay reproducible.
    const started = Date.now();
    const parts = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        this.requestWith(
          path,
          payload,
          {
            ...opts,
            sampling: { ...sampling, n: 1, ...(sampling.seed !== undefined ? { seed: sampling.seed + i } : {}) },
            onChunk: opts.onChunk ? (c) => opts.onChunk!({ ...c, index: i }) : undefined,
          },
          this.unsupported,
          this.retries,
        ),
      ),
    );
    const usage = parts.every((p) => p.usage)
      ? parts.reduce((a, p) => ({ promptTokens: a.promptTokens + p.usage!.promptTokens, completionTokens: a.completionTokens + p.usage!.completionTokens, totalTokens: a.totalTokens + p.usage!.totalTokens }), { promptTokens: 0, completionTokens: 0, totalTokens: 0 })
      : null;
    return {
      choices: parts.map((p, i) => ({ ...p.choices[0], index: i })),
      usage,
      model: parts[0].model,
      attempts: maxOf(parts, (p) => p.attempts),
      latencyMs: Date.now() - started,
    };
  }

  private async requestWith(path: string, payload: Record<string, unknown>, opts: CallOptions, unsupported: Set<UnsupportedFeature>, retries: number): Promise<EndpointResult> {
    const keyProblem = this.keyProblem();
    if (keyProblem) throw new EndpointError(keyProblem, this.name, 'config', null, false, 0);
    const body: Record<string, unknown> = { model: this.model, ...payload, ...this.samplingFields(path, { ...this.sampling, ...(opts.sampling ?? {}) }, unsupported) };
    const streaming = opts.onChunk !== undefined && !unsupported.has('stream');
    if (streaming) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    const started = Date.now();
    this.totals.requests++;
    let streamedAny = false;
    for (let attempt = 1; ; attempt++) {
      try {
        if (streamedAny && opts.onChunk) {
          opts.onChunk({ index: 0, delta: '', restart: true });
          streamedAny = false;
        }
        const result = streaming
          ? await this.attemptStream(path, body, opts.signal ?? null, (c) => {
              streamedAny = true;
              opts.onChunk!(c);
            })
          : parseResult((await this.attemptOnce(path, body, opts.signal ?? null)).body, this.name, path);
        result.attempts = attempt;
        result.latencyMs = Date.now() - started;
        if (result.usage) {
          this.totals.promptTokens += result.usage.promptTokens;
          this.totals.completionTokens += result.usage.completionTokens;
        }
        return result;
      } catch (error) {
        const e = error instanceof EndpointError ? error : new EndpointError(`endpoint ${this.name}: ${redactSecret(String(error), this.rawKey())}`, this.name, 'network', null, true, attempt);
        if (!e.retryable || attempt > retries || opts.signal?.aborted) {
          this.totals.failures++;
          const failed = new EndpointError(e.message, e.endpoint, e.kind, e.status, e.retryable, attempt, e.retryAfterMs);
          this.onEvent({
            level: 'error',
            kind: 'served/failed',
            message: `${e.message} (${attempt} attempt${attempt === 1 ? '' : 's'})`,
            data: { endpoint: this.name, baseUrl: this.baseUrl, status: e.status, reason: e.kind, attempts: attempt },
          });
          throw failed;
        }
        const delay = this.backoffDelay(attempt, e.retryAfterMs);
        this.totals.retries++;
        this.onEvent({
          level: 'warning',
          kind: 'served/retry',
          message: `${e.message}; retry ${attempt} of ${retries} in ${delay} ms`,
          data: { endpoint: this.name, baseUrl: this.baseUrl, status: e.status, reason: e.kind, attempt, delayMs: delay },
        });
        await this.sleep(delay);
      }
    }
  }

  /** Exponential backoff with equal jitter; a server's Retry-After is a floor. */
  backoffDelay(attempt: number, retryAfterMs: number | null): number {
    const exp = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** (attempt - 1));
    const jittered = exp / 2 + this.random() * (exp / 2);
    const floor = retryAfterMs === null ? 0 : Math.min(retryAfterMs, this.backoffMaxMs);
    return Math.round(Math.max(jittered, floor));
  }

  private samplingFields(path: string, s: EndpointSampling, unsupported: Set<UnsupportedFeature>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (s.temperature !== undefined) out.temperature = s.temperature;
    if (s.top_p !== undefined) out.top_p = s.top_p;
    if (s.top_k !== undefined && !unsupported.has('top_k')) out.top_k = s.top_k;
    if (s.min_p !== undefined && !unsupported.has('min_p')) out.min_p = s.min_p;
    if (s.max_tokens !== undefined) out.max_tokens = s.max_tokens;
    if (s.seed !== undefined && !unsupported.has('seed')) out.seed = s.seed;
    if (s.n !== undefined && s.n !== 1 && !unsupported.has('n')) out.n = s.n;
    if (s.stop !== undefined && s.stop.length > 0) out.stop = s.stop;
    if (s.logprobs && !unsupported.has('logprobs')) {
      // Chat takes logprobs: true plus top_logprobs (0–20); completions takes logprobs: k (0–5).
      if (path === 'completions') out.logprobs = Math.min(5, s.top_logprobs ?? 0);
      else {
        out.logprobs = true;
        if (s.top_logprobs !== undefined) out.top_logprobs = s.top_logprobs;
      }
    }
    if (s.chat_template_kwargs !== undefined && !unsupported.has('chat_template_kwargs')) out.chat_template_kwargs = s.chat_template_kwargs;
    if (s.ignore_eos) out.ignore_eos = true;
    if (s.min_tokens !== undefined && s.min_tokens > 0) out.min_tokens = s.min_tokens;
    return out;
  }

  /** The key to send: only when its variable is approved for this client's host. */
  private key(): string | null {
    if (this.apiKeyEnv === null) return null;
    const key = this.env[this.apiKeyEnv];
    if (!key || !this.approvals().allows(this.apiKeyEnv, this.baseUrl)) return null;
    return key;
  }

  /** The variable's value whatever the approvals, only to scrub it from messages. */
  private rawKey(): string | null {
    return this.apiKeyEnv === null ? null : (this.env[this.apiKeyEnv] ?? null);
  }

  private headers(json: boolean, hasBody: boolean): Record<string, string> {
    const h: Record<string, string> = { accept: json ? 'application/json' : 'text/event-stream' };
    if (hasBody) h['content-type'] = 'application/json';
    const key = this.key();
    if (key) h.authorization = `Bearer ${key}`;
    return h;
  }

  /** An idle-timeout signal (restarted by `touch`) combined with the caller's. */
  private timer(signal: AbortSignal | null): { signal: AbortSignal; touch: () => void; done: () => void; timedOut: () => boolean } {
    const controller = new AbortController();
    let fired = false;
    let handle: NodeJS.Timeout | null = null;
    const touch = () => {
      if (handle) clearTimeout(handle);
      handle = setTimeout(() => {
        fired = true;
        controller.abort(new Error('timeout'));
      }, this.timeoutMs);
    };
    touch();
    // A listener removed when the attempt ends, rather than AbortSignal.any, which on Node 20
    // keeps every derived signal alive as long as a long-lived caller signal (a run's stop).
    const forward = () => controller.abort(signal?.reason);
    if (signal?.aborted) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    return {
      signal: controller.signal,
      touch,
      done: () => {
        if (handle) clearTimeout(handle);
        signal?.removeEventListener('abort', forward);
      },
      timedOut: () => fired,
    };
  }

  private fail(kind: EndpointErrorKind, message: string, status: number | null = null, retryAfterMs: number | null = null): EndpointError {
    const retryable = kind === 'timeout' || kind === 'network' || kind === 'malformed' || kind === 'stream_cut' || (kind === 'http' && status !== null && (status === 429 || status >= 500));
    return new EndpointError(`endpoint ${this.name}: ${redactSecret(message, this.rawKey())}`, this.name, kind, status, retryable, 1, retryAfterMs);
  }

  private async send(path: string, body: unknown, timer: ReturnType<EndpointClient['timer']>, json: boolean): Promise<TransportResponse> {
    const url = `${this.baseUrl}/${path}`;
    // The one door every request leaves by: no connection is made for a key that may not go there.
    const keyProblem = this.keyProblem();
    if (keyProblem) throw new EndpointError(keyProblem, this.name, 'config', null, false, 1);
    let res: TransportResponse;
    try {
      res = await httpRequest(url, {
        method: body === null ? 'GET' : 'POST',
        headers: this.headers(json, body !== null),
        body: body === null ? undefined : JSON.stringify(body),
        signal: timer.signal,
      });
    } catch (error) {
      throw this.transportError(error, timer, url);
    }
    timer.touch();
    if (!res.ok) {
      let text = '';
      try {
        text = await res.text();
      } catch {
        // the body is only for the message
      }
      throw this.fail('http', describeHttpError(res.status, text, url, this.apiKeyEnv, this.model, res.header('location')), res.status, res.status === 429 ? parseRetryAfter(res.header('retry-after')) : null);
    }
    return res;
  }

  private transportError(error: unknown, timer: ReturnType<EndpointClient['timer']>, url: string): EndpointError {
    if (timer.timedOut()) return this.fail('timeout', `no answer from ${url} within ${this.timeoutMs} ms`);
    if (timer.signal.aborted) return new EndpointError(`endpoint ${this.name}: request aborted`, this.name, 'aborted', null, false, 1);
    // node:http puts the socket's code on the error itself; fetch put it on the cause.
    const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
    return this.fail('network', `cannot reach ${url}: ${e.code ?? e.cause?.code ?? e.cause?.message ?? e.message}`);
  }

  private async attemptOnce(path: string, body: unknown, signal: AbortSignal | null): Promise<{ body: unknown }> {
    const timer = this.timer(signal);
    try {
      const res = await this.send(path, body, timer, true);
      let text: string;
      try {
        text = await res.text();
      } catch (error) {
        throw this.transportError(error, timer, `${this.baseUrl}/${path}`);
      }
      try {
        return { body: JSON.parse(text) as unknown };
      } catch {
        throw this.fail('malformed', `${this.baseUrl}/${path} answered with malformed JSON: ${JSON.stringify(text.slice(0, 120))}`, res.status);
      }
    } finally {
      timer.done();
    }
  }

  private async attemptStream(path: string, body: unknown, signal: AbortSignal | null, onChunk: (c: StreamChunk) => void): Promise<EndpointResult> {
    const timer = this.timer(signal);
    const url = `${this.baseUrl}/${path}`;
    try {
      const res = await this.send(path, body, timer, false);
      const acc = new StreamAccumulator(path === 'chat/completions');
      const decoder = new TextDecoder();
      let buffer = '';
      let done = false;
      const reader = res.chunks()[Symbol.asyncIterator]();
      try {
        while (!done) {
          let chunk: IteratorResult<Buffer>;
          try {
            chunk = await reader.next();
          } catch (error) {
            const e = this.transportError(error, timer, url);
            // A connection dropped after the headers is a cut stream, whatever the socket said.
            if (e.kind !== 'network') throw e;
            throw this.fail('stream_cut', `the stream from ${url} was cut after ${acc.receivedText()} characters (${e.message.replace(/^endpoint [^:]*: /, '')})`);
          }
          if (chunk.done) break;
          timer.touch();
          buffer += decoder.decode(chunk.value, { stream: true });
          // SSE (WHATWG HTML §9.2): events end with a blank line; `data:` lines carry the payload.
          let sep: RegExpExecArray | null;
          while (!done && (sep = /\r?\n\r?\n/.exec(buffer))) {
            const event = buffer.slice(0, sep.index);
            buffer = buffer.slice(sep.index + sep[0].length);
            const data = event
              .split(/\r?\n/)
              .filter((l) => l.startsWith('data:'))
              .map((l) => l.slice(5).replace(/^ /, ''))
              .join('\n');
            if (data === '') continue;
            if (data === '[DONE]') {
              done = true;
              break;
            }
            let parsed: unknown;
            try {
              parsed = JSON.parse(data);
            } catch {
              throw this.fail('malformed', `${url} streamed malformed JSON: ${JSON.stringify(data.slice(0, 120))}`, res.status);
            }
            const err = (parsed as { error?: { message?: string; code?: number } }).error;
            if (err) throw this.fail('http', `${url} reported an error mid-stream: ${err.message ?? JSON.stringify(err)}`, typeof err.code === 'number' ? err.code : 500);
            for (const delta of acc.add(parsed)) onChunk(delta);
          }
        }
        // The server ends the response right after [DONE]: reading to that end returns the
        // connection to the pool before the caller's next request, which then reuses it.
        if (done) {
          try {
            while (!(await reader.next()).done) timer.touch();
          } catch {
            // the answer is complete; a connection lost after it costs nothing
          }
        }
      } finally {
        res.release(done);
      }
      if (!done) throw this.fail('stream_cut', `the stream from ${url} ended before [DONE] (${acc.receivedText()} characters received)`);
      return acc.result(this.model);
    } finally {
      timer.done();
    }
  }
}

function mentions(message: string, feature: UnsupportedFeature): boolean {
  const m = message.toLowerCase();
  if (feature === 'logprobs') return m.includes('logprobs');
  if (feature === 'n') return /\bn\b/.test(m.replace(/[`'"]/g, ' '));
  return m.includes(feature);
}

/** Retry-After: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); ms from now, or null. */
export function parseRetryAfter(value: string | null): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - Date.now());
}

function describeHttpError(status: number, text: string, url: string, apiKeyEnv: string | null, model: string, location: string | null): string {
  // Never followed: a redirect to another host would carry the request (and its key) there.
  if (status >= 300 && status < 400) return `${url} answered HTTP ${status}, a redirect${location ? ` to ${JSON.stringify(location.slice(0, 300))}` : ''}; redirects are not followed (a request and its key go only to the address the config names): set base_url to the address that serves the API`;
  let detail = text.slice(0, 300);
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } | string; message?: string; detail?: string };
    const e = parsed.error;
    detail = typeof e === 'string' ? e : (e?.message ?? parsed.message ?? parsed.detail ?? detail);
  } catch {
    // not JSON: keep the text
  }
  if (status === 401 || status === 403) return `${url} refused the API key${apiKeyEnv ? ` from ${apiKeyEnv}` : ' (api_key_env is not set)'} (HTTP ${status}): ${detail}`;
  if (status === 404) return `${url} answered 404 (is model ${JSON.stringify(model)} served there?): ${detail}`;
  return `${url} answered HTTP ${status}: ${detail}`;
}

interface RawChoice {
  index?: number;
  message?: { content?: string | null; reasoning_content?: string | null };
  text?: string;
  finish_reason?: string | null;
  logprobs?: RawLogprobs | null;
}
interface RawLogprobs {
  content?: Array<{ token: string; logprob: number; top_logprobs?: Array<{ token: string; logprob: number }> }> | null;
  tokens?: string[];
  token_logprobs?: number[];
  top_logprobs?: Array<Record<string, number>> | null;
}

function normaliseLogprobs(raw: RawLogprobs | null | undefined): TokenLogprob[] | undefined {
  if (!raw) return undefined;
  if (Array.isArray(raw.content)) return raw.content.map((c) => ({ token: c.token, logprob: c.logprob, ...(c.top_logprobs ? { top: c.top_logprobs.map((t) => ({ token: t.token, logprob: t.logprob })) } : {}) }));
  if (Array.isArray(raw.tokens) && Array.isArray(raw.token_logprobs)) {
    return raw.tokens.map((token, i) => {
      const top = raw.top_logprobs?.[i];
      return { token, logprob: raw.token_logprobs![i], ...(top ? { top: Object.entries(top).map(([t, lp]) => ({ token: t, logprob: lp })) } : {}) };
    });
  }
  return undefined;
}

function parseUsage(raw: unknown): Usage | null {
  const u = raw as { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null | undefined;
  if (!u || typeof u.completion_tokens !== 'number') return null;
  const promptTokens = u.prompt_tokens ?? 0;
  return { promptTokens, completionTokens: u.completion_tokens, totalTokens: u.total_tokens ?? promptTokens + u.completion_tokens };
}

function parseResult(body: unknown, endpoint: string, path: string): EndpointResult {
  const b = body as { choices?: RawChoice[]; usage?: unknown; model?: string };
  if (!b || !Array.isArray(b.choices)) throw new EndpointError(`endpoint ${endpoint}: the answer to ${path} has no choices array`, endpoint, 'malformed', 200, true, 1);
  const choices = b.choices.map((c, i): ChoiceResult => {
    const text = path === 'chat/completions' ? (c.message?.content ?? '') : (c.text ?? '');
    if (typeof text !== 'string') throw new EndpointError(`endpoint ${endpoint}: choice ${i} has no text`, endpoint, 'malformed', 200, true, 1);
    const logprobs = normaliseLogprobs(c.logprobs);
    return { index: c.index ?? i, text, finishReason: c.finish_reason ?? null, ...(logprobs ? { logprobs } : {}) };
  });
  choices.sort((a, b2) => a.index - b2.index);
  return { choices, usage: parseUsage(b.usage), model: b.model ?? '', attempts: 1, latencyMs: 0 };
}

/** Builds the final result of a stream from its chunks (choices interleave by `index`). */
class StreamAccumulator {
  private readonly choices = new Map<number, { text: string; finishReason: string | null; logprobs: TokenLogprob[] }>();
  private usage: Usage | null = null;
  private model = '';
  constructor(private readonly chat: boolean) {}

  add(chunk: unknown): StreamChunk[] {
    const c = chunk as { choices?: Array<RawChoice & { delta?: { content?: string | null } }>; usage?: unknown; model?: string };
    if (c.model) this.model = c.model;
    const usage = parseUsage(c.usage);
    if (usage) this.usage = usage;
    const out: StreamChunk[] = [];
    for (const choice of c.choices ?? []) {
      const index = choice.index ?? 0;
      let entry = this.choices.get(index);
      if (!entry) {
        entry = { text: '', finishReason: null, logprobs: [] };
        this.choices.set(index, entry);
      }
      const delta = this.chat ? (choice.delta?.content ?? '') : (choice.text ?? '');
      if (delta) {
        entry.text += delta;
        out.push({ index, delta });
      }
      const lp = normaliseLogprobs(choice.logprobs);
      if (lp) pushAll(entry.logprobs, lp);
      if (choice.finish_reason) entry.finishReason = choice.finish_reason;
    }
    return out;
  }

  receivedText(): number {
    let n = 0;
    for (const c of this.choices.values()) n += c.text.length;
    return n;
  }

  result(model: string): EndpointResult {
    const choices = [...this.choices.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, c]): ChoiceResult => ({ index, text: c.text, finishReason: c.finishReason, ...(c.logprobs.length > 0 ? { logprobs: c.logprobs } : {}) }));
    return { choices, usage: this.usage, model: this.model || model, attempts: 1, latencyMs: 0 };
  }
}
