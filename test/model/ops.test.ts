/**
 * The custom-gradient building blocks, each against a plain-loop reference (forward) and finite
 * differences (gradient), under both kernel strategies.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { registerMissingGradients } from '../../src-main/engine/model/gradients';
import {
  attention,
  attentionMask,
  attentionSublayer,
  embed,
  layerNorm,
  lnLinear,
  mlpSublayer,
  PLAIN_STRATEGY,
  tokenLogProbsAndEntropy,
  WASM_STRATEGY,
  type KernelStrategy,
} from '../../src-main/engine/model/ops';
import { Rng } from '../../src-main/engine/util/rng';
import { dot, maxAbsDiff, randomArray, scalar, worstDirectionalError } from './helpers';


beforeAll(async () => {
  await initBackend('wasm');
  registerMissingGradients();
});

/** Plain-loop multi-head causal attention over time-major qkv rows, in float64. */
function attentionReference(qkv: Float32Array, T: number, B: number, H: number, E: number, leftPad: number[]): Float64Array {
  const D = H * E;
  const out = new Float64Array(T * B * D);
  const at = (t: number, b: number, part: number, h: number, e: number) => qkv[(t * B + b) * 3 * D + part * D + h * E + e];
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < T; t++) {
        const keys: number[] = [];
        for (let s = 0; s <= t; s++) if (s >= leftPad[b]) keys.push(s);
        if (keys.length === 0) continue; // fully masked padding row: not compared
        const scores = keys.map((s) => {
          let acc = 0;
          for (let e = 0; e < E; e++) acc += at(t, b, 0, h, e) * at(s, b, 1, h, e);
          return acc / Math.sqrt(E);
        });
        const m = Math.max(...scores);
        const w = scores.map((x) => Math.exp(x - m));
        const z = w.reduce((a, c) => a + c, 0);
        for (let e = 0; e < E; e++) {
          let acc = 0;
          keys.forEach((s, i) => (acc += (w[i] / z) * at(s, b, 2, h, e)));
          out[(t * B + b) * D + h * E + e] = acc;
        }
      }
    }
  }
  return out;
}

const strategies: Array<[string, KernelStrategy]> = [
  ['wasm strategy', WASM_STRATEGY],
  ['plain strategy', { ...PLAIN_STRATEGY, embedding: 'js' }], // gather's gradient needs UnsortedSegmentSum, absent on wasm
];

describe.each(strategies)('attention (%s)', (_name, strategy) => {
  const T = 5;
  const B = 3;
  const H = 2;
  const E = 4;
  const D = H * E;

  it('matches a plain-loop reference, with causal and left-padding masks', () => {
    const rng = new Rng(1, 'attn');
    const x = randomArray(rng, T * B * 3 * D);
    const leftPad = [0, 2, 1];
    const got = tf.tidy(() => {
      const mask = attentionMask(T, strategy, leftPad);
      return attention(tf.tensor2d(x, [T * B, 3 * D]), { T, B, H, E }, mask, strategy).dataSync();
    });
    const ref = attentionReference(x, T, B, H, E, leftPad);
    for (let t = 0; t < T; t++) {
      for (let b = 0; b < B; b++) {
        if (t < leftPad[b]) continue;
        for (let d = 0; d < D; d++) expect(Math.abs(got[(t * B + b) * D + d] - ref[(t * B + b) * D + d])).toBeLessThan(1e-5);
      }
    }
  });

  it('gradient matches finite differences', () => {
    const rng = new Rng(2, 'attn-grad');
    const x = randomArray(rng, T * B * 3 * D);
    const w = randomArray(rng, T * B * D);
    const mask = attentionMask(T, strategy);
    const f = (v: Float32Array) => scalar(tf.tidy(() => tf.sum(tf.mul(attention(tf.tensor2d(v, [T * B, 3 * D]), { T, B, H, E }, mask, strategy), tf.tensor2d(w, [T * B, D])))));
    const g = tf.tidy(() => tf.grad((q: tf.Tensor) => tf.sum(tf.mul(attention(q as tf.Tensor2D, { T, B, H, E }, mask, strategy), tf.tensor2d(w, [T * B, D]))))(tf.tensor2d(x, [T * B, 3 * D])).dataSync() as Float32Array);
    expect(worstDirectionalError(f, x, g, rng, 4, 1e-2)).toBeLessThan(1e-2);
    mask.dispose();
  });
});

