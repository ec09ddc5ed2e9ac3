/**
 * Joining decode caches for continuous batching (issue #16, engine/model/kv-join.ts): the layout
 * against a hand-computed table, the JavaScript re-lay against a plain loop, and for both model
 * families and both cache kinds, rows joined into a running cache (shifted, trimmed, compacted)
 * decode exactly what a full recompute of each row alone gives.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHfModel } from '../../src-main/engine/hf/load';
import type { HfDecodeMode } from '../../src-main/engine/hf/model';
import { initBackend } from '../../src-main/engine/model/backend';
import { createModel } from '../../src-main/engine/gpt/model';
import { joinJsLayers, joinLayout } from '../../src-main/engine/model/kv-join';
import { PLAIN_STRATEGY, WASM_STRATEGY } from '../../src-main/engine/model/ops';
import type { DecodeCache, PolicyModel } from '../../src-main/engine/model/policy-model';
import { Rng } from '../../src-main/engine/util/rng';
import { leftPadded, makeCheckpoint, maxAbs, randomPrompts, type Checkpoint } from '../hf/fixtures';

beforeAll(async () => {
  await initBackend('wasm');
});

describe('joinLayout', () => {
  it('right-aligns the parts on the shortest axis, each first trimmed of its shared padding', () => {
    // Part 0: length 5, rows padded 2 and 0 (nothing shared). Part 1: length 3, rows padded 1 and 2
    // (1 shared, so 2 columns kept), shifted right by 5 − 2 = 3.
    const layout = joinLayout([
      { length: 5, leftPad: [2, 0] },
      { length: 3, leftPad: [1, 2] },
    ]);
    expect(layout).toEqual({ length: 5, trims: [0, 1], kept: [5, 2], shifts: [0, 3], leftPad: [2, 0, 3, 4] });
    // One part whose rows all start late (the long ones were compacted away) just shrinks.
    expect(joinLayout([{ length: 9, leftPad: [4, 6] }])).toEqual({ length: 5, trims: [4], kept: [5], shifts: [0], leftPad: [0, 2] });
    // The longer newcomer shifts the running rows instead.
    expect(joinLayout([{ length: 4, leftPad: [0] }, { length: 6, leftPad: [0, 3] }]).leftPad).toEqual([2, 0, 3]);
  });

  it('joinJsLayers moves each row and head to its place, as a plain loop does', () => {
    const heads = 2;
    const width = 3;
    const parts = [
      { rows: 2, capacity: 6, length: 5, leftPad: [2, 0] },
      { rows: 1, capacity: 4, length: 3, leftPad: [1] },
    ].map((p, i) => ({ ...p, data: Float32Array.from({ length: p.rows * heads * p.capacity * width }, (_, j) => 1000 * (i + 1) + j) }));
    const layout = joinLayout(parts);
    const capacity = 8;
    const out = joinJsLayers(parts, layout, heads, width, capacity);
    const expected = new Float32Array(3 * heads * capacity * width);
    let row = 0;
    parts.forEach((p, i) => {
      for (let b = 0; b < p.rows; b++, row++) {
        for (let h = 0; h < heads; h++) {
          for (let t = layout.trims[i]; t < p.length; t++) {
            const to = t - layout.trims[i] + layout.shifts[i];
            for (let e = 0; e < width; e++) expected[((row * heads + h) * capacity + to) * width + e] = p.data[((b * heads + h) * p.capacity + t) * width + e];
          }
        }
      }
    });
    expect(Array.from(out)).toEqual(Array.from(expected));
    expect(() => joinJsLayers(parts, layout, heads, width, layout.length - 1)).toThrow(/capacity 4 is below the joined length 5/);
  });
});

/**
 * Decodes rows A with random tokens, joins a longer prompt B (which shifts A), steps on, drops the
 * longest row, joins a short prompt C (the trim) and steps on: after each step every row's logits
 * must equal a recompute of that row alone.
 */
