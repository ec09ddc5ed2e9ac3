/**
 * The Hugging Face family (Llama / Qwen3, and LoRA adapters on it) on the webgpu backend
 * (tfjs-backend-webgpu on Dawn) against the cpu backend (issue #15).
 *
 * Without a GPU this runs on Mesa's llvmpipe Vulkan driver (a software adapter; scripts/test-setup.sh
 * installs Mesa 25 from bookworm-backports). No adapter fails the file, as test/model/webgpu.test.ts does.
 *
 * The two sides compute differently: cpu decodes with the 'js' cache (attention, RoPE and the q/k
 * norm in plain loops, float64 accumulators) and scatters the embedding gradient in JavaScript;
 * webgpu decodes with the 'concat' cache (tensors) and keeps the scatter on the device (tfjs's
 * gather gradient). Both are float32, so they differ by rounding only: ~1e-6 relative at these
 * widths. Tolerances: logits and log-probabilities 1e-4 absolute (values of order 1–10), loss
 * 1e-5, gradients 1e-4 of the largest gradient entry, weights after one AdamW step 1e-5 where the
 * clipped gradient is above 1e-6 (the step moves those by ±lr = 1e-2 whatever the rounding; see
 * the test for the few below); finite differences 3e-2 relative at the best of three steps.
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import type { HfArchConfig } from '../../src-main/engine/hf/config';
import { acquireHfBase, LoraHfModel } from '../../src-main/engine/hf/lora';
import { hfModelFromFlat, hfParamSpecs, type HfModel } from '../../src-main/engine/hf/model';
import { randomHfConfig } from '../../src-main/engine/hf/random-model';
import { createOptimizer } from '../../src-main/engine/model/optim';
import type { PolicyModel } from '../../src-main/engine/model/policy-model';
import { sample, sampleAsync, type SampledSequence } from '../../src-main/engine/model/sampling';
import { supervisedLoss, supervisedStep, supervisedStepAsync, type SupervisedBatch } from '../../src-main/engine/model/train';
import { Rng } from '../../src-main/engine/util/rng';
import { FAMILIES } from './fixtures';
import { maxAbsDiff, randomArray, randomTokens, sliceDirectionalError } from '../model/helpers';
import { expectSegmentResume, onBackend, requireWebGpu } from '../helpers/webgpu';

/** Embedding rows: small, so every logits row is short on llvmpipe (the architectures are the fixtures'). */
const V = 96;
const OPT = { lr: 1e-2, beta1: 0.9, beta2: 0.999, weight_decay: 0.1, grad_clip: 1 };
const PROMPTS = [[1, 2, 3, 4], [5], [6, 7], [8, 9, 10, 11, 12, 13]];
const LORA = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] as Array<'q_proj' | 'v_proj' | 'o_proj' | 'down_proj'> };

/**
 * The fixtures' Llama (llama3 rope scaling, untied head) and Qwen3 (q/k RMSNorm, head_dim 16 ≠
 * hidden / heads = 8, tied), both with grouped-query attention and two layers, at half the width.
 */
const CONFIGS: Record<'llama' | 'qwen3', HfArchConfig> = {
  llama: randomHfConfig({ ...FAMILIES.llama, hidden: 32, intermediate: 48 }, V, { bos: 0, eos: [0] }),
  qwen3: randomHfConfig({ ...FAMILIES.qwen3, hidden: 32, headDim: 16, intermediate: 48 }, V, { bos: null, eos: [0] }),
};

/** Random weights in storage layout: norms near 1, linears of unit-variance outputs, a peaked-enough head. */
function flatWeights(config: HfArchConfig, seed: number): Float32Array {
  const specs = hfParamSpecs(config);
  const last = specs[specs.length - 1];
  const flat = new Float32Array(last.offset + last.size);
  const rng = new Rng(seed, 'hf-webgpu-weights');
  for (const s of specs) {
    const norm = s.shape.length === 1;
    const std = norm ? 0.15 : s.name.includes('embed') || s.name.startsWith('lm_head') ? 2.5 / Math.sqrt(config.hiddenSize) : 1 / Math.sqrt(s.shape[0]);
    for (let i = 0; i < s.size; i++) flat[s.offset + i] = (norm ? 1 : 0) + std * rng.normal();
  }
  return flat;
}

beforeAll(async () => {
  await requireWebGpu('the webgpu tests');
});

const on = onBackend;

/** Every gradient in `specs` order as one flat buffer, read asynchronously (webgpu) and disposed. */
async function flatGrads(model: PolicyModel, grads: tf.NamedTensorMap): Promise<Float32Array> {
  const flat = new Float32Array(model.numParams);
  for (let i = 0; i < model.variables.length; i++) flat.set((await grads[model.variables[i].name].data()) as Float32Array, model.specs[i].offset);
  tf.dispose(Object.values(grads));
  return flat;
}

