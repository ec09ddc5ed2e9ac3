/**
 * The whole model on the wasm backend: gradients against finite differences, the KV cache against
 * a full recompute, left padding against unpadded rows, weights in and out.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { createModel, disposeCache, type GPT } from '../../src-main/engine/gpt/model';
import { Rng } from '../../src-main/engine/util/rng';
import { maxAbsDiff, ppoLikeLoss, randomTokens, scalar, TINY, worstDirectionalError } from './helpers';

beforeAll(async () => {
  await initBackend('wasm');
});

/** Logits of every position of every row, [B][T][V], read back. */
function allLogits(model: GPT, tokens: number[][], leftPad?: number[]): Float32Array {
  const t = model.logits(tokens, { leftPad });
  const d = t.dataSync() as Float32Array;
  t.dispose();
  return d;
}

describe('GPT gradients', () => {
  it('d(loss)/d(every parameter) matches finite differences on a tiny model', () => {
    // A larger initial scale than GPT-2's makes attention and the MLP far from linear.
    const model = createModel(TINY, 11, { initStd: 0.3 });
    const rng = new Rng(12, 'fd');
    const { loss, a, b } = ppoLikeLoss(model, rng, 3);
    const { grads } = tf.variableGrads(loss, model.variables);
    const flat = model.getWeights();
    model.specs.forEach((spec, i) => {
      const g = grads[model.variables[i].name].dataSync() as Float32Array;
      const x = flat.slice(spec.offset, spec.offset + spec.size);
      const f = (v: Float32Array) => {
        const w = flat.slice();
        w.set(v, spec.offset);
        model.setWeights(w);
        return scalar(tf.tidy(loss));
      };
      // Directional derivatives at three step sizes. Float32 rounding inside the forward pass
      // limits agreement to ~1%; a missing or wrong term shows up as tens of percent.
      const err = worstDirectionalError(f, x, g, rng, 2, [3e-3, 1e-3, 3e-4], 1e-2);
      expect(err, spec.name).toBeLessThan(3e-2);
    });
    model.setWeights(flat);
    tf.dispose([grads, a, b]);
    model.dispose();
  });
});

describe('KV cache', () => {
  it('decoding step by step gives the logits of a full recompute, with left padding', () => {
    const model = createModel(TINY, 21, { initStd: 0.3 });
    const rng = new Rng(22, 'kv');
    const prompts = [randomTokens(rng, 1, 4, TINY.vocabSize)[0], randomTokens(rng, 1, 2, TINY.vocabSize)[0], randomTokens(rng, 1, 3, TINY.vocabSize)[0]];
    const T0 = 4;
    const leftPad = prompts.map((p) => T0 - p.length);
    const rows = prompts.map((p, i) => [...new Array<number>(leftPad[i]).fill(0), ...p]);
    const V = TINY.vocabSize;
    let { cache, logits } = model.prefill(rows, leftPad, T0 + 6);
    for (let step = 0; step < 6; step++) {
      // Reference: each sequence alone, unpadded, full forward.
      rows.forEach((r, b) => {
        const alone = r.slice(leftPad[b]);
        const ref = allLogits(model, [alone]);
        const last = ref.subarray((alone.length - 1) * V, alone.length * V);
        expect(maxAbsDiff(logits.subarray(b * V, (b + 1) * V), last)).toBeLessThan(1e-4);
      });
      const next = rows.map(() => rng.int(0, V - 1));
      const positions = Int32Array.from(rows.map((r, b) => r.length - leftPad[b]));
      next.forEach((t, b) => rows[b].push(t));
      ({ cache, logits } = model.decodeStep(Int32Array.from(next), positions, cache));
    }
    expect(cache.mode).toBe('js');
    disposeCache(cache);
    model.dispose();
  });

  it('dropping finished rows from the cache leaves the other rows unchanged', () => {
    const model = createModel(TINY, 23, { initStd: 0.3 });
    const rng = new Rng(24, 'rows');
    const rows = randomTokens(rng, 4, 3, TINY.vocabSize);
    const pad = [0, 0, 0, 0];
    const V = TINY.vocabSize;
    const full = model.prefill(rows, pad, 5);
    const kept = model.selectCacheRows(full.cache, [3, 1]);
    const tok = Int32Array.from([2, 5]);
    const pos = Int32Array.from([3, 3]);
    const a = model.decodeStep(tok, pos, kept);
    const b = model.prefill([[...rows[3], 2], [...rows[1], 5]], [0, 0], 4);
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-4);
    expect(a.logits.length).toBe(2 * V);
    disposeCache(a.cache);
    disposeCache(b.cache);
    model.dispose();
  });
});

describe('batches', () => {
  it('a left-padded row computes what it computes alone', () => {
    const model = createModel(TINY, 31, { initStd: 0.3 });
    const rng = new Rng(32, 'pad');
    const seqs = [randomTokens(rng, 1, 6, TINY.vocabSize)[0], randomTokens(rng, 1, 3, TINY.vocabSize)[0]];
    const leftPad = [0, 3];
    const padded = [seqs[0], [1, 1, 1, ...seqs[1]]];
    const V = TINY.vocabSize;
    const batch = allLogits(model, padded, leftPad);
    const alone = allLogits(model, [seqs[1]]);
    const row1 = batch.subarray(6 * V + 3 * V, 12 * V);
    expect(maxAbsDiff(row1, alone)).toBeLessThan(1e-4);
    const lp = model.sequenceLogProbs(padded, { leftPad });
    const lpAlone = model.sequenceLogProbs([seqs[1]]);
    expect(maxAbsDiff(lp.logProbs.dataSync().subarray(5 + 3, 10), lpAlone.logProbs.dataSync())).toBeLessThan(1e-4);
    tf.dispose([lp.logProbs, lp.entropy, lpAlone.logProbs, lpAlone.entropy]);
    model.dispose();
  });

  it('rejects bad input with clear messages', () => {
    const model = createModel(TINY, 1);
    expect(() => model.logits([[1, 2], [3]])).toThrow(/same length/);
    expect(() => model.logits([[1, 99]])).toThrow(/outside the vocabulary/);
    expect(() => model.logits([new Array<number>(TINY.context + 1).fill(0)])).toThrow(/exceeds the model context/);
    model.dispose();
  });
});

describe('weights', () => {
  it('round-trip through flat buffers and bump the version; same seed, same weights', () => {
    const a = createModel(TINY, 41);
    const b = createModel(TINY, 41);
    const c = createModel(TINY, 42);
    expect(Buffer.from(a.getWeights().buffer).equals(Buffer.from(b.getWeights().buffer))).toBe(true);
    expect(maxAbsDiff(a.getWeights(), c.getWeights())).toBeGreaterThan(0);
    const v0 = a.version;
    expect(a.version).toBe(v0);
    a.setWeights(c.getWeights());
    expect(a.version).toBeGreaterThan(v0);
    expect(a.version).not.toBe(c.version); // versions are unique across models
    expect(Buffer.from(a.getWeights().buffer).equals(Buffer.from(c.getWeights().buffer))).toBe(true);
    expect(() => a.setWeights(new Float32Array(3))).toThrow(/values/);
    const before = tf.memory().numTensors;
    [a, b, c].forEach((m) => m.dispose());
    expect(tf.memory().numTensors).toBeLessThan(before);
  });
});
