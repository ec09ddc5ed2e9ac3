/**
 * A run's worker process, started by the run manager with its arguments as JSON in argv[2]; talks
 * back over the IPC channel (Node fork or Electron utilityProcess, which provide `process.send` or
 * `process.parentPort`). Two roles:
 *
 * - trainer (every run): trains and writes everything the run produces to the store, and marks
 *   the run's status when it ends. In a `pipeline` run it receives the rollout worker's batches,
 *   and sends it weights, through the manager (`peer` messages).
 * - rollout (`pipeline` runs only): generates episodes with its own copies of the policies and
 *   writes only its own timeline spans (segment decodes, staleness waits).
 *
 * Stopping: a `stop` message, a stop request recorded with the run by any process (runner/stop.ts),
 * SIGTERM, SIGINT or the manager going away stop either worker at its next safe point; the trainer
 * marks the run interrupted with the reason and it stays resumable from its last checkpoint.
 */
import { parseRunConfig } from '../engine/config/load';
import type { RunConfig } from '../engine/config/schema';
import { describeStoreFailure, openStore, type Store } from '../engine/store';
import type { Endpoint, RolloutEndpoint, RolloutToTrainer, TrainerEndpoint, TrainerToRollout } from '../engine/training/pipeline-protocol';
import { rayEngineOf } from '../engine/engines/run-config';
import type { TrainProgress } from '../engine/training/trainer';
import { onCheckerIncident } from '../engine/tasks/math-answer';
import type { ManagerToWorker, WorkerArgs, WorkerToManager } from './messages';

/** How often a running worker reads its run's stop request (a primary-key read). */
const STOP_POLL_MS = 1000;

interface ParentPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (event: { data: unknown }) => void): void;
}

const parentPort = (process as unknown as { parentPort?: ParentPort }).parentPort;

/** Called when the channel to the manager turns out to be closed (it exited or was killed). */
let onChannelClosed: () => void = () => undefined;

/** `done` runs once the message has been handed to the channel (or could not be). */
function post(message: WorkerToManager, done?: () => void): void {
  if (parentPort) {
    parentPort.postMessage(message);
    done?.();
  } else if (process.send && process.connected) {
    // With a callback a failed write (EPIPE: the manager is gone, and 'disconnect' has not been
    // delivered yet) is reported here instead of crashing the worker as an unhandled 'error'.
    process.send(message, undefined, {}, (error) => {
      if (error) onChannelClosed();
      done?.();
    });
  } else done?.();
}

function onParentMessage(listener: (message: ManagerToWorker) => void): void {
  if (parentPort) parentPort.on('message', (event) => listener(event.data as ManagerToWorker));
  else process.on('message', (message) => listener(message as ManagerToWorker));
}

/**
 * This worker's end of the channel to the run's other worker, through the manager. Messages that
 * arrive before the engine listens are kept for it.
 */
type PeerMessage = TrainerToRollout | RolloutToTrainer;

function peerEndpoint(runId: number): { endpoint: Endpoint<PeerMessage, PeerMessage>; deliver: (payload: PeerMessage) => void } {
  const early: PeerMessage[] = [];
  let listener: ((message: PeerMessage) => void) | null = null;
  // A large message (weights, a batch of turns) is written to the channel in pieces while this
  // process's event loop runs; `flush` lets the sender wait for that before computing again, so
  // the message is not held back by the next update or segment.
  let pending = 0;
  let flushed: (() => void)[] = [];
  const sent = () => {
    if (--pending > 0) return;
    const waiters = flushed;
    flushed = [];
    for (const w of waiters) w();
  };
  return {
    endpoint: {
      // Between processes the IPC layer copies the buffers once; nothing to transfer here.
      send: (payload) => {
        pending++;
        post({ type: 'peer', runId, payload }, sent);
      },
      flush: () => (pending === 0 ? Promise.resolve() : new Promise<void>((resolve) => flushed.push(resolve))),
      onMessage: (l) => {
        listener = l;
        for (const m of early.splice(0)) l(m);
      },
    },
    deliver: (payload) => {
      if (listener) listener(payload);
      else early.push(payload);
    },
  };
}

