/**
 * The run manager: validates a launch request, records the run, starts its worker processes and
 * watches them. Whatever happens to a worker, the run ends marked: a clean finish is `done`, a
 * training error `failed`, a stop request, a signal or a vanished process `interrupted` with the
 * reason — and an interrupted run is resumable from its last checkpoint.
 *
 * Processes. A `sync` run has one worker, the trainer. A `pipeline` run has two, both started
 * here through the same spawn adapter (only the Electron main process may start utility
 * processes, so the trainer cannot start its own): the trainer and the rollout worker. The
 * manager forwards `peer` messages between them unread (weights one way, turns the other), and
 * ties their lives together: a rollout worker that dies (a signal, a non-zero exit) stops the
 * trainer, which marks the run interrupted with that reason; a trainer that ends or dies stops
 * the rollout worker. The run's exit is when both have exited.
 */
import type { StartRunRequest, StudioEvent } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { ConfigError, deepMerge, listPresets, parseRunConfig, presetDocument, withAbsoluteTaskPaths } from '../engine/config/load';
import { machineIssues, resolveConfig } from '../engine/preflight';
import type { RunConfig } from '../engine/config/schema';
import { runDir } from '../engine/paths';
import { getTaskFamily } from '../engine/tasks/registry';
import { readCheckpointManifest, resolveInitPath } from '../engine/checkpoint/manifest';
import { describeStoreFailure, type Store } from '../engine/store';
import { staleRunReason } from '../engine/store/liveness';
import { adviceSentence, resumableCheckpointStep, runActions } from '../engine/training/advice';
import { codeVersion } from '../engine/version';
import { isRayEngineRun } from '../engine/vocabulary';
import { answerCheckerVersion } from '../engine/tasks/registry';
import { isWorkerMessage, transferables, type WorkerToManager } from './messages';
import { spawnWorker, type WorkerHandle } from './spawn';
import { isLive, requestRunStop } from './stop';
import { hasUnfinishedJob, stopDetachedJob } from '../engine/engines/detached';

/**
 * Launching and stopping runs: what the StudioApi's service forwards to the run manager (the
 * service imports it from the runner below it; the runner knows nothing of the API, issue 37).
 */
export interface RunController {
  /** `check` refuses (by throwing) a resolved config this caller may not launch, before the run is recorded. */
  start(request: StartRunRequest, check?: (config: RunConfig) => void): Promise<{ runId: number }>;
  stop(runId: number): Promise<void>;
  resume(runId: number): Promise<void>;
  isActive(runId: number): boolean;
}

/** Where the manager publishes run events: the API's EventHub, which forwards them to every transport. */
export interface RunEventSink {
  publish(event: StudioEvent): void;
}

export interface RunManagerOptions {
  store: Store;
  databasePath: string;
  hub?: RunEventSink;
  /** Receives every worker message (the CLI's progress bar listens here). */
  onWorkerMessage?: (message: WorkerToManager) => void;
  /** Who this process is, in stop reasons of runs it stops for another owner ("marsrl serve", "the app"). */
  origin?: string;
}

export interface RunManager extends RunController {
  /** Resolves when the run's worker has exited and the run is marked. */
  waitForExit(runId: number): Promise<void>;
  /** Stop every active run (the app or CLI is closing). */
  stopAll(reason: string): Promise<void>;
  /** Runs left `running` by a process that no longer exists are marked interrupted. */
  recoverStaleRuns(): number[];
}

