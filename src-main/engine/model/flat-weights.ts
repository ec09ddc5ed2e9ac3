/**
 * The trainable weights of any PolicyModel as one flat Float32Array in `specs` order — the layout
 * `getWeights`/`setWeights` and the pipeline's weight messages use (policy-model.ts). One
 * definition for the GPT, the Hugging Face family and its LoRA adapters.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { ParamSpec } from './policy-model';
import { readSync } from './readback';

/** Length of the flat buffer of parameters laid out as `specs` (0 for none). */
export function flatLength(specs: readonly ParamSpec[]): number {
  const last = specs[specs.length - 1];
  return last ? last.offset + last.size : 0;
}

export function readFlatWeights(variables: readonly tf.Variable[], specs: readonly ParamSpec[], numParams: number): Float32Array {
  const flat = new Float32Array(numParams);
  variables.forEach((v, i) => flat.set(readSync(v, 'getWeightsAsync'), specs[i].offset));
  return flat;
}

/** `readFlatWeights` for every backend, WebGPU included. */
export async function readFlatWeightsAsync(variables: readonly tf.Variable[], specs: readonly ParamSpec[], numParams: number): Promise<Float32Array> {
  const flat = new Float32Array(numParams);
  for (let i = 0; i < variables.length; i++) flat.set((await variables[i].data()) as Float32Array, specs[i].offset);
  return flat;
}

/**
 * Assign every variable its piece of `flat`. Each piece is copied (`slice`): the cpu backend may
 * keep the array it is given, and the caller's buffer must not become a variable's storage.
 * `what` says whose they are in the length error ("the model has", "the adapters have").
 */
export function assignFlatWeights(variables: readonly tf.Variable[], specs: readonly ParamSpec[], numParams: number, flat: Float32Array, what: string): void {
  if (flat.length !== numParams) throw new Error(`setWeights: got ${flat.length} values, ${what} ${numParams}`);
  variables.forEach((v, i) => {
    const s = specs[i];
    const t = tf.tensor(flat.slice(s.offset, s.offset + s.size), s.shape, 'float32');
    v.assign(t);
    t.dispose();
  });
}
