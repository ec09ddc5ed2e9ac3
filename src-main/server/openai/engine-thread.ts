/**
 * The engine thread of `marsrl serve-model` (engine.ts): loads each policy from its folder, runs
 * one RequestBatcher per policy and answers the HTTP thread's messages. The batcher yields to the
 * event loop between decode steps, so submissions and aborts arrive while a batch decodes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend, type BackendPreference } from '../../engine/model/backend';
import { RequestBatcher } from './batcher';
import type { EngineThreadData, FromEngine, ToEngine } from './engine';
import { loadCheckpointPolicy } from './policy';

const port = parentPort!;
const data = workerData as EngineThreadData;
const send = (m: FromEngine) => port.postMessage(m);

try {
  await initBackend(data.backend as BackendPreference);
  tf.enableProdMode();
  const batchers = new Map<string, RequestBatcher>();
  for (const source of data.sources) {
    const policy = loadCheckpointPolicy(source.dir, { id: source.id, role: source.role });
    batchers.set(policy.id, new RequestBatcher(policy.model, policy.tokenizer, { windowMs: data.windowMs, maxRows: data.maxRows, joinWaitMs: data.joinWaitMs }));
  }
  const aborts = new Map<number, AbortController>();
  port.on('message', (m: ToEngine) => {
    if (m.type === 'abort') {
      aborts.get(m.id)?.abort();
      return;
    }
    const batcher = batchers.get(m.policy);
    if (!batcher) return send({ type: 'error', id: m.id, message: `no policy ${JSON.stringify(m.policy)} in the engine thread` });
    const gone = new AbortController();
    aborts.set(m.id, gone);
    batcher
      .submit({ prompt: m.prompt, params: m.params, signal: gone.signal, onUpdate: m.stream ? (update) => send({ type: 'update', id: m.id, update }) : undefined })
      .then(
        (choices) => send({ type: 'done', id: m.id, choices, stats: { ...batcher.stats } }),
        (error: unknown) => send({ type: 'error', id: m.id, message: (error as Error).message }),
      )
      .finally(() => aborts.delete(m.id));
  });
  send({ type: 'ready', ids: [...batchers.keys()] });
} catch (error) {
  send({ type: 'failed', message: (error as Error).message });
}
