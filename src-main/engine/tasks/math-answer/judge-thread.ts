/**
 * The checker's thread (issue #34): compute-engine lives here, so a comparison that runs away can
 * be abandoned by the caller (thread.ts) without stalling the rollout that asked. Requests arrive
 * on the port in workerData; each reply is posted before the shared counter is bumped, so the
 * caller, woken by the counter, finds the reply waiting on its side of the port.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { RewoundEngine } from './engine';
import type { ThreadReply, ThreadRequest } from './thread';

const { port, signal } = workerData as { port: MessagePort; signal: SharedArrayBuffer };
const counter = new Int32Array(signal);

function reply(message: ThreadReply): void {
  port.postMessage(message);
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
}

function serve(engine: RewoundEngine): void {
  port.on('message', (request: ThreadRequest) => {
    const started = performance.now();
    const verdict = engine.judge(request.reference, request.answer, request.softLimitMs);
    reply({ id: request.id, ready: true, verdict, ms: performance.now() - started });
  });
  reply({ id: 0, ready: true });
}

try {
  serve(new RewoundEngine());
} catch (error) {
  reply({ id: 0, ready: false, failure: (error as Error).message });
}

parentPort?.on('close', () => port.close());
