/**
 * LoRA on the Hugging Face family (issue #14, "LoRA correctness"), on a tiny random Qwen3
 * checkpoint with the real Qwen3 tokenizer: adapter gradients equal finite differences, a merged
 * export's logits equal base + adapters, zero adapters and switched-off adapters equal the base
 * bit for bit, the PEFT folder's names and shapes are PEFT's, one base is held per process, and
 * bad settings are refused before anything is loaded.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportHfFolder } from '../../src-main/engine/hf/export';
import { hfNamedTensors, loadHfModel } from '../../src-main/engine/hf/load';
import { chunkedHeadStats } from '../../src-main/engine/hf/model';
import {
  checkLoraSettings,
  DEFAULT_LORA_TARGETS,
  heldHfBaseCount,
  loadLoraHfModel,
  LoraSettingsError,
  loraSettingsFromBlock,
  mergeLoraTensors,
  PEFT_CONFIG,
  PEFT_WEIGHTS,
  readPeftAdapter,
  writePeftAdapter,
  type LoraHfModel,
  type LoraSettings,
} from '../../src-main/engine/hf/lora';
import { resolveConfig, validateConfig } from '../../src-main/engine/preflight';
import { hfConfigJson } from '../../src-main/engine/hf/config';
import { openSafetensors } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { sample } from '../../src-main/engine/model/sampling';
import { createPolicy } from '../../src-main/engine/training/policies';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { Rng } from '../../src-main/engine/util/rng';
import { marsrl, marsrlMain } from '../helpers/cli';
import { logSoftmax, makeCheckpoint, maxAbs, randomPrompts, torchLogProbs, type Checkpoint } from './fixtures';

let ckpt: Checkpoint;
let tmp: string;
const all: LoraSettings = { rank: 4, alpha: 8, dropout: 0, targets: [...DEFAULT_LORA_TARGETS] };

beforeAll(async () => {
  await initBackend('wasm');
  // Qwen3 layout: hidden 64, 4 heads of head_dim 32 (q_proj 64→128), 2 KV heads (k/v 64→64), MLP 96.
  ckpt = makeCheckpoint('qwen3');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-lora-'));
});
afterAll(() => {
  ckpt.cleanup();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** B (zero at initialisation) set to N(0, σ²) so the adapters change the function. */
function randomizeB(model: LoraHfModel, seed: number, sigma = 0.05): void {
  const flat = model.getWeights();
  const rng = new Rng(seed, 'test/B');
  for (const s of model.specs) if (s.name.endsWith('lora_B.weight')) for (let i = 0; i < s.size; i++) flat[s.offset + i] = sigma * rng.normal();
  model.setWeights(flat);
}

function logitsOf(m: { logits(t: number[][]): tf.Tensor3D }, tokens: number[][]): Float32Array {
  const t = m.logits(tokens);
  const out = t.dataSync() as Float32Array;
  t.dispose();
  return out;
}

