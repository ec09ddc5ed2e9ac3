/**
 * One MarsRL run from start (or from its last checkpoint) to the end: warm start when a policy
 * has no starting checkpoint, then RL steps of grouped rollouts → rewards → advantages → one
 * PPO update per agent, with held-out evaluation and checkpoints. Every turn, segment, reward,
 * advantage and metric goes into the store through the batched writer.
 *
 * This file is the setup inside the run shell (run-shell.ts): backend, task data, the served
 * pool, the policies (resumed, from init checkpoints, or warm-started), the memory budget; then
 * one of the two loops (`pipeline.mode`):
 * - `sync`: each step generates every agent's outputs, then trains (the baseline; sync-trainer.ts).
 * - `pipeline`: the rollout runs beside the trainer (in its own process when the run manager
 *   starts the run, else in this one) and each agent's outputs are trained as soon as that agent
 *   finishes (pipeline-trainer.ts, pipeline-rollout.ts, queues.ts).
 * Both score (scoring.ts), update (update.ts), write (records.ts) and end a step (steps.ts) with
 * the same functions, and record evaluations the same way (run-evaluation.ts).
 */
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import { ROLES, type Role } from '#shared/agents';
import { initBackend, type BackendInfo } from '../model/backend';
import { MemoryBudget, optimizerBytes, setMemoryBudget, weightBytes } from '../model/gpu-memory';
import { readWeights } from '../model/readback';
import { sharedBaseOf } from '../hf/lora';
import { servedRoles } from '../served/roles';
import type { Store } from '../store';
import { answerCheckerVersion } from '../tasks/registry';
import type { TrainerEndpoint } from './pipeline-protocol';
import { trainPipelined } from './pipeline-trainer';
import { createPolicy, rolePolicies, trainedPolicyIds, type PolicyRuntime } from './policies';
import { assertStartFromSolverFits, pretrainPolicy, solverSamplesOf, startFromSolverWeights, warmStartArgs } from './pretrain';
import { ProblemIds } from './records';
import { loadNewestUsableCheckpoint } from './resume';
import { FIXED_SET_EVENT, runEvaluations } from './run-evaluation';
import { finishDone, finishInterrupted, openServedPool, runShell, yieldToEventLoop, type RunShell, type TrainOutcome, type TrainProgress } from './run-shell';
import type { RunContext } from './steps';
import { trainSync } from './sync-trainer';
import { loadTaskData, type TaskData } from './task-data';
import { NonFiniteError } from './update';

export { FIXED_SET_EVENT, loadTaskData, type TrainOutcome, type TrainProgress };

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

/** The event that records the model identity (family, path, config and weights digests) of each policy at the run's start. */
export const MODEL_IDENTITY_EVENT = 'model_identity';

export function trainRun(options: TrainOptions): Promise<TrainOutcome> {
  const { store, runId, config } = options;
  const worker = options.worker ?? `trainer-${process.pid}`;
  const shellOptions = {
    store, runId, config, signal: options.signal, onProgress: options.onProgress,
    writer: { maxPending: 4000, flushIntervalMs: 500 },
    failure: (error: unknown) => ({ kind: error instanceof NonFiniteError ? 'non_finite_stop' : 'training_error', withStack: true }),
    throwAfterStopIsStop: true,
  };
  return runShell(shellOptions, async (shell) => {
    const policies = new Map<string, PolicyRuntime>();
    shell.atEnd(() => {
      setMemoryBudget(null);
      for (const p of policies.values()) p.dispose();
    });
    shell.progress({ phase: 'setup', step: 0, totalSteps: config.optimization.steps, metrics: {}, message: 'choosing a backend' });
    const backend: BackendInfo = await initBackend(config.runtime.backend);
    store.runs.setBackend(runId, backend.name, backend as unknown as Record<string, unknown>);
    for (const skipped of backend.skipped) store.events.log(runId, 'info', 'backend_skipped', `${skipped.backend}: ${skipped.reason}`, { ...skipped });

    const data = loadTaskData(config);
    const problemIds = new ProblemIds(store, runId);
    const pool = await openServedPool(shell, data, {
      onEvent: (e) => store.events.log(runId, e.level, e.kind, e.message, e.data, shell.cursor.step),
      totalSteps: config.optimization.steps,
      refuse: (message) => new Error(message),
    });
    const served = servedRoles(pool, config);
    if (options.resume) resumePolicies(shell, policies);
    else await startPolicies(shell, options, data, policies);
    const roles = rolePolicies(config, policies);
    if (config.optimization.kl_coef > 0) {
      for (const p of policies.values()) await p.freezeReference();
    }
    accountMemory(shell, backend, policies);

    const evaluations = runEvaluations(shell, worker, data, problemIds, roles, served);
    /** The pool's queue, in-flight requests, latency and errors (`pool/<endpoint>/…`) at a step. */
    const poolMetrics = (at: number) => {
      if (pool) for (const [key, value] of Object.entries(pool.metrics())) shell.writer.metric({ runId, step: at, wallTime: shell.wallTime(), key, value });
    };
    const run: RunContext = {
      ...shell, worker, data, problemIds, policies, poolMetrics,
      checkpointRoot: path.join(options.runDir, 'checkpoints'),
      update: { store, runId, config, writer: shell.writer, worker, injectNanLossFromStep: options.injectNanLossFromStep, skips: { consecutive: 0 } },
    };
    const outcome =
      config.pipeline.mode === 'pipeline'
        ? await trainPipelined({
            ...run,
            // A rollout in its own process writes its own pool's metrics at each step (worker.ts).
            poolMetrics: options.rollout ? () => undefined : poolMetrics,
            evaluations, pool, startStep: shell.cursor.step, endpoint: options.rollout ?? null,
          })
        : await trainSync({ ...run, roles, served, evaluations });
    if (outcome.status === 'interrupted') return finishInterrupted(shell, outcome.step, outcome.reason);
    return finishDone(shell, config.optimization.steps, config.optimization.steps);
  });
}

