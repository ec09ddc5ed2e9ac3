/**
 * Optimizer and supervised warm-start training on the wasm backend.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { createModel } from '../../src-main/engine/gpt/model';
import { Adam, createOptimizer, scheduledLr } from '../../src-main/engine/model/optim';
import { supervisedLoss, supervisedStep, type SupervisedBatch } from '../../src-main/engine/model/train';
import { Rng } from '../../src-main/engine/util/rng';
import { randomArray, randomTokens, scalar, TINY } from './helpers';

beforeAll(async () => {
  await initBackend('wasm');
});

const OPT = { lr: 1e-2, beta1: 0.9, beta2: 0.999, weight_decay: 0, grad_clip: 1 };

/** Counting sequences: token t+1 = token t + 1 (mod V); the first two tokens are the "prompt". */
function countingBatch(rng: Rng, B: number, T: number, V: number): SupervisedBatch {
  const tokens = Array.from({ length: B }, () => {
    const s = rng.int(0, V - 1);
    return Array.from({ length: T }, (_x, t) => (s + t) % V);
  });
  return { tokens, lossMask: tokens.map((r) => r.map((_x, t) => (t >= 2 ? 1 : 0))) };
}

describe('learning-rate schedule', () => {
  it('warms up linearly, decays on a cosine to the floor, then stays flat', () => {
    const s = { warmupSteps: 4, decaySteps: 24, minLrRatio: 0.1 };
    expect(scheduledLr(1, 0, s)).toBeCloseTo(1 / 5, 12);
    expect(scheduledLr(1, 3, s)).toBeCloseTo(4 / 5, 12);
    expect(scheduledLr(1, 4, s)).toBeCloseTo(1, 12);
    expect(scheduledLr(1, 14, s)).toBeCloseTo(0.55, 12); // halfway: (peak + floor) / 2
    expect(scheduledLr(1, 24, s)).toBeCloseTo(0.1, 12);
    expect(scheduledLr(1, 1000, s)).toBeCloseTo(0.1, 12);
    for (let t = 5; t < 24; t++) expect(scheduledLr(1, t, s)).toBeLessThan(scheduledLr(1, t - 1, s));
    expect(scheduledLr(0.3, 7)).toBe(0.3);
  });
});

describe.each(['js', 'tensor'] as const)('Adam (%s)', (mode) => {
  it('matches a float64 loop: moments, bias correction, clipping and decoupled weight decay', () => {
    const rng = new Rng(81, 'adam');
    const shapes = [[3, 2], [4]];
    const init = shapes.map((s) => randomArray(rng, s[0] * (s[1] ?? 1)));
    const vars = init.map((x, i) => tf.variable(tf.tensor(x, shapes[i])));
    const config = { lr: 0.05, beta1: 0.8, beta2: 0.95, weight_decay: 0.1, grad_clip: 0.5 };
    const opt = new Adam(vars.map((variable, i) => ({ variable, decay: i === 0 })), config, undefined, mode);
    expect(opt.mode).toBe(mode);
    // Reference state.
    const p = init.map((x) => Float64Array.from(x));
    const m = init.map((x) => new Float64Array(x.length));
    const v = init.map((x) => new Float64Array(x.length));
    for (let t = 1; t <= 4; t++) {
      const g = init.map((x) => randomArray(rng, x.length, t === 2 ? 0.01 : 1)); // step 2 is not clipped
      const norm = Math.sqrt(g.reduce((a, gi) => a + gi.reduce((b, x) => b + x * x, 0), 0));
      const res = opt.step(g.map((gi, i) => tf.tensor(gi, shapes[i])));
      expect(res.gradNorm).toBeCloseTo(norm, 5);
      expect(res.clipped).toBe(norm > config.grad_clip);
      const scale = norm > config.grad_clip ? config.grad_clip / (norm + 1e-6) : 1;
      p.forEach((pi, i) => {
        for (let j = 0; j < pi.length; j++) {
          const gj = g[i][j] * scale;
          if (i === 0) pi[j] *= 1 - config.lr * config.weight_decay;
          m[i][j] = config.beta1 * m[i][j] + (1 - config.beta1) * gj;
          v[i][j] = config.beta2 * v[i][j] + (1 - config.beta2) * gj * gj;
          const denom = Math.sqrt(v[i][j]) / Math.sqrt(1 - config.beta2 ** t) + 1e-8;
          pi[j] -= (config.lr / (1 - config.beta1 ** t)) * (m[i][j] / denom);
        }
      });
    }
    vars.forEach((x, i) => {
      const got = x.dataSync();
      p[i].forEach((want, j) => expect(got[j]).toBeCloseTo(want, 5));
    });
    expect(opt.stepCount).toBe(4);
    // The state round-trips into a fresh optimizer of the other kind.
    const st = opt.getState();
    const other = new Adam(vars.map((variable, i) => ({ variable, decay: i === 0 })), config, undefined, mode === 'js' ? 'tensor' : 'js');
    other.setState(st);
    expect(Array.from(other.getState().m)).toEqual(Array.from(st.m));
    other.dispose();
    // A non-finite gradient skips the update.
    const before = vars[1].dataSync().slice();
    const res = opt.step([tf.fill([3, 2], NaN), tf.zeros([4])]);
    expect(res.skipped).toBe(true);
    expect(Array.from(vars[1].dataSync())).toEqual(Array.from(before));
    expect(opt.stepCount).toBe(4);
    opt.dispose();
    vars.forEach((x) => x.dispose());
  });
});