function joinScenario(model: PolicyModel, tolerance: number): void {
  const V = model.vocabSize;
  const rng = new Rng(7, 'join');
  type Live = { seq: number[]; promptLength: number };
  const start = randomPrompts(31, [5, 2], V);
  const a = leftPadded(start);
  let { cache, logits } = model.prefill(a.rows, a.leftPad, a.rows[0].length + 3);
  let live: Live[] = start.map((p) => ({ seq: [...p], promptLength: p.length }));
  const check = () => {
    live.forEach((row, r) => expect(maxAbs(logits.subarray(r * V, (r + 1) * V), model.lastLogits([row.seq], [0]))).toBeLessThan(tolerance));
  };
  const step = (n: number) => {
    for (let s = 0; s < n; s++) {
      const next = Int32Array.from(live, () => rng.int(0, V - 1));
      const positions = Int32Array.from(live, (row) => row.seq.length);
      live.forEach((row, r) => row.seq.push(next[r]));
      ({ cache, logits } = model.decodeStep(next, positions, cache));
      check();
    }
  };
  const join = (prompts: number[][], room: number) => {
    const b = leftPadded(prompts);
    const fresh = model.prefill(b.rows, b.leftPad, b.rows[0].length);
    const joined = model.joinCaches!([cache, fresh.cache], room);
    const all = new Float32Array(logits.length + fresh.logits.length);
    all.set(logits);
    all.set(fresh.logits, logits.length);
    cache = joined;
    logits = all;
    live = [...live, ...prompts.map((p) => ({ seq: [...p], promptLength: p.length }))];
    check();
    return joined;
  };
  step(3);
  // B (10 tokens) is longer than A's longest row (8): the running rows move right.
  const withB = join(randomPrompts(32, [10], V), 6);
  expect(withB.leftPad).toEqual([2, 5, 0]);
  step(2);
  // Row 2 (B, the longest) finishes; joining C trims the columns only it used.
  const kept = [0, 1];
  cache = model.selectCacheRows(cache, kept);
  logits = Float32Array.from([...logits.subarray(0, V), ...logits.subarray(V, 2 * V)]);
  live = kept.map((r) => live[r]);
  const withC = join(randomPrompts(33, [3], V), 4);
  expect(withC.length).toBe(10);
  expect(withC.leftPad).toEqual([0, 3, 7]);
  step(3);
  model.disposeCache(cache);
}

describe('joining caches decodes what each row gives alone', () => {
  it.each([
    ['GPT, JavaScript cache (wasm kernels)', WASM_STRATEGY],
    ['GPT, concatenated tensors (plain kernels)', PLAIN_STRATEGY],
  ])('%s', (_name, kernels) => {
    const before = tf.memory().numTensors;
    const model = createModel({ vocabSize: 11, d_model: 16, n_layers: 2, n_heads: 2, context: 32, mlp_ratio: 2 }, 5, { initStd: 0.3, kernels });
    joinScenario(model, 2e-5);
    model.dispose();
    // Nothing a join made outlives the caches and the model.
    expect(tf.memory().numTensors).toBe(before);
  });

  describe('Hugging Face (Qwen3)', () => {
    let ckpt: Checkpoint;
    beforeAll(() => {
      ckpt = makeCheckpoint('qwen3');
    });
    afterAll(() => ckpt.cleanup());
    it.each<HfDecodeMode>(['js', 'concat'])('%s cache', (mode) => {
      const before = tf.memory().numTensors;
      const { model } = loadHfModel(ckpt.dir, { decodeMode: mode });
      joinScenario(model, 2e-4);
      model.dispose();
      expect(tf.memory().numTensors).toBe(before);
    });
  });

  it('refuses caches of different weights', () => {
    const m1 = createModel({ vocabSize: 11, d_model: 16, n_layers: 1, n_heads: 2, context: 32, mlp_ratio: 2 }, 5, { kernels: WASM_STRATEGY });
    const m2 = createModel({ vocabSize: 11, d_model: 16, n_layers: 1, n_heads: 2, context: 32, mlp_ratio: 2 }, 6, { kernels: WASM_STRATEGY });
    const c1 = m1.prefill([[1, 2]], [0], 4).cache;
    const c2 = m2.prefill([[1, 2]], [0], 4).cache;
    expect(() => m1.joinCaches([c1, c2 as DecodeCache as typeof c1], 8)).toThrow(/differ in mode or weights version/);
    m1.dispose();
    m2.dispose();
  });
});
