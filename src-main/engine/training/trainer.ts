/**
 * One MarsRL run from start (or from its last checkpoint) to the end: warm start when a policy
 * has no starting checkpoint, then RL steps of grouped rollouts → rewards → advantages → one
 * PPO update per agent, with held-out evaluation and checkpoints. Every turn, segment, reward,
 * advantage and metric goes into the store through the batched writer.
 *
 * Two modes (`pipeline.mode`):
 * - `sync`: each step generates every agent's outputs, then trains (the baseline; this file).
 * - `pipeline`: the rollout runs beside the trainer (in its own process when the run manager
 *   starts the run, else in this one) and each agent's outputs are trained as soon as that agent
 *   finishes (pipeline-trainer.ts, pipeline-rollout.ts, queues.ts).
 * Setup, warm start, evaluation, checkpoints and everything a step writes are shared.
 *
 * Why one update per agent: the per-agent gradient norm before clipping is the Dr. MAS
 * diagnostic, and updating each agent's turns as its own minibatch measures it exactly; agents
 * sharing a policy (Verifier1/Verifier2, or one shared policy) update it in turn.
 */
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import { ROLES, type Role } from '#shared/agents';
import { initBackend, type BackendInfo } from '../model/backend';
import { MemoryBudget, optimizerBytes, setMemoryBudget, weightBytes } from '../model/gpu-memory';
import { readWeights } from '../model/readback';
import { sharedBaseOf } from '../hf/lora';
import { describeStoreFailure, type BatchWriter, type Store } from '../store';
import { evaluateAsync, evaluatePartAsync, fixedSetFrom, fixedSetMetricsAsync, type EvaluationResult, type FixedSolution } from './evaluate';
import type { TrainerEndpoint } from './pipeline-protocol';
import { trainPipelined } from './pipeline-trainer';
import { loadNewestUsableCheckpoint } from './resume';
import { answerCheckerVersion } from '../tasks/registry';
import { createPolicy, rolePolicies, trainedPolicyIds, type PolicyRuntime } from './policies';
import { poolFromConfig, probeIssues, runProbePrompt, usedEndpoints } from '../served/config';
import type { EndpointPool } from '../served/pool';
import { servedRole } from '../served/roles';
import { responseLength, rolloutEpisodesAsync, type RolloutTurn, type ServedRole } from './rollout';
import { assertStartFromSolverFits, pretrainPolicy, sampleSolverSolutionsAsync, startFromSolverWeights } from './pretrain';
import {
  evaluationSet,
  loadTaskData,
  logEpisodes,
  logEvalEpisodes,
  NonFiniteError,
  ProblemIds,
  rolloutMetrics,
  saveRunCheckpoint,
  scoreEpisodes,
  stepProblems,
  updateAgent,
  yieldToEventLoop,
  type RunContext,
  type TaskData,
  type UpdateContext,
} from './run-support';

export { loadTaskData, NonFiniteError, scoreEpisodes, type TaskData };

export interface TrainProgress {
  phase: 'setup' | 'pretrain' | 'eval' | 'rl' | 'done';
  step: number;
  totalSteps: number;
  metrics: Record<string, number>;
  message?: string;
}

export interface TrainOptions {
  store: Store;
  runId: number;
  config: RunConfig;
  /** Folder for checkpoints (the run's folder). */
  runDir: string;
  /** Name of this process in segment and timeline rows. */
  worker?: string;
  signal?: AbortSignal;
  onProgress?: (progress: TrainProgress) => void;
  /** Continue from the latest checkpoint in `runDir` instead of starting fresh. */
  resume?: boolean;
  /**
   * Fault injection, for tests of the failure paths: make every PPO loss from this step on NaN,
   * as a diverged policy would.
   */
  injectNanLossFromStep?: number;
  /**
   * Pipeline mode: the rollout process's end of the trainer ↔ rollout channel (the run worker
   * passes its link to the rollout worker). Absent, the rollout runs in this process.
   */
  rollout?: TrainerEndpoint;
}

