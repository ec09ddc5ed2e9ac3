/**
 * Sizes computed before anything is allocated (issue #36): parameter counts by arithmetic (equal
 * to summing the tensor list), refusals that name the field with the figure and the machine's
 * limit, and extremes over arrays of any length.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRunConfig, validateConfig } from '../../src-main/engine/preflight';
import { hfParameterCount, hfTensorCount, hfTensorShapes, hfWeightsProblem, parseHfConfig, type HfArchConfig } from '../../src-main/engine/hf/config';
import { checkHfTensors } from '../../src-main/engine/hf/load';
import { decodeBatchBytes, gptParameterCount, machineMemoryBytes } from '../../src-main/engine/model/size-limits';
import { createModel } from '../../src-main/engine/gpt/model';
import { initBackend } from '../../src-main/engine/model/backend';
import { maxNumber, maxOf, minNumber, minOf, pushAll } from '../../src-main/engine/util/arrays';
import { Rng } from '../../src-main/engine/util/rng';
import { REPO_ROOT } from '../helpers/cli';

const TINY_QWEN = path.join(REPO_ROOT, 'resources', 'checkpoints', 'tiny-qwen', 'solver');
const tinyQwen = (): HfArchConfig => parseHfConfig(JSON.parse(fs.readFileSync(path.join(TINY_QWEN, 'config.json'), 'utf8')), 'config.json');

describe('parameter counts by arithmetic', () => {
  it('equal the sum over the tensor list for Llama, Qwen2 (q/k/v biases) and Qwen3 (q/k norms), tied or not', () => {
    const rng = new Rng(5, 'sizes');
    for (const architectures of ['LlamaForCausalLM', 'Qwen2ForCausalLM', 'Qwen3ForCausalLM']) {
      for (let i = 0; i < 6; i++) {
        const heads = rng.int(1, 4) * 2;
        const c = parseHfConfig(
          {
            architectures: [architectures], model_type: { LlamaForCausalLM: 'llama', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3' }[architectures],
            hidden_size: heads * 8, intermediate_size: rng.int(8, 64), num_hidden_layers: rng.int(1, 5), num_attention_heads: heads, num_key_value_heads: heads / 2,
            vocab_size: rng.int(10, 500), max_position_embeddings: 128, tie_word_embeddings: rng.next() < 0.5,
          },
          'config.json',
        );
        const shapes = hfTensorShapes(c);
        expect(hfParameterCount(c)).toBe(shapes.reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0));
        expect(hfTensorCount(c)).toBe(shapes.length);
      }
    }
  });

  it("count the Studio's GPT as the model itself does", async () => {
    await initBackend('cpu');
    const config = { vocabSize: 37, d_model: 32, n_layers: 3, n_heads: 4, context: 64, mlp_ratio: 4 };
    const model = createModel(config, 1);
    try {
      expect(gptParameterCount(config, config.vocabSize)).toBe(model.numParams);
    } finally {
      model.dispose();
    }
  });
});

describe('refusals before allocation', () => {
  it('a config.json of 1 000 000 layers: the figure, the key and the machine limit; the tensor check stops at the first missing tensor', () => {
    const c = { ...tinyQwen(), numLayers: 1_000_000 };
    const problem = hfWeightsProblem(c)!;
    expect(problem.key).toBe('num_hidden_layers');
    expect(problem.message).toMatch(/num_hidden_layers 1,000,000 .* gives [\d,]+ parameters: [\d.]+ GiB as float32 .* this machine has [\d.]+ GiB of memory/);
    const vocab = hfWeightsProblem({ ...tinyQwen(), vocabSize: 1e12 })!;
    expect(vocab.key).toBe('vocab_size');
    expect(hfWeightsProblem(tinyQwen())).toBeNull();
    // The files have the tiny model's layers: the million-layer config is refused at the first
    // layer it lacks, without listing the 11 million tensors it implies.
    expect(() => checkHfTensors(TINY_QWEN, c)).toThrow(/model\.layers\.\d+\..*missing: config\.json/);
  });

  it('problems_per_step 4096 × solver_group 256: refused at validation on rollout.problems_per_step with the figure, not a stack overflow in the step', () => {
    expect(() => loadRunConfig({ preset: 'quick', overrides: ['rollout.problems_per_step=4096', 'rollout.solver_group=256'] })).toThrow(
      /rollout\.problems_per_step: rollout\.problems_per_step 4096 × rollout\.solver_group 256 = 1,048,576 sequences decoded at once by policy "solver": their key\/value cache and logits need at least [\d.]+ GiB .* this machine has [\d.]+ GiB of memory; nothing was allocated\. Lower rollout\.problems_per_step or rollout\.solver_group/,
    );
    // The shipped presets fit.
    for (const preset of ['quick', 'marsrl-paper', 'drmas-paper']) expect(() => loadRunConfig({ preset, overrides: [] })).not.toThrow();
    const evalTooLarge = validateConfig({ task: { test_size: 1_000_000 }, eval: { problems: 1_000_000, k: 256 } });
    expect(!evalTooLarge.ok && evalTooLarge.issues.map((i) => i.path)).toEqual(['eval.problems']);
  });

  it('the decode-batch lower bound is the key/value cache of every layer and position plus a row of logits', () => {
    // 2 (keys, values) × 3 layers × 16 wide × 10 positions + 50 logits, × 4 bytes, × 7 rows.
    expect(decodeBatchBytes({ params: 0, trained: 0, layers: 3, kvWidth: 16, vocab: 50, context: 64 }, 7, 10)).toBe(7 * (2 * 3 * 16 * 10 + 50) * 4);
    // Positions never exceed the context.
    expect(decodeBatchBytes({ params: 0, trained: 0, layers: 1, kvWidth: 1, vocab: 0, context: 4 }, 1, 100)).toBe(2 * 4 * 4);
    expect(machineMemoryBytes()).toBeGreaterThan(0);
  });

  it('rejects configs of null values and arrays as field errors (the HTTP fuzz found a 500 there)', () => {
    for (const input of [[], [null, 1], { policies: null }, { policies: { a: null } }]) {
      const r = validateConfig(input);
      expect(r.ok).toBe(false);
    }
  });
});

describe('extremes and appends over any length', () => {
  it('agree with Math.max / Math.min (NaN and empty included) and do not overflow the stack at a million elements', () => {
    const rng = new Rng(9, 'arrays');
    for (let n = 0; n < 40; n++) {
      const xs = Array.from({ length: n }, () => (rng.next() < 0.05 ? NaN : rng.next() * 200 - 100));
      expect(maxNumber(xs)).toBe(Math.max(...xs));
      expect(minNumber(xs)).toBe(Math.min(...xs));
      expect(maxOf(xs, (x) => -x)).toBe(Math.max(...xs.map((x) => -x)));
      expect(minOf(xs, (x) => 2 * x)).toBe(Math.min(...xs.map((x) => 2 * x)));
    }
    const big = Array.from({ length: 1_000_000 }, (_, i) => i);
    expect(() => Math.max(...big)).toThrow(RangeError);
    expect(maxNumber(big)).toBe(999_999);
    expect(minOf(big, (x) => -x)).toBe(-999_999);
    expect(pushAll([1], big).length).toBe(1_000_001);
  });
});
