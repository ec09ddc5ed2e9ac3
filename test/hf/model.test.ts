/**
 * The Hugging Face family's guarantees behind the policy seam (issue #13), on tiny random
 * checkpoints with real tokenizers: KV-cache decoding equals full recompute in both cache modes,
 * resumed segments equal uninterrupted decoding, sampled log-probs equal recomputed ones, the
 * chunked LM head's gradient equals finite differences, no tensor outlives its call, and bad
 * checkpoints are refused naming the file and the key.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHfConfig } from '../../src-main/engine/hf/config';
import { hfNamedTensors, loadHfModel } from '../../src-main/engine/hf/load';
import { chunkedHeadStats, type HfDecodeMode, type HfModel } from '../../src-main/engine/hf/model';
import { openSafetensors, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { decodeSegment, disposeDecodeState, releaseDecodeCache, sample, startDecode } from '../../src-main/engine/model/sampling';
import { Rng } from '../../src-main/engine/util/rng';
import { leftPadded, makeCheckpoint, maxAbs, randomPrompts, type Checkpoint } from './fixtures';

beforeAll(async () => {
  await initBackend('wasm');
});

function recomputedLogProbs(model: HfModel, prompt: number[], gen: number[], temperature?: number): Float32Array {
  const { logProbs, entropy } = model.sequenceLogProbs([[...prompt, ...gen]], { temperature });
  const out = logProbs.dataSync().slice(prompt.length - 1) as Float32Array;
  tf.dispose([logProbs, entropy]);
  return out;
}

describe.each<[string, 'llama' | 'qwen3']>([
  ['llama (llama3 rope, untied)', 'llama'],
  ['qwen3 (q/k norm, head_dim 32, tied)', 'qwen3'],
])('decoding %s', (_name, family) => {
  let ckpt: Checkpoint;
  beforeAll(() => {
    ckpt = makeCheckpoint(family);
  });
  afterAll(() => ckpt.cleanup());

  it.each<HfDecodeMode>(['js', 'concat'])('%s cache: each decode step equals a full recompute, padded rows included', (mode) => {
    const { model } = loadHfModel(ckpt.dir, { decodeMode: mode });
    const V = model.vocabSize;
    const prompts = randomPrompts(21, [5, 2, 7], V);
    const { rows, leftPad } = leftPadded(prompts);
    const before = tf.memory().numTensors;
    let { cache, logits } = model.prefill(rows, leftPad, rows[0].length + 5);
    const seqs = rows.map((r) => [...r]);
    const rng = new Rng(5, 'kv');
    for (let step = 0; step < 4; step++) {
      expect(maxAbs(logits, model.lastLogits(seqs, leftPad))).toBeLessThan(2e-4);
      const next = Int32Array.from(seqs, () => rng.int(0, V - 1));
      const positions = Int32Array.from(seqs, (s, b) => s.length - leftPad[b]);
      seqs.forEach((s, b) => s.push(next[b]));
      ({ cache, logits } = model.decodeStep(next, positions, cache));
    }
    expect(maxAbs(logits, model.lastLogits(seqs, leftPad))).toBeLessThan(2e-4);
    // Compacting to rows 2 and 0 keeps their state.
    cache = model.selectCacheRows(cache, [2, 0]);
    const sub = [seqs[2], seqs[0]];
    const t = Int32Array.from([7, 9]);
    ({ cache, logits } = model.decodeStep(t, Int32Array.from(sub, (s, i) => s.length - [leftPad[2], leftPad[0]][i]), cache));
    sub.forEach((s, i) => s.push(t[i]));
    expect(maxAbs(logits, model.lastLogits(sub, [leftPad[2], leftPad[0]]))).toBeLessThan(2e-4);
    model.disposeCache(cache);
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it('the js and concat caches agree, and a padded row computes what it would alone', () => {
    const js = loadHfModel(ckpt.dir, { decodeMode: 'js' }).model;
    const cc = loadHfModel(ckpt.dir, { decodeMode: 'concat' }).model;
    const prompts = randomPrompts(22, [6, 3], js.vocabSize);
    const { rows, leftPad } = leftPadded(prompts);
    const a = js.prefill(rows, leftPad, 8);
    const b = cc.prefill(rows, leftPad, 8);
    expect(maxAbs(a.logits, b.logits)).toBeLessThan(2e-4);
    const alone = js.lastLogits([prompts[1]], [0]);
    expect(maxAbs(a.logits.subarray(js.vocabSize), alone)).toBeLessThan(2e-4);
    js.disposeCache(a.cache);
    cc.disposeCache(b.cache);
    js.dispose();
    cc.dispose();
  });

  it('sampled log-probs equal recomputed ones; the cache and a full recompute sample the same tokens', () => {
    const { model } = loadHfModel(ckpt.dir);
    const prompts = randomPrompts(23, [4, 6, 1], model.vocabSize);
    const before = tf.memory().numTensors;
    const opts = { maxNewTokens: 6, temperature: 0.8, topP: 0.95, topK: 50, seed: 3 };
    const out = sample(model, prompts, opts);
    const noCache = sample(model, prompts, { ...opts, useKvCache: false });
    expect(noCache.map((s) => s.tokens)).toEqual(out.map((s) => s.tokens));
    const plain = sample(model, prompts, { maxNewTokens: 6, temperature: 0.8, seed: 3 });
    plain.forEach((s, i) => {
      expect(s.tokens.length).toBe(6);
      expect(maxAbs(s.logProbs, recomputedLogProbs(model, prompts[i], s.tokens, 0.8))).toBeLessThan(2e-4);
      expect(maxAbs(s.rawLogProbs, recomputedLogProbs(model, prompts[i], s.tokens))).toBeLessThan(2e-4);
    });
    out.forEach((s, i) => expect(maxAbs(s.rawLogProbs, recomputedLogProbs(model, prompts[i], s.tokens))).toBeLessThan(2e-4));
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it('a decode split into segments, with the cache dropped and rebuilt, equals an uninterrupted one', () => {
    const { model } = loadHfModel(ckpt.dir);
    const prompts = randomPrompts(24, [3, 5, 2, 4], model.vocabSize);
    const opts = { maxNewTokens: 9, temperature: 1, topP: 0.9, seed: 8 };
    const whole = sample(model, prompts, opts);
    for (const split of [[1, 8], [4, 2, 3], [2, 2, 2, 2, 1]]) {
      const state = startDecode(prompts, opts);
      split.forEach((n, i) => {
        decodeSegment(model, state, n);
        if (i % 2 === 0) releaseDecodeCache(state); // as when a state crosses processes
      });
      expect(state.sequences.map((s) => s.tokens)).toEqual(whole.map((s) => s.tokens));
      state.sequences.forEach((s, i) => expect(maxAbs(s.logProbs, whole[i].logProbs)).toBeLessThan(2e-4));
      disposeDecodeState(state);
    }
    model.dispose();
  });
});

describe('chunked LM head', () => {
  it('value and gradient equal finite differences and the unchunked computation', () => {
    const rng = new Rng(9, 'head');
    const M = 7;
    const D = 5;
    const V = 23;
    const hData = Float32Array.from({ length: M * D }, () => rng.normal());
    const wData = Float32Array.from({ length: D * V }, () => rng.normal());
    const targets = Int32Array.from({ length: M }, () => rng.int(0, V - 1));
    const coef = Float32Array.from({ length: 2 * M }, () => rng.normal());
    const loss = (h: tf.Tensor2D, w: tf.Tensor2D, rows: number) => tf.sum(tf.mul(chunkedHeadStats(h, w, targets, 0.7, true, rows), tf.tensor2d(coef, [2, M]))) as tf.Scalar;
    // Reference value in float64: log-softmax and entropy of (h W)/τ row by row.
    const f64 = (hh: Float32Array, ww: Float32Array) => {
      let s = 0;
      for (let m = 0; m < M; m++) {
        const z = Array.from({ length: V }, (_, v) => {
          let a = 0;
          for (let d = 0; d < D; d++) a += hh[m * D + d] * ww[d * V + v];
          return a / 0.7;
        });
        const mx = Math.max(...z);
        const lse = mx + Math.log(z.reduce((a, x) => a + Math.exp(x - mx), 0));
        const ent = -z.reduce((a, x) => a + Math.exp(x - lse) * (x - lse), 0);
        s += coef[m] * (z[targets[m]] - lse) + coef[M + m] * ent;
      }
      return s;
    };
    const ref = f64(hData, wData);
    const before = tf.memory().numTensors;
    const h = tf.tensor2d(hData, [M, D]);
    const w = tf.tensor2d(wData, [D, V]);
    for (const rows of [2, 3, M]) {
      const value = tf.tidy(() => loss(h, w, rows).dataSync()[0]);
      expect(value).toBeCloseTo(ref, 3);
    }
    const grads = (rows: number) => tf.tidy(() => tf.grads((a: tf.Tensor, b: tf.Tensor) => loss(a as tf.Tensor2D, b as tf.Tensor2D, rows))([h, w]).map((g) => g.dataSync() as Float32Array));
    const [dh3, dw3] = grads(3);
    const [dhAll, dwAll] = grads(M);
    expect(maxAbs(dh3, dhAll)).toBeLessThan(1e-5);
    expect(maxAbs(dw3, dwAll)).toBeLessThan(1e-5);
    // Central differences of the float64 reference along random directions of h and of W.
    const eps = 1e-4;
    const dirH = Float32Array.from({ length: M * D }, () => rng.normal());
    const dirW = Float32Array.from({ length: D * V }, () => rng.normal());
    const fdH = (f64(hData.map((x, i) => x + eps * dirH[i]), wData) - f64(hData.map((x, i) => x - eps * dirH[i]), wData)) / (2 * eps);
    const fdW = (f64(hData, wData.map((x, i) => x + eps * dirW[i])) - f64(hData, wData.map((x, i) => x - eps * dirW[i]))) / (2 * eps);
    const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);
    expect(Math.abs(dot(dh3, dirH) - fdH)).toBeLessThan(1e-3 * Math.max(1, Math.abs(fdH)));
    expect(Math.abs(dot(dw3, dirW) - fdW)).toBeLessThan(1e-3 * Math.max(1, Math.abs(fdW)));
    tf.dispose([h, w]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('the model is differentiable through nextTokenStatsTimeMajor, the head chunked or not', () => {
    const ckpt = makeCheckpoint('qwen2', { layers: 1 });
    try {
      const chunked = loadHfModel(ckpt.dir, { headChunkRows: 2 }).model;
      const whole = loadHfModel(ckpt.dir, { headChunkRows: 1000 }).model;
      const tokens = randomPrompts(31, [6, 6], chunked.vocabSize);
      const before = tf.memory().numTensors;
      const gradsOf = (m: HfModel) => {
        const { value, grads } = tf.variableGrads(() => {
          const { stats } = m.nextTokenStatsTimeMajor(tokens, { leftPad: [0, 2] });
          return tf.sum(tf.mul(stats, tf.tensor2d([[1, -0.5, 2, 0.3, -1], [0.2, 0.1, -0.4, 0.5, 0.3]].map((r) => [...r, ...r]).flat(), [2, 10]))) as tf.Scalar;
        }, m.variables);
        const v = value.dataSync()[0];
        const g = m.variables.map((x) => grads[x.name].dataSync() as Float32Array);
        tf.dispose([value, ...Object.values(grads)]);
        return { v, g };
      };
      const a = gradsOf(chunked);
      const b = gradsOf(whole);
      expect(Math.abs(a.v - b.v)).toBeLessThan(1e-4);
      a.g.forEach((g, i) => expect(maxAbs(g, b.g[i])).toBeLessThan(1e-4 * Math.max(1, ...Array.from(b.g[i].subarray(0, 64), Math.abs))));
      // The gradient reaches every kind of parameter (norms, biases, the tied embedding).
      chunked.specs.forEach((s, i) => expect(a.g[i].some((x) => x !== 0), s.name).toBe(true));
      expect(tf.memory().numTensors).toBe(before);
      chunked.dispose();
      whole.dispose();
    } finally {
      ckpt.cleanup();
    }
  });
});

describe('loading', () => {
  it('weights come back out bit-exact under Hugging Face names; shards load the same model', () => {
    const single = makeCheckpoint('llama', { layers: 1 });
    const sharded = makeCheckpoint('llama', { layers: 1, shards: 3 });
    try {
      expect(fs.existsSync(path.join(sharded.dir, 'model.safetensors.index.json'))).toBe(true);
      const a = loadHfModel(single.dir);
      const b = loadHfModel(sharded.dir);
      const st = openSafetensors(single.dir);
      for (const t of hfNamedTensors(a.model)) {
        const file = st.tensors.get(t.name)!;
        expect(t.shape).toEqual(file.shape);
        expect(Buffer.from(t.data().buffer).equals(Buffer.from(readTensorF32(file).buffer)), t.name).toBe(true);
      }
      expect(maxAbs(a.model.getWeights(), b.model.getWeights())).toBe(0);
      expect(a.identity.configDigest).toBe(b.identity.configDigest);
      expect(a.identity.weightsDigest).not.toBe(b.identity.weightsDigest);
      expect(a.identity.weightsDigest).toMatch(/^[0-9a-f]{64}$/);
      a.model.dispose();
      b.model.dispose();
    } finally {
      single.cleanup();
      sharded.cleanup();
    }
  });

  it('refuses bad folders naming the file and the key', () => {
    const ckpt = makeCheckpoint('qwen3', { layers: 1 });
    const cfgFile = path.join(ckpt.dir, 'config.json');
    const original = JSON.parse(fs.readFileSync(cfgFile, 'utf8')) as Record<string, unknown>;
    const withConfig = (patch: Record<string, unknown>) => fs.writeFileSync(cfgFile, JSON.stringify({ ...original, ...patch }));
    try {
      expect(() => loadHfModel(path.join(ckpt.dir, 'nope'))).toThrow(/nope.*not a folder/);
      withConfig({ intermediate_size: 100 });
      expect(() => loadHfModel(ckpt.dir)).toThrow(/model\.safetensors \(model\.layers\.0\.mlp\.gate_proj\.weight\): shape \[96, 64\] disagrees with config\.json, which implies \[100, 64\]/);
      withConfig({ vocab_size: 1000 });
      expect(() => loadHfModel(ckpt.dir)).toThrow(/tokenizer\.json \(vocab\): the tokenizer has 151669 ids but .*config\.json vocab_size .* is 1000/);
      withConfig({ architectures: ['MixtralForCausalLM'], model_type: 'mixtral' });
      expect(() => loadHfModel(ckpt.dir)).toThrow(/config\.json: architectures: MixtralForCausalLM is not supported/);
      withConfig({ tie_word_embeddings: false });
      expect(() => loadHfModel(ckpt.dir)).toThrow(/lm_head\.weight\): missing/);
      fs.writeFileSync(cfgFile, '{"architectures": [');
      expect(() => loadHfModel(ckpt.dir)).toThrow(/config\.json: does not parse as JSON/);
      fs.rmSync(cfgFile);
      expect(() => loadHfModel(ckpt.dir)).toThrow(/config\.json: not found/);
    } finally {
      ckpt.cleanup();
    }
  });

  it('parseHfConfig refuses what would change the function, by key', () => {
    const base = {
      architectures: ['Qwen3ForCausalLM'],
      model_type: 'qwen3',
      hidden_size: 64,
      intermediate_size: 96,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 32,
      vocab_size: 100,
      max_position_embeddings: 128,
    };
    const c = parseHfConfig(base, 'c.json');
    expect(c).toMatchObject({ qkNorm: true, attentionBias: false, headDim: 32, rmsNormEps: 1e-6, ropeScaling: null, tieWordEmbeddings: false });
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ num_experts: 8 }, /c\.json: num_experts: mixture-of-experts/],
      [{ use_sliding_window: true }, /c\.json: use_sliding_window: sliding-window/],
      [{ rope_scaling: { rope_type: 'yarn', factor: 4 } }, /rope_scaling\.rope_type: "yarn" is not supported/],
      [{ rope_scaling: { type: 'dynamic', factor: 2 } }, /rope_scaling\.rope_type: "dynamic" is not supported/],
      [{ hidden_act: 'gelu' }, /hidden_act: "gelu" is not supported/],
      [{ model_type: 'qwen2' }, /model_type: "qwen2" does not match Qwen3ForCausalLM/],
      [{ num_key_value_heads: 3 }, /num_key_value_heads: 3 must divide/],
      [{ attention_bias: true }, /attention_bias: attention biases/],
      [{ rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 4, high_freq_factor: 1, original_max_position_embeddings: 8192 } }, /high_freq_factor: must exceed/],
    ];
    for (const [patch, msg] of bad) expect(() => parseHfConfig({ ...base, ...patch }, 'c.json')).toThrow(msg);
    expect(parseHfConfig({ ...base, architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', use_sliding_window: false }, 'c.json').attentionBias).toBe(true);
    expect(parseHfConfig({ ...base, rope_scaling: { type: 'linear', factor: 2 } }, 'c.json').ropeScaling).toEqual({ type: 'linear', factor: 2 });
  });
});