export type TrainOutcome = { status: 'done'; step: number } | { status: 'interrupted'; step: number; reason: string } | { status: 'failed'; step: number; reason: string };

/** The event that records the model identity (family, path, config and weights digests) of each policy at the run's start. */
export const MODEL_IDENTITY_EVENT = 'model_identity';

/** The event that keeps a run's fixed judged set of Solver answers. */
export const FIXED_SET_EVENT = 'eval_fixed_set';

export async function trainRun(options: TrainOptions): Promise<TrainOutcome> {
  const { store, runId, config, signal } = options;
  const worker = options.worker ?? `trainer-${process.pid}`;
  const progress = (p: TrainProgress) => options.onProgress?.(p);
  const writer = store.writer({ maxPending: 4000, flushIntervalMs: 500 });
  const runStart = store.runs.get(runId)?.startedAt ?? Date.now();
  const wallTime = () => (Date.now() - runStart) / 1000;
  const policies = new Map<string, PolicyRuntime>();
  const cursor = { step: 0 };
  let pool: EndpointPool | null = null;
  try {
    progress({ phase: 'setup', step: 0, totalSteps: config.optimization.steps, metrics: {}, message: 'choosing a backend' });
    const backend: BackendInfo = await initBackend(config.runtime.backend);
    store.runs.setBackend(runId, backend.name, backend as unknown as Record<string, unknown>);
    for (const skipped of backend.skipped) {
      store.events.log(runId, 'info', 'backend_skipped', `${skipped.backend}: ${skipped.reason}`, { ...skipped });
    }

    const data = loadTaskData(config);
    const problemIds = new ProblemIds(store, runId);
    // Served, frozen roles (issue #16): played through the pool, never built, trained or saved.
    const served: Partial<Record<Role, ServedRole>> = {};
    const endpoints = usedEndpoints(config);
    if (endpoints.size > 0) {
      pool = poolFromConfig(config, { healthChecks: true, probePrompt: runProbePrompt(config), onEvent: (e) => store.events.log(runId, e.level, e.kind, e.message, e.data, cursor.step) });
      progress({ phase: 'setup', step: 0, totalSteps: config.optimization.steps, metrics: {}, message: `probing ${endpoints.size} endpoint${endpoints.size === 1 ? '' : 's'}` });
      const issues = probeIssues(await pool.probe());
      if (issues.length > 0) throw new Error(issues.map((i) => `${i.path}: ${i.message}`).join('; '));
      for (const roles of endpoints.values()) for (const role of roles) served[role] = servedRole(pool, config, role);
    }
    const checkpointRoot = path.join(options.runDir, 'checkpoints');

    if (options.resume) {
      const say = (message: string) => progress({ phase: 'setup', step: 0, totalSteps: config.optimization.steps, metrics: {}, message });
      const loaded = loadNewestUsableCheckpoint(store, runId, config, (skip) => say(`the checkpoint of step ${skip.step} cannot be loaded (${skip.error}); trying the one before it`));
      for (const [id, p] of loaded.policies) policies.set(id, p);
      cursor.step = loaded.step + 1;
      // The steps after the checkpoint are redone by a new attempt; the killed attempt's rows of
      // those steps are kept but marked superseded, so readers and exports show one attempt.
      const { attempt, superseded } = store.runs.beginAttempt(runId, cursor.step, Date.now(), answerCheckerVersion(config.task.family));
      const message = resumeMessage(loaded.step, attempt, superseded.turns, loaded.skipped.length);
      store.events.log(runId, 'info', 'resumed', message, { path: loaded.dir, step: loaded.step, attempt, superseded, skippedCheckpoints: loaded.skipped }, loaded.step);
      say(message);
    } else {
      const needWarmStart: PolicyRuntime[] = [];
      for (const id of trainedPolicyIds(config)) {
        const { policy, fromCheckpoint } = createPolicy(id, config.policies[id], data.tokenizer, config.seed);
        policies.set(id, policy);
        if (fromCheckpoint) store.events.log(runId, 'info', 'init_checkpoint', `policy ${id} starts from ${fromCheckpoint}`, { policy: id, path: fromCheckpoint });
        else needWarmStart.push(policy);
      }
      // Which model each policy started from, so a comparison shows runs that started from different ones.
      const identities = Object.fromEntries([...policies].map(([id, p]) => [id, p.identity]));
      store.events.log(runId, 'info', MODEL_IDENTITY_EVENT, `models: ${[...policies].map(([id, p]) => `${id} ${p.identity.family}${p.identity.path ? ` from ${p.identity.path}` : ''}`).join('; ')}`, { policies: identities });
      if (needWarmStart.length > 0) await warmStart(options, data, policies, needWarmStart, writer, wallTime);
    }
    const roles = rolePolicies(config, policies);
    if (config.optimization.kl_coef > 0) {
      for (const p of policies.values()) await p.freezeReference();
    }

    // Device memory per policy (gpu-memory.ts): accounted and reported always, enforced when
    // runtime.gpu_memory_limit_mb is set; decoding reserves its caches against the same budget.
    const budget = new MemoryBudget(config.runtime.gpu_memory_limit_mb * 2 ** 20);
    setMemoryBudget(budget);
    for (const p of policies.values()) {
      // A LoRA base (issue #14) is shared by policies and references: counted once, by its key.
      const shared = sharedBaseOf(p.model);
      if (shared) budget.setShared(shared.key, shared.bytes, [...policies.values()].filter((q) => sharedBaseOf(q.model)?.key === shared.key).map((q) => q.id));
      const weights = weightBytes(p.model) + (p.reference ? weightBytes(p.reference) : 0);
      budget.setResident(p.id, { weights, optimizer: optimizerBytes(p.optimizer, p.model.numParams) });
      writer.metric({ runId, step: cursor.step, wallTime: wallTime(), key: `memory/${p.id}/weights_bytes`, value: weights });
      writer.metric({ runId, step: cursor.step, wallTime: wallTime(), key: `memory/${p.id}/optimizer_bytes`, value: optimizerBytes(p.optimizer, p.model.numParams) });
    }
    store.events.log(
      runId,
      'info',
      'gpu_memory',
      `tensor memory on ${backend.name}: ${(budget.totalBytes / 2 ** 20).toFixed(2)} MiB resident (weights and optimizer state)` +
        (budget.limitBytes > 0 ? ` of the ${config.runtime.gpu_memory_limit_mb} MiB limit` : ''),
      { limitBytes: budget.limitBytes, policies: budget.report(), sharedBases: budget.sharedReport() },
      cursor.step,
    );

    const evalSet = evaluationSet(config, data);
    const evalContext = { family: data.family, policies: roles, served, config };
    // The fixed judged set (evaluate.ts): made by the run's first evaluation, kept in the store so
    // that a resumed run judges the same answers.
    let fixedSet = (store.events.latestOfKind(runId, FIXED_SET_EVENT)?.data?.solutions as FixedSolution[] | undefined) ?? null;
    const evalSpan = (at: number, startedAt: number, endedAt: number) =>
      writer.timelineSpan({ runId, kind: 'eval', agent: 'system', worker, step: at, policyVersion: roles.solver?.version ?? 0, startedAt, endedAt, tokens: 0 });
    /** Store an evaluation at step `at` (its metrics, its greedy chains, the span this process spent). */
    const recordEvaluation = async (at: number, result: EvaluationResult, startedAt: number, endedAt: number, fixedMetrics?: Record<string, number>) => {
      if (fixedMetrics) Object.assign(result.metrics, fixedMetrics);
      else if (config.rollout.rounds > 0) {
        if (!fixedSet) {
          fixedSet = fixedSetFrom(evalSet.problems, result.sampledChains);
          store.events.log(runId, 'info', FIXED_SET_EVENT, `fixed judged set: the Solver's ${fixedSet.length} sampled answers to the held-out problems at step ${at}`, { solutions: fixedSet }, at);
        }
        const fixedStart = Date.now();
        Object.assign(result.metrics, await fixedSetMetricsAsync(evalContext, evalSet.problems, fixedSet, evalSet.seed));
        // Evaluation time like the rest (the pipeline bench's RL clock starts after it).
        evalSpan(at, fixedStart, Date.now());
      }
      for (const [key, value] of Object.entries(result.metrics)) writer.metric({ runId, step: at, wallTime: wallTime(), key, value });
      evalSpan(at, startedAt, endedAt);
      logEvalEpisodes(writer, problemIds, runId, at, result.greedyChains);
      writer.flush();
      progress({ phase: 'eval', step: at, totalSteps: config.optimization.steps, metrics: result.metrics });
      return result.metrics;
    };
    const runEvaluation = async (at: number) => {
      const t0 = Date.now();
      const result = await evaluateAsync(evalContext, evalSet.problems, evalSet.seed);
      return recordEvaluation(at, result, t0, Date.now());
    };
    /** The pool's queue, in-flight requests, latency and errors (`pool/<endpoint>/…`) at a step. */
    const poolMetrics = (at: number) => {
      if (pool) for (const [key, value] of Object.entries(pool.metrics())) writer.metric({ runId, step: at, wallTime: wallTime(), key, value });
    };
    const update: UpdateContext = { store, runId, config, writer, worker, injectNanLossFromStep: options.injectNanLossFromStep, skips: { consecutive: 0 } };

    if (config.pipeline.mode === 'pipeline') {
      const outcome = await trainPipelined({
        store, runId, config, writer, worker, data, problemIds, policies, checkpointRoot, signal, update, wallTime, cursor,
        evaluatePart: (part) => evaluatePartAsync(evalContext, evalSet.problems, evalSet.seed, part),
        recordEvaluation,
        fixedSet: () => fixedSet,
        pool,
        // A rollout in its own process writes its own pool's metrics at each step (worker.ts).
        poolMetrics: options.rollout ? () => undefined : poolMetrics,
        startStep: cursor.step,
        endpoint: options.rollout ?? null,
        onStep: (at, metrics) => progress({ phase: 'rl', step: at + 1, totalSteps: config.optimization.steps, metrics }),
      });
      if (outcome.status === 'interrupted') return finishInterrupted(store, runId, outcome.step, outcome.reason, writer);
    } else {
      if (cursor.step === 0) await runEvaluation(0);
      const interrupted = await trainSync({ store, runId, config, writer, worker, data, problemIds, policies, roles, served, checkpointRoot, signal, update, wallTime, runEvaluation, cursor, progress, poolMetrics });
      if (interrupted) return interrupted;
      if (config.optimization.steps > 0 || cursor.step === 0) await runEvaluation(config.optimization.steps);
    }
    writer.close();
    progress({ phase: 'done', step: config.optimization.steps, totalSteps: config.optimization.steps, metrics: {} });
    return { status: 'done', step: config.optimization.steps };
  } catch (error) {
    // A stop during the warm start (or any other part that leaves by throwing once the signal is
    // aborted) is a stop, marked interrupted as Ctrl-C is, not a failure.
    if (signal?.aborted) {
      try {
        return finishInterrupted(store, runId, cursor.step, String(signal.reason ?? 'stopped'), writer);
      } catch {
        // A store that refuses the event: fall through to the failure path, which says why.
      }
    }
    try {
      writer.close();
    } catch {
      // The original error matters more than a failed final flush.
    }
    const reason = describeStoreFailure(error, store.path) ?? (error instanceof Error ? error.message : String(error));
    try {
      store.events.log(runId, 'error', error instanceof NonFiniteError ? 'non_finite_stop' : 'training_error', reason, error instanceof Error && error.stack ? { stack: error.stack } : null, cursor.step);
    } catch {
      // A full disk refuses the event too; the outcome still carries the reason.
    }
    return { status: 'failed', step: cursor.step, reason };
  } finally {
    pool?.close();
    setMemoryBudget(null);
    for (const p of policies.values()) p.dispose();
  }
}