/** A launch request → a resolved config and the preset it came from, or a field-level error. */
export function resolveLaunchConfig(request: StartRunRequest): { config: RunConfig; preset: string | null } {
  try {
    let doc: Record<string, unknown> = {};
    if (request.preset) {
      if (!listPresets().some((p) => p.name === request.preset)) {
        throw new StudioError('invalid_request', `unknown preset "${request.preset}"; known presets: ${listPresets().map((p) => p.name).join(', ')}`);
      }
      doc = presetDocument(request.preset);
    }
    if (request.config) doc = deepMerge(doc, request.config);
    if (request.name) doc = { ...doc, name: request.name };
    const config = resolveConfig(doc);
    // A file the run needs is checked before the run exists, and pinned to an absolute path.
    // So is an API key variable that is not set, or not approved for its endpoint's hosts on this
    // machine (issue #36): refused before a run is recorded, as `marsrl run` refuses it.
    const fileIssues = machineIssues(config);
    if (fileIssues.length) throw new ConfigError(fileIssues);
    checkTaskFile(config);
    checkInitCheckpoints(config);
    return { config: withAbsoluteTaskPaths(config), preset: request.preset ?? null };
  } catch (error) {
    if (error instanceof ConfigError) throw new StudioError('invalid_request', error.message, error.issues);
    throw error;
  }
}

/**
 * A run of the jsonl family reads its task file in the worker; a file that cannot be read is
 * refused here instead, before the run is recorded (issue #17: bad input writes nothing).
 */
function checkTaskFile(config: RunConfig): void {
  if (config.task.family !== 'jsonl' || !config.task.jsonl_path) return;
  try {
    getTaskFamily('jsonl', { path: config.task.jsonl_path, checker: config.task.checker });
  } catch (error) {
    const message = `task.jsonl_path: ${error instanceof Error ? error.message : String(error)}`;
    throw new StudioError('invalid_request', message, [{ path: 'task.jsonl_path', message }]);
  }
}

/** Each policy's `init` checkpoint must be found and readable before the run is recorded. */
function checkInitCheckpoints(config: RunConfig): void {
  for (const [id, policy] of Object.entries(config.policies)) {
    if (!policy.init) continue;
    const field = `policies.${id}.init`;
    try {
      readCheckpointManifest(resolveInitPath(policy.init));
    } catch (error) {
      const message = `${field}: ${error instanceof Error ? error.message : String(error)}`;
      throw new StudioError('invalid_request', message, [{ path: field, message }]);
    }
  }
}

export function defaultRunName(config: RunConfig, preset: string | null, now = new Date()): string {
  const stamp = now.toISOString().slice(0, 16).replace('T', ' ');
  return config.name ?? `${preset ?? config.task.family} ${config.reward.scheme}/${config.advantage.mode} s${config.seed} ${stamp}`;
}

interface ActiveRun {
  /** The trainer (the only worker of a sync run). */
  worker: WorkerHandle;
  /** The rollout worker of a pipeline run. */
  rollout: WorkerHandle | null;
  exited: Promise<void>;
  stopReason: string | null;
}

/** How long a rollout worker may take to leave after the trainer has gone. */
const ROLLOUT_GRACE_MS = 10_000;
/** How long a trainer may take to stop after its rollout worker died. */
const TRAINER_GRACE_MS = 30_000;

/** What every part of the manager works on: the store, the runs this process started, the hub. */
interface ManagerContext {
  store: Store;
  databasePath: string;
  options: RunManagerOptions;
  active: Map<number, ActiveRun>;
  publish: (event: StudioEvent) => void;
}

export function createRunManager(options: RunManagerOptions): RunManager {
  const { store, databasePath, hub } = options;
  const ctx: ManagerContext = { store, databasePath, options, active: new Map(), publish: (event) => hub?.publish(event) };
  const { active, publish } = ctx;

  return {
    async start(request, check) {
      const { config, preset } = resolveLaunchConfig(request);
      check?.(config);
      const runId = store.runs.create({
        name: defaultRunName(config, preset),
        preset,
        config: config as unknown as Record<string, unknown>,
        codeVersion: codeVersion(),
        seed: config.seed,
        checkerVersion: answerCheckerVersion(config.task.family),
      });
      publish({ type: 'run-created', runId });
      launch(ctx, runId, false);
      return { runId };
    },

    stop: (runId) => stopRun(ctx, runId),

    async resume(runId) {
      checkResumable(ctx, runId);
      launch(ctx, runId, true);
    },

    isActive(runId) {
      return active.has(runId);
    },

    waitForExit(runId) {
      return active.get(runId)?.exited ?? Promise.resolve();
    },

    async stopAll(reason) {
      const waits = [...active.entries()].map(([, entry]) => {
        entry.stopReason = reason;
        // The Studio is closing, nobody asked for the run to end: an engine run only detaches from its Ray job.
        entry.worker.send({ type: 'stop', reason, detach: true });
        entry.rollout?.send({ type: 'stop', reason, detach: true });
        return entry.exited;
      });
      await Promise.all(waits);
    },

    recoverStaleRuns: () => recoverStaleRuns(ctx),
  };
}

