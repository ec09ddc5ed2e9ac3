/**
 * `marsrl pretrain` for the Hugging Face family (issue #14): `pretrain.hf_scratch` makes a tiny
 * Qwen3 for the task (tokenizer learned on its texts, fresh weights) and points every hf policy at
 * it without its LoRA block; the warm-started policy leaves as a Hugging Face folder whose weights
 * are the trained ones and whose recorded digests are the folder's own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRunConfig } from '../../src-main/engine/preflight';
import { hfModelIdentity, loadHfModel } from '../../src-main/engine/hf/load';
import { initBackend } from '../../src-main/engine/model/backend';
import { createPolicy } from '../../src-main/engine/training/policies';
import { prepareHfScratch, pretrainPolicy, PRETRAIN_INFO_FILE, saveHfWarmStart } from '../../src-main/engine/training/pretrain';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-pretrain-hf-');
let scratch: string | null = null;
afterAll(() => {
  tmp.cleanup();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

describe('pretrain of a tiny Qwen3 from scratch', () => {
  it('makes the model for the task, trains it and writes a Hugging Face folder', async () => {
    await initBackend('wasm');
    const sizes = ['layers=1', 'hidden=16', 'heads=2', 'kv_heads=1', 'head_dim=8', 'intermediate=16', 'merges=60'].map((s) => `pretrain.hf_scratch.${s}`);
    const { config } = loadRunConfig({
      preset: 'tiny-qwen',
      overrides: ['policies.solver.model.lora.rank=4', 'agents.verifier=solver', 'agents.corrector=solver', 'pretrain.steps=2', 'pretrain.batch_size=3', 'pretrain.warmup_steps=0', 'task.train_size=60', 'task.test_size=4', 'eval.problems=2', 'rollout.max_response_tokens=24', 'pipeline.segment_tokens=24', ...sizes],
    });
    expect(config.policies.solver.model.kind === 'hf' && config.policies.solver.model.lora?.rank).toBe(4);
    const data = loadTaskData(config);
    scratch = prepareHfScratch(config, data.family, data.train);
    expect(scratch).not.toBeNull();
    // The policy pretrain trains (every role plays it here) starts from the scratch model; unused ones are left alone.
    const trainedModel = config.policies.solver.model;
    expect(trainedModel.kind === 'hf' && trainedModel.path).toBe(scratch);
    // A warm start trains every weight: the LoRA block the run would use is dropped.
    expect(trainedModel.kind === 'hf' && trainedModel.lora).toBeUndefined();
    const spare = config.policies.verifier.model;
    expect(spare.kind === 'hf' && spare.path).toBe('checkpoints/tiny-qwen/verifier');
    const made = JSON.parse(fs.readFileSync(path.join(scratch!, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(made).toMatchObject({ architectures: ['Qwen3ForCausalLM'], hidden_size: 16, num_hidden_layers: 1, num_key_value_heads: 1, head_dim: 8, tie_word_embeddings: true });

    const { policy } = createPolicy('solver', config.policies.solver, data.tokenizer, config.seed);
    const before = policy.model.getWeights();
    const history = await pretrainPolicy(policy, { family: data.family, config, pretrain: config.pretrain, train: data.train, heldOut: data.test.slice(0, 2), seed: 1, evalEvery: 0 });
    expect(history.map((e) => e.step)).toEqual([2]);
    expect(Object.keys(history[0].scores).sort()).toEqual(['corrector', 'solver', 'verifier']);
    const trained = policy.model.getWeights();
    expect(trained.some((v, i) => v !== before[i])).toBe(true);

    const out = path.join(tmp.dir, 'solver');
    saveHfWarmStart(out, policy, { chosenStep: 2 });
    policy.dispose();
    const info = JSON.parse(fs.readFileSync(path.join(out, PRETRAIN_INFO_FILE), 'utf8')) as { chosenStep: number; configDigest: string; weightsDigest: string };
    const identity = hfModelIdentity(out);
    expect(info).toMatchObject({ chosenStep: 2, configDigest: identity.configDigest, weightsDigest: identity.weightsDigest });
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'model.safetensors']) expect(fs.existsSync(path.join(out, f)), f).toBe(true);
    const loaded = loadHfModel(out);
    try {
      expect([...loaded.model.getWeights()]).toEqual([...trained]);
    } finally {
      loaded.model.dispose();
    }
  }, 120_000);
});
