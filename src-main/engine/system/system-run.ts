/**
 * Reasoning-system runs (issue #16): the Solver / Verifier / Corrector system run, inference
 * only, on a run's held-out problems, with each agent served by an endpoint of the pool or played
 * by a local checkpoint (the same code; no caller knows which).
 *
 * Two modes (`system.mode`):
 * - `loop`, MarsRL's public reasoning system: the Solver answers, then up to `max_iterations`
 *   times the Verifier judges the current solution; an approval counts, `approvals` consecutive
 *   ones accept it; a rejection resets the count and the Corrector repairs the solution with the
 *   Verifier's report. The answer is the last solution (accepted or not; `system/accepted` says
 *   how often the loop accepted).
 * - `chain`, the unrolled chain the RL runs evaluate (training/evaluate.ts `runChains`):
 *   `rollout.rounds` Verifier → Corrector rounds, ending at the first approval.
 * Metrics are those of RL evaluation, computed by the same function (`evaluationMetrics`): greedy
 * Solver-alone and system accuracy, the two controls (an oracle Verifier; the Corrector on every
 * answer without a Verifier), and avg@k / pass@k over `system.k` sampled chains per problem.
 *
 * Every call is a turn of a test-split episode (one episode per chain) in the tables RL runs use,
 * written when the call starts; a streamed reply fills its segments as it arrives (the batched
 * writer flushes them within its interval, so the trajectory browser shows the turn being
 * written), and its text and judgement are filled in when it ends.
 *
 * Resumable: a stop lets the calls in flight finish and starts no more. A resumed run replays
 * each chain from its stored turns (their texts decide what follows, so the chain takes the same
 * path) and calls only where no finished turn is stored; a turn left unfinished (a killed worker)
 * is marked superseded and its call made again.
 *
 * Failures: the pool retries what can be retried (429, 5xx, timeouts, cut streams); a call that
 * still fails counts against the chain's `error_budget`, and a chain over it is marked failed
 * (no answer: wrong). An error no retry can fix (a refused key, a model not served) ends the run,
 * resumable once fixed.
 */
import type { RunConfig } from '../config/schema';
import { textFormatOf } from '../agents/prompts';
import { usedEndpoints } from '../served/config';
import type { EndpointPool, PoolOptions } from '../served/pool';
import type { Store } from '../store';
import type { Problem } from '../tasks/types';
import { evaluationMetrics, type EvalChain, type EvalPart } from '../training/evaluate';
import { ProblemIds } from '../training/records';
import { finishDone, finishInterrupted, openServedPool, runShell, type RunShell, type TrainOutcome, type TrainProgress } from '../training/run-shell';
import { evaluationSet, loadTaskData } from '../training/task-data';
import { agentCallers, FatalCallError } from './callers';
import { StoppedError, SystemChains } from './chains';
import { resumeStoredChains, type CallCounters, type StoredEpisode } from './stored';

export { CHAIN_FAILED_EVENT } from './chains';

export interface SystemRunOptions {
  store: Store;
  runId: number;
  config: RunConfig;
  /** Name of this process in segment rows. */
  worker?: string;
  /** Aborted: no new call starts; the calls in flight finish and are stored. */
  signal?: AbortSignal;
  onProgress?: (progress: TrainProgress) => void;
  /** Continue a stopped run from its stored turns. */
  resume?: boolean;
  /** Where API keys are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Pool timing overrides (tests: short backoff). */
  pool?: Partial<Omit<PoolOptions, 'endpoints' | 'agents'>>;
}