describe('layerNorm', () => {
  it('normalises rows and its gradient matches finite differences', () => {
    const rng = new Rng(3, 'ln');
    const N = 6;
    const D = 8;
    const x = randomArray(rng, N * D, 2);
    const y = tf.tidy(() => layerNorm(tf.tensor2d(x, [N, D])).dataSync());
    for (let n = 0; n < N; n++) {
      const row = Array.from(x.subarray(n * D, (n + 1) * D));
      const mean = row.reduce((a, b) => a + b, 0) / D;
      const variance = row.reduce((a, b) => a + (b - mean) ** 2, 0) / D;
      row.forEach((v, i) => expect(y[n * D + i]).toBeCloseTo((v - mean) / Math.sqrt(variance + 1e-5), 4));
    }
    const w = randomArray(rng, N * D);
    const loss = (t: tf.Tensor) => tf.sum(tf.mul(tf.square(layerNorm(t as tf.Tensor2D)), tf.tensor2d(w, [N, D])));
    const f = (v: Float32Array) => scalar(tf.tidy(() => loss(tf.tensor2d(v, [N, D]))));
    const g = tf.tidy(() => tf.grad(loss)(tf.tensor2d(x, [N, D])).dataSync() as Float32Array);
    expect(worstDirectionalError(f, x, g, rng, 4, 1e-2)).toBeLessThan(1e-2);
  });
});

/** Plain-loop LayerNorm (no gain) of the rows of x [N, D], in float64. */
function lnRef(x: Float32Array, N: number, D: number): Float64Array {
  const out = new Float64Array(N * D);
  for (let n = 0; n < N; n++) {
    const row = Array.from(x.subarray(n * D, (n + 1) * D));
    const mean = row.reduce((a, b) => a + b, 0) / D;
    const variance = row.reduce((a, b) => a + (b - mean) ** 2, 0) / D;
    row.forEach((v, i) => (out[n * D + i] = (v - mean) / Math.sqrt(variance + 1e-5)));
  }
  return out;
}

function matRef(a: ArrayLike<number>, b: ArrayLike<number>, N: number, K: number, M: number, relu = false): Float64Array {
  const out = new Float64Array(N * M);
  for (let n = 0; n < N; n++) {
    for (let m = 0; m < M; m++) {
      let z = 0;
      for (let k = 0; k < K; k++) z += a[n * K + k] * b[k * M + m];
      out[n * M + m] = relu ? Math.max(0, z) : z;
    }
  }
  return out;
}

/** Check every input's gradient of Σ f(inputs) ⊙ c against finite differences. */
function checkGrads(f: (...xs: tf.Tensor[]) => tf.Tensor, xs: Float32Array[], shapes: number[][], rng: Rng, eps: number[]): void {
  const outShape = tf.tidy(() => f(...xs.map((x, i) => tf.tensor(x, shapes[i]))).shape);
  const c = tf.tensor(randomArray(rng, outShape.reduce((a, b) => a * b, 1)), outShape);
  const loss = (...ts: tf.Tensor[]) => tf.sum(tf.mul(f(...ts), c));
  const grads = tf.tidy(() => tf.grads(loss)(xs.map((x, i) => tf.tensor(x, shapes[i]))).map((g) => g.dataSync() as Float32Array));
  xs.forEach((x, i) => {
    const fi = (v: Float32Array) => scalar(tf.tidy(() => loss(...xs.map((y, j) => tf.tensor(j === i ? v : y, shapes[j])))));
    expect(worstDirectionalError(fi, x, grads[i], rng, 3, eps, 1e-2), `input ${i}`).toBeLessThan(2e-2);
  });
  c.dispose();
}