describe('supervised warm start', () => {
  it('the loss is the mean negative log-probability of the masked targets', () => {
    const model = createModel(TINY, 82, { initStd: 0.3 });
    const rng = new Rng(83, 'loss');
    const tokens = randomTokens(rng, 3, 6, TINY.vocabSize);
    const lossMask = tokens.map((r) => r.map(() => (rng.next() < 0.5 ? 1 : 0)));
    lossMask[0][3] = 1;
    const { loss, count } = supervisedLoss(model, { tokens, lossMask });
    const { logProbs, entropy } = model.sequenceLogProbs(tokens);
    const lp = logProbs.arraySync();
    let sum = 0;
    let n = 0;
    lossMask.forEach((row, b) => row.forEach((w, t) => {
      if (t > 0 && w) {
        sum -= lp[b][t - 1];
        n++;
      }
    }));
    expect(count).toBe(n);
    expect(scalar(loss)).toBeCloseTo(sum / n, 5);
    tf.dispose([logProbs, entropy]);
    expect(() => supervisedLoss(model, { tokens, lossMask: tokens.map((r) => r.map(() => 0)) })).toThrow(/no target/);
    model.dispose();
  });

  it('learns a counting task', () => {
    const model = createModel(TINY, 84);
    const opt = createOptimizer(model, OPT, { warmupSteps: 10, decaySteps: 150 });
    const rng = new Rng(85, 'count');
    let first = 0;
    let last = 0;
    for (let i = 0; i < 150; i++) {
      const r = supervisedStep(model, opt, countingBatch(rng, 8, 10, TINY.vocabSize));
      if (i === 0) first = r.loss;
      last = r.loss;
      expect(Number.isFinite(r.gradNorm)).toBe(true);
    }
    expect(first).toBeGreaterThan(1.5); // ≈ log 7 at initialisation
    expect(last).toBeLessThan(0.2);
    opt.dispose();
    model.dispose();
  });

  it('is deterministic: the same seed and batches give bit-identical weights', () => {
    const run = () => {
      const model = createModel(TINY, 86);
      const opt = createOptimizer(model, { ...OPT, weight_decay: 0.01 }, { warmupSteps: 3, decaySteps: 20 });
      const rng = new Rng(87, 'det');
      for (let i = 0; i < 20; i++) supervisedStep(model, opt, countingBatch(rng, 4, 8, TINY.vocabSize));
      const w = model.getWeights();
      opt.dispose();
      model.dispose();
      return Buffer.from(w.buffer);
    };
    expect(run().equals(run())).toBe(true);
  });

  it('holds the number of tensors steady over 500 training steps', () => {
    const model = createModel({ ...TINY, n_layers: 1, context: 8 }, 88);
    const opt = createOptimizer(model, OPT);
    const rng = new Rng(89, 'leak');
    const batch = countingBatch(rng, 2, 8, TINY.vocabSize);
    supervisedStep(model, opt, batch);
    const after1 = tf.memory().numTensors;
    const bytes1 = tf.memory().numBytes;
    for (let i = 0; i < 500; i++) supervisedStep(model, opt, batch);
    expect(tf.memory().numTensors).toBe(after1);
    expect(tf.memory().numBytes).toBe(bytes1);
    opt.dispose();
    model.dispose();
  });
});
