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

/** Whether `dataSync` works on the backend: everywhere except WebGPU in Node. */
export function canReadSync(backendName: string = tf.getBackend()): boolean {
  return backendName !== 'webgpu';
}

/** The tensor's values, synchronously; on webgpu a clear error naming the asynchronous call to use. */
export function readSync(t: tf.Tensor, asyncAlternative: string): Float32Array {
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
