/**
 * The shell every kind of run shares (`trainRun` in either pipeline mode, `systemRun`): the
 * batched writer and the run's wall clock, progress, the pool of served models probed before use,
 * and the three ways a run ends. Done: the writer is closed, then reported. Stopped: the writer
 * is closed and an `interrupted` event says where. Failed: whatever was written stays, the reason
 * (a full disk named as such by describeStoreFailure) goes into an error event and the outcome.
 * Whatever the end, what the run holds (pools, policies, the memory budget) is released.
 */
import type { RunConfig } from '../config/schema';
import { poolFromConfig, probeIssues, usedEndpoints } from '../served/config';
import type { ServedEventSink } from '../served/events';
import type { EndpointPool, PoolOptions } from '../served/pool';
import { describeStoreFailure, type BatchWriter, type Store } from '../store';
import { runProbePrompt, type TaskData } from './task-data';

export interface TrainProgress {
  phase: 'setup' | 'pretrain' | 'eval' | 'rl' | 'done';
  step: number;
  totalSteps: number;
  metrics: Record<string, number>;
  message?: string;
}

export type TrainOutcome = { status: 'done'; step: number } | { status: 'interrupted'; step: number; reason: string } | { status: 'failed'; step: number; reason: string };

export interface ShellOptions {
  store: Store;
  runId: number;
  config: RunConfig;
  signal?: AbortSignal;
  onProgress?: (progress: TrainProgress) => void;
  /** The batched writer's bounds. */
  writer: { maxPending: number; flushIntervalMs: number };
  /** The event a failure is logged as, and whether its stack goes with it. */
  failure: (error: unknown) => { kind: string; withStack: boolean };
  /**
   * A throw once the signal is aborted (a stop during the warm start, or any part that leaves by
   * throwing) is a stop, marked interrupted as Ctrl-C is, not a failure.
   */
  throwAfterStopIsStop: boolean;
}

export interface RunShell {
  store: Store;
  runId: number;
  config: RunConfig;
  signal?: AbortSignal;
  writer: BatchWriter;
  /** Seconds since the run first started (a resumed run goes on counting). */
  wallTime: () => number;
  progress: (p: TrainProgress) => void;
  /** The step a failure or a stop is reported at. */
  cursor: { step: number };
  /** Called at the end, whatever the outcome, in the order given. */
  atEnd: (release: () => void) => void;
}

/** Lets stop messages, signals and other processes' messages in between synchronous compute. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Runs `body` inside the shell: its outcome, or the failed one when it throws. */
export async function runShell(options: ShellOptions, body: (shell: RunShell) => Promise<TrainOutcome>): Promise<TrainOutcome> {
  const { store, runId, signal } = options;
  const runStart = store.runs.get(runId)?.startedAt ?? Date.now();
  const releases: Array<() => void> = [];
  const shell: RunShell = {
    store,
    runId,
    config: options.config,
    signal,
    writer: store.writer(options.writer),
    wallTime: () => (Date.now() - runStart) / 1000,
    progress: (p) => options.onProgress?.(p),
    cursor: { step: 0 },
    atEnd: (release) => releases.push(release),
  };
  try {
    return await body(shell);
  } catch (error) {
    if (options.throwAfterStopIsStop && signal?.aborted) {
      try {
        return finishInterrupted(shell, shell.cursor.step, String(signal.reason ?? 'stopped'));
      } catch {
        // A store that refuses the event: fall through to the failure path, which says why.
      }
    }
    return finishFailed(shell, error, options.failure(error));
  } finally {
    for (const release of releases) release();
  }
}

/** The run is complete: every row is flushed before anyone is told. */
export function finishDone(shell: RunShell, step: number, totalSteps: number): TrainOutcome {
  shell.writer.close();
  shell.progress({ phase: 'done', step, totalSteps, metrics: {} });
  return { status: 'done', step };
}

/** The run was stopped: what it wrote stays, and an event says where (resume goes on from there). */
export function finishInterrupted(shell: RunShell, step: number, reason: string, message = `stopped before step ${step}: ${reason}`): TrainOutcome {
  shell.writer.close();
  shell.store.events.log(shell.runId, 'warning', 'interrupted', message, null, step);
  return { status: 'interrupted', step, reason };
}

function finishFailed(shell: RunShell, error: unknown, failure: { kind: string; withStack: boolean }): TrainOutcome {
  const { store, runId, cursor } = shell;
  try {
    shell.writer.close();
  } catch {
    // The original error matters more than a failed final flush.
  }
  const reason = describeStoreFailure(error, store.path) ?? (error instanceof Error ? error.message : String(error));
  try {
    store.events.log(runId, 'error', failure.kind, reason, failure.withStack && error instanceof Error && error.stack ? { stack: error.stack } : null, cursor.step);
  } catch {
    // A full disk refuses the event too; the outcome still carries the reason.
  }
  return { status: 'failed', step: cursor.step, reason };
}

export interface ServedPoolOptions {
  /** Pool settings of the caller (tests: short backoff; where keys are read). */
  overrides?: Partial<Omit<PoolOptions, 'endpoints' | 'agents'>> & { env?: NodeJS.ProcessEnv };
  /** Receives the pool's events (retries, failures, replicas down). */
  onEvent: ServedEventSink;
  /** For the progress line while probing. */
  totalSteps: number;
  /** The error a failed probe ends the run with. */
  refuse: (message: string) => Error;
}

/**
 * The pool of the run's served models (issue #16), probed with one of the run's own prompts
 * (from the task data it has loaded) before the run uses it: an endpoint that cannot serve ends
 * the run at once, naming the field to fix. Null when no role is served. Closed at the end of
 * the run.
 */
export async function openServedPool(shell: RunShell, data: TaskData, options: ServedPoolOptions): Promise<EndpointPool | null> {
  const { config } = shell;
  const endpoints = usedEndpoints(config);
  if (endpoints.size === 0) return null;
  const pool = poolFromConfig(config, { ...options.overrides, healthChecks: true, probePrompt: runProbePrompt(config, data), onEvent: options.onEvent });
  shell.atEnd(() => pool.close());
  shell.progress({ phase: 'setup', step: 0, totalSteps: options.totalSteps, metrics: {}, message: `probing ${endpoints.size} endpoint${endpoints.size === 1 ? '' : 's'}` });
  const issues = probeIssues(await pool.probe());
  if (issues.length > 0) throw options.refuse(issues.map((i) => `${i.path}: ${i.message}`).join('; '));
  return pool;
}
