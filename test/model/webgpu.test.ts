/**
 * The GPT on the webgpu backend (tfjs-backend-webgpu on Dawn) against the cpu backend, and the
 * backend choice around it (issue #15).
 *
 * On machines without a GPU this runs on Mesa's llvmpipe Vulkan driver (a software adapter):
 * Debian 12's mesa-vulkan-drivers 22.3 gives Dawn no adapter, Mesa 25 from bookworm-backports
 * does; scripts/test-setup.sh (npm test runs it first) installs it, and in CI (CI=true) a missing adapter fails here loudly.
 *
 * Tolerances: float32 kernels in a different order (GPU reductions, tiled matMul) against the
 * cpu backend's sequential loops differ by rounding only, ~1e-6 relative on these sizes. Logits,
 * log-probabilities and gradients are compared at 1e-4 absolute; weights after one Adam step
 * at 1e-5 (the first step moves every weight by lr·m/√v ≈ ±lr = 1e-2, the same on both sides up
 * to rounding unless a gradient is near 0, which the seeds here avoid: the smallest |g| is checked).
 */
import * as tf from '@tensorflow/tfjs-core';
import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BackendInfo } from '../../src-main/engine/model/backend';
import { createModel, type GPT, type GPTConfig } from '../../src-main/engine/gpt/model';
import { PLAIN_STRATEGY, strategyForBackend } from '../../src-main/engine/model/ops';
import { createOptimizer } from '../../src-main/engine/model/optim';
import { sample, sampleAsync, type SampledSequence } from '../../src-main/engine/model/sampling';
import { supervisedStep, supervisedStepAsync, type SupervisedBatch } from '../../src-main/engine/model/train';
import { Rng } from '../../src-main/engine/util/rng';
import { marsrl } from '../helpers/cli';
import { dot, maxAbsDiff, ppoLikeLoss, randomArray, randomTokens, sliceDirectionalError } from './helpers';
import { expectSegmentResume, onBackend, requireWebGpu } from '../helpers/webgpu';

const CONFIG: GPTConfig = { vocabSize: 13, d_model: 16, n_layers: 2, n_heads: 2, context: 24, mlp_ratio: 2 };
const OPT = { lr: 1e-2, beta1: 0.9, beta2: 0.999, weight_decay: 0.1, grad_clip: 1 };
const PROMPTS = [[1, 2, 3], [4], [5, 6], [0, 1, 2, 3, 4]];

let info: BackendInfo;

beforeAll(async () => {
  info = await requireWebGpu('the webgpu tests');
});

const on = onBackend;

function batchOf(rng: Rng, B: number, T: number): SupervisedBatch {
  const tokens = randomTokens(rng, B, T, CONFIG.vocabSize);
  return { tokens, lossMask: tokens.map((r) => r.map((_x, t) => (t >= 2 ? 1 : 0))) };
}

describe('the webgpu backend here', () => {
  it('is asked for explicitly, so it runs on the software adapter with a warning', () => {
    expect(info.name).toBe('webgpu');
    expect(info.fallback).toBe(false);
    expect(info.adapter).not.toBeNull();
    if (process.env.CI === 'true') expect(info.adapter!.description).toMatch(/\S/);
    if (info.adapter!.software) expect(info.warnings.join('\n')).toMatch(/software adapter/);
    expect(strategyForBackend('webgpu')).toEqual(PLAIN_STRATEGY);
  });
});