describe.each(strategies)('sublayers (%s)', (_name, strategy) => {
  const N = 6;
  const D = 4;

  it('lnLinear: LN(x) @ W, value and gradients', () => {
    const rng = new Rng(4, 'lnlin');
    const x = randomArray(rng, N * D, 2);
    const w = randomArray(rng, D * 3);
    const y = tf.tidy(() => lnLinear(tf.tensor2d(x, [N, D]), tf.tensor2d(w, [D, 3]), strategy).dataSync());
    expect(maxAbsDiff(y, matRef(lnRef(x, N, D), w, N, D, 3))).toBeLessThan(1e-5);
    checkGrads((a, b) => lnLinear(a as tf.Tensor2D, b as tf.Tensor2D, strategy), [x, w], [[N, D], [D, 3]], rng, [1e-2, 3e-3]);
  });

  it('mlpSublayer: ReLU(LN(x) @ W1) @ W2, value and gradients', () => {
    const rng = new Rng(5, 'mlp');
    const x = randomArray(rng, N * D, 2);
    const w1 = randomArray(rng, D * 8);
    const w2 = randomArray(rng, 8 * D);
    const y = tf.tidy(() => mlpSublayer(tf.tensor2d(x, [N, D]), tf.tensor2d(w1, [D, 8]), tf.tensor2d(w2, [8, D]), strategy).dataSync());
    expect(maxAbsDiff(y, matRef(matRef(lnRef(x, N, D), w1, N, D, 8, true), w2, N, 8, D))).toBeLessThan(1e-5);
    // Small steps as well: ReLU kinks make the loss piecewise smooth.
    checkGrads((a, b, c) => mlpSublayer(a as tf.Tensor2D, b as tf.Tensor2D, c as tf.Tensor2D, strategy), [x, w1, w2], [[N, D], [D, 8], [8, D]], rng, [3e-3, 1e-3, 3e-4]);
  });

  it('attentionSublayer: Attn(LN(x) @ Wqkv) @ Wproj, value and gradients', () => {
    const T = 4;
    const B = 2;
    const H = 2;
    const E = 2;
    const Dm = H * E;
    const rng = new Rng(6, 'attn-sub');
    const x = randomArray(rng, T * B * Dm, 2);
    const wqkv = randomArray(rng, Dm * 3 * Dm);
    const wproj = randomArray(rng, Dm * Dm);
    const mask = attentionMask(T, strategy, [0, 1]);
    const shape = { T, B, H, E };
    const y = tf.tidy(() => attentionSublayer(tf.tensor2d(x, [T * B, Dm]), tf.tensor2d(wqkv, [Dm, 3 * Dm]), tf.tensor2d(wproj, [Dm, Dm]), shape, mask, strategy).dataSync());
    const qkv = Float32Array.from(matRef(lnRef(x, T * B, Dm), wqkv, T * B, Dm, 3 * Dm));
    const ref = matRef(attentionReference(qkv, T, B, H, E, [0, 1]), wproj, T * B, Dm, Dm);
    for (let t = 0; t < T; t++) {
      for (let b = 0; b < B; b++) {
        if (t < [0, 1][b]) continue; // fully masked padding rows are not defined
        for (let d = 0; d < Dm; d++) expect(Math.abs(y[(t * B + b) * Dm + d] - ref[(t * B + b) * Dm + d])).toBeLessThan(1e-5);
      }
    }
    const causal = attentionMask(T, strategy);
    checkGrads(
      (a, b, c) => attentionSublayer(a as tf.Tensor2D, b as tf.Tensor2D, c as tf.Tensor2D, shape, causal, strategy),
      [x, wqkv, wproj],
      [[T * B, Dm], [Dm, 3 * Dm], [Dm, Dm]],
      rng,
      [1e-2, 3e-3],
    );
    tf.dispose([mask, causal]);
  });
});