/**
 * Marks a run whose workers have all exited. The store may not be writable (a full disk, a lock
 * held elsewhere): the run then stays recorded `running` with a dead pid, which every reader shows
 * as interrupted (store/liveness.ts) and the next start marks; say so rather than crash the
 * managing process.
 */
function markEnded(ctx: ManagerContext, runId: number, code: number | null, signal: NodeJS.Signals | null, stopReason: string | null, died: string | null): void {
  try {
    markEndedInStore(ctx, runId, code, signal, stopReason, died);
  } catch (error) {
    const why = describeStoreFailure(error, ctx.databasePath) ?? (error instanceof Error ? error.message : String(error));
    process.stderr.write(`run ${runId}: its worker stopped but the run could not be marked: ${why}\n`);
    ctx.publish({ type: 'run-status', runId, status: 'interrupted', reason: why });
  }
}

function markEndedInStore(ctx: ManagerContext, runId: number, code: number | null, signal: NodeJS.Signals | null, stopReason: string | null, died: string | null): void {
  const { store } = ctx;
  const run = store.runs.get(runId);
  if (!run) return;
  if (run.status === 'running' || run.status === 'queued') {
    // The worker died without marking the run itself (killed, crashed, out of memory).
    const reason = stopReason ?? died ?? (signal ? `worker process killed by ${signal}` : `worker process exited with code ${code}`);
    store.runs.setStatus(runId, 'interrupted', reason);
    store.runs.heartbeat(runId, null);
    // What can be done next depends on whether a checkpoint was saved (training/advice.ts).
    const advice = adviceSentence(runActions(store, store.runs.get(runId)!));
    store.events.log(runId, 'error', 'worker_exit', `the run's worker stopped unexpectedly: ${reason}; ${advice}`, { code, signal });
  }
  const final = store.runs.get(runId)!;
  ctx.publish({ type: 'run-status', runId, status: final.status, reason: final.statusReason });
}

/** The run's mode as its worker will resolve it (an unreadable config fails in the worker). */
function modeOf(store: Store, runId: number): 'sync' | 'pipeline' {
  try {
    const config = parseRunConfig(store.runs.get(runId)?.config ?? {});
    // A reasoning-system run (issue #16) trains nothing: one worker, no rollout process.
    return config.system ? 'sync' : config.pipeline.mode;
  } catch {
    return 'sync';
  }
}

/** How the workers of one launch have ended so far: the run's exit is when both have. */
interface WorkerExits {
  running: number;
  trainer: { code: number | null; signal: NodeJS.Signals | null } | null;
  rolloutExited: boolean;
  rolloutDeath: string | null;
}

/** Starts the run's worker (and a pipeline run's rollout worker) and watches them to the end. */
function launch(ctx: ManagerContext, runId: number, resume: boolean): void {
  const { databasePath } = ctx;
  const args = { databasePath, runId, resume, runDir: runDir(databasePath, runId) };
  const pipelined = modeOf(ctx.store, runId) === 'pipeline';
  const worker = spawnWorker(pipelined ? { ...args, role: 'trainer' } : args);
  const rollout = pipelined ? spawnWorker({ ...args, role: 'rollout' }) : null;
  let resolveExit!: () => void;
  const exited = new Promise<void>((resolve) => (resolveExit = resolve));
  const entry: ActiveRun = { worker, rollout, exited, stopReason: null };
  ctx.active.set(runId, entry);
  const exits: WorkerExits = { running: rollout ? 2 : 1, trainer: null, rolloutExited: false, rolloutDeath: null };
  const finished = () => {
    if (--exits.running > 0) return;
    ctx.active.delete(runId);
    try {
      const { code, signal } = exits.trainer!;
      const describe = signal ? `killed by ${signal}` : `exited with code ${code}`;
      // A trainer that died on its own leaves the run running; name which worker it was.
      const died = code !== 0 || signal ? `${rollout ? 'trainer worker' : 'worker'} process ${describe}` : null;
      markEnded(ctx, runId, code, signal, entry.stopReason ?? (died ? null : exits.rolloutDeath), died);
    } finally {
      resolveExit();
    }
  };
  watchTrainer(ctx, runId, entry, exits, finished);
  if (rollout) watchRollout(ctx, runId, entry, rollout, exits, finished);
}