describe('the GPT on webgpu equals the cpu backend', () => {
  it('one training step: loss, gradient norm and the weights after one AdamW step', async () => {
    const batch = batchOf(new Rng(5, 'step'), 3, 10);
    const ref = await on('cpu', () => {
      const model = createModel(CONFIG, 7, { initStd: 0.3 });
      const opt = createOptimizer(model, OPT);
      const before = model.getWeights();
      const grads = tf.variableGrads(() => {
        const { stats } = model.nextTokenStatsTimeMajor(batch.tokens, { entropy: false });
        return tf.neg(tf.sum(stats)) as tf.Scalar;
      }, model.variables);
      const gmin = Math.min(...model.variables.map((v) => Math.min(...Array.from(grads.grads[v.name].dataSync()).filter((g) => g !== 0).map(Math.abs))));
      tf.dispose([grads.value, ...Object.values(grads.grads)]);
      const r = supervisedStep(model, opt, batch);
      const after = model.getWeights();
      model.dispose();
      opt.dispose();
      return { r, before, after, gmin, mode: opt.mode };
    });
    const model = createModel(CONFIG, 7, { initStd: 0.3 });
    const opt = createOptimizer(model, OPT);
    expect(opt.mode).toBe('tensor'); // moments on the GPU
    expect(() => model.getWeights()).toThrow(/getWeightsAsync/); // no synchronous readback in Node
    expect(maxAbsDiff(await model.getWeightsAsync(), ref.before)).toBe(0);
    const r = await supervisedStepAsync(model, opt, batch);
    const after = await model.getWeightsAsync();
    expect(ref.gmin).toBeGreaterThan(1e-5); // no near-zero gradient whose sign rounding could flip
    expect(Math.abs(r.loss - ref.r.loss)).toBeLessThan(1e-5);
    expect(Math.abs(r.gradNorm - ref.r.gradNorm) / ref.r.gradNorm).toBeLessThan(1e-5);
    expect(r.clipped).toBe(ref.r.clipped);
    // The step really moved the weights (by about lr), and both backends moved them alike.
    expect(maxAbsDiff(after, ref.before)).toBeGreaterThan(5e-3);
    expect(maxAbsDiff(after, ref.after)).toBeLessThan(1e-5);
    const state = await opt.getStateAsync();
    expect(state.step).toBe(1);
    model.dispose();
    opt.dispose();
  });

  it('gradients of a PPO-like functional match finite differences on webgpu', async () => {
    const model = createModel(CONFIG, 11, { initStd: 0.3 });
    const rng = new Rng(12, 'fd');
    const { loss, a, b } = ppoLikeLoss(model, rng, 2, { temperature: 0.9 });
    const { value, grads } = tf.variableGrads(loss, model.variables);
    value.dispose();
    const flat = await model.getWeightsAsync();
    const lossAt = async (w: Float32Array) => {
      model.setWeights(w);
      return (await tf.tidy(loss).data())[0];
    };
    for (const name of ['wte', 'wpe', 'h0.attn.wqkv', 'h1.mlp.wfc', 'lnf.g', 'head']) {
      const i = model.specs.findIndex((s) => s.name === name);
      const spec = model.specs[i];
      const g = (await grads[model.variables[i].name].data()) as Float32Array;
      let worst = 0;
      for (let k = 0; k < 2; k++) {
        const d = randomArray(rng, spec.size);
        const an = dot(g, d);
        worst = Math.max(worst, await sliceDirectionalError(lossAt, flat, spec, d, an));
      }
      expect(worst, name).toBeLessThan(3e-2);
    }
    model.setWeights(flat);
    tf.dispose([a, b, ...Object.values(grads)]);
    model.dispose();
  });

  it("KV sampling with the 'concat' cache: the same tokens and log-probabilities as cpu", async () => {
    const opts = { maxNewTokens: 8, temperature: 0.9, topP: 0.95, stopTokens: [0], seed: 13 };
    const ref = await on('cpu', () => {
      const m = createModel(CONFIG, 21, { initStd: 0.3 });
      const out = sample(m, PROMPTS, opts);
      m.dispose();
      return out;
    });
    const model = createModel(CONFIG, 21, { initStd: 0.3 });
    expect(() => sample(model, PROMPTS, opts)).toThrow(/Async/);
    const before = tf.memory().numTensors;
    const out = await sampleAsync(model, PROMPTS, opts);
    expect(tf.memory().numTensors).toBe(before + decodeWeightTensors(model)); // the cache was released
    expectSameSamples(out, ref);
    // Without the cache (a full recompute each step) webgpu samples the same.
    expectSameSamples(await sampleAsync(model, PROMPTS, { ...opts, useKvCache: false }), ref);
    model.dispose();
  });

  it('segment resume: a decode split into segments equals an uninterrupted one, and the cache is rebuilt after new weights', async () => {
    const model = createModel(CONFIG, 23, { initStd: 0.3 });
    const newer = createModel(CONFIG, 24, { initStd: 0.3 });
    const newerWeights = await newer.getWeightsAsync();
    newer.dispose();
    await expectSegmentResume(model, PROMPTS, newerWeights, (weights) => {
      const m = createModel(CONFIG, 0);
      m.setWeights(weights);
      return m;
    });
    model.dispose();
  });
});

