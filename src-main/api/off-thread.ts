/**
 * Work a request names, done off the thread that answers requests (issue #36): inspecting a model
 * folder, validating a config against this machine (its task file, its model folders), reading a
 * task's data for an endpoint probe. A hostile input there (a chat template that loops, a
 * tokenizer.json of hundreds of megabytes, a task file of half a gigabyte) used to hold `marsrl
 * serve`'s one thread, or the Electron main process, and every other request waited; a template
 * that allocated without end took the whole server down.
 *
 * One worker thread, started on first use and kept (idle, it never holds a process open), runs
 * the operations in order. Each has a time limit and the worker a heap limit; an
 * operation over either is stopped with an error naming the limit, the worker is replaced, and the
 * operations queued behind it run on the new one. The caller's thread keeps answering meanwhile.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import type { OFF_THREAD_OPS, OffThreadOp } from './off-thread-ops';

export interface OffThreadLimits {
  /** Longest an operation may run, ms. */
  timeoutMs: number;
  /** The worker's V8 heap (old generation), MB. */
  heapMb: number;
}

/**
 * A model folder's inspection parses tokenizer.json (Qwen's 11 MB becomes a few hundred MB of
 * heap); a JSONL task file is read whole (at most 512 MB as text).
 */
export const DEFAULT_OFF_THREAD_LIMITS: OffThreadLimits = { timeoutMs: 60_000, heapMb: 3072 };

/** Starting a worker (loading the TypeScript sources through tsx, from source) takes a few seconds. */
const STARTUP_MS = 60_000;

export class OffThreadError extends Error {
  override readonly name = 'OffThreadError';
}

type Result<O extends OffThreadOp> = ReturnType<(typeof OFF_THREAD_OPS)[O]>;

interface Job {
  id: number;
  op: OffThreadOp;
  args: unknown[];
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** The worker's entry next to this module: the built file in the app, else the source through tsx. */
function workerEntry(): string {
  const built = path.join(here, 'off-thread.js');
  return fs.existsSync(built) ? built : path.join(here, 'off-thread-worker-entry.mjs');
}

export class OffThread {
  private worker: Worker | null = null;
  private ready: Promise<void> | null = null;
  private readonly queue: Job[] = [];
  private current: { job: Job; timer: NodeJS.Timeout } | null = null;
  private nextId = 1;
  private closed = false;

  constructor(private readonly limits: OffThreadLimits = DEFAULT_OFF_THREAD_LIMITS) {}

  /** Run `op` in the worker; rejects with OffThreadError when it ran over a limit. */
  run<O extends OffThreadOp>(op: O, ...args: Parameters<(typeof OFF_THREAD_OPS)[O]>): Promise<Result<O>> {
    if (this.closed) return Promise.reject(new OffThreadError('the off-thread worker is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, op, args, resolve: resolve as (value: unknown) => void, reject });
      this.pump();
    });
  }

  /** Stop the worker; queued operations fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new OffThreadError('the off-thread worker was closed'));
    if (this.current) {
      clearTimeout(this.current.timer);
      this.current.job.reject(new OffThreadError('the off-thread worker was closed'));
      this.current = null;
    }
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private start(): Worker {
    // SHARE_ENV: the worker sees this process's environment as it is now (the API key variables
    // a check looks for, MARSRL_HOME), as the same code run inline would.
    const worker = new Worker(workerEntry(), { env: SHARE_ENV, resourceLimits: { maxOldGenerationSizeMb: this.limits.heapMb } });
    worker.unref();
    this.ready = new Promise((resolve) => {
      const onReady = (m: { ready?: boolean }) => {
        if (!m.ready) return;
        worker.off('message', onReady);
        resolve();
      };
      worker.on('message', onReady);
    });
    worker.on('message', (m: { id?: number; ok?: boolean; result?: unknown; message?: string }) => {
      if (m.id === undefined || this.current?.job.id !== m.id) return;
      const { job, timer } = this.current;
      clearTimeout(timer);
      this.current = null;
      if (m.ok) job.resolve(m.result);
      else job.reject(new Error(m.message));
      this.pump();
    });
    // Out of memory, a crash: the operation running fails with the reason; the next gets a fresh worker.
    worker.on('error', (error) => this.lost(worker, (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY' ? `ran out of its ${this.limits.heapMb} MB of memory and was stopped` : `failed (${error.message})`));
    worker.on('exit', (code) => this.lost(worker, `stopped (exit ${code})`));
    return worker;
  }

  private lost(worker: Worker, why: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.ready = null;
    if (this.current) {
      clearTimeout(this.current.timer);
      this.current.job.reject(new OffThreadError(`${describe(this.current.job)} ${why}; nothing else was affected`));
      this.current = null;
    }
    this.pump();
  }

  private pump(): void {
    if (this.current || this.closed) return;
    const job = this.queue.shift();
    // Idle, the worker never holds the process open; busy, it does (an awaited operation must finish).
    if (!job) {
      this.worker?.unref();
      return;
    }
    this.worker ??= this.start();
    const worker = this.worker;
    worker.ref();
    // Terminating is the only way to stop synchronous work in a thread. The operation's time
    // starts when it is sent; a worker that never gets ready is stopped after STARTUP_MS.
    const stopAfter = (ms: number, why: string) => {
      const timer = setTimeout(() => {
        this.lost(worker, why);
        void worker.terminate();
      }, ms);
      timer.unref();
      return timer;
    };
    this.current = { job, timer: stopAfter(STARTUP_MS, `could not start its worker within ${STARTUP_MS / 1000} s`) };
    void this.ready!.then(() => {
      if (this.current?.job !== job) return;
      clearTimeout(this.current.timer);
      this.current.timer = stopAfter(this.limits.timeoutMs, `ran for over ${this.limits.timeoutMs / 1000} s and was stopped`);
      worker.postMessage({ id: job.id, op: job.op, args: job.args });
    });
  }
}

function describe(job: Job): string {
  const subject = typeof job.args[0] === 'string' ? ` of ${job.args[0]}` : '';
  return job.op === 'inspectModel' ? `inspecting the model folder${subject}` : job.op === 'validateConfig' ? "checking the config against this machine (its task file and model folders)" : 'checking the config before its endpoints are probed';
}