/** The trainer's messages go to the hub (its `peer` ones to the rollout worker); its exit stops the rollout. */
function watchTrainer(ctx: ManagerContext, runId: number, entry: ActiveRun, exits: WorkerExits, finished: () => void): void {
  const { worker, rollout } = entry;
  worker.onMessage((message) => {
    if (!isWorkerMessage(message)) return;
    if (message.type === 'peer') {
      if (!exits.rolloutExited) rollout?.send({ type: 'peer', payload: message.payload }, transferables(message.payload));
      return;
    }
    ctx.options.onWorkerMessage?.(message);
    if (message.type === 'started') ctx.publish({ type: 'run-status', runId, status: 'running', reason: null });
    else if (message.type === 'progress') {
      ctx.publish({ type: 'run-progress', runId, step: message.progress.step, totalSteps: message.progress.totalSteps, metrics: message.progress.metrics });
    }
  });
  worker.onExit((code, signal) => {
    exits.trainer = { code, signal };
    if (rollout && !exits.rolloutExited) {
      // The trainer is gone (done, failed, stopped or killed): the rollout has nothing to do.
      rollout.send({ type: 'stop', reason: 'the trainer exited' });
      const timer = setTimeout(() => rollout.kill('SIGKILL'), ROLLOUT_GRACE_MS);
      timer.unref();
    }
    finished();
  });
}

/** The rollout worker's `peer` messages go to the trainer; its death stops the trainer. */
function watchRollout(ctx: ManagerContext, runId: number, entry: ActiveRun, rollout: WorkerHandle, exits: WorkerExits, finished: () => void): void {
  const { store } = ctx;
  const { worker } = entry;
  rollout.onMessage((message) => {
    if (!isWorkerMessage(message)) return;
    if (message.type === 'peer') {
      if (!exits.trainer) worker.send({ type: 'peer', payload: message.payload }, transferables(message.payload));
      return;
    }
    ctx.options.onWorkerMessage?.(message);
  });
  rollout.onExit((code, signal) => {
    exits.rolloutExited = true;
    // It leaves on its own only when told to stop; a signal or an error exit is a death.
    if (!exits.trainer && entry.stopReason === null && (code !== 0 || signal)) {
      const death = `rollout worker process ${signal ? `killed by ${signal}` : `exited with code ${code}`}`;
      exits.rolloutDeath = death;
      // The run is about to end interrupted: the advice is for that run (training/advice.ts).
      const advice = adviceSentence(runActions(store, { ...store.runs.get(runId)!, status: 'interrupted' }));
      store.events.log(runId, 'error', 'worker_exit', `the run's rollout worker stopped unexpectedly: ${death}; the trainer stops at its next safe point; then ${advice}`, { code, signal, role: 'rollout' });
      worker.send({ type: 'stop', reason: death });
      const timer = setTimeout(() => worker.kill('SIGTERM'), TRAINER_GRACE_MS);
      timer.unref();
      void entry.exited.then(() => clearTimeout(timer));
    }
    finished();
  });
}

