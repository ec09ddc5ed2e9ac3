/**
 * The hard time bound of a comparison (issue #34). compute-engine is synchronous and its own time
 * limit is not always honoured (measured: `N()` of `9^{9^{9^{9}}}` ran 37 s under a 0.5 s limit,
 * `simplify((x+1)^{200})` 1.6 s), so comparisons that need it run in a worker thread and the caller
 * blocks on a shared counter with a timeout (`Atomics.wait`, then `receiveMessageOnPort`: a
 * synchronous call into another thread). A comparison past its budget is a wrong answer; the
 * thread is terminated and the next comparison starts a fresh one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { RewoundEngine, type EngineVerdict } from './engine';

export interface ThreadRequest {
  id: number;
  reference: string;
  answer: string;
  softLimitMs: number;
}

export interface ThreadReply {
  id: number;
  ready: boolean;
  failure?: string;
  verdict?: EngineVerdict;
  ms?: number;
}

/** Waiting for the thread to load compute-engine (tsx compiling the sources first, on a busy machine). */
const STARTUP_LIMIT_MS = 120_000;
/** The engine's own (soft) limit, as a share of the hard budget: most runaways stop there, and the thread lives on. */
const SOFT_SHARE = 0.75;

export type Incident = { kind: 'timeout' | 'thread-restart' | 'in-process'; message: string; reference?: string; answer?: string };

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The thread's entry: built by electron-vite as out/main/math-answer-thread.js (this code may sit
 * in a chunk one folder below), or from source through tsx.
 */
function threadEntry(): string | null {
  const candidates = [path.join(here, 'math-answer-thread.js'), path.join(here, '..', 'math-answer-thread.js'), path.join(here, 'judge-thread-entry.mjs')];
  return candidates.find((candidate) => fs.existsSync(candidate)) ?? null;
}

export class JudgeThread {
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private counter: Int32Array | null = null;
  private inProcess: RewoundEngine | null = null;
  private nextId = 1;

  constructor(
    private readonly report: (incident: Incident) => void,
    /** The engine's own limit as a share of the budget (SOFT_SHARE); above 1 only the hard bound acts. */
    private readonly softShare = SOFT_SHARE,
  ) {}

  /** Compares two extracted answers in the thread, within `budgetMs` (a timeout is a wrong answer). */
  judge(reference: string, answer: string, budgetMs: number): EngineVerdict {
    const softLimitMs = Math.max(1, Math.floor(budgetMs * this.softShare));
    if (this.inProcess === null && this.worker === null && !this.start()) this.inProcess = new RewoundEngine();
    if (this.inProcess) return this.inProcess.judge(reference, answer, softLimitMs);
    const id = this.nextId++;
    const before = Atomics.load(this.counter!, 0);
    this.port!.postMessage({ id, reference, answer, softLimitMs } satisfies ThreadRequest);
    const waited = Atomics.wait(this.counter!, 0, before, budgetMs);
    const reply = waited === 'timed-out' ? undefined : (receiveMessageOnPort(this.port!)?.message as ThreadReply | undefined);
    if (reply?.id === id && reply.verdict) {
      if (reply.verdict.timedOut) this.report({ kind: 'timeout', message: reply.verdict.reason, reference, answer });
      return reply.verdict;
    }
    this.stop();
    const message = `timeout: no verdict within the ${budgetMs} ms budget of one comparison (the checker thread was restarted)`;
    this.report({ kind: 'timeout', message, reference, answer });
    return { equal: false, reason: message, readReference: reference, readAnswer: answer, timedOut: true };
  }

  /** Starts the thread; false (reported) when it cannot, and comparisons then run in this thread. */
  private start(): boolean {
    const entry = threadEntry();
    if (entry === null) {
      this.report({ kind: 'in-process', message: `no checker thread entry next to ${here}; comparisons run in this thread, bounded only by the engine's own time limit` });
      return false;
    }
    const signal = new SharedArrayBuffer(4);
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(entry, { workerData: { port: port2, signal }, transferList: [port2] });
    worker.unref();
    port1.unref();
    const counter = new Int32Array(signal);
    const waited = Atomics.wait(counter, 0, 0, STARTUP_LIMIT_MS);
    const ready = waited === 'timed-out' ? undefined : (receiveMessageOnPort(port1)?.message as ThreadReply | undefined);
    if (!ready?.ready) {
      void worker.terminate();
      port1.close();
      this.report({ kind: 'in-process', message: `the checker thread did not start (${ready?.failure ?? 'no answer'}); comparisons run in this thread, bounded only by the engine's own time limit` });
      return false;
    }
    this.worker = worker;
    this.port = port1;
    this.counter = counter;
    return true;
  }

  /** Ends the thread (after a timeout, or when the process is done with it). */
  stop(): void {
    if (!this.worker) return;
    void this.worker.terminate();
    this.port?.close();
    this.worker = null;
    this.port = null;
    this.counter = null;
    this.report({ kind: 'thread-restart', message: 'the checker thread was stopped; the next comparison starts a fresh one' });
  }
}
