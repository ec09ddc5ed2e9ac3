/**
 * The resource pool of served models (issue #16; Dr. MAS schedules its agents onto a shared pool
 * of SGLang backends the same way): agents map to named endpoints, an endpoint lists replicas of
 * one model.
 *
 * - Load balancing: each request goes to the healthy replica with the fewest outstanding
 *   requests (ties to the one used least recently), so a slow replica gets less work.
 * - Per-endpoint concurrency: at most `concurrency` requests in flight over all its replicas;
 *   more wait in a FIFO queue (their wait counts toward the queue metric, not the latency).
 * - Failures: a replica that fails with a transient error (timeout, network, 5xx, malformed
 *   answer, cut stream) is taken out of rotation for `downForMs` and the request is retried on
 *   another replica, up to `retries` more attempts with the client's backoff; a 429 keeps the
 *   replica (it is alive, only busy) and waits Retry-After. After `downForMs` a down replica is
 *   health-checked (`GET /models`) before it gets requests again. When every replica is down the
 *   least recently failed one is tried anyway: a pool never refuses work it might do.
 * - Metrics, for the run's dashboard (keys `pool/<endpoint>/…`): queue, in_flight, latency_ms
 *   (mean over requests finished since the last snapshot), errors (failed attempts, cumulative),
 *   requests, replicas_up, prompt_tokens, completion_tokens.
 * Every event names the endpoint and the replica's base URL, never the key.
 */
import { splitAgent } from '#shared/agents';
import { EndpointClient, EndpointError, type CallOptions, type ChatTurn, type EndpointResult, type EndpointSampling, type ProbeReport, type UnsupportedFeature } from './client';
import type { ServedEventSink } from './events';
import { loadKeyApprovals, type KeyApprovals } from './key-approvals';

export interface PoolEndpointSpec {
  name: string;
  /** Base URLs of the replicas (each including the API prefix, e.g. http://h:8000/v1). */
  baseUrls: string[];
  model: string;
  apiKeyEnv?: string | null;
  /** Most requests in flight at once over all replicas. */
  concurrency: number;
  timeoutMs: number;
  /** Attempts after the first, over all replicas. */
  retries: number;
  sampling?: EndpointSampling;
  probePrompt?: string;
}

export interface PoolOptions {
  endpoints: PoolEndpointSpec[];
  /** Agent (solver, verifier1, …) → endpoint name. */
  agents: Record<string, string>;
  onEvent?: ServedEventSink;
  env?: NodeJS.ProcessEnv;
  /** Which key variables may go to which hosts (key-approvals.ts). Default: this machine's approvals file. */
  keyApprovals?: KeyApprovals;
  /** How long a failed replica stays out before a health check may bring it back, ms. Default 10 000. */
  downForMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

interface Replica {
  baseUrl: string;
  client: EndpointClient;
  outstanding: number;
  up: boolean;
  downSince: number;
  lastUsed: number;
  checking: Promise<void> | null;
}

interface EndpointState {
  spec: PoolEndpointSpec;
  replicas: Replica[];
  inFlight: number;
  waiting: Array<() => void>;
  errors: number;
  requests: number;
  latencySum: number;
  latencyCount: number;
  promptTokens: number;
  completionTokens: number;
  unsupported: Set<UnsupportedFeature>;
}

export class EndpointPool {
  private readonly endpoints = new Map<string, EndpointState>();
  private readonly agents: Record<string, string>;
  private readonly onEvent: ServedEventSink;
  private readonly downForMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;
  private useCounter = 0;
  private healthTimer: NodeJS.Timeout | null = null;

  constructor(opts: PoolOptions) {
    this.onEvent = opts.onEvent ?? (() => {});
    this.downForMs = opts.downForMs ?? 10_000;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.now = opts.now ?? Date.now;
    // Read once for the whole pool, and only when some endpoint has a key to send.
    const keyApprovals = opts.keyApprovals ?? (opts.endpoints.some((e) => e.apiKeyEnv) ? loadKeyApprovals() : undefined);
    for (const spec of opts.endpoints) {
      if (this.endpoints.has(spec.name)) throw new Error(`endpoints.${spec.name}: defined twice`);
      if (spec.baseUrls.length === 0) throw new Error(`endpoints.${spec.name}.base_url: no replica to send requests to`);
      if (!(spec.concurrency >= 1)) throw new Error(`endpoints.${spec.name}.concurrency must be at least 1`);
      const unsupported = new Set<UnsupportedFeature>();
      const replicas = spec.baseUrls.map((baseUrl, i): Replica => ({
        baseUrl,
        client: new EndpointClient({
          name: spec.name,
          baseUrl,
          model: spec.model,
          apiKeyEnv: spec.apiKeyEnv ?? null,
          timeoutMs: spec.timeoutMs,
          // The pool retries, on another replica when one fails.
          retries: 0,
          sampling: spec.sampling,
          unsupported,
          env: opts.env,
          keyApprovals,
          urlField: i === 0 ? 'base_url' : `replicas.${i - 1}`,
          backoffBaseMs: opts.backoffBaseMs,
          backoffMaxMs: opts.backoffMaxMs,
          random: opts.random,
          probePrompt: spec.probePrompt,
          // Probe findings are the pool's to report; per-attempt failures are logged below.
          onEvent: (e) => {
            if (e.kind === 'served/probe') this.onEvent(e);
          },
        }),
        outstanding: 0,
        up: true,
        downSince: 0,
        lastUsed: 0,
        checking: null,
      }));
      this.endpoints.set(spec.name, { spec, replicas, inFlight: 0, waiting: [], errors: 0, requests: 0, latencySum: 0, latencyCount: 0, promptTokens: 0, completionTokens: 0, unsupported });
    }
    for (const [agent, endpoint] of Object.entries(opts.agents)) {
      if (!this.endpoints.has(endpoint)) throw new Error(`agent ${agent} is mapped to endpoint ${JSON.stringify(endpoint)}, which is not defined (defined: ${[...this.endpoints.keys()].join(', ') || 'none'})`);
    }
    this.agents = { ...opts.agents };
  }

