/**
 * Reading tensors back to JavaScript on every backend.
 *
 * Why this exists (issue #15): WebGPU has no synchronous readback. tfjs-backend-webgpu's
 * `dataSync` works in browsers only, through an OffscreenCanvas copy; in Node (Dawn's bindings)
 * it throws "OffscreenCanvas is not defined", and a GPU buffer can be read only with
 * `await buffer.mapAsync()`, which needs the event loop to turn. So every value the model code
 * reads back (logits for the sampler, the loss, the gradient norm, weights for a checkpoint) has an
 * asynchronous path, and the synchronous one says plainly which call to use instead.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { PolicyModel } from './policy-model';

/** Whether `dataSync` works on the backend: everywhere except WebGPU in Node. */
export function canReadSync(backendName: string = tf.getBackend()): boolean {
  return backendName !== 'webgpu';
}

/**
 * The values of tensors read ahead asynchronously for a synchronous reader (`withReadAhead`):
 * `readSync` returns them instead of calling `dataSync`, which WebGPU in Node cannot do.
 */
const readAhead = new Map<tf.Tensor, Float32Array>();

/** The tensor's values, synchronously; on webgpu a clear error naming the asynchronous call to use. */
export function readSync(t: tf.Tensor, asyncAlternative: string): Float32Array {
  const ahead = readAhead.get(t);
  if (ahead) return ahead;
  if (!canReadSync()) {
    throw new Error(`the webgpu backend cannot read a tensor synchronously in Node (WebGPU has only mapAsync); use ${asyncAlternative}`);
  }
  return t.dataSync() as Float32Array;
}

/** Read and dispose: the synchronous form. */
export function takeSync(t: tf.Tensor, asyncAlternative: string): Float32Array {
  try {
    return readSync(t, asyncAlternative);
  } finally {
    t.dispose();
  }
}

/** Read and dispose: the asynchronous form, for every backend. */
export async function takeAsync(t: tf.Tensor): Promise<Float32Array> {
  try {
    return (await t.data()) as Float32Array;
  } finally {
    t.dispose();
  }
}

/**
 * A model call split at its readback (issue #15): all its tensor work is done, `logits` is the
 * one tensor left to read (read and disposed by `finishSync` / `finishAsync`) and `finish`
 * completes the call with its values. Both families build each decoding call once in this form,
 * so the synchronous and the asynchronous call differ only in how the values come back.
 */
export interface Staged<R> {
  logits: tf.Tensor;
  finish: (data: Float32Array) => R;
}

/** Complete a staged call reading back synchronously (wasm, cpu); on webgpu the error names `asyncAlternative`. */
export function finishSync<R>(run: Staged<R>, asyncAlternative: string): R {
  return run.finish(takeSync(run.logits, asyncAlternative));
}

/** Complete a staged call on every backend, WebGPU included. */
export async function finishAsync<R>(run: Staged<R>): Promise<R> {
  return run.finish(await takeAsync(run.logits));
}

/**
 * Run synchronous code that reads `tensors` (through `readSync`) on every backend. On a backend
 * with synchronous readback it simply runs; on webgpu the tensors are read asynchronously first
 * and `readSync` serves those values for the duration of `f`. This keeps one synchronous writer
 * (a checkpoint's files) for both kinds of backend instead of two copies of it (issue #15).
 * `f` must not change the tensors it reads.
 */
export async function withReadAhead<T>(tensors: readonly tf.Tensor[], f: () => T): Promise<T> {
  if (canReadSync()) return f();
  const values = await Promise.all(tensors.map(async (t) => (await t.data()) as Float32Array));
  tensors.forEach((t, i) => readAhead.set(t, values[i]));
  try {
    return f();
  } finally {
    for (const t of tensors) readAhead.delete(t);
  }
}

/**
 * The synchronous form on a backend that reads synchronously (wasm, cpu: the path the tests pin,
 * with no extra turn of the event loop), the asynchronous one elsewhere (webgpu).
 */
export function syncWhereReadable<T>(sync: () => T, async: () => Promise<T>): Promise<T> {
  return canReadSync() ? Promise.resolve(sync()) : async();
}

/** What a run needs from a model family on a backend without synchronous readback. */
type AsyncTwins = Pick<PolicyModel, 'family' | 'prefillAsync' | 'decodeStepAsync' | 'lastLogitsAsync' | 'getWeightsAsync'>;

/**
 * Throw a clear error when the backend reads only asynchronously and the model family lacks the
 * asynchronous twins of its readback calls (policy-model.ts); `what` names the caller's work.
 */
export function assertAsyncReadable(model: AsyncTwins, what: string): void {
  if (canReadSync()) return;
  const missing = (['prefillAsync', 'decodeStepAsync', 'lastLogitsAsync', 'getWeightsAsync'] as const).filter((k) => typeof model[k] !== 'function');
  if (missing.length === 0) return;
  throw new Error(
    `${what}: the ${model.family} model family has no asynchronous readback (${missing.join(', ')}) and the ${tf.getBackend()} backend cannot read tensors synchronously in Node; ` +
      'set runtime.backend to wasm or cpu for this policy family',
  );
}

/** A model's trainable weights as one flat buffer, on every backend (getWeightsAsync where reads are asynchronous). */
export function readWeights(model: Pick<PolicyModel, 'family' | 'getWeights' | 'getWeightsAsync' | 'prefillAsync' | 'decodeStepAsync' | 'lastLogitsAsync'>): Promise<Float32Array> {
  if (canReadSync()) return Promise.resolve(model.getWeights());
  if (!model.getWeightsAsync) assertAsyncReadable(model, 'reading the weights');
  return model.getWeightsAsync!();
}