function batchOf(seed: number, B: number, T: number): SupervisedBatch {
  const tokens = randomTokens(new Rng(seed, 'hf-webgpu-batch'), B, T, V);
  return { tokens, lossMask: tokens.map((r) => r.map((_x, t) => (t >= 2 ? 1 : 0))) };
}

function expectSameSamples(out: SampledSequence[], ref: SampledSequence[]): void {
  expect(out.map((s) => s.tokens)).toEqual(ref.map((s) => s.tokens));
  out.forEach((s, i) => {
    expect(s.stopReason).toBe(ref[i].stopReason);
    expect(maxAbsDiff(s.rawLogProbs, ref[i].rawLogProbs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(s.logProbs, ref[i].logProbs)).toBeLessThan(1e-4);
  });
}

describe.each(['llama', 'qwen3'] as const)('the Hugging Face family (%s) on webgpu equals the cpu backend', (family) => {
  const config = CONFIGS[family];
  const weights = flatWeights(config, family === 'llama' ? 3 : 4);
  const make = () => hfModelFromFlat(config, weights);

  it('decodes with tensors there: no synchronous readback, asynchronous twins instead', async () => {
    const model = make();
    expect(model.decodeMode).toBe('concat');
    expect(() => model.getWeights()).toThrow(/getWeightsAsync/);
    expect(() => model.lastLogits([[1, 2]], [0])).toThrow(/lastLogitsAsync/);
    expect(() => model.prefill([[1, 2]], [0], 4)).toThrow(/prefillAsync/);
    expect(maxAbsDiff(await model.getWeightsAsync(), weights)).toBe(0);
    model.dispose();
  });

  it('one training step: loss, every gradient and the weights after one AdamW step', async () => {
    const batch = batchOf(family === 'llama' ? 5 : 6, 3, 9);
    const ref = await on('cpu', async () => {
      const model = make();
      const { value, grads } = tf.variableGrads(() => supervisedLoss(model, batch).loss, model.variables);
      value.dispose();
      const g = await flatGrads(model, grads);
      const opt = createOptimizer(model, OPT);
      const r = supervisedStep(model, opt, batch);
      const after = model.getWeights();
      model.dispose();
      opt.dispose();
      return { g, r, after };
    });
    const model = make();
    const before = tf.memory().numTensors;
    const { value, grads } = tf.variableGrads(() => supervisedLoss(model, batch).loss, model.variables);
    const loss = (await value.data())[0];
    value.dispose();
    const g = await flatGrads(model, grads);
    expect(tf.memory().numTensors).toBe(before);
    const gmax = Math.max(...Array.from(ref.g, Math.abs));
    expect(maxAbsDiff(g, ref.g)).toBeLessThan(1e-4 * gmax);
    // The embedding's gradient (the scatter that stays on the device here) is nonzero and equal.
    const emb = model.specs.find((s) => s.name === 'model.embed_tokens.weight')!;
    expect(maxAbsDiff(g.subarray(emb.offset, emb.offset + emb.size), new Float32Array(emb.size))).toBeGreaterThan(1e-3 * gmax);

    const opt = createOptimizer(model, OPT);
    expect(opt.mode).toBe('tensor');
    const r = await supervisedStepAsync(model, opt, batch);
    expect(Math.abs(loss - ref.r.loss)).toBeLessThan(1e-5);
    expect(Math.abs(r.loss - ref.r.loss)).toBeLessThan(1e-5);
    expect(Math.abs(r.gradNorm - ref.r.gradNorm) / ref.r.gradNorm).toBeLessThan(1e-5);
    expect(r.clipped).toBe(ref.r.clipped);
    const after = await model.getWeightsAsync();
    expect(maxAbsDiff(after, weights)).toBeGreaterThan(5e-3); // the step moved the weights
    // Adam's first step moves a weight by lr·ĝ / (|ĝ| + ε), ĝ the clipped gradient: for |ĝ| ≫ ε = 1e-8
    // that is ±lr whatever the rounding; for |ĝ| near ε the rounding of g itself decides. So the
    // weights whose clipped gradient is above 1e-6 must agree to 1e-5, and the few below move by at
    // most lr·(1 + decay) on both sides.
    const clip = Math.min(1, OPT.grad_clip / ref.r.gradNorm);
    let compared = 0;
    let tiny = 0;
    for (let i = 0; i < after.length; i++) {
      if (Math.abs(ref.g[i]) * clip > 1e-6) {
        compared++;
        expect(Math.abs(after[i] - ref.after[i]), `weight ${i}`).toBeLessThan(1e-5);
      } else if (ref.g[i] !== 0) {
        tiny++;
        expect(Math.abs(after[i] - ref.after[i])).toBeLessThan(2 * OPT.lr * 1.1);
      }
    }
    expect(tiny).toBeLessThan(compared / 100);
    model.dispose();
    opt.dispose();
  });

  it('gradients of a PPO-like functional (log-probs and entropies at τ = 0.9) match finite differences on webgpu', async () => {
    const model = make();
    const rng = new Rng(12, `hf-webgpu-fd-${family}`);
    const tokens = randomTokens(rng, 2, 6, V);
    // Row 0 has one padding token: its position's statistics get weight 0, as every loss masks
    // padding (its query sees only masked keys, where −1e9 + score rounds away the score in float32,
    // so finite differences see a flat function there and the gradient would not).
    const weightsAt = () => {
      const w = randomArray(rng, 2 * 5);
      w[0] = 0;
      return tf.tensor2d(w, [2, 5]);
    };
    const a = weightsAt();
    const b = weightsAt();
    const loss = () => {
      const { logProbs, entropy } = model.sequenceLogProbs(tokens, { temperature: 0.9, leftPad: [1, 0] });
      return tf.add(tf.sum(tf.mul(logProbs, a)), tf.sum(tf.mul(entropy, b))) as tf.Scalar;
    };
    const { value, grads } = tf.variableGrads(loss, model.variables);
    value.dispose();
    const g = await flatGrads(model, grads);
    const lossAt = async (w: Float32Array) => {
      model.setWeights(w);
      return (await tf.tidy(loss).data())[0];
    };
    const names = ['model.embed_tokens.weight', 'model.layers.0.self_attn.k_proj.weight', 'model.layers.1.mlp.up_proj.weight', 'model.norm.weight', family === 'llama' ? 'lm_head.weight' : 'model.layers.0.self_attn.q_norm.weight'];
    for (const name of names) {
      const spec = model.specs.find((s) => s.name === name)!;
      const d = randomArray(rng, spec.size);
      let an = 0;
      for (let j = 0; j < spec.size; j++) an += g[spec.offset + j] * d[j];
      expect(await sliceDirectionalError(lossAt, weights, spec, d, an), name).toBeLessThan(3e-2);
    }
    tf.dispose([a, b]);
    model.dispose();
  });

  it("KV sampling with the 'concat' cache: the same tokens and log-probabilities as cpu's 'js' cache", async () => {
    const opts = { maxNewTokens: 8, temperature: 0.9, topP: 0.95, stopTokens: [0], seed: 13 };
    const ref = await on('cpu', () => {
      const m = make();
      expect(m.decodeMode).toBe('js');
      const out = sample(m, PROMPTS, opts);
      m.dispose();
      return out;
    });
    const model = make();
    expect(() => sample(model, PROMPTS, opts)).toThrow(/Async/);
    const before = tf.memory().numTensors;
    const out = await sampleAsync(model, PROMPTS, opts);
    expect(tf.memory().numTensors).toBe(before); // the cache was released
    expectSameSamples(out, ref);
    expect(new Set(out.flatMap((s) => s.tokens)).size).toBeGreaterThan(3); // not one token over and over
    // Without the cache (a full recompute each step) webgpu samples the same.
    expectSameSamples(await sampleAsync(model, PROMPTS, { ...opts, useKvCache: false }), ref);
    model.dispose();
  });

  it('the decoding calls one by one: prefill, a step, rows kept by selectCacheRows, a step (logits as cpu’s)', async () => {
    const { rows, leftPad } = { rows: PROMPTS.map((p) => [...new Array<number>(6 - p.length).fill(p[0]), ...p]), leftPad: PROMPTS.map((p) => 6 - p.length) };
    const run = async (m: HfModel) => {
      const p = await m.prefillAsync(rows, leftPad, 9);
      const s1 = await m.decodeStepAsync(new Int32Array([5, 6, 7, 8]), new Int32Array(leftPad.map((l) => 6 - l)), p.cache);
      const kept = m.selectCacheRows(s1.cache, [3, 1]);
      const s2 = await m.decodeStepAsync(new Int32Array([9, 10]), new Int32Array([leftPad[3], leftPad[1]].map((l) => 7 - l)), kept);
      m.disposeCache(s2.cache);
      return [p.logits, s1.logits, s2.logits];
    };
    const ref = await on('cpu', async () => {
      const m = make();
      const r = await run(m);
      m.dispose();
      return r;
    });
    const model = make();
    const before = tf.memory().numTensors;
    const got = await run(model);
    expect(tf.memory().numTensors).toBe(before);
    got.forEach((g, i) => expect(maxAbsDiff(g, ref[i]), `call ${i}`).toBeLessThan(1e-4));
    expect(got[2]).toHaveLength(2 * V);
    model.dispose();
  });

  it('segment resume: a decode paused and resumed equals an uninterrupted one, and new weights rebuild the cache', async () => {
    const model = make();
    await expectSegmentResume(model, PROMPTS, flatWeights(config, 99), (weights) => hfModelFromFlat(config, weights));
    model.dispose();
  });

  it('LoRA adapters on webgpu: forward, KV sampling and the adapters’ gradients equal cpu; off is the base', async () => {
    const adapterSeed = family === 'llama' ? 31 : 32;
    const withAdapters = (backend: string): { lora: LoraHfModel; base: HfModel } => {
      const handle = acquireHfBase(`test-webgpu/${backend}/${family}`, make);
      const lora = new LoraHfModel(handle, LORA, { seed: adapterSeed });
      // B = 0 at initialisation leaves the base's function: random B makes the adapters count.
      lora.setWeights(randomArray(new Rng(adapterSeed, 'hf-webgpu-lora'), lora.numParams, 0.3));
      return { lora, base: handle.model };
    };
    const rows = [[3, 3, 1, 2, 3], [4, 5, 6, 7, 8]];
    const leftPad = [2, 0];
    const batch = batchOf(7, 2, 8);
    const sampleOpts = { maxNewTokens: 6, temperature: 0.9, stopTokens: [0], seed: 19 };
    const ref = await on('cpu', async () => {
      const { lora, base } = withAdapters('cpu');
      const last = lora.lastLogits(rows, leftPad);
      const p = lora.prefill(rows, leftPad, 8);
      const step = lora.decodeStep(new Int32Array([9, 10]), new Int32Array([3, 5]), p.cache);
      lora.disposeCache(step.cache);
      const baseLast = base.lastLogits(rows, leftPad);
      const { value, grads } = tf.variableGrads(() => supervisedLoss(lora, batch).loss, lora.variables);
      value.dispose();
      const g = await flatGrads(lora, grads);
      const samples = sample(lora, PROMPTS, sampleOpts);
      const peft = lora.loraWeights();
      lora.dispose();
      return { last, prefill: p.logits, step: step.logits, baseLast, g, samples, peft };
    });
    const { lora, base } = withAdapters('webgpu');
    const last = await lora.lastLogitsAsync(rows, leftPad);
    expect(maxAbsDiff(last, ref.last)).toBeLessThan(1e-4);
    expect(maxAbsDiff(last, ref.baseLast)).toBeGreaterThan(1e-2); // the adapters change the function
    const p = await lora.prefillAsync(rows, leftPad, 8);
    expect(p.cache.version).toBe(lora.version);
    expect(maxAbsDiff(p.logits, ref.prefill)).toBeLessThan(1e-4);
    const step = await lora.decodeStepAsync(new Int32Array([9, 10]), new Int32Array([3, 5]), p.cache);
    expect(maxAbsDiff(step.logits, ref.step)).toBeLessThan(1e-4);
    lora.disposeCache(step.cache);
    expect(base.adapter).toBeNull(); // the hook is off again once the staged call is built
    lora.adaptersEnabled = false;
    expect(maxAbsDiff(await lora.lastLogitsAsync(rows, leftPad), ref.baseLast)).toBeLessThan(1e-4);
    lora.adaptersEnabled = true;
    const { value, grads } = tf.variableGrads(() => supervisedLoss(lora, batch).loss, lora.variables);
    value.dispose();
    const g = await flatGrads(lora, grads);
    expect(maxAbsDiff(g, ref.g)).toBeLessThan(1e-4 * Math.max(...Array.from(ref.g, Math.abs)));
    expectSameSamples(await sampleAsync(lora, PROMPTS, sampleOpts), ref.samples);
    expect(maxAbsDiff(await lora.getWeightsAsync(), randomArray(new Rng(adapterSeed, 'hf-webgpu-lora'), lora.numParams, 0.3))).toBe(0);
    // The adapters in PEFT's layout (what a PEFT adapter folder is written from): read asynchronously here.
    expect(() => lora.loraWeights()).toThrow(/loraWeightsAsync/);
    const peft = await lora.loraWeightsAsync();
    expect([...peft.keys()]).toEqual([...ref.peft.keys()]);
    for (const [name, w] of peft) {
      expect(maxAbsDiff(w.a, ref.peft.get(name)!.a), name).toBe(0);
      expect(maxAbsDiff(w.b, ref.peft.get(name)!.b), name).toBe(0);
    }
    lora.dispose();
  });
});