async function main(): Promise<number> {
  const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
  const role = args.role ?? 'trainer';
  const store = openStore(args.databasePath);
  const controller = new AbortController();
  // Whether the stop only detaches (the managing process closing or gone): an engine run's Ray job
  // goes on and is re-attached later; a Studio run stops either way (issue 38).
  let detaching = false;
  const stop = (reason: string, detach = false) => {
    if (controller.signal.aborted) return;
    detaching = detach;
    controller.abort(reason);
  };
  const peer = peerEndpoint(args.runId);
  onParentMessage((message) => {
    if (message.type === 'stop') stop(message.reason, message.detach === true);
    else if (message.type === 'peer') peer.deliver(message.payload);
  });
  process.on('SIGTERM', () => stop('worker received SIGTERM', true));
  process.on('SIGINT', () => stop('interrupted (Ctrl-C)'));
  // A manager that disappears (the app or CLI closed) stops the run cleanly too.
  process.on('disconnect', () => stop('the managing process exited', true));
  onChannelClosed = () => stop('the managing process exited', true);

  const run = store.runs.get(args.runId);
  if (!run) throw new Error(`run ${args.runId} does not exist in ${args.databasePath}`);
  // Checked against this machine when the run was launched (preflight): here it is only parsed.
  const config = parseRunConfig(run.config, `run ${args.runId}`);
  // A comparison past the answer checker's budget is a wrong answer, and the run records it (issue #34).
  onCheckerIncident((incident) => {
    if (incident.kind === 'thread-restart') return;
    store.events.log(args.runId, 'warning', `checker_${incident.kind.replace('-', '_')}`, incident.message, {
      reference: incident.reference?.slice(0, 200) ?? null,
      answer: incident.answer?.slice(0, 200) ?? null,
    });
  });
  if (role === 'rollout') return rolloutMain(args, store, config, controller.signal, peer.endpoint as unknown as RolloutEndpoint);

  store.runs.setStatus(args.runId, 'running', null);
  store.runs.heartbeat(args.runId, process.pid);
  post({ type: 'started', runId: args.runId, pid: process.pid, role });
  // Between steps too (a long warm start or evaluation), so a live run never reads as stale
  // (store/liveness.ts); the timer only fires when training yields, which it does every step.
  const heartbeat = setInterval(() => store.runs.heartbeat(args.runId, process.pid), 30_000);
  heartbeat.unref();
  // A stop asked for by another process (the app, `marsrl serve`, `marsrl stop`; runner/stop.ts
  // says why a request in the store rather than a signal): read every second and at every step,
  // honoured at the next safe point like Ctrl-C.
  const checkStopRequest = () => {
    if (controller.signal.aborted) return;
    const request = store.runs.stopRequest(args.runId);
    if (request === null) return;
    post({ type: 'stopping', runId: args.runId, reason: request.reason });
    stop(request.reason);
  };
  checkStopRequest();
  const stopPoll = setInterval(checkStopRequest, STOP_POLL_MS);
  stopPoll.unref();

  const onProgress = (progress: TrainProgress) => {
    store.runs.heartbeat(args.runId, process.pid);
    checkStopRequest();
    post({ type: 'progress', runId: args.runId, progress });
  };
  const outcome = await runOfKind({ store, args, config, signal: controller.signal, detaching: () => detaching, rollout: peer.endpoint as unknown as TrainerEndpoint, onProgress });
  clearInterval(heartbeat);
  clearInterval(stopPoll);
  const reason = outcome.status === 'done' ? null : outcome.reason;
  try {
    store.runs.setStatus(args.runId, outcome.status, reason);
    store.runs.heartbeat(args.runId, null);
  } catch (error) {
    // Marking the run needs a write too; a full disk refuses it. The run then reads as
    // interrupted (its pid is gone) and `marsrl resume` continues it once there is space.
    const why = describeStoreFailure(error, args.databasePath) ?? (error instanceof Error ? error.message : String(error));
    process.stderr.write(`run worker: run ${args.runId} ended ${outcome.status}${reason ? ` (${reason})` : ''} but could not be marked: ${why}\n`);
    store.close();
    return 1;
  }
  post({ type: 'finished', runId: args.runId, status: outcome.status, step: outcome.step, reason });
  store.close();
  return outcome.status === 'failed' ? 1 : 0;
}

interface RunCall {
  store: Store;
  args: WorkerArgs;
  config: RunConfig;
  signal: AbortSignal;
  /** Whether a stop only detaches from an engine run's Ray job (see main). */
  detaching: () => boolean;
  /** This worker's end of the channel to a pipelined run's rollout worker. */
  rollout: TrainerEndpoint;
  onProgress: (progress: TrainProgress) => void;
}

/**
 * The run the config names, each kind loading only its own code (following a Ray job needs no
 * tensor backend): a Ray engine's job, trained by veRL or DrMAS and followed here (issue 38); a
 * reasoning-system run, inference only (issue #16); else the Studio's own training.
 */
async function runOfKind({ store, args, config, signal, detaching, rollout, onProgress }: RunCall) {
  const common = { store, runId: args.runId, config, resume: args.resume, signal, onProgress };
  if (rayEngineOf(config)) return (await import('../engine/engines/engine-run')).engineRun({ ...common, runDir: args.runDir, detaching });
  const worker = `worker-${process.pid}`;
  if (config.system) return (await import('../engine/system/system-run')).systemRun({ ...common, worker });
  // The manager forwards only the rollout worker's messages here, and ours only to it.
  return (await import('../engine/training/trainer')).trainRun({ ...common, runDir: args.runDir, worker, rollout: config.pipeline.mode === 'pipeline' ? rollout : undefined });
}

/** The rollout worker of a pipelined run: episodes out, weights in, its own timeline spans. */
async function rolloutMain(args: WorkerArgs, store: Store, config: RunConfig, signal: AbortSignal, endpoint: RolloutEndpoint): Promise<number> {
  post({ type: 'started', runId: args.runId, pid: process.pid, role: 'rollout' });
  const writer = store.writer({ maxPending: 2000, flushIntervalMs: 500 });
  const runStart = store.runs.get(args.runId)?.startedAt ?? Date.now();
  let code = 0;
  try {
    const [{ initBackend }, { runRolloutLoop }] = await Promise.all([import('../engine/model/backend'), import('../engine/training/pipeline-rollout')]);
    await initBackend(config.runtime.backend);
    await runRolloutLoop({
      config,
      endpoint,
      worker: `rollout-${process.pid}`,
      signal,
      timeline: (span) => writer.timelineSpan({ ...span, runId: args.runId }),
      // This process's own pool of served models (issue #16): its events and metrics go into the run's.
      onEvent: (e) => store.events.log(args.runId, e.level, e.kind, e.message, e.data),
      poolMetrics: (step, metrics) => {
        for (const [key, value] of Object.entries(metrics)) writer.metric({ runId: args.runId, step, wallTime: (Date.now() - runStart) / 1000, key, value });
      },
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`rollout worker: ${error instanceof Error ? (error.stack ?? message) : message}\n`);
    endpoint.send({ type: 'failed', message });
    code = 1;
  } finally {
    writer.close();
    store.close();
  }
  return code;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Let the last IPC message flush before the channel closes.
    setTimeout(() => process.exit(code), 50);
  },
  (error: unknown) => {
    process.stderr.write(`run worker: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