/** The policies of the newest checkpoint that loads; the steps after it are redone as a new attempt. */
function resumePolicies(shell: RunShell, policies: Map<string, PolicyRuntime>): void {
  const { store, runId, config } = shell;
  const say = (message: string) => shell.progress({ phase: 'setup', step: 0, totalSteps: config.optimization.steps, metrics: {}, message });
  const loaded = loadNewestUsableCheckpoint(store, runId, config, (skip) => say(`the checkpoint of step ${skip.step} cannot be loaded (${skip.error}); trying the one before it`));
  for (const [id, p] of loaded.policies) policies.set(id, p);
  shell.cursor.step = loaded.step + 1;
  // The steps after the checkpoint are redone by a new attempt; the killed attempt's rows of
  // those steps are kept but marked superseded, so readers and exports show one attempt.
  const { attempt, superseded } = store.runs.beginAttempt(runId, shell.cursor.step, Date.now(), answerCheckerVersion(config.task.family));
  const message = resumeMessage(loaded.step, attempt, superseded.turns, loaded.skipped.length);
  store.events.log(runId, 'info', 'resumed', message, { path: loaded.dir, step: loaded.step, attempt, superseded, skippedCheckpoints: loaded.skipped }, loaded.step);
  say(message);
}

/** Fresh policies (or their init checkpoints), and the warm start of those without one. */
async function startPolicies(shell: RunShell, options: TrainOptions, data: TaskData, policies: Map<string, PolicyRuntime>): Promise<void> {
  const { store, runId, config } = shell;
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
  if (needWarmStart.length > 0) await warmStart(shell, options, data, policies, needWarmStart);
}

/**
 * Device memory per policy (gpu-memory.ts): accounted and reported always, enforced when
 * runtime.gpu_memory_limit_mb is set; decoding reserves its caches against the same budget.
 */
function accountMemory(shell: RunShell, backend: BackendInfo, policies: Map<string, PolicyRuntime>): void {
  const { store, runId, config, writer } = shell;
  const budget = new MemoryBudget(config.runtime.gpu_memory_limit_mb * 2 ** 20);
  setMemoryBudget(budget);
  for (const p of policies.values()) {
    // A LoRA base (issue #14) is shared by policies and references: counted once, by its key.
    const shared = sharedBaseOf(p.model);
    if (shared) budget.setShared(shared.key, shared.bytes, [...policies.values()].filter((q) => sharedBaseOf(q.model)?.key === shared.key).map((q) => q.id));
    const weights = weightBytes(p.model) + (p.reference ? weightBytes(p.reference) : 0);
    budget.setResident(p.id, { weights, optimizer: optimizerBytes(p.optimizer, p.model.numParams) });
    writer.metric({ runId, step: shell.cursor.step, wallTime: shell.wallTime(), key: `memory/${p.id}/weights_bytes`, value: weights });
    writer.metric({ runId, step: shell.cursor.step, wallTime: shell.wallTime(), key: `memory/${p.id}/optimizer_bytes`, value: optimizerBytes(p.optimizer, p.model.numParams) });
  }
  store.events.log(
    runId,
    'info',
    'gpu_memory',
    `tensor memory on ${backend.name}: ${(budget.totalBytes / 2 ** 20).toFixed(2)} MiB resident (weights and optimizer state)` +
      (budget.limitBytes > 0 ? ` of the ${config.runtime.gpu_memory_limit_mb} MiB limit` : ''),
    { limitBytes: budget.limitBytes, policies: budget.report(), sharedBases: budget.sharedReport() },
    shell.cursor.step,
  );
}

/** What a resume did, in one sentence for the terminal and the events (issue 35: say what it does). */
export function resumeMessage(step: number, attempt: number, supersededTurns: number, skipped: number): string {
  const newer = skipped === 0 ? '' : ` (${skipped} newer checkpoint${skipped === 1 ? '' : 's'} skipped, see above)`;
  const redo = supersededTurns === 0 ? 'no turn of a later step had been stored' : `the ${supersededTurns} turn${supersededTurns === 1 ? '' : 's'} stored after it are kept as superseded`;
  return `resumed from the checkpoint of step ${step}${newer} as attempt ${attempt}: steps from ${step + 1} on are redone; ${redo}`;
}

async function warmStart(shell: RunShell, options: TrainOptions, data: TaskData, policies: Map<string, PolicyRuntime>, targets: PolicyRuntime[]): Promise<void> {
  const { store, runId, config, writer, wallTime } = shell;
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
      solverSamples = await solverSamplesOf(roles.solver, config, data, 512);
    }
    await yieldToEventLoop();
    if (options.signal?.aborted) throw new Error('stopped during warm start');
    const fromSolver = startFromSolver !== null && policy !== startFromSolver;
    if (fromSolver) startFromSolverWeights(policy, (solverWeights ??= await readWeights(startFromSolver.model)));
    store.events.log(runId, 'info', 'warm_start', `warm-starting policy ${policy.id} for ${config.pretrain.steps} steps${fromSolver ? ` from the Solver's weights` : ''}`, { policy: policy.id });
    await pretrainPolicy(policy, {
      ...warmStartArgs(config, data, heldOut, solverSamples),
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