interface SyncRun extends RunContext {
  roles: Record<Role, PolicyRuntime>;
  /** Roles played by served models: in the rollout, never in the update loop. */
  served: Partial<Record<Role, ServedRole>>;
  poolMetrics: (at: number) => void;
  runEvaluation: (at: number) => Promise<unknown>;
  progress: (p: TrainProgress) => void;
}

/** The synchronous loop: per step, every agent's rollouts, then one update per agent. */
async function trainSync(run: SyncRun): Promise<TrainOutcome | null> {
  const { store, runId, config, writer, worker, data, problemIds, roles, signal, cursor } = run;
  for (; cursor.step < config.optimization.steps; cursor.step++) {
    const step = cursor.step;
    // Training is synchronous compute: yield once per step so stop messages and signals are
    // delivered (a worker's event loop would otherwise only see them after the last step).
    await yieldToEventLoop();
    if (signal?.aborted) return finishInterrupted(store, runId, step, String(signal.reason ?? 'stopped'), writer);
    const { problems, seed } = stepProblems(config, data, step);
    const rolloutStart = Date.now();
    const episodes = await rolloutEpisodesAsync(
      {
        family: data.family,
        policies: roles,
        served: run.served,
        config,
        onSegment: (s) => writer.timelineSpan({ runId, kind: 'segment', agent: s.agent, worker, step, policyVersion: s.policyVersion, startedAt: s.startedAt, endedAt: s.endedAt, tokens: s.tokens }),
      },
      problems,
      seed,
    );
    const rolloutMs = Date.now() - rolloutStart;
    const scored = scoreEpisodes(config, episodes);
    logEpisodes(writer, problemIds, runId, step, episodes, scored, worker, config);
    const metrics = rolloutMetrics(config, episodes, scored);

    // One PPO update per agent, in chain order.
    const updateStart = Date.now();
    const byAgent = new Map<string, { turn: RolloutTurn; advantage: number }[]>();
    episodes.forEach((episode, e) =>
      episode.turns.forEach((turn, i) => {
        const list = byAgent.get(turn.agent) ?? [];
        list.push({ turn, advantage: scored[e].advantages[i].value });
        byAgent.set(turn.agent, list);
      }),
    );
    for (const [agent, items] of byAgent) {
      if (signal?.aborted) break;
      // A served agent is frozen: its turns are scored and stored, never trained.
      if (run.served[items[0].turn.role]) continue;
      Object.assign(metrics, await updateAgent(run.update, agent, roles[items[0].turn.role], items, step));
    }
    const updateMs = Date.now() - updateStart;
    const stepTokens = episodes.reduce((a, e) => a + e.turns.reduce((b, t) => b + responseLength(t), 0), 0);
    metrics['perf/rollout_s'] = rolloutMs / 1000;
    metrics['perf/update_s'] = updateMs / 1000;
    metrics['perf/tokens_per_s'] = stepTokens / Math.max((rolloutMs + updateMs) / 1000, 1e-3);
    metrics['pipeline/staleness'] = 0;
    for (const [key, value] of Object.entries(metrics)) writer.metric({ runId, step, wallTime: run.wallTime(), key, value });
    run.poolMetrics(step);
    writer.flush();
    run.progress({ phase: 'rl', step: step + 1, totalSteps: config.optimization.steps, metrics });

    const isLast = step === config.optimization.steps - 1;
    if (!isLast && config.eval.every > 0 && (step + 1) % config.eval.every === 0) await run.runEvaluation(step + 1);
    if (isLast || (config.optimization.checkpoint_every > 0 && (step + 1) % config.optimization.checkpoint_every === 0)) {
      await saveRunCheckpoint(store, runId, run.checkpointRoot, run.policies, config, step, metrics);
    }
  }
  return null;
}