/** Counting semaphore: at most `size` chains at once. */
function limiter(size: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

export async function systemRun(options: SystemRunOptions): Promise<TrainOutcome> {
  const { store, runId, config } = options;
  const system = config.system;
  if (!system) throw new Error('systemRun: the config has no system block');
  const worker = options.worker ?? `system-${process.pid}`;
  const shellOptions = {
    store, runId, config, signal: options.signal, onProgress: options.onProgress,
    writer: { maxPending: 2000, flushIntervalMs: 250 },
    failure: (error: unknown) => ({ kind: 'system_error', withStack: !(error instanceof FatalCallError) }),
    throwAfterStopIsStop: false,
  };
  return runShell(shellOptions, async (shell) => {
    const data = loadTaskData(config);
    const pool = await openServedPool(shell, data, {
      overrides: { ...options.pool, env: options.env },
      onEvent: (e) => store.events.log(runId, e.level, e.kind, e.message, e.data),
      totalSteps: 0,
      refuse: (message) => new FatalCallError(message),
    });
    const callers = await agentCallers(shell, data, pool);
    const { problems, seed } = evaluationSet(config, data);
    const k = system.k ?? config.eval.k;
    const parts: EvalPart[] = ['greedy', ...(system.controls ? (['oracle', 'corrector-always'] as const) : []), 'sampled'];
    const problemIds = new ProblemIds(store, runId);

    // What earlier attempts finished, by chain.
    const counters: CallCounters = { calls: 0, stored: 0, failedCalls: 0 };
    const { stored, attempt } = options.resume ? resumeStoredChains(store, runId, config, counters) : { stored: new Map<string, StoredEpisode>(), attempt: store.runs.get(runId)?.attempt ?? 1 };
    if (pool) snapshotPool(shell, pool, counters, system.metrics_every_s);

    const chains = new SystemChains({ shell, worker, system, data, format: textFormatOf(data.family), seed, callers, stored, counters, attempt, problemIds, totalChains: problems.length * (parts.length - 1) + problems.length * k });
    const concurrency = Math.max(1, ...[...usedEndpoints(config).keys()].map((name) => config.endpoints![name].concurrency));
    const results = await runParts(chains, parts, problems, k, limiter(concurrency), options.signal);
    if (results === null) {
      const reason = String(options.signal?.reason ?? 'stopped');
      return finishInterrupted(shell, 0, reason, `stopped after ${counters.stored + counters.calls} calls: ${reason}; resume continues without repeating them`);
    }

    const metrics = systemMetrics(config, results, k, counters);
    for (const [key, value] of Object.entries(metrics)) shell.writer.metric({ runId, step: 0, wallTime: shell.wallTime(), key, value });
    if (pool) for (const [key, value] of Object.entries(pool.metrics())) shell.writer.metric({ runId, step: counters.stored + counters.calls, wallTime: shell.wallTime(), key, value });
    shell.writer.close();
    shell.progress({ phase: 'eval', step: 0, totalSteps: 0, metrics });
    return finishDone(shell, 0, 0);
  });
}

/** The pool's metrics every `metrics_every_s` while the run lasts, at the count of calls made. */
function snapshotPool(shell: RunShell, pool: EndpointPool, counters: CallCounters, everyS: number): void {
  const snapshot = () => {
    for (const [key, value] of Object.entries(pool.metrics())) shell.writer.metric({ runId: shell.runId, step: counters.stored + counters.calls, wallTime: shell.wallTime(), key, value });
  };
  const timer = setInterval(snapshot, everyS * 1000);
  timer.unref();
  shell.atEnd(() => clearInterval(timer));
}

/**
 * Every part's chains, at most `limit` at once: the results by part, or null when the run was
 * stopped (the chains in flight finish and are stored; a resume continues the rest). A fatal
 * error ends the run.
 */
async function runParts(chains: SystemChains, parts: readonly EvalPart[], problems: readonly Problem[], k: number, limit: ReturnType<typeof limiter>, signal: AbortSignal | undefined): Promise<Partial<Record<EvalPart, EvalChain[]>> | null> {
  const results: Partial<Record<EvalPart, EvalChain[]>> = {};
  let fatal: Error | null = null;
  for (const part of parts) {
    const jobs: Array<Promise<EvalChain | null>> = [];
    const samples = part === 'sampled' ? k : 1;
    problems.forEach((problem, p) => {
      for (let s = 0; s < samples; s++) {
        jobs.push(
          limit(async () => {
            if (fatal || signal?.aborted) return null;
            try {
              return await chains.run(part, problem, p, s, samples);
            } catch (error) {
              // Noted before the slot passes on, so no further chain starts after a fatal error.
              if (!(error instanceof StoppedError)) fatal ??= error as Error;
              return null;
            }
          }),
        );
      }
    });
    const done = await Promise.all(jobs);
    if (fatal) throw fatal;
    if (signal?.aborted) return null;
    results[part] = done as EvalChain[];
  }
  return results;
}

/** The metrics of RL evaluation (evaluationMetrics), and the system run's own: calls, failures, acceptance. */
function systemMetrics(config: RunConfig, results: Partial<Record<EvalPart, EvalChain[]>>, k: number, counters: CallCounters): Record<string, number> {
  const system = config.system!;
  const evalConfig = { ...config, eval: { ...config.eval, k }, rollout: { ...config.rollout, rounds: system.controls ? Math.max(1, config.rollout.rounds) : 0 } };
  // evaluationMetrics reads the controls only when rounds > 0; a system run without them fills them in as absent.
  const { metrics } = evaluationMetrics(evalConfig as RunConfig, system.controls ? results : { ...results, oracle: [], 'corrector-always': [] });
  if (!system.controls) {
    delete metrics['eval/control/oracle_verifier/accuracy'];
    delete metrics['eval/control/corrector_always/accuracy'];
  }
  const all = Object.values(results).flat();
  const greedy = results.greedy!;
  metrics['system/calls'] = counters.stored + counters.calls;
  metrics['system/failed_calls'] = counters.failedCalls;
  metrics['system/failed_chains'] = all.filter((c) => (c as { failed?: boolean }).failed).length;
  if (system.mode === 'loop') metrics['system/accepted'] = greedy.filter((c) => (c as { accepted?: boolean }).accepted).length / Math.max(1, greedy.length);
  return metrics;
}
