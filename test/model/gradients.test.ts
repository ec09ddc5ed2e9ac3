/**
 * Every gradient registered by gradients.ts against central finite differences, on the backend
 * the app uses (wasm). Losses are Σ f(inputs) ⊙ c with random c, so every output element counts.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { GRADIENT_KERNELS, registerMissingGradients } from '../../src-main/engine/model/gradients';
import { Rng } from '../../src-main/engine/util/rng';
import { randomArray, scalar, worstDirectionalError } from './helpers';

beforeAll(async () => {
  await initBackend('wasm');
  registerMissingGradients();
});

type Gen = 'any' | 'positive' | 'awayFromZero';
interface Case {
  kernel: string;
  name: string;
  shapes: number[][];
  gen?: Gen[];
  f: (...xs: tf.Tensor[]) => tf.Tensor;
}

const cases: Case[] = [
  { kernel: 'Add', name: 'add with broadcast', shapes: [[2, 3], [3]], f: (a, b) => tf.add(a, b) },
  { kernel: 'Sub', name: 'sub with broadcast', shapes: [[2, 1], [2, 3]], f: (a, b) => tf.sub(a, b) },
  { kernel: 'Multiply', name: 'mul with broadcast', shapes: [[2, 3], [1, 3]], f: (a, b) => tf.mul(a, b) },
  { kernel: 'RealDiv', name: 'div', shapes: [[2, 3], [2, 3]], gen: ['any', 'awayFromZero'], f: (a, b) => tf.div(a, b) },
  { kernel: 'Maximum', name: 'maximum', shapes: [[2, 3], [2, 3]], f: (a, b) => tf.maximum(a, b) },
  { kernel: 'Minimum', name: 'minimum', shapes: [[2, 3], [3]], f: (a, b) => tf.minimum(a, b) },
  { kernel: 'SquaredDifference', name: 'squaredDifference', shapes: [[2, 3], [2, 3]], f: (a, b) => tf.squaredDifference(a, b) },
  { kernel: 'Pow', name: 'pow', shapes: [[2, 3], [2, 3]], gen: ['positive', 'any'], f: (a, b) => tf.pow(a, b) },
  { kernel: 'AddN', name: 'addN', shapes: [[2, 2], [2, 2], [2, 2]], f: (a, b, c) => tf.addN([a, b, tf.mul(c, c)]) },
  { kernel: 'Neg', name: 'neg', shapes: [[4]], f: (a) => tf.neg(a) },
  { kernel: 'Abs', name: 'abs', shapes: [[5]], gen: ['awayFromZero'], f: (a) => tf.abs(a) },
  { kernel: 'Exp', name: 'exp', shapes: [[5]], f: (a) => tf.exp(a) },
  { kernel: 'Log', name: 'log', shapes: [[5]], gen: ['positive'], f: (a) => tf.log(a) },
  { kernel: 'Log1p', name: 'log1p', shapes: [[5]], gen: ['positive'], f: (a) => tf.log1p(a) },
  { kernel: 'Sqrt', name: 'sqrt', shapes: [[5]], gen: ['positive'], f: (a) => tf.sqrt(a) },
  { kernel: 'Rsqrt', name: 'rsqrt', shapes: [[5]], gen: ['positive'], f: (a) => tf.rsqrt(a) },
  { kernel: 'Square', name: 'square', shapes: [[5]], f: (a) => tf.square(a) },
  { kernel: 'Reciprocal', name: 'reciprocal', shapes: [[5]], gen: ['awayFromZero'], f: (a) => tf.reciprocal(a) },
  { kernel: 'Sigmoid', name: 'sigmoid', shapes: [[5]], f: (a) => tf.sigmoid(a) },
  { kernel: 'Tanh', name: 'tanh', shapes: [[5]], f: (a) => tf.tanh(a) },
  { kernel: 'Relu', name: 'relu', shapes: [[6]], gen: ['awayFromZero'], f: (a) => tf.relu(a) },
  { kernel: 'Softplus', name: 'softplus', shapes: [[5]], f: (a) => tf.softplus(a) },
  { kernel: 'Elu', name: 'elu', shapes: [[6]], gen: ['awayFromZero'], f: (a) => tf.elu(a) },
  { kernel: 'Identity', name: 'clone', shapes: [[3]], f: (a) => tf.mul(tf.clone(a), a) },
  { kernel: 'Cast', name: 'cast', shapes: [[3]], f: (a) => tf.mul(tf.cast(a, 'float32'), a) },
  { kernel: 'ClipByValue', name: 'clipByValue', shapes: [[8]], gen: ['awayFromZero'], f: (a) => tf.clipByValue(a, -0.5, 0.7) },
  { kernel: 'Select', name: 'where', shapes: [[2, 3], [2, 3]], f: (a, b) => tf.where(tf.greater(a, b), tf.mul(a, 2), tf.mul(b, b)) },
  { kernel: 'Sum', name: 'sum over an axis', shapes: [[2, 3, 2]], f: (a) => tf.sum(a, 1) },
  { kernel: 'Sum', name: 'sum keepDims, two axes', shapes: [[2, 3, 2]], f: (a) => tf.sum(a, [0, 2], true) },
  { kernel: 'Mean', name: 'mean', shapes: [[2, 3]], f: (a) => tf.mean(a, -1) },
  { kernel: 'Max', name: 'max', shapes: [[3, 4]], f: (a) => tf.max(a, 1) },
  { kernel: 'Min', name: 'min', shapes: [[3, 4]], f: (a) => tf.min(a, 0) },
  { kernel: 'Softmax', name: 'softmax', shapes: [[3, 4]], f: (a) => tf.softmax(a) },
  { kernel: 'Softmax', name: 'logSoftmax (built on the registered kernels)', shapes: [[3, 4]], f: (a) => tf.logSoftmax(a) },
  { kernel: 'Reshape', name: 'reshape', shapes: [[2, 3]], f: (a) => tf.mul(tf.reshape(a, [3, 2]), tf.reshape(a, [3, 2])) },
  { kernel: 'ExpandDims', name: 'expandDims', shapes: [[2, 3]], f: (a) => tf.mul(tf.expandDims(a, 1), tf.expandDims(a, 1)) },
  { kernel: 'Transpose', name: 'transpose', shapes: [[2, 3, 4]], f: (a) => tf.mul(tf.transpose(a, [2, 0, 1]), 3) },
  { kernel: 'Slice', name: 'slice', shapes: [[4, 5]], f: (a) => tf.slice(a, [1, 2], [2, -1]) },
  { kernel: 'PadV2', name: 'pad', shapes: [[2, 3]], f: (a) => tf.pad(tf.mul(a, a), [[1, 0], [0, 2]]) },
  { kernel: 'Concat', name: 'concat', shapes: [[2, 3], [2, 1]], f: (a, b) => tf.concat([a, tf.mul(b, b), a], 1) },
  { kernel: 'Pack', name: 'stack', shapes: [[3], [3]], f: (a, b) => tf.stack([a, tf.mul(a, b)], 1) },
  { kernel: 'Unpack', name: 'unstack', shapes: [[3, 2]], f: (a) => tf.mul(tf.unstack(a, 1)[1], 5) },
  { kernel: 'SplitV', name: 'split', shapes: [[2, 5]], f: (a) => { const [x, y] = tf.split(a, [2, 3], 1); return tf.mul(tf.sum(x), tf.sum(tf.square(y))); } },
  { kernel: 'Tile', name: 'tile', shapes: [[2, 3]], f: (a) => tf.mul(tf.tile(a, [2, 3]), tf.tile(a, [2, 3])) },
  { kernel: 'BatchMatMul', name: 'matMul', shapes: [[3, 4], [4, 2]], f: (a, b) => tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D) },
  { kernel: 'BatchMatMul', name: 'matMul transposeA', shapes: [[4, 3], [4, 2]], f: (a, b) => tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D, true, false) },
  { kernel: 'BatchMatMul', name: 'matMul transposeB', shapes: [[3, 4], [2, 4]], f: (a, b) => tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D, false, true) },
  { kernel: 'BatchMatMul', name: 'matMul transposeA and B', shapes: [[4, 3], [2, 4]], f: (a, b) => tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D, true, true) },
  { kernel: 'BatchMatMul', name: 'batched matMul with broadcast batch', shapes: [[2, 3, 4], [1, 4, 2]], f: (a, b) => tf.matMul(a as tf.Tensor3D, b as tf.Tensor3D) },
];

function generate(rng: Rng, shape: number[], gen: Gen): Float32Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const v = rng.normal();
    out[i] = gen === 'positive' ? 0.5 + Math.abs(v) : gen === 'awayFromZero' ? Math.sign(v || 1) * (0.3 + Math.abs(v)) : v;
  }
  return out;
}

describe('registered gradients match finite differences', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    expect(GRADIENT_KERNELS).toContain(c.kernel);
    const rng = new Rng(7, c.name);
    const xs = c.shapes.map((s, i) => generate(rng, s, c.gen?.[i] ?? 'any'));
    const outShape = tf.tidy(() => c.f(...xs.map((x, i) => tf.tensor(x, c.shapes[i]))).shape);
    const coef = randomArray(rng, outShape.reduce((a, b) => a * b, 1));
    const loss = (...ts: tf.Tensor[]) => tf.sum(tf.mul(c.f(...ts), tf.tensor(coef, outShape)));
    const grads = tf.tidy(() => tf.grads(loss)(xs.map((x, i) => tf.tensor(x, c.shapes[i]))).map((g) => g.dataSync() as Float32Array));
    xs.forEach((x, i) => {
      expect(grads[i].length).toBe(x.length);
      const f = (v: Float32Array) => scalar(tf.tidy(() => loss(...xs.map((y, j) => tf.tensor(j === i ? v : y, c.shapes[j])))));
      expect(worstDirectionalError(f, x, grads[i], rng, 3, 1e-3, 1e-2)).toBeLessThan(2e-2);
    });
  });

  it.each(['Step', 'Sign', 'Floor', 'Ceil', 'Round', 'ZerosLike', 'OnesLike'])('%s has a zero gradient', (kernel) => {
    const fns: Record<string, (x: tf.Tensor) => tf.Tensor> = {
      Step: (x) => tf.step(x),
      Sign: (x) => tf.sign(x),
      Floor: (x) => tf.floor(x),
      Ceil: (x) => tf.ceil(x),
      Round: (x) => tf.round(x),
      ZerosLike: (x) => tf.zerosLike(x),
      OnesLike: (x) => tf.onesLike(x),
    };
    const g = tf.tidy(() => tf.grad((x: tf.Tensor) => tf.sum(tf.add(fns[kernel](x), tf.mul(x, 3))))(tf.tensor1d([0.3, -1.2, 2.5])).dataSync());
    expect(Array.from(g)).toEqual([3, 3, 3]);
  });
});