/** Tensors a model keeps for decoding once it has decoded (folded weights: 4 per layer, head, mean column, ε). */
function decodeWeightTensors(model: GPT): number {
  return 4 * model.config.n_layers + 3;
}

function expectSameSamples(out: SampledSequence[], ref: SampledSequence[]): void {
  out.forEach((s, i) => {
    expect(s.tokens).toEqual(ref[i].tokens);
    expect(s.stopReason).toBe(ref[i].stopReason);
    expect(maxAbsDiff(s.rawLogProbs, ref[i].rawLogProbs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(s.logProbs, ref[i].logProbs)).toBeLessThan(1e-4);
  });
}

/**
 * Backend order and every fallback reason, each in a fresh process (the backend is chosen once
 * per process) through `marsrl doctor --json`. VK_DRIVER_FILES names the Vulkan drivers the
 * loader may use: Mesa's lavapipe alone gives the software adapter even on a machine with a GPU,
 * and a file that does not exist hides every driver, so Dawn has no adapter, as on a machine
 * without one.
 */
describe('backend choice and fallback reasons', () => {
  const doctor = (args: string[], env: NodeJS.ProcessEnv = {}): BackendInfo => {
    const r = marsrl(['doctor', '--json', ...args], env);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as BackendInfo;
  };
  const noDriver = { VK_DRIVER_FILES: '/nonexistent/icd.json', VK_ICD_FILENAMES: '/nonexistent/icd.json' };
  const lavapipe = ['/usr/share/vulkan/icd.d/lvp_icd.json', '/usr/share/vulkan/icd.d/lvp_icd.x86_64.json'].find((f) => existsSync(f)) ?? 'lvp_icd.json (install mesa-vulkan-drivers)';
  const softwareOnly = { VK_DRIVER_FILES: lavapipe, VK_ICD_FILENAMES: lavapipe };

  it('auto never chooses a software adapter and says why', () => {
    const r = doctor([], softwareOnly);
    expect(r.adapter?.software).toBe(true);
    expect(r.name).not.toBe('webgpu');
    expect(r.skipped[0].backend).toBe('webgpu');
    expect(r.skipped[0].reason).toMatch(/^software adapter .*llvmpipe.*auto does not choose it.*runtime\.backend: webgpu/);
    // The order after webgpu: the native packages (absent here), then wasm.
    expect(r.skipped.map((s) => s.backend)).toEqual(['webgpu', 'tensorflow-gpu', 'tensorflow-cpu']);
    expect(r.name).toBe('wasm');
    expect(r.warnings).toEqual([]);
  });

  it('without a Vulkan driver there is no adapter: auto says so, an explicit webgpu falls back with a warning', () => {
    const auto = doctor([], noDriver);
    expect(auto.adapter).toBeNull();
    expect(auto.skipped[0]).toEqual({ backend: 'webgpu', reason: expect.stringMatching(/^no WebGPU adapter: Dawn found no Vulkan device: install/) });
    expect(auto.name).toBe('wasm');
    const asked = doctor(['--backend', 'webgpu'], noDriver);
    expect(asked.name).toBe('wasm');
    expect(asked.fallback).toBe(true);
    expect(asked.warnings.join('\n')).toMatch(/"webgpu" was requested but could not be used \(no WebGPU adapter/);
  });

  it('an explicit webgpu uses the software adapter with a warning; other requests skip it as not requested', () => {
    const asked = doctor(['--backend', 'webgpu'], softwareOnly);
    expect(asked.name).toBe('webgpu');
    expect(asked.fallback).toBe(false);
    expect(asked.skipped).toEqual([]);
    expect(asked.warnings.join('\n')).toMatch(/software adapter .*llvmpipe/);
    const wasm = doctor(['--backend', 'wasm']);
    expect(wasm.skipped.map((s) => [s.backend, s.reason])).toEqual(
      ['webgpu', 'tensorflow-gpu', 'tensorflow-cpu'].map((b) => [b, 'not requested (backend preference is "wasm")']),
    );
    expect(wasm.adapter).toBeNull(); // not probed
    const off = doctor([], { ...softwareOnly, MARSRL_WEBGPU: '0' });
    expect(off.skipped[0]).toEqual({ backend: 'webgpu', reason: 'disabled by MARSRL_WEBGPU=0 (the WebGPU adapter was not probed)' });
    expect(off.adapter).toBeNull();
  });
});