async function stopRun(ctx: ManagerContext, runId: number): Promise<void> {
  const { store, publish } = ctx;
  const entry = ctx.active.get(runId);
  if (!entry) {
    // An engine run no process follows (the Studio detached from it as it closed): its job is stopped on Ray (issue 38).
    const run = store.runs.get(runId);
    if (run && !isLive(run) && hasUnfinishedJob(store, runId)) {
      await stopDetachedJob(store, runId, ctx.options.origin ?? `process ${process.pid}`);
      publish({ type: 'run-updated', runId });
      return;
    }
    // Owned by another process (a terminal's `marsrl run`, the app): a request recorded with
    // the run, which its worker honours at its next safe point (runner/stop.ts). Returns once
    // recorded; the run's status follows as pushed events.
    const outcome = requestRunStop(store, runId, ctx.options.origin ?? `process ${process.pid}`);
    if (outcome.kind === 'marked') publish({ type: 'run-status', runId, status: 'interrupted', reason: outcome.reason });
    else publish({ type: 'run-updated', runId });
    return;
  }
  // Recorded for every reader too (another window shows "stopping"); the message is faster.
  store.runs.requestStop(runId, 'stopped by the user');
  publish({ type: 'run-updated', runId });
  entry.stopReason = 'stopped by the user';
  entry.worker.send({ type: 'stop', reason: 'stopped by the user' });
  entry.rollout?.send({ type: 'stop', reason: 'stopped by the user' });
  // A worker that does not stop within the grace period is terminated; its run is still marked.
  const timer = setTimeout(() => entry.worker.kill('SIGTERM'), 30_000);
  await entry.exited;
  clearTimeout(timer);
}

/** A run may be resumed when it exists, nothing runs it, it did not finish, and it left a checkpoint; it is then claimed. */
function checkResumable(ctx: ManagerContext, runId: number): void {
  const { store } = ctx;
  const run = store.runs.get(runId);
  if (!run) throw new StudioError('not_found', `run ${runId} does not exist`);
  if (ctx.active.has(runId)) throw new StudioError('conflict', `run ${runId} is already running`);
  if (run.status === 'running') {
    // Recorded running but nothing runs it (killed with every process, issue 35: the page said
    // "resume" and Resume answered "already running"): mark it as every reader shows it.
    const dead = staleRunReason(run);
    if (dead === null) throw new StudioError('conflict', `run ${runId} is already running (worker pid ${run.workerPid ?? 'unknown'}); stop it first with \`marsrl stop ${runId}\``);
    store.runs.markStale((candidate) => (candidate.id === runId ? dead : null));
  }
  if (run.status === 'done') throw new StudioError('conflict', `run ${runId} finished; there is nothing to resume`);
  // A reasoning-system run resumes from its stored turns, not from a checkpoint.
  // An engine run (issue 38) resumes from the engine's own checkpoints on its cluster, or follows its job again.
  if (resumableCheckpointStep(store, runId) === null && !isSystemRun(run.config) && !isRayEngineRun(run.config)) {
    const why = store.events.latestCheckpoint(runId) ? 'left on disk (its checkpoint folders are gone)' : '(it stopped before the first one)';
    throw new StudioError('conflict', `run ${runId} has no checkpoint ${why}, so it cannot be resumed; run it again with the same config: \`marsrl run --like ${runId}\``);
  }
  // Another process (a second `marsrl resume`, the app) may be resuming it right now.
  if (!store.runs.claimForResume(runId)) {
    const now = store.runs.get(runId);
    throw new StudioError('conflict', `run ${runId} is being resumed by another process (it is ${now?.status ?? 'gone'}); wait for it, or stop it first`);
  }
}

/** Runs left `running` by a process that no longer exists are marked interrupted, and said so. */
function recoverStaleRuns(ctx: ManagerContext): number[] {
  const { store } = ctx;
  const marked = store.runs.markStale((run) => {
    if (ctx.active.has(run.id)) return null;
    const why = staleRunReason(run);
    return why === null ? null : `${why} (the app or machine stopped while it ran)`;
  });
  for (const runId of marked) {
    const run = store.runs.get(runId)!;
    store.events.log(runId, 'warning', 'stale_run', `marked interrupted: ${run.statusReason}`);
    ctx.publish({ type: 'run-status', runId, status: run.status, reason: run.statusReason });
  }
  return marked;
}

/** Whether a stored config is a reasoning-system run's (a `system` block; issue #16). */
function isSystemRun(config: Record<string, unknown>): boolean {
  return typeof config.system === 'object' && config.system !== null;
}