  /**
   * The endpoint an agent's requests go to: its own mapping, else its role's (verifier2 → the
   * endpoint of verifier), as every Verifier round shares the Verifier policy.
   */
  endpointOf(agent: string): string {
    const name = this.agents[agent] ?? this.agents[splitAgent(agent).role];
    if (name === undefined) throw new Error(`agent ${agent} has no endpoint in the pool (mapped agents: ${Object.keys(this.agents).join(', ') || 'none'})`);
    return name;
  }

  /** A chat completion for `agent`, on its endpoint. */
  chat(agent: string, messages: ChatTurn[], opts: CallOptions = {}): Promise<EndpointResult> {
    return this.call(this.endpointOf(agent), (client, o) => client.chat(messages, o), opts);
  }

  /** A text completion for `agent`, on its endpoint. */
  complete(agent: string, prompt: string, opts: CallOptions = {}): Promise<EndpointResult> {
    return this.call(this.endpointOf(agent), (client, o) => client.complete(prompt, o), opts);
  }

  /**
   * Probe every endpoint (its first healthy replica) before a run: what each lacks is recorded,
   * so requests leave it out, and reported. Never throws.
   */
  async probe(): Promise<ProbeReport[]> {
    const reports: ProbeReport[] = [];
    for (const state of this.endpoints.values()) {
      const report = await state.replicas[0].client.probe();
      for (const m of report.missing) {
        state.unsupported.add(m);
        for (const r of state.replicas) r.client.unsupported.add(m);
      }
      reports.push(report);
    }
    return reports;
  }

