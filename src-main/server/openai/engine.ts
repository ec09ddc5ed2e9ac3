/**
 * Where `marsrl serve-model` decodes (issue #16): in a thread of its own (`ThreadEngine`, the
 * default from two cores up), as vLLM runs its engine core apart from its API server, or in the
 * HTTP server's thread (a RequestBatcher; `--engine inline`, and on one core). On one thread every
 * request's HTTP parsing, chat-template rendering, tokenizing, JSON and socket writes run between
 * decode steps and lengthen them (the server's thread 97–99% busy at 8 clients). With the engine
 * on its own thread the decode loop does only what in-process decoding does, plus one message in
 * and one out per request (and one per streamed update); what it costs instead is latency, the
 * hand-offs of a closed-loop client's round trip. Measured on a 2-core machine (npm run bench --
 * serve --clients 8 --rounds 9 --requests 10, four runs each, interleaved): tiny-qwen's Solver
 * 7.3 / −2.0 / 2.8 / 13.8% overhead in its thread against 17.2 / 18.1 / 16.0 / 23.0% inline; the
 * quick GPT, whose whole request decodes in about 15 ms, 34.5 / 50.9 / 46.8 / 46.5% against
 * 36.0 / 38.2 / 58.7 / 67.5%.
 *
 * The worker alone loads the weights (tensors do not cross threads); the HTTP thread keeps the
 * tokenizers and context lengths (policy.ts describeCheckpointPolicy: prompts are rendered,
 * checked against the context and tokenized there, so a bad request never reaches the engine).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Role } from '#shared/agents';
import { emptyBatcherStats, type BatcherStats, type DecodedChoice, type DecodeJob } from './batcher';

/** What the server needs of a decoder: RequestBatcher in-thread, ThreadEngine's proxies across. */
export interface DecodeEngine {
  submit(job: DecodeJob): Promise<DecodedChoice[]>;
  /** Batching counters (for a thread engine: as of the last answer it sent). */
  readonly stats: BatcherStats;
}

/** A policy folder as serve-model loads it (policy.ts loadCheckpointPolicy). */
export interface EngineSource {
  dir: string;
  id?: string;
  role?: Role;
}

export interface EngineThreadData {
  sources: EngineSource[];
  /** The backend the HTTP thread initialised (the worker uses the same). */
  backend: string;
  windowMs?: number;
  maxRows?: number;
  joinWaitMs?: number;
}

export type ToEngine = { type: 'submit'; id: number; policy: string; prompt: number[]; params: DecodeJob['params']; stream: boolean } | { type: 'abort'; id: number };

export type FromEngine =
  | { type: 'ready'; ids: string[] }
  | { type: 'failed'; message: string }
  | { type: 'update'; id: number; update: Parameters<NonNullable<DecodeJob['onUpdate']>>[0] }
  | { type: 'done'; id: number; choices: DecodedChoice[]; stats: BatcherStats }
  | { type: 'error'; id: number; message: string };

interface Pending {
  resolve: (choices: DecodedChoice[]) => void;
  reject: (error: Error) => void;
  onUpdate?: DecodeJob['onUpdate'];
  policy: string;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** The engine thread's entry next to this module: from source through tsx's loader, as the CLI runs. */
function threadEntry(): { file: string; execArgv: string[] } {
  const built = path.join(here, 'engine-thread.js');
  if (fs.existsSync(built)) return { file: built, execArgv: [] };
  return { file: path.join(here, 'engine-thread-entry.mjs'), execArgv: [] };
}

export class ThreadEngine {
  private readonly pending = new Map<number, Pending>();
  private readonly stats = new Map<string, BatcherStats>();
  private nextId = 1;
  private dead: Error | null = null;

  private constructor(private readonly worker: Worker) {}

  /** Start the engine thread; resolves once every policy is loaded there (rejects naming what failed). */
  static async start(data: EngineThreadData): Promise<ThreadEngine> {
    const entry = threadEntry();
    const worker = new Worker(entry.file, { workerData: data, execArgv: entry.execArgv });
    const engine = new ThreadEngine(worker);
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: FromEngine) => {
        if (m.type === 'ready') {
          for (const id of m.ids) engine.stats.set(id, emptyBatcherStats());
          resolve();
        } else if (m.type === 'failed') reject(new Error(`the engine thread could not start: ${m.message}`));
        else engine.onMessage(m);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the engine thread exited (${code}) while loading`)));
    });
    worker.removeAllListeners('error');
    worker.removeAllListeners('exit');
    // A crashed engine fails what it was decoding (the server answers 500) and every later request.
    worker.on('error', (error) => engine.fail(error));
    worker.on('exit', (code) => engine.fail(new Error(`the engine thread exited (${code})`)));
    return engine;
  }

  /** The decoder of one policy, for the server. */
  engineFor(policy: string): DecodeEngine {
    if (!this.stats.has(policy)) throw new Error(`the engine thread serves no policy ${JSON.stringify(policy)}`);
    const stats = () => this.stats.get(policy)!;
    return {
      submit: (job) => this.submit(policy, job),
      get stats() {
        return stats();
      },
    };
  }

  private submit(policy: string, job: DecodeJob): Promise<DecodedChoice[]> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onUpdate: job.onUpdate, policy });
      this.post({ type: 'submit', id, policy, prompt: job.prompt, params: job.params, stream: job.onUpdate !== undefined });
      job.signal?.addEventListener('abort', () => this.post({ type: 'abort', id }), { once: true });
    });
  }

  private post(message: ToEngine): void {
    if (!this.dead) this.worker.postMessage(message);
  }

  private onMessage(m: FromEngine): void {
    if (m.type !== 'update' && m.type !== 'done' && m.type !== 'error') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.type === 'update') return p.onUpdate?.(m.update);
    this.pending.delete(m.id);
    if (m.type === 'done') {
      this.stats.set(p.policy, m.stats);
      p.resolve(m.choices);
    } else p.reject(new Error(m.message));
  }

  private fail(error: Error): void {
    if (this.dead) return;
    this.dead = error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  async close(): Promise<void> {
    this.fail(new Error('the engine thread was stopped'));
    await this.worker.terminate();
  }
}
