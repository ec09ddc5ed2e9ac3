/**
 * The trainable weights of any PolicyModel as one flat Float32Array in `specs` order — the layout
 * `getWeights`/`setWeights` and the pipeline's weight messages use (policy-model.ts). One
 * definition for the GPT, the Hugging Face family and its LoRA adapters.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { ParamSpec } from './policy-model';
import { readSync } from './readback';
import type { WeightsVersion } from './weights-version';

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

/**
 * The weights half of a PolicyModel written once for the GPT, the Hugging Face family and its
 * LoRA adapters: the flat buffer's size, the weights version, and the weights in and out. Each
 * family keeps its own `specs`, `variables` and version sequence.
 */
export abstract class FlatWeightsModel {
  abstract readonly specs: ParamSpec[];
  abstract readonly variables: tf.Variable[];
  protected abstract readonly weightsVersion: WeightsVersion;
  /** Whose weights these are, in setWeights' length error. */
  protected readonly weightsOwner: string = 'the model has';

  get numParams(): number {
    return flatLength(this.specs);
  }

  /**
   * Weights version: changes whenever any variable's value has been replaced (optimizer step,
   * setWeights, or any other `assign`), or whatever else the family's WeightsVersion watches.
   * Versions are unique across the models of a process, so a decoding state never mistakes
   * another model's cache for its own.
   */
  get version(): number {
    return this.weightsVersion.current();
  }

  /**
   * All weights as one flat Float32Array in `specs` order (one transferable ArrayBuffer, for
   * sending between worker processes).
   */
  getWeights(): Float32Array {
    return readFlatWeights(this.variables, this.specs, this.numParams);
  }

  /** `getWeights` for every backend, WebGPU included (issue #15). */
  getWeightsAsync(): Promise<Float32Array> {
    return readFlatWeightsAsync(this.variables, this.specs, this.numParams);
  }

  /** Replace all weights from a flat buffer laid out as `getWeights` returns it. */
  setWeights(flat: Float32Array): void {
    assignFlatWeights(this.variables, this.specs, this.numParams, flat, this.weightsOwner);
  }
}
