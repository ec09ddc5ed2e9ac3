/**
 * Sampling and resumable decoding on the wasm backend.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { createModel, type GPT } from '../../src-main/engine/gpt/model';
import { decodeSegment, disposeDecodeState, sample, sampleFromLogits, startDecode } from '../../src-main/engine/model/sampling';
import { Rng } from '../../src-main/engine/util/rng';
import { maxAbsDiff, TINY } from './helpers';

beforeAll(async () => {
  await initBackend('wasm');
});

const PROMPTS = [[1, 2, 3], [4], [5, 6], [0, 1, 2, 3, 4]];

function recomputed(model: GPT, prompt: number[], gen: number[], temperature?: number): Float32Array {
  const { logProbs, entropy } = model.sequenceLogProbs([[...prompt, ...gen]], { temperature });
  const out = logProbs.dataSync().slice(prompt.length - 1) as Float32Array;
  tf.dispose([logProbs, entropy]);
  return out;
}

describe('sample', () => {
  it('returns the log-probabilities a recompute gives (temperature-scaled and raw)', () => {
    const model = createModel(TINY, 61, { initStd: 0.3 });
    const out = sample(model, PROMPTS, { maxNewTokens: 8, temperature: 0.7, seed: 5 });
    out.forEach((s, i) => {
      expect(s.tokens.length).toBe(8);
      expect(s.stopReason).toBe('budget');
      expect(maxAbsDiff(s.logProbs, recomputed(model, PROMPTS[i], s.tokens, 0.7))).toBeLessThan(1e-4);
      expect(maxAbsDiff(s.rawLogProbs, recomputed(model, PROMPTS[i], s.tokens))).toBeLessThan(1e-4);
    });
    model.dispose();
  });

  it('without raw log-probabilities draws the same tokens with the same behaviour log-probabilities', () => {
    const model = createModel(TINY, 61, { initStd: 0.3 });
    for (const temperature of [0, 0.7]) {
      const kept = sample(model, PROMPTS, { maxNewTokens: 8, temperature, seed: 5 });
      const skipped = sample(model, PROMPTS, { maxNewTokens: 8, temperature, seed: 5, rawLogProbs: false });
      expect(skipped.map((s) => s.tokens)).toEqual(kept.map((s) => s.tokens));
      expect(skipped.map((s) => s.logProbs)).toEqual(kept.map((s) => s.logProbs));
      for (const s of skipped) for (const x of s.rawLogProbs) expect(x).toBeNaN();
    }
    model.dispose();
  });

  it('is deterministic per sequence: same seed same tokens, whatever else is in the batch', () => {
    const model = createModel(TINY, 62, { initStd: 0.3 });
    const a = sample(model, PROMPTS, { maxNewTokens: 7, seed: 9, topP: 0.9 });
    const b = sample(model, PROMPTS, { maxNewTokens: 7, seed: 9, topP: 0.9 });
    const alone = sample(model, [PROMPTS[2]], { maxNewTokens: 7, seed: 9, topP: 0.9, streamIds: [2] });
    const other = sample(model, PROMPTS, { maxNewTokens: 7, seed: 10, topP: 0.9 });
    expect(b).toEqual(a);
    expect(alone[0].tokens).toEqual(a[2].tokens);
    expect(other.map((s) => s.tokens)).not.toEqual(a.map((s) => s.tokens));
    model.dispose();
  });

  it('the KV cache and a full recompute sample the same tokens', () => {
    const model = createModel(TINY, 63, { initStd: 0.3 });
    const a = sample(model, PROMPTS, { maxNewTokens: 9, seed: 4, useKvCache: true });
    const b = sample(model, PROMPTS, { maxNewTokens: 9, seed: 4, useKvCache: false });
    expect(b.map((s) => s.tokens)).toEqual(a.map((s) => s.tokens));
    a.forEach((s, i) => expect(maxAbsDiff(s.logProbs, b[i].logProbs)).toBeLessThan(1e-4));
    model.dispose();
  });

  it('stays correct when most sequences finish early and the cache is compacted', () => {
    const model = createModel(TINY, 66, { initStd: 0.3 });
    // Eight prompts; with this seed five finish within three tokens, one runs to the budget.
    const prompts = [...PROMPTS, ...PROMPTS.map((p) => p.map((t) => (t + 3) % TINY.vocabSize))];
    const opts = { maxNewTokens: 12, seed: 8, stopTokens: [1] };
    const out = sample(model, prompts, opts);
    const lengths = out.map((s) => s.tokens.length).sort((x, y) => x - y);
    expect(lengths[3]).toBeLessThan(lengths[7]); // half the rows finished before the last one
    out.forEach((s, i) => expect(maxAbsDiff(s.rawLogProbs, recomputed(model, prompts[i], s.tokens))).toBeLessThan(1e-4));
    const noCache = sample(model, prompts, { ...opts, useKvCache: false });
    expect(noCache.map((s) => s.tokens)).toEqual(out.map((s) => s.tokens));
    model.dispose();
  });

  it('stops at stop tokens, at the budget and at the context', () => {
    const model = createModel(TINY, 64, { initStd: 0.3 });
    const stopTokens = [3];
    const out = sample(model, PROMPTS, { maxNewTokens: 12, seed: 1, stopTokens });
    for (const s of out) {
      const at = s.tokens.indexOf(3);
      if (at >= 0) {
        expect(s.stopReason).toBe('stop');
        expect(at).toBe(s.tokens.length - 1);
      } else {
        expect(['budget', 'context']).toContain(s.stopReason);
      }
      expect(s.finished).toBe(true);
    }
    expect(out.some((s) => s.stopReason === 'stop')).toBe(true);
    const long = sample(model, [new Array<number>(TINY.context - 2).fill(1)], { maxNewTokens: 10, seed: 1 });
    expect(long[0].tokens.length).toBe(2);
    expect(long[0].stopReason).toBe('context');
    expect(() => sample(model, [new Array<number>(TINY.context).fill(1)], { maxNewTokens: 1 })).toThrow(/context/);
    model.dispose();
  });

  it('greedy decoding picks the argmax', () => {
    const model = createModel(TINY, 65, { initStd: 0.3 });
    const [s] = sample(model, [[1, 2]], { maxNewTokens: 4, temperature: 0 });
    let seq = [1, 2];
    for (const tok of s.tokens) {
      const lg = model.logits([seq]);
      const last = lg.dataSync().slice((seq.length - 1) * TINY.vocabSize);
      lg.dispose();
      expect(tok).toBe(last.indexOf(Math.max(...last)));
      seq = [...seq, tok];
    }
    expect(s.logProbs).toEqual([0, 0, 0, 0]);
    model.dispose();
  });
});

describe('sampleFromLogits', () => {
  it('draws each token with its (nucleus-renormalised, tempered) probability', () => {
    const logits = [1.2, -0.3, 2.0, 0.1, -2.5];
    for (const [temperature, topP] of [
      [1, 1],
      [0.5, 1],
      [1, 0.8],
      [2, 0.5],
    ]) {
      const p = logits.map((l) => Math.exp(l / temperature));
      const z = p.reduce((a, b) => a + b, 0);
      const probs = p.map((x) => x / z);
      // The nucleus, by a plain loop: most likely first until the mass reaches topP.
      const order = probs.map((_x, i) => i).sort((a, b) => probs[b] - probs[a]);
      const kept = new Set<number>();
      let mass = 0;
      for (const i of order) {
        if (mass >= topP) break;
        kept.add(i);
        mass += probs[i];
      }
      const target = probs.map((x, i) => (kept.has(i) ? x / mass : 0));
      // Stratified uniforms: empirical frequencies equal the probabilities to within 1/N.
      const N = 4000;
      const counts = new Array<number>(logits.length).fill(0);
      for (let k = 0; k < N; k++) {
        const { token, logProb, rawLogProb } = sampleFromLogits(logits, temperature, topP, (k + 0.5) / N);
        counts[token]++;
        expect(logProb).toBeCloseTo(Math.log(target[token]), 9);
        expect(rawLogProb).toBeCloseTo(logits[token] - Math.log(logits.reduce((a, l) => a + Math.exp(l), 0)), 9);
      }
      counts.forEach((c, i) => expect(Math.abs(c / N - target[i])).toBeLessThanOrEqual(2 / N));
    }
  });
});

describe('sampleFromLogits without the raw log-probability', () => {
  it('draws the same token with the same behaviour log-probability; the raw one is left out only where it needs a pass of its own', () => {
    const rng = new Rng(5, 'raw-off');
    for (let trial = 0; trial < 200; trial++) {
      const logits = Array.from({ length: rng.int(2, 300) }, () => 4 * rng.next() - 2);
      const temperature = [0, 0.7, 1, 1.5][trial % 4];
      const topP = trial % 3 === 0 ? 0.9 : 1;
      const topK = trial % 5 === 0 ? 7 : 0;
      const u = rng.next();
      const withRaw = sampleFromLogits(logits, temperature, topP, u, topK);
      const without = sampleFromLogits(logits, temperature, topP, u, topK, false);
      expect(without.token).toBe(withRaw.token);
      expect(without.logProb).toBe(withRaw.logProb);
      // At temperature 1 the sampling pass is the raw one: it comes for free.
      if (temperature === 1) expect(without.rawLogProb).toBe(withRaw.rawLogProb);
      else expect(without.rawLogProb).toBeNaN();
    }
  });
});

describe('resumable decoding', () => {
  it('a decode split into segments equals an uninterrupted decode (same seed and weights)', () => {
    const model = createModel(TINY, 71, { initStd: 0.3 });
    const opts = { maxNewTokens: 10, temperature: 0.9, topP: 0.95, stopTokens: [0], seed: 13 };
    const whole = sample(model, PROMPTS, opts);
    expect(whole.some((s) => s.stopReason === 'stop')).toBe(true); // some finish early, mid-segment
    const state = startDecode(PROMPTS, opts);
    const finishedOrder: number[] = [];
    let segments = 0;
    while (state.sequences.some((s) => !s.finished)) {
      const { finished } = decodeSegment(model, state, 3);
      finishedOrder.push(...finished);
      segments++;
    }
    expect(segments).toBeGreaterThan(1);
    expect([...finishedOrder].sort()).toEqual([0, 1, 2, 3]);
    state.sequences.forEach((s, i) => {
      expect(s.tokens).toEqual(whole[i].tokens);
      expect(s.logProbs).toEqual(whole[i].logProbs); // bit-exact: the same computation
      expect(s.stopReason).toBe(whole[i].stopReason);
    });
    disposeDecodeState(state);
    model.dispose();
  });

  it('each segment decodes at most S tokens and reports the sequences that finished in it', () => {
    const model = createModel(TINY, 72, { initStd: 0.3 });
    const state = startDecode(PROMPTS, { maxNewTokens: 5, seed: 2 });
    const first = decodeSegment(model, state, 2);
    expect(first.finished).toEqual([]);
    expect(state.sequences.map((s) => s.tokens.length)).toEqual([2, 2, 2, 2]);
    const second = decodeSegment(model, state, 4);
    expect(second.finished.sort()).toEqual([0, 1, 2, 3]);
    expect(state.sequences.map((s) => s.tokens.length)).toEqual([5, 5, 5, 5]);
    expect(decodeSegment(model, state, 4).finished).toEqual([]);
    disposeDecodeState(state);
    model.dispose();
  });

  it('continues with newer weights: the cache is rebuilt from the tokens so far', () => {
    const model = createModel(TINY, 73, { initStd: 0.3 });
    const newer = createModel(TINY, 74, { initStd: 0.3 });
    const opts = { maxNewTokens: 8, seed: 21 };
    const state = startDecode(PROMPTS, opts);
    decodeSegment(model, state, 3);
    const versionBefore = state.cache!.version;
    model.setWeights(newer.getWeights());
    decodeSegment(model, state, 5);
    expect(state.sequences.every((s) => s.finished)).toBe(true);
    state.sequences.forEach((s, i) => {
      // Tokens 0..2 came from the old weights, 3..7 from the new ones.
      const re = recomputed(newer, PROMPTS[i], s.tokens);
      expect(maxAbsDiff(s.rawLogProbs.slice(3), re.slice(3))).toBeLessThan(1e-4);
      expect(maxAbsDiff(s.rawLogProbs.slice(0, 3), re.slice(0, 3))).toBeGreaterThan(1e-3);
    });
    expect(model.version).toBeGreaterThan(versionBefore);
    disposeDecodeState(state);
    model.dispose();
    newer.dispose();
  });

  it('holds no tensors once finished or disposed', () => {
    const model = createModel(TINY, 75, { initStd: 0.3 });
    sample(model, PROMPTS, { maxNewTokens: 3, seed: 1 }); // builds the decoding weights once
    const before = tf.memory().numTensors;
    const state = startDecode(PROMPTS, { maxNewTokens: 6, seed: 1 });
    decodeSegment(model, state, 2);
    expect(state.cache).not.toBeNull();
    disposeDecodeState(state);
    expect(state.cache).toBeNull();
    expect(tf.memory().numTensors).toBe(before);
    sample(model, PROMPTS, { maxNewTokens: 6, seed: 1, stopTokens: [2] });
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });
});
