/** Shared helpers for the model tests: finite differences and tiny models. */
import * as tf from '@tensorflow/tfjs-core';
import type { GPT, GPTConfig } from '../../src-main/engine/gpt/model';
import { Rng } from '../../src-main/engine/util/rng';

export const TINY: GPTConfig = { vocabSize: 7, d_model: 8, n_layers: 2, n_heads: 2, context: 16, mlp_ratio: 2 };

export function randomTokens(rng: Rng, B: number, T: number, V: number): number[][] {
  return Array.from({ length: B }, () => Array.from({ length: T }, () => rng.int(0, V - 1)));
}

export function randomArray(rng: Rng, n: number, scale = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = rng.normal() * scale;
  return a;
}

/**
 * A PPO-like functional of both outputs of `model` on `rows` random rows of 6 tokens:
 * Σ a·log π + Σ b·H with random weights a and b (which the caller disposes). Both terms reach
 * every parameter, so its gradients check the whole model.
 */
export function ppoLikeLoss(model: GPT, rng: Rng, rows: number, opts?: { temperature?: number }): { loss: () => tf.Scalar; a: tf.Tensor2D; b: tf.Tensor2D } {
  const tokens = randomTokens(rng, rows, 6, model.config.vocabSize);
  const a = tf.tensor2d(randomArray(rng, rows * 5), [rows, 5]);
  const b = tf.tensor2d(randomArray(rng, rows * 5), [rows, 5]);
  const loss = () => {
    const { logProbs, entropy } = model.sequenceLogProbs(tokens, opts);
    return tf.add(tf.sum(tf.mul(logProbs, a)), tf.sum(tf.mul(entropy, b))) as tf.Scalar;
  };
  return { loss, a, b };
}

/** Read a scalar tensor and dispose it. */
export function scalar(t: tf.Tensor): number {
  const v = t.dataSync()[0];
  t.dispose();
  return v;
}

/**
 * Central finite difference of f at x along direction d: (f(x + εd) − f(x − εd)) / 2ε.
 * f receives the perturbed values and returns a number.
 */
export function directional(f: (x: Float32Array) => number, x: Float32Array, d: Float32Array, eps: number): number {
  const plus = x.map((v, i) => v + eps * d[i]);
  const minus = x.map((v, i) => v - eps * d[i]);
  return (f(plus) - f(minus)) / (2 * eps);
}

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/**
 * Check an analytic gradient against finite differences along `directions` random directions.
 * Returns the worst (over directions) relative error |fd − g·d| / max(|fd|, |g·d|, floor).
 * With several step sizes the best one counts for each direction: in float32 a large step suffers
 * from curvature and ReLU kinks, a small one from rounding, and a wrong gradient matches at none.
 */
export function worstDirectionalError(
  f: (x: Float32Array) => number,
  x: Float32Array,
  grad: Float32Array,
  rng: Rng,
  directions = 3,
  eps: number | number[] = 1e-2,
  floor = 1e-3,
): number {
  const steps = Array.isArray(eps) ? eps : [eps];
  let worst = 0;
  for (let k = 0; k < directions; k++) {
    const d = randomArray(rng, x.length);
    const an = dot(grad, d);
    let best = Infinity;
    for (const e of steps) {
      const fd = directional(f, x, d, e);
      best = Math.min(best, Math.abs(fd - an) / Math.max(Math.abs(fd), Math.abs(an), floor));
    }
    worst = Math.max(worst, best);
  }
  return worst;
}

/**
 * The relative error |fd − an| / max(|fd|, |an|, floor) of an analytic directional derivative
 * `an` (g·d over one parameter's slice of the flat weights `w`) against central differences of
 * an asynchronous loss along d, for backends read back asynchronously (webgpu). The best of
 * several steps counts: float32 rounding hurts small ones, curvature large ones; a wrong
 * gradient matches at none.
 */
export async function sliceDirectionalError(
  lossAt: (w: Float32Array) => Promise<number>,
  w: Float32Array,
  slice: { offset: number; size: number },
  d: Float32Array,
  an: number,
  steps: readonly number[] = [3e-3, 1e-3, 3e-4],
  floor = 1e-2,
): Promise<number> {
  let best = Infinity;
  for (const eps of steps) {
    const plus = w.slice();
    const minus = w.slice();
    for (let j = 0; j < slice.size; j++) {
      plus[slice.offset + j] += eps * d[j];
      minus[slice.offset + j] -= eps * d[j];
    }
    const fd = ((await lossAt(plus)) - (await lossAt(minus))) / (2 * eps);
    best = Math.min(best, Math.abs(fd - an) / Math.max(Math.abs(fd), Math.abs(an), floor));
  }
  return best;
}
