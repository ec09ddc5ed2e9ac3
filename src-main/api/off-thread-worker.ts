/**
 * The off-thread worker (off-thread.ts): runs one operation of off-thread-ops.ts per message, in
 * order, and answers with its result or its error's message.
 */
import { parentPort } from 'node:worker_threads';
import { OFF_THREAD_OPS, type OffThreadOp } from './off-thread-ops';

const port = parentPort!;
port.on('message', (m: { id: number; op: OffThreadOp; args: unknown[] }) => {
  try {
    const run = OFF_THREAD_OPS[m.op] as (...args: unknown[]) => unknown;
    port.postMessage({ id: m.id, ok: true, result: run(...m.args) });
  } catch (error) {
    port.postMessage({ id: m.id, ok: false, message: error instanceof Error ? error.message : String(error) });
  }
});
port.postMessage({ ready: true });