/** What a resume did, in one sentence for the terminal and the events (issue 35: say what it does). */
export function resumeMessage(step: number, attempt: number, supersededTurns: number, skipped: number): string {
  const newer = skipped === 0 ? '' : ` (${skipped} newer checkpoint${skipped === 1 ? '' : 's'} skipped, see above)`;
  const redo = supersededTurns === 0 ? 'no turn of a later step had been stored' : `the ${supersededTurns} turn${supersededTurns === 1 ? '' : 's'} stored after it are kept as superseded`;
  return `resumed from the checkpoint of step ${step}${newer} as attempt ${attempt}: steps from ${step + 1} on are redone; ${redo}`;
}

function finishInterrupted(store: Store, runId: number, step: number, reason: string, writer: BatchWriter): TrainOutcome {
  writer.close();
  store.events.log(runId, 'warning', 'interrupted', `stopped before step ${step}: ${reason}`, null, step);
  return { status: 'interrupted', step, reason };
}

async function warmStart(
  options: TrainOptions,
  data: TaskData,
  policies: Map<string, PolicyRuntime>,
  targets: PolicyRuntime[],
  writer: BatchWriter,
  wallTime: () => number,
): Promise<void> {
  const { store, runId, config } = options;
  const heldOut = data.test.slice(0, Math.min(100, data.test.length));
  const roles = rolePolicies(config, policies);
  let solverSamples: Map<string, string> | undefined;
  // The Solver first: the Verifier and Corrector then learn from its real samples.
  const ordered = [...targets].sort((a, b) => Number(b === roles.solver) - Number(a === roles.solver));
  assertStartFromSolverFits(config, ordered, roles.solver);
  const startFromSolver = config.pretrain.start_from_solver && roles.solver ? roles.solver : null;
  // Read once, after the Solver's warm start (it goes first) or from its init checkpoint.
  let solverWeights: Float32Array | null = null;
  let globalStep = 0;
  for (const policy of ordered) {
    if (roles.solver && policy !== roles.solver && !solverSamples && ROLES.some((r: Role) => roles[r] === roles.solver)) {
      const sampleProblems = data.train.slice(0, Math.min(512, data.train.length));
      const texts = await sampleSolverSolutionsAsync(roles.solver, sampleProblems, config, config.seed + 3, data.family);
      solverSamples = new Map(sampleProblems.map((p, i) => [p.key, texts[i]]));
    }
    await yieldToEventLoop();
    if (options.signal?.aborted) throw new Error('stopped during warm start');
    const fromSolver = startFromSolver !== null && policy !== startFromSolver;
    if (fromSolver) startFromSolverWeights(policy, (solverWeights ??= await readWeights(startFromSolver.model)));
    store.events.log(runId, 'info', 'warm_start', `warm-starting policy ${policy.id} for ${config.pretrain.steps} steps${fromSolver ? ` from the Solver's weights` : ''}`, { policy: policy.id });
    await pretrainPolicy(policy, {
      family: data.family,
      config,
      pretrain: config.pretrain,
      train: data.train,
      heldOut,
      seed: config.seed,
      solverSamples,
      evalEvery: Math.max(50, Math.floor(config.pretrain.steps / 4)),
      signal: options.signal,
      onProgress: (p) => {
        if (p.step % 10 === 0) {
          writer.metric({ runId, step: globalStep, wallTime: wallTime(), key: `pretrain/${p.policyId}/loss`, value: p.loss });
          options.onProgress?.({ phase: 'pretrain', step: p.step, totalSteps: p.steps, metrics: { loss: p.loss }, message: `warm start ${p.policyId}` });
        }
        globalStep++;
      },
      onEval: (e) => {
        for (const [role, score] of Object.entries(e.scores)) {
          writer.metric({ runId, step: globalStep, wallTime: wallTime(), key: `pretrain/${e.policyId}/${role}_score`, value: score! });
        }
      },
    });
    if (options.signal?.aborted) throw new Error('stopped during warm start');
  }
}