  /** Metric values for the run's dashboard; latency is the mean since the previous snapshot. */
  metrics(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, s] of this.endpoints) {
      const key = (k: string) => `pool/${name}/${k}`;
      out[key('queue')] = s.waiting.length;
      out[key('in_flight')] = s.inFlight;
      out[key('errors')] = s.errors;
      out[key('requests')] = s.requests;
      out[key('replicas_up')] = s.replicas.filter((r) => r.up).length;
      out[key('prompt_tokens')] = s.promptTokens;
      out[key('completion_tokens')] = s.completionTokens;
      if (s.latencyCount > 0) out[key('latency_ms')] = s.latencySum / s.latencyCount;
      s.latencySum = 0;
      s.latencyCount = 0;
    }
    return out;
  }

  /**
   * Check every replica every `intervalMs` (`GET /models`) in the background: a replica that
   * stopped answering is taken out before a request meets it, one that is due comes back.
   * Returns a function that stops the checks (also done by `close`).
   */
  startHealthChecks(intervalMs: number): () => void {
    this.stopHealthChecks();
    const timer = setInterval(() => void this.checkAll(), intervalMs);
    timer.unref();
    this.healthTimer = timer;
    return () => this.stopHealthChecks();
  }

  /** One round of health checks over every replica of every endpoint. */
  async checkAll(): Promise<void> {
    await Promise.all(
      [...this.endpoints.values()].map(async (s) => {
        await this.revive(s);
        await Promise.all(
          s.replicas
            .filter((r) => r.up)
            .map(async (r) => {
              try {
                await r.client.listModels();
              } catch (error) {
                if (error instanceof EndpointError && error.status !== 401 && error.status !== 403) this.markDown(s, r, error);
              }
            }),
        );
      }),
    );
  }

  /** Stop background health checks. */
  close(): void {
    this.stopHealthChecks();
  }

  private stopHealthChecks(): void {
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.healthTimer = null;
  }

  /** Replica states of one endpoint (for the UI and tests). */
  replicas(endpoint: string): Array<{ baseUrl: string; up: boolean; outstanding: number }> {
    return this.state(endpoint).replicas.map((r) => ({ baseUrl: r.baseUrl, up: r.up, outstanding: r.outstanding }));
  }

  private state(endpoint: string): EndpointState {
    const s = this.endpoints.get(endpoint);
    if (!s) throw new Error(`no endpoint ${JSON.stringify(endpoint)} in the pool`);
    return s;
  }

  private async acquire(s: EndpointState): Promise<void> {
    if (s.inFlight < s.spec.concurrency) {
      s.inFlight++;
      return;
    }
    await new Promise<void>((resolve) => s.waiting.push(resolve));
  }

  private release(s: EndpointState): void {
    const next = s.waiting.shift();
    if (next) next(); // the slot passes on: inFlight stays the same
    else s.inFlight--;
  }

  private async call(endpoint: string, run: (client: EndpointClient, opts: CallOptions) => Promise<EndpointResult>, opts: CallOptions): Promise<EndpointResult> {
    const s = this.state(endpoint);
    await this.acquire(s);
    s.requests++;
    let streamed = false;
    const onChunk = opts.onChunk;
    const callOpts: CallOptions = onChunk
      ? {
          ...opts,
          onChunk: (c) => {
            if (!c.restart) streamed = true;
            onChunk(c);
          },
        }
      : opts;
    const started = this.now();
    try {
      for (let attempt = 1; ; attempt++) {
        const replica = await this.pick(s);
        try {
          if (streamed && onChunk) {
            onChunk({ index: 0, delta: '', restart: true });
            streamed = false;
          }
          const result = await run(replica.client, callOpts);
          result.attempts = attempt;
          result.latencyMs = this.now() - started;
          s.latencySum += result.latencyMs;
          s.latencyCount++;
          if (result.usage) {
            s.promptTokens += result.usage.promptTokens;
            s.completionTokens += result.usage.completionTokens;
          }
          return result;
        } catch (error) {
          s.errors++;
          const e = error as EndpointError;
          const transient = e instanceof EndpointError && e.retryable;
          if (transient && e.status !== 429) this.markDown(s, replica, e);
          if (!transient || attempt > s.spec.retries || opts.signal?.aborted) {
            this.onEvent({
              level: 'error',
              kind: 'served/failed',
              message: `${e.message} (${attempt} attempt${attempt === 1 ? '' : 's'})`,
              data: { endpoint: s.spec.name, baseUrl: replica.baseUrl, status: e.status ?? null, reason: e.kind ?? 'error', attempts: attempt },
            });
            throw e instanceof EndpointError ? new EndpointError(e.message, e.endpoint, e.kind, e.status, e.retryable, attempt, e.retryAfterMs) : e;
          }
          const delay = replica.client.backoffDelay(attempt, e.retryAfterMs);
          this.onEvent({
            level: 'warning',
            kind: 'served/retry',
            message: `${e.message}; retry ${attempt} of ${s.spec.retries} in ${delay} ms`,
            data: { endpoint: s.spec.name, baseUrl: replica.baseUrl, status: e.status, reason: e.kind, attempt, delayMs: delay },
          });
          await this.sleep(delay);
        } finally {
          replica.outstanding--;
        }
      }
    } finally {
      this.release(s);
    }
  }

  private markDown(s: EndpointState, replica: Replica, e: EndpointError): void {
    replica.downSince = this.now();
    if (!replica.up) return;
    replica.up = false;
    this.onEvent({
      level: 'warning',
      kind: 'served/replica_down',
      message: `endpoint ${s.spec.name}: replica ${replica.baseUrl} taken out of rotation (${e.kind}${e.status ? ` ${e.status}` : ''}); health-checked again after ${this.downForMs} ms`,
      data: { endpoint: s.spec.name, baseUrl: replica.baseUrl, reason: e.kind, status: e.status },
    });
  }

  /** Health-check down replicas whose time out is over; returns when the checks finished. */
  private async revive(s: EndpointState): Promise<void> {
    const due = s.replicas.filter((r) => !r.up && this.now() - r.downSince >= this.downForMs);
    await Promise.all(
      due.map((r) => {
        r.checking ??= (async () => {
          try {
            await r.client.listModels();
            r.up = true;
            this.onEvent({ level: 'info', kind: 'served/replica_up', message: `endpoint ${s.spec.name}: replica ${r.baseUrl} answers again; back in rotation`, data: { endpoint: s.spec.name, baseUrl: r.baseUrl } });
          } catch {
            r.downSince = this.now();
          } finally {
            r.checking = null;
          }
        })();
        return r.checking;
      }),
    );
  }

  /** Choose a replica and count the request on it at once, so concurrent picks see each other. */
  private async pick(s: EndpointState): Promise<Replica> {
    if (s.replicas.some((r) => !r.up && this.now() - r.downSince >= this.downForMs)) await this.revive(s);
    const up = s.replicas.filter((r) => r.up);
    const candidates = up.length > 0 ? up : [...s.replicas].sort((a, b) => a.downSince - b.downSince).slice(0, 1);
    const chosen = candidates.reduce((best, r) => (r.outstanding < best.outstanding || (r.outstanding === best.outstanding && r.lastUsed < best.lastUsed) ? r : best));
    chosen.outstanding++;
    chosen.lastUsed = ++this.useCounter;
    return chosen;
  }
}