describe.each<[string, KernelStrategy]>([
  ['js', WASM_STRATEGY],
  ['gather', PLAIN_STRATEGY],
])('embedding (%s)', (name, strategy) => {
  it('adds the token and position rows, and its gradient is the scatter-add of the rows', () => {
    if (name === 'gather') return; // gather's gradient needs UnsortedSegmentSum (cpu backend: strategies.test.ts)
    const rng = new Rng(5, 'emb');
    const V = 5;
    const P = 4;
    const D = 3;
    const wte = randomArray(rng, V * D);
    const wpe = randomArray(rng, P * D);
    const tokens = Int32Array.from([0, 3, 3, 1, 4]);
    const positions = Int32Array.from([0, 1, 2, 3, 0]);
    const c = randomArray(rng, tokens.length * D);
    const got = tf.tidy(() => embed(tf.tensor2d(wte, [V, D]), tf.tensor2d(wpe, [P, D]), tokens, positions, strategy).dataSync());
    tokens.forEach((tok, n) => {
      for (let d = 0; d < D; d++) expect(got[n * D + d]).toBeCloseTo(wte[tok * D + d] + wpe[positions[n] * D + d], 6);
    });
    const [gte, gpe] = tf.tidy(() =>
      tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(embed(a as tf.Tensor2D, b as tf.Tensor2D, tokens, positions, strategy), tf.tensor2d(c, [tokens.length, D]))))([
        tf.tensor2d(wte, [V, D]),
        tf.tensor2d(wpe, [P, D]),
      ]).map((t) => t.dataSync()),
    );
    const expTe = new Float64Array(V * D);
    const expPe = new Float64Array(P * D);
    tokens.forEach((tok, n) => {
      for (let d = 0; d < D; d++) {
        expTe[tok * D + d] += c[n * D + d];
        expPe[positions[n] * D + d] += c[n * D + d];
      }
    });
    expect(maxAbsDiff(gte, expTe)).toBeLessThan(1e-5);
    expect(maxAbsDiff(gpe, expPe)).toBeLessThan(1e-5);
  });
});

describe('tokenLogProbsAndEntropy', () => {
  it.each([1, 0.7])('temperature %s: values equal a float64 loop and gradients match finite differences', (temperature) => {
    const rng = new Rng(6, `lp${temperature}`);
    const N = 4;
    const V = 6;
    const logits = randomArray(rng, N * V, 2);
    const targets = Int32Array.from([0, 5, 2, 2]);
    const out = tf.tidy(() => tokenLogProbsAndEntropy(tf.tensor2d(logits, [N, V]), targets, temperature).dataSync());
    for (let n = 0; n < N; n++) {
      const z = Array.from(logits.subarray(n * V, (n + 1) * V)).map((v) => v / temperature);
      const m = Math.max(...z);
      const lse = m + Math.log(z.reduce((a, v) => a + Math.exp(v - m), 0));
      const lp = z.map((v) => v - lse);
      expect(out[n]).toBeCloseTo(lp[targets[n]], 5);
      expect(out[N + n]).toBeCloseTo(-lp.reduce((a, l) => a + Math.exp(l) * l, 0), 5);
    }
    const a = randomArray(rng, N);
    const b = randomArray(rng, N);
    const coef = tf.tensor2d([...a, ...b], [2, N]);
    const loss = (t: tf.Tensor) => tf.sum(tf.mul(tokenLogProbsAndEntropy(t as tf.Tensor2D, targets, temperature), coef));
    const f = (v: Float32Array) => scalar(tf.tidy(() => loss(tf.tensor2d(v, [N, V]))));
    const g = tf.tidy(() => tf.grad(loss)(tf.tensor2d(logits, [N, V])).dataSync() as Float32Array);
    expect(worstDirectionalError(f, logits, g, rng, 4, 1e-2)).toBeLessThan(1e-2);
    // Each row's gradient of log p sums to zero (onehot − p), a property FD cannot show as sharply.
    const gOnlyLogp = tf.tidy(() => tf.grad((t: tf.Tensor) => tf.sum(tf.slice(tokenLogProbsAndEntropy(t as tf.Tensor2D, targets, temperature), [0, 0], [1, N])))(tf.tensor2d(logits, [N, V])).dataSync());
    for (let n = 0; n < N; n++) expect(Math.abs(dot(gOnlyLogp.subarray(n * V, (n + 1) * V), new Float32Array(V).fill(1)))).toBeLessThan(1e-5);
    coef.dispose();
  });
});