function bitwiseEqual(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

describe('LoRA policy', () => {
  it('with B = 0 (fresh adapters) equals the base exactly; adapters off equals the base exactly, on does not', () => {
    const base = loadHfModel(ckpt.dir).model;
    const { model } = loadLoraHfModel(ckpt.dir, all, { seed: 1 });
    try {
      const prompts = randomPrompts(3, [7, 7], ckpt.config.vocabSize);
      const baseLogits = logitsOf(base, prompts);
      expect(bitwiseEqual(logitsOf(model, prompts), baseLogits)).toBe(true);
      // The decoding path (JS-array cache on wasm) goes through the hook too.
      const leftPad = [0, 0];
      expect(bitwiseEqual(model.lastLogits(prompts, leftPad), base.lastLogits(prompts, leftPad))).toBe(true);

      randomizeB(model, 2);
      const on = logitsOf(model, prompts);
      expect(maxAbs(on, baseLogits)).toBeGreaterThan(1e-3);
      // The decode path with adapters equals the tensor path with adapters (last positions).
      const V = ckpt.config.vocabSize;
      const lastOn = model.lastLogits(prompts, leftPad);
      const fromFull = new Float32Array(2 * V);
      for (let b = 0; b < 2; b++) fromFull.set(on.subarray((b * 7 + 6) * V, (b * 7 + 7) * V), b * V);
      expect(maxAbs(lastOn, fromFull)).toBeLessThan(1e-4);

      model.adaptersEnabled = false;
      expect(bitwiseEqual(logitsOf(model, prompts), baseLogits)).toBe(true);
      expect(bitwiseEqual(model.lastLogits(prompts, leftPad), base.lastLogits(prompts, leftPad))).toBe(true);
      model.adaptersEnabled = true;

      const ref = model.referenceModel();
      expect(ref.variables).toHaveLength(0);
      expect(ref.base.model).toBe(model.base.model); // no second copy of the base
      expect(bitwiseEqual(logitsOf(ref, prompts), baseLogits)).toBe(true);
      ref.dispose();
    } finally {
      model.dispose();
      base.dispose();
    }
  });

  it('variables are the adapters only (PEFT names, [in, r] and [r, out]); one frozen base per process, released with its last user', () => {
    const before = heldHfBaseCount();
    const a = loadLoraHfModel(ckpt.dir, all, { seed: 1 }).model;
    const b = loadLoraHfModel(ckpt.dir, { ...all, targets: ['q_proj', 'v_proj'] }, { seed: 2 }).model;
    expect(heldHfBaseCount()).toBe(before + 1);
    expect(b.base.model).toBe(a.base.model);
    expect(a.base.model.variables.every((v) => !v.trainable)).toBe(true);
    expect(a.specs).toHaveLength(2 * 7 * 2);
    expect(a.specs[0]).toMatchObject({ name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight', shape: [64, 4] });
    expect(a.specs[1]).toMatchObject({ name: 'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight', shape: [4, 128] });
    expect(a.numParams).toBe(2 * (4 * (64 + 128) + 2 * 4 * (64 + 64) + 4 * (128 + 64) + 2 * 4 * (64 + 96) + 4 * (96 + 64)));
    expect(a.getWeights()).toHaveLength(a.numParams);
    // PEFT's A init: kaiming_uniform_(a=√5) = U(−1/√in, 1/√in); B = 0.
    const A = a.variables[0].dataSync();
    const bound = 1 / Math.sqrt(64);
    expect(Math.max(...A.map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...A.map(Math.abs))).toBeGreaterThan(0.8 * bound);
    expect(a.variables[1].dataSync().every((x) => x === 0)).toBe(true);
    // A gradient over every trainable variable reaches the adapters only.
    const tokens = randomPrompts(4, [5], ckpt.config.vocabSize);
    const { grads, value } = tf.variableGrads(() => {
      const { stats } = a.nextTokenStatsTimeMajor(tokens, { entropy: false });
      return tf.sum(tf.slice(stats, [0, 0], [1, -1])) as tf.Scalar;
    });
    expect(Object.keys(grads).sort()).toEqual(a.variables.map((v) => v.name).sort());
    tf.dispose([value, ...Object.values(grads)]);
    a.dispose();
    expect(heldHfBaseCount()).toBe(before + 1);
    b.dispose();
    expect(heldHfBaseCount()).toBe(before);
  });

  it('adapter gradients equal central finite differences (float64 sums, step 1e-2, |Δ| ≤ 2e-3·max(|g·u|, 1))', () => {
    const { model } = loadLoraHfModel(ckpt.dir, { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] }, { seed: 5 });
    try {
      randomizeB(model, 6, 0.1); // with B = 0, ∂L/∂A would be 0 and half the check empty
      const tokens = randomPrompts(7, [6, 6], ckpt.config.vocabSize);
      const n = 5 * 2; // (T − 1)·B log-probs
      const rng = new Rng(8, 'test/weights');
      const coef = Float64Array.from({ length: n }, () => rng.normal());
      // L(θ) = Σ coef_i · log π_i, summed in float64 from the float32 log-probs.
      const lossF64 = (): number => {
        const { stats } = model.nextTokenStatsTimeMajor(tokens, { entropy: false });
        const lp = stats.dataSync();
        stats.dispose();
        let s = 0;
        for (let i = 0; i < n; i++) s += coef[i] * lp[i];
        return s;
      };
      const coefT = tf.tensor1d(Float32Array.from(coef));
      const { grads, value } = tf.variableGrads(() => {
        const { stats } = model.nextTokenStatsTimeMajor(tokens, { entropy: false });
        return tf.sum(tf.mul(tf.squeeze(tf.slice(stats, [0, 0], [1, -1])), coefT)) as tf.Scalar;
      }, model.variables);
      const g = new Float64Array(model.numParams);
      model.specs.forEach((s, i) => g.set(grads[model.variables[i].name].dataSync(), s.offset));
      tf.dispose([value, coefT, ...Object.values(grads)]);
      const gNorm = Math.sqrt(g.reduce((a, x) => a + x * x, 0));
      expect(gNorm).toBeGreaterThan(1e-2);
      // Both halves carry gradient.
      const aPart = model.specs.filter((s) => s.name.includes('lora_A')).reduce((acc, s) => acc + g.slice(s.offset, s.offset + s.size).reduce((a, x) => a + x * x, 0), 0);
      expect(Math.sqrt(aPart)).toBeGreaterThan(1e-3);

      const theta = model.getWeights();
      // Directions: the gradient's own (largest change, so float32 noise is smallest relative to
      // it), a random unit vector, and the single coordinates of A and of B with the largest
      // gradient. Step h = 1e-2 keeps the O(h²) truncation error near 1e-4 relative and the float32
      // noise of the loss (~1e-5, summed in float64) over 2h near 1e-3 absolute, both below the
      // tolerance |Δ| ≤ 2e-3 · max(|analytic|, 1).
      const h = 1e-2;
      const dirRng = new Rng(9, 'test/dir');
      const random = Float64Array.from({ length: g.length }, () => dirRng.normal());
      const largest = (part: string) => {
        let best = -1;
        for (const s of model.specs) if (s.name.includes(part)) for (let i = s.offset; i < s.offset + s.size; i++) if (best < 0 || Math.abs(g[i]) > Math.abs(g[best])) best = i;
        const e = new Float64Array(g.length);
        e[best] = 1;
        return e;
      };
      for (const u of [g, random, largest('lora_A'), largest('lora_B')]) {
        const norm = Math.sqrt(u.reduce((a, x) => a + x * x, 0));
        const unit = u.map((x) => x / norm);
        const at = (sign: number) => {
          model.setWeights(Float32Array.from(theta, (x, i) => x + sign * h * unit[i]));
          return lossF64();
        };
        const fd = (at(1) - at(-1)) / (2 * h);
        const analytic = unit.reduce((a, x, i) => a + x * g[i], 0);
        expect(Math.abs(fd - analytic)).toBeLessThanOrEqual(2e-3 * Math.max(Math.abs(analytic), 1));
      }
      model.setWeights(theta);
    } finally {
      model.dispose();
    }
  });

  it('dropout acts in training passes only and is the same for the same seed', () => {
    const settings = { ...all, dropout: 0.5 };
    const a = loadLoraHfModel(ckpt.dir, settings, { seed: 11 }).model;
    const b = loadLoraHfModel(ckpt.dir, settings, { seed: 11 }).model;
    try {
      randomizeB(a, 3);
      b.setWeights(a.getWeights());
      const tokens = randomPrompts(12, [6], ckpt.config.vocabSize);
      const lp = (m: LoraHfModel) => {
        const { stats } = m.nextTokenStatsTimeMajor(tokens, { entropy: false });
        const out = stats.dataSync().slice() as Float32Array;
        stats.dispose();
        return out;
      };
      const evalPass = lp(a);
      a.training = true;
      b.training = true;
      const trainA = lp(a);
      expect(maxAbs(trainA, evalPass)).toBeGreaterThan(1e-4);
      expect(bitwiseEqual(trainA, lp(b))).toBe(true);
      a.training = false;
      expect(bitwiseEqual(lp(a), evalPass)).toBe(true);
    } finally {
      a.dispose();
      b.dispose();
    }
  });
});

describe('LoRA through the policy seam', () => {
  it('sampled log-probs (KV-cache decoding with adapters) equal recomputed ones, and no tensor outlives a call', () => {
    const { model } = loadLoraHfModel(ckpt.dir, all, { seed: 51 });
    try {
      randomizeB(model, 52, 0.2);
      const prompts = randomPrompts(53, [5, 5], ckpt.config.vocabSize);
      const before = tf.memory().numTensors;
      const seqs = sample(model, prompts, { maxNewTokens: 6, temperature: 1, seed: 54 });
      for (let b = 0; b < 2; b++) {
        const { stats, T } = model.nextTokenStatsTimeMajor([[...prompts[b], ...seqs[b].tokens]], { entropy: false });
        const lp = stats.dataSync().slice(0, T - 1);
        stats.dispose();
        const recomputed = lp.slice(prompts[b].length - 1);
        expect(maxAbs(recomputed, seqs[b].logProbs)).toBeLessThan(1e-4);
      }
      const ref = model.referenceModel();
      ref.lastLogits(prompts, [0, 0]);
      ref.dispose();
      expect(tf.memory().numTensors).toBe(before);
    } finally {
      model.dispose();
    }
  });
});

describe('adapters out', () => {
  it("the PEFT folder has PEFT's tensor names and shapes and adapter_config, and reads back to the same function", () => {
    const settings: LoraSettings = { rank: 4, alpha: 16, dropout: 0.05, targets: ['v_proj', 'q_proj', 'down_proj'] };
    const { model } = loadLoraHfModel(ckpt.dir, settings, { seed: 21 });
    const out = path.join(tmp, 'peft');
    try {
      randomizeB(model, 22);
      writePeftAdapter(out, { config: model.config, settings: model.settings!, weights: model.loraWeights(), baseModelNameOrPath: 'Qwen/Qwen3-0.6B' });
      // PEFT's documented naming for a LlamaForCausalLM-style model: base_model.model.<module path>.lora_A.weight
      // [r, in_features] and .lora_B.weight [out_features, r]; here in/out: q 64→128, v 64→64, down 96→64,
      // in each of the two layers.
      const layer = (l: number): Record<string, number[]> => ({
        [`base_model.model.model.layers.${l}.self_attn.q_proj.lora_A.weight`]: [4, 64],
        [`base_model.model.model.layers.${l}.self_attn.q_proj.lora_B.weight`]: [128, 4],
        [`base_model.model.model.layers.${l}.self_attn.v_proj.lora_A.weight`]: [4, 64],
        [`base_model.model.model.layers.${l}.self_attn.v_proj.lora_B.weight`]: [64, 4],
        [`base_model.model.model.layers.${l}.mlp.down_proj.lora_A.weight`]: [4, 96],
        [`base_model.model.model.layers.${l}.mlp.down_proj.lora_B.weight`]: [64, 4],
      });
      const fixture = { ...layer(0), ...layer(1) };
      const st = openSafetensors(path.join(out, PEFT_WEIGHTS));
      expect(Object.fromEntries([...st.tensors].map(([n, t]) => [n, t.shape]))).toEqual(fixture);
      expect([...st.tensors.values()].every((t) => t.dtype === 'F32')).toBe(true);
      const cfg = JSON.parse(fs.readFileSync(path.join(out, PEFT_CONFIG), 'utf8'));
      expect(cfg).toMatchObject({ peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 4, lora_alpha: 16, lora_dropout: 0.05, bias: 'none', fan_in_fan_out: false, base_model_name_or_path: 'Qwen/Qwen3-0.6B' });
      expect([...cfg.target_modules].sort()).toEqual(['down_proj', 'q_proj', 'v_proj']);
      expect(() => writePeftAdapter(out, { config: model.config, settings: model.settings!, weights: model.loraWeights(), baseModelNameOrPath: 'x' })).toThrow(/already exists/);

      const back = readPeftAdapter(out, ckpt.config);
      expect(back.settings).toEqual({ rank: 4, alpha: 16, dropout: 0.05, targets: ['q_proj', 'v_proj', 'down_proj'] });
      const fresh = loadLoraHfModel(ckpt.dir, back.settings, { seed: 99 }).model;
      fresh.setLoraWeights(back.weights);
      expect(bitwiseEqual(fresh.getWeights(), model.getWeights())).toBe(true);
      fresh.dispose();
    } finally {
      model.dispose();
    }
  });

  it("the PEFT folder, applied to the base by the PyTorch peer's own reading of PEFT's names and scaling, gives the log-probs of base + adapters within 1e-4", () => {
    const settings: LoraSettings = { rank: 4, alpha: 16, dropout: 0, targets: ['q_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj'] };
    const { model } = loadLoraHfModel(ckpt.dir, settings, { seed: 41 });
    const out = path.join(tmp, 'peft-for-torch');
    try {
      randomizeB(model, 42, 0.2);
      writePeftAdapter(out, { config: model.config, settings: model.settings!, weights: model.loraWeights(), baseModelNameOrPath: ckpt.dir });
      const prompts = randomPrompts(43, [8, 8], ckpt.config.vocabSize);
      const V = ckpt.config.vocabSize;
      const ours = logitsOf(model, prompts);
      const theirs = torchLogProbs(ckpt.dir, prompts, out);
      const theirsBase = torchLogProbs(ckpt.dir, prompts);
      let worst = 0;
      let adapterEffect = 0;
      prompts.forEach((p, b) => {
        for (let t = 0; t < p.length; t++) {
          const row = logSoftmax(ours, (b * p.length + t) * V, V);
          worst = Math.max(worst, maxAbs(row, theirs[b].subarray(t * V, (t + 1) * V)));
          adapterEffect = Math.max(adapterEffect, maxAbs(theirs[b].subarray(t * V, (t + 1) * V), theirsBase[b].subarray(t * V, (t + 1) * V)));
        }
      });
      expect(adapterEffect).toBeGreaterThan(1e-2); // the adapters matter to the peer too
      expect(worst).toBeLessThanOrEqual(1e-4);
    } finally {
      model.dispose();
    }
  });

  it('a merged Hugging Face folder (W + (alpha/r)·B A) has the logits of base + adapters within 1e-4', () => {
    const { model } = loadLoraHfModel(ckpt.dir, all, { seed: 31 });
    const out = path.join(tmp, 'merged');
    try {
      randomizeB(model, 32, 0.2);
      const tensors = mergeLoraTensors(hfNamedTensors(model.base.model), model.settings!, model.loraWeights());
      exportHfFolder(out, { config: model.config, configJson: hfConfigJson(model.config), tensors, dtype: 'F32', tokenizerDir: ckpt.dir });
      const merged = loadHfModel(out).model;
      const prompts = randomPrompts(33, [8, 8], ckpt.config.vocabSize);
      const withAdapters = logitsOf(model, prompts);
      const base = logitsOf(model.base.model, prompts);
      expect(maxAbs(withAdapters, base)).toBeGreaterThan(1e-2); // the adapters matter
      expect(maxAbs(logitsOf(merged, prompts), withAdapters)).toBeLessThanOrEqual(1e-4);
      merged.dispose();
    } finally {
      model.dispose();
    }
  });
});

describe('bad LoRA settings', () => {
  it('an unknown target is refused naming the modules that exist, a rank above min(in, out) naming the layer, before any weights are read', () => {
    const before = heldHfBaseCount();
    expect(() => loadLoraHfModel(ckpt.dir, { ...all, targets: ['q_proj', 'qkv_proj'] as never }, { seed: 1, where: 'policies.solver.model.lora' })).toThrow(
      /policies\.solver\.model\.lora\.targets: "qkv_proj" is not a module of Qwen3ForCausalLM; its linear modules are q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj/,
    );
    // k_proj is 64 → 64 (2 KV heads × 32): rank 65 cannot fit; q_proj alone (64 → 128) allows 64.
    expect(() => loadLoraHfModel(ckpt.dir, { ...all, rank: 65 }, { seed: 1 })).toThrow(/lora\.rank: rank 65 is larger than the q_proj layer allows \(128×64, so at most min\(in, out\) = 64\)/);
    expect(() => checkLoraSettings(ckpt.config, { ...all, rank: 64, targets: ['q_proj'] })).not.toThrow();
    expect(() => checkLoraSettings(ckpt.config, { ...all, alpha: 0 })).toThrow(LoraSettingsError);
    expect(() => checkLoraSettings(ckpt.config, { ...all, dropout: 1 })).toThrow(/lora\.dropout/);
    expect(heldHfBaseCount()).toBe(before);
  });
});

describe('the lora block of a run config', () => {
  const withLora = (lora: Record<string, unknown>) => ({ policies: { solver: { model: { kind: 'hf', path: ckpt.dir, lora } } } });

  it('is checked against the folder\'s layers, naming the field path, before anything runs', () => {
    const bad = validateConfig(withLora({ rank: 65, targets: ['q_proj', 'attn.c_attn'] }));
    expect(bad.ok).toBe(false);
    const issues = bad.ok ? [] : bad.issues;
    expect(issues.map((i) => i.path).sort()).toEqual(['policies.solver.model.lora.rank', 'policies.solver.model.lora.targets']);
    expect(issues.find((i) => i.path.endsWith('.targets'))?.message).toMatch(/"attn\.c_attn" is not a module of Qwen3ForCausalLM; its linear modules are q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj/);
    expect(issues.find((i) => i.path.endsWith('.rank'))?.message).toMatch(/rank 65 is larger than the q_proj layer allows/);
    const typo = validateConfig(withLora({ rank: 4, alpah: 8 }));
    expect(typo.ok).toBe(false);
    expect(typo.ok ? [] : typo.issues.map((i) => i.path)).toEqual(['policies.solver.model.lora.alpah']);
    // A valid block is not silently ignored by a run: createPolicy makes a LoRA policy of those settings.
    const cfg = resolveConfig({ ...withLora({ rank: 4 }), agents: { solver: 'solver', verifier: 'solver', corrector: 'solver' } });
    const before = heldHfBaseCount();
    const { policy } = createPolicy('solver', cfg.policies.solver, loadTaskData(cfg).tokenizer, 1);
    expect((policy.model as LoraHfModel).settings).toEqual({ rank: 4, alpha: 8, dropout: 0, targets: [...DEFAULT_LORA_TARGETS] });
    policy.dispose();
    expect(heldHfBaseCount()).toBe(before);
    const good = validateConfig(withLora({ rank: 8 }));
    expect(good.ok).toBe(true);
    if (good.ok && good.config.policies.solver.model.kind === 'hf') {
      expect(loraSettingsFromBlock(good.config.policies.solver.model.lora!)).toEqual({ rank: 8, alpha: 16, dropout: 0, targets: [...DEFAULT_LORA_TARGETS] });
    }
  });
});

describe('marsrl model export of a PEFT adapter', () => {
  // The merge (--json) runs as a marsrl process; the peft rewrite and the refusals through the CLI's
  // `main` in this process (the same code and exit code, without a Node start-up each).
  it('--format hf merges onto --base (logits of base + adapters), --format peft rewrites it with the same tensors; bad uses refused with nothing written', async () => {
    const { model } = loadLoraHfModel(ckpt.dir, { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'o_proj', 'up_proj'] }, { seed: 41 });
    const adapterDir = path.join(tmp, 'cli-adapter');
    try {
      randomizeB(model, 42, 0.2);
      writePeftAdapter(adapterDir, { config: model.config, settings: model.settings!, weights: model.loraWeights(), baseModelNameOrPath: 'Qwen/Qwen3-0.6B' });
      const mergedDir = path.join(tmp, 'cli-merged');
      const hf = marsrl(['model', 'export', adapterDir, '--format', 'hf', '--base', ckpt.dir, '--dtype', 'f32', '--out', mergedDir, '--json']);
      expect(hf.code, hf.stderr).toBe(0);
      const merged = loadHfModel(mergedDir).model;
      const prompts = randomPrompts(43, [6], ckpt.config.vocabSize);
      expect(maxAbs(logitsOf(merged, prompts), logitsOf(model, prompts))).toBeLessThanOrEqual(1e-4);
      merged.dispose();

      const again = path.join(tmp, 'cli-peft');
      const peft = await marsrlMain(['model', 'export', adapterDir, '--format', 'peft', '--base', ckpt.dir, '--out', again]);
      expect(peft.code, peft.stderr).toBe(0);
      const a = openSafetensors(path.join(adapterDir, PEFT_WEIGHTS));
      const b = openSafetensors(path.join(again, PEFT_WEIGHTS));
      expect([...b.tensors.keys()].sort()).toEqual([...a.tensors.keys()].sort());
      expect(readPeftAdapter(again, ckpt.config).weights).toEqual(readPeftAdapter(adapterDir, ckpt.config).weights);

      // The adapter names a Hub id, not a folder: the base must be given.
      const noBase = await marsrlMain(['model', 'export', adapterDir, '--format', 'hf', '--out', path.join(tmp, 'never1')]);
      expect(noBase.code).not.toBe(0);
      expect(noBase.stderr).toMatch(/adapter_config\.json \(base_model_name_or_path\): "Qwen\/Qwen3-0\.6B" is not a local model folder; give the base with --base DIR/);
      const full = await marsrlMain(['model', 'export', ckpt.dir, '--format', 'peft', '--out', path.join(tmp, 'never2')]);
      expect(full.code).not.toBe(0);
      expect(full.stderr).toMatch(/--format peft needs a LoRA adapter as SRC/);
      expect(fs.existsSync(path.join(tmp, 'never1')) || fs.existsSync(path.join(tmp, 'never2'))).toBe(false);
    } finally {
      model.dispose();
    }
  });
});

describe('the chunked LM head with a frozen head', () => {
  it('gives the same input gradient without forming the head gradient (returned as zeros)', () => {
    const rng = new Rng(61, 'test/head');
    const [M, D, V] = [7, 8, 50];
    const h = tf.tensor2d(Float32Array.from({ length: M * D }, () => rng.normal()), [M, D]);
    const w = tf.tensor2d(Float32Array.from({ length: D * V }, () => 0.3 * rng.normal()), [D, V]);
    const targets = Int32Array.from({ length: M }, () => rng.int(0, V - 1));
    const gradsOf = (headGrad: boolean) => tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(chunkedHeadStats(a as tf.Tensor2D, b as tf.Tensor2D, targets, 0.7, true, 3, headGrad)))([h, w]);
    const [dhTrue, dwTrue] = gradsOf(true);
    const [dhFrozen, dwFrozen] = gradsOf(false);
    expect(bitwiseEqual(dhFrozen.dataSync() as Float32Array, dhTrue.dataSync() as Float32Array)).toBe(true);
    expect(dwFrozen.dataSync().every((x) => x === 0)).toBe(true);
    expect(maxAbs(dwTrue.dataSync(), dwFrozen.dataSync())).toBeGreaterThan(1e-3);
    tf.dispose([h, w, dhTrue, dwTrue, dhFrozen, dwFrozen]);
  });
});
