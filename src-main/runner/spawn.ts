/**
 * Starting a worker process, behind one adapter so the engine never imports electron:
 * `child_process.fork` from the CLI, `marsrl serve` and tests; Electron's `utilityProcess` inside
 * the app (src-main/electron registers it with `setWorkerSpawner`). Messages are structured-clone
 * copies (Node's `advanced` IPC serialization, Electron's postMessage), so Float32Array weights
 * travel as their binary buffers, never as JSON; `send` takes the buffers that may be transferred
 * (the sender gives them up), which a channel between processes copies once.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ManagerToWorker, WorkerArgs } from './messages';

export interface WorkerHandle {
  readonly pid: number | undefined;
  send(message: ManagerToWorker, transfer?: ArrayBuffer[]): void;
  onMessage(listener: (message: unknown) => void): void;
  /** Called once, with the exit code, or the signal that killed the process. */
  onExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
  kill(signal?: NodeJS.Signals): void;
}

export type WorkerSpawner = (args: WorkerArgs) => WorkerHandle;

const here = path.dirname(fileURLToPath(import.meta.url));

/** The worker entry next to this module: worker.ts from source, worker.js in a bundle. */
export function workerEntry(): string {
  for (const name of ['worker.js', 'worker.mjs', 'worker.ts']) {
    const candidate = path.join(here, name);
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`cannot find the run worker next to ${here}`);
}

/**
 * Node flags a worker needs: TypeScript sources run through tsx's loader, as the CLI does. The
 * loader is named by its resolved file URL: a bare `tsx` would be looked up from the current
 * folder, and `marsrl` runs from any folder.
 */
export function workerExecArgv(entry: string): string[] {
  return entry.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
}

export const forkWorker: WorkerSpawner = (args) => {
  const entry = workerEntry();
  const child = fork(entry, [JSON.stringify(args)], {
    execArgv: workerExecArgv(entry),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Structured clone over the IPC channel: typed arrays (weights, log-probabilities) stay binary.
    serialization: 'advanced',
    env: process.env,
  });
  // Errors of the channel (a write to a child that is gone) must not crash the manager; a child
  // that could not be started at all never exits, so it is reported as an exit here.
  child.on('error', () => {
    if (child.pid === undefined) child.emit('exit', 1, null);
  });
  return {
    get pid() {
      return child.pid;
    },
    send: (message) => {
      // A child that just died may still look connected; the failed write (EPIPE) is reported to
      // the callback instead of as an unhandled 'error', and its exit is handled by onExit.
      if (child.connected) child.send(message, undefined, {}, () => undefined);
    },
    onMessage: (listener) => child.on('message', listener),
    onExit: (listener) => child.once('exit', listener),
    kill: (signal) => child.kill(signal),
  };
};

let spawner: WorkerSpawner = forkWorker;

/** Electron swaps in utilityProcess here; tests may swap in a fake. */
export function setWorkerSpawner(next: WorkerSpawner): void {
  spawner = next;
}

export function spawnWorker(args: WorkerArgs): WorkerHandle {
  return spawner(args);
}
