/**
 * Run workers inside the desktop app are Electron utility processes (Node-capable children
 * that Electron manages and ends with the app), started through the same adapter the CLI uses
 * with child_process.fork. The worker reads its arguments from argv and talks over
 * `process.parentPort`.
 */
import { utilityProcess } from 'electron';
import type { WorkerSpawner } from '../runner/spawn';
import { workerEntry } from '../runner/spawn';

export const utilityProcessSpawner: WorkerSpawner = (args) => {
  const child = utilityProcess.fork(workerEntry(), [JSON.stringify(args)], {
    // The OS task manager shows which run and which of its workers a process is.
    serviceName: `MarsRL run ${args.runId} ${args.role ?? 'trainer'}`,
    stdio: 'inherit',
    // The better-sqlite3 build for Electron's ABI (MARSRL_NATIVE_SQLITE, set by `npm start`)
    // must reach the worker too.
    env: process.env,
  });
  return {
    get pid() {
      return child.pid;
    },
    send: (message) => child.postMessage(message),
    onMessage: (listener) => child.on('message', listener),
    onExit: (listener) => child.once('exit', (code) => listener(code, null)),
    kill: () => {
      child.kill();
    },
  };
};
