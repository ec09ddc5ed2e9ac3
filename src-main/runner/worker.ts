/**
 * The run worker: a separate process that trains one run and writes everything it produces to
 * the store. Started by the run manager with its arguments as JSON in argv[2]; talks back over
 * the IPC channel (Node fork or Electron utilityProcess, which both provide `process.send` or
 * `process.parentPort`).
 *
 * Stopping: a `stop` message, SIGTERM or SIGINT abort the trainer at its next safe point; the run
 * is marked interrupted with the reason and stays resumable from its last checkpoint.
 */
import { openStore } from '../engine/store';
import { resolveConfig } from '../engine/config/load';
import { trainRun } from '../engine/training/trainer';
import type { ManagerToWorker, WorkerArgs, WorkerToManager } from './messages';

interface ParentPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (event: { data: unknown }) => void): void;
}

const parentPort = (process as unknown as { parentPort?: ParentPort }).parentPort;

function post(message: WorkerToManager): void {
  if (parentPort) parentPort.postMessage(message);
  else if (process.send) process.send(message);
}

function onParentMessage(listener: (message: ManagerToWorker) => void): void {
  if (parentPort) parentPort.on('message', (event) => listener(event.data as ManagerToWorker));
  else process.on('message', (message) => listener(message as ManagerToWorker));
}

async function main(): Promise<number> {
  const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
  const store = openStore(args.databasePath);
  const controller = new AbortController();
  const stop = (reason: string) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  onParentMessage((message) => {
    if (message.type === 'stop') stop(message.reason);
  });
  process.on('SIGTERM', () => stop('worker received SIGTERM'));
  process.on('SIGINT', () => stop('interrupted (Ctrl-C)'));
  // A manager that disappears (the app or CLI closed) stops the run cleanly too.
  process.on('disconnect', () => stop('the managing process exited'));

  const run = store.runs.get(args.runId);
  if (!run) throw new Error(`run ${args.runId} does not exist in ${args.databasePath}`);
  const config = resolveConfig(run.config, `run ${args.runId}`);
  store.runs.setStatus(args.runId, 'running', null);
  store.runs.heartbeat(args.runId, process.pid);
  post({ type: 'started', runId: args.runId, pid: process.pid });

  const outcome = await trainRun({
    store,
    runId: args.runId,
    config,
    runDir: args.runDir,
    resume: args.resume,
    worker: `worker-${process.pid}`,
    signal: controller.signal,
    onProgress: (progress) => {
      store.runs.heartbeat(args.runId, process.pid);
      post({ type: 'progress', runId: args.runId, progress });
    },
  });
  const reason = outcome.status === 'done' ? null : outcome.reason;
  store.runs.setStatus(args.runId, outcome.status, reason);
  store.runs.heartbeat(args.runId, null);
  post({ type: 'finished', runId: args.runId, status: outcome.status, step: outcome.step, reason });
  store.close();
  return outcome.status === 'failed' ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Let the last IPC message flush before the channel closes.
    setTimeout(() => process.exit(code), 50);
  },
  (error: unknown) => {
    process.stderr.write(`run worker: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(1);
  },
);
