/**
 * Adapters out of a run (issue #14): `exportPolicyModel` and `marsrl model export RUN|CHECKPOINT
 * --format peft|hf`. A trained LoRA checkpoint exports as a PEFT folder with PEFT's documented
 * names and shapes and the very adapters trained; as a merged Hugging Face folder whose logits
 * equal base + adapters (≤ 1e-4); a run picks its newest checkpoint, `--policy` and `--step`; and
 * every refusal names the flag and the fix before anything is written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { loadHfModel } from '../../src-main/engine/hf/load';
import { LoraHfModel, PEFT_CONFIG, PEFT_WEIGHTS, readPeftAdapter } from '../../src-main/engine/hf/lora';
import { exportPolicyModel, PolicyExportError } from '../../src-main/engine/checkpoint/run-export';
import { openSafetensors, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { OutputExistsError } from '../../src-main/engine/hf/export';
import { createPolicy, savePolicies, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { Rng } from '../../src-main/engine/util/rng';
import { createRunManager } from '../../src-main/runner/manager';
import { marsrl } from '../helpers/cli';
import { runsDatabase } from '../helpers/runs-db';
import { tempDir } from '../helpers/tmp';
import { writeTinyQwen3Model } from '../training/hf-tiny';
import { tinyConfig } from '../training/tiny';
import { makeCheckpoint, maxAbs, randomPrompts, trainedLookingAdapters, type Checkpoint } from './fixtures';

const folder = tempDir('marsrl-run-export-');
let ckpt: Checkpoint;
let config: RunConfig;
let policy: PolicyRuntime;
/** A step folder as a run writes it: checkpoints/step-000003/<policy>/. */
let stepDir: string;

beforeAll(async () => {
  await initBackend('wasm');
  // Qwen3 layout: hidden 64, 4 heads of head_dim 32 (q_proj 64→128), 2 KV heads (v 64→64), MLP 96; F16 weights.
  ckpt = makeCheckpoint('qwen3');
  config = resolveConfig({
    policies: { solver: { model: { kind: 'hf', path: ckpt.dir, lora: { rank: 4, alpha: 16, targets: ['q_proj', 'v_proj', 'down_proj'] } } } },
    agents: { solver: 'solver', verifier: 'solver', corrector: 'solver' },
  });
  policy = createPolicy('solver', config.policies.solver, loadTaskData(config).tokenizer, 7).policy;
  // Trained-looking adapters: B off zero (a fresh B = 0 would make merged = base trivially).
  trainedLookingAdapters(policy.model, new Rng(8, 'test/adapters'));
  stepDir = path.join(folder.dir, 'checkpoints', 'step-000003');
  await savePolicies(stepDir, new Map([['solver', policy]]), config, 3, {});
});
afterAll(() => {
  policy.dispose();
  ckpt.cleanup();
  folder.cleanup();
});

describe('a LoRA checkpoint exported', () => {
  it("as PEFT: PEFT's tensor names and shapes, adapter_config naming the base, the trained adapters exactly", async () => {
    const out = path.join(folder.dir, 'peft');
    const result = await exportPolicyModel({ source: { checkpoint: path.join(stepDir, 'solver') }, format: 'peft', out });
    expect(result).toMatchObject({ format: 'peft', policy: 'solver', step: 3, lora: true });
    expect(result.written.map((f) => path.basename(f)).sort()).toEqual([PEFT_CONFIG, PEFT_WEIGHTS]);
    // PEFT's documented naming (save_pretrained of a LoraModel on a *ForCausalLM): base_model.model.<module path>.lora_A.weight
    // [r, in_features] and .lora_B.weight [out_features, r]: q 64→128, v 64→64, down 96→64, two layers.
    const fixture: Record<string, number[]> = {};
    for (const layer of [0, 1]) {
      for (const [m, parent, inDim, outDim] of [['q_proj', 'self_attn', 64, 128], ['v_proj', 'self_attn', 64, 64], ['down_proj', 'mlp', 96, 64]] as const) {
        fixture[`base_model.model.model.layers.${layer}.${parent}.${m}.lora_A.weight`] = [4, inDim];
        fixture[`base_model.model.model.layers.${layer}.${parent}.${m}.lora_B.weight`] = [outDim, 4];
      }
    }
    const st = openSafetensors(path.join(out, PEFT_WEIGHTS));
    expect(Object.fromEntries([...st.tensors].map(([n, t]) => [n, t.shape]))).toEqual(fixture);
    const cfg = JSON.parse(fs.readFileSync(path.join(out, PEFT_CONFIG), 'utf8')) as Record<string, unknown>;
    expect(cfg).toMatchObject({ peft_type: 'LORA', task_type: 'CAUSAL_LM', r: 4, lora_alpha: 16, bias: 'none', base_model_name_or_path: path.resolve(ckpt.dir) });
    const trained = (policy.model as LoraHfModel).loraWeights();
    expect(readPeftAdapter(out, ckpt.config).weights).toEqual(trained);
  });

  it('as a merged Hugging Face folder: logits equal base + adapters within 1e-4; the default dtype is the base\'s', async () => {
    const out = path.join(folder.dir, 'merged');
    // A step folder with one policy: the policy is picked without --policy.
    const result = await exportPolicyModel({ source: { checkpoint: stepDir }, format: 'hf', out, dtype: 'f32' });
    expect(result).toMatchObject({ format: 'hf', policy: 'solver', step: 3, lora: true });
    expect(result.written.map((f) => path.basename(f))).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
    const merged = loadHfModel(out).model;
    try {
      const { rows, leftPad } = { rows: randomPrompts(4, [9, 9], ckpt.config.vocabSize), leftPad: [0, 0] };
      expect(maxAbs(merged.lastLogits(rows, leftPad), policy.model.lastLogits(rows, leftPad))).toBeLessThanOrEqual(1e-4);
      // and the adapters do change the function (the check above is not base vs base)
      const base = loadHfModel(ckpt.dir).model;
      expect(maxAbs(base.lastLogits(rows, leftPad), policy.model.lastLogits(rows, leftPad))).toBeGreaterThan(1e-3);
      base.dispose();
    } finally {
      merged.dispose();
    }
    // `marsrl model generate` runs the LoRA checkpoint itself (adapters on its base) as the merged folder.
    const generate = (src: string) => marsrl(['model', 'generate', src, '--prompt-ids', '5,17,230,9', '--max-tokens', '6', '--backend', 'wasm', '--json']);
    const [fromCheckpoint, fromMerged] = [generate(path.join(stepDir, 'solver')), generate(out)];
    expect(fromCheckpoint.code, fromCheckpoint.stderr).toBe(0);
    expect(fromMerged.code, fromMerged.stderr).toBe(0);
    const [a, b] = [JSON.parse(fromCheckpoint.stdout) as { ids: number[]; logprobs: number[] }, JSON.parse(fromMerged.stdout) as { ids: number[]; logprobs: number[] }];
    expect(a.ids.length).toBeGreaterThan(0);
    expect(a.ids).toEqual(b.ids);
    expect(maxAbs(a.logprobs, b.logprobs)).toBeLessThan(1e-3);
    const f16 = path.join(folder.dir, 'merged-f16');
    await exportPolicyModel({ source: { checkpoint: stepDir }, format: 'hf', out: f16 });
    expect(JSON.parse(fs.readFileSync(path.join(f16, 'config.json'), 'utf8')).torch_dtype).toBe('float16');
    expect([...openSafetensors(f16).tensors.values()][0].dtype).toBe('F16');
  });
});

describe('refusals name the flag and the fix, and write nothing', () => {
  it('peft of a GPT checkpoint, peft of full fine-tuned weights (use hf), an existing --out, a step folder of several policies', async () => {
    const gptConfig = tinyConfig();
    const gpt = createPolicy('solver', gptConfig.policies.solver, loadTaskData(gptConfig).tokenizer, 1).policy;
    const tinyQwen = writeTinyQwen3Model(path.join(folder.dir, 'tiny'));
    const fullConfig = resolveConfig({ policies: { full: { model: { kind: 'hf', path: tinyQwen } } }, agents: { solver: 'full', verifier: 'full', corrector: 'full' } });
    const full = createPolicy('full', fullConfig.policies.full, loadTaskData(fullConfig).tokenizer, 1).policy;
    const mixed = path.join(folder.dir, 'mixed-step');
    await savePolicies(mixed, new Map([['gpt', gpt], ['full', full]]), gptConfig, 0, {});
    gpt.dispose();
    full.dispose();
    const never = path.join(folder.dir, 'never');
    const refused = async (request: Parameters<typeof exportPolicyModel>[0]) => {
      const error = await exportPolicyModel(request).then(() => null, (e: unknown) => e as Error);
      expect(fs.existsSync(request.out)).toBe(request.out !== never);
      return error;
    };
    let e = await refused({ source: { checkpoint: path.join(mixed, 'gpt') }, format: 'peft', out: never });
    expect(e).toBeInstanceOf(PolicyExportError);
    expect(e?.message).toMatch(/--format peft: .*gpt is a checkpoint of the Studio's own GPT, which has no LoRA adapters/);
    e = await refused({ source: { checkpoint: path.join(mixed, 'gpt') }, format: 'hf', out: never });
    expect(e?.message).toMatch(/--format hf: .* has no Hugging Face architecture/);
    e = await refused({ source: { checkpoint: path.join(mixed, 'full') }, format: 'peft', out: never });
    expect(e?.message).toMatch(/--format peft: .*full holds full fine-tuned weights \(the policy had no model\.lora\), not LoRA adapters; use --format hf/);
    e = await refused({ source: { checkpoint: mixed }, format: 'hf', out: never });
    expect((e as PolicyExportError).field).toBe('policy');
    expect(e?.message).toMatch(/holds checkpoints of several policies \(full, gpt\); pick one with --policy ID/);
    e = await refused({ source: { checkpoint: mixed }, format: 'hf', out: never, step: 2 });
    expect(e?.message).toMatch(/--step picks a checkpoint of a run/);
    // The full fine-tune exports as hf (its own weights).
    const fullOut = path.join(folder.dir, 'full-hf');
    const ok = await exportPolicyModel({ source: { checkpoint: mixed }, policy: 'full', format: 'hf', out: fullOut });
    expect(ok.lora).toBe(false);
    const existing = path.join(folder.dir, 'peft-existing');
    fs.mkdirSync(existing);
    fs.writeFileSync(path.join(existing, 'keep.txt'), 'mine');
    e = await refused({ source: { checkpoint: stepDir }, format: 'peft', out: existing });
    expect(e).toBeInstanceOf(OutputExistsError);
    expect(fs.readFileSync(path.join(existing, 'keep.txt'), 'utf8')).toBe('mine');
  });
});

describe('a run exported by id', () => {
  const database = runsDatabase();
  it('picks the newest checkpoint, --policy among several, --step; refuses a pruned step; the CLI does the same with --db', async () => {
    const { store, databasePath } = database;
    const base = writeTinyQwen3Model(path.join(folder.dir, 'run-base'));
    const lora = (lr: number) => ({ model: { kind: 'hf', path: base, lora: { rank: 2 } }, optimizer: { lr, weight_decay: 0.1 } });
    const runConfig = tinyConfig({
      policies: { s: lora(1e-2), v: lora(3e-3), c: lora(1e-3) },
      agents: { solver: 's', verifier: 'v', corrector: 'c' },
      rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 12, selection: 'random' },
      optimization: { steps: 3, minibatch_size: 8, checkpoint_every: 1 },
      pipeline: { segment_tokens: 6, max_segments: 2 },
    });
    const manager = createRunManager({ store, databasePath });
    const { runId } = await manager.start({ config: runConfig as unknown as Record<string, unknown>, name: 'lora export' });
    await manager.waitForExit(runId);
    expect(store.runs.get(runId)!.status).toBe('done');
    const source = { runId, store };

    const several = await exportPolicyModel({ source, format: 'peft', out: path.join(folder.dir, 'run-never') }).catch((e: Error) => e);
    expect((several as Error).message).toMatch(new RegExp(`run ${runId} has checkpoints of several policies \\(s, v, c\\); pick one with --policy ID`));
    const unknown = await exportPolicyModel({ source, format: 'peft', policy: 'x', out: path.join(folder.dir, 'run-never') }).catch((e: Error) => e);
    expect((unknown as Error).message).toMatch(/has no policy "x"; its policies are s, v, c/);
    // Only the two newest steps stay on disk.
    const pruned = await exportPolicyModel({ source, format: 'peft', policy: 'v', step: 0, out: path.join(folder.dir, 'run-never') }).catch((e: Error) => e);
    expect((pruned as Error).message).toMatch(/the checkpoint of step 0 .* was pruned as the run went on; steps on disk: 1, 2/);
    expect(fs.existsSync(path.join(folder.dir, 'run-never'))).toBe(false);

    const newest = await exportPolicyModel({ source, format: 'peft', policy: 'v', out: path.join(folder.dir, 'run-v') });
    expect(newest.step).toBe(2);
    const stepOne = await exportPolicyModel({ source, format: 'peft', policy: 'v', step: 1, out: path.join(folder.dir, 'run-v1') });
    expect(stepOne.step).toBe(1);
    const tensors = (dir: string) => new Map([...openSafetensors(path.join(dir, PEFT_WEIGHTS)).tensors].map(([n, t]) => [n, readTensorF32(t)]));
    // The exported adapters are that checkpoint's, and training moved them between steps 1 and 2.
    expect(tensors(path.join(folder.dir, 'run-v'))).toEqual(tensors(newest.checkpoint));
    expect(tensors(path.join(folder.dir, 'run-v1'))).not.toEqual(tensors(newest.checkpoint));

    const cli = marsrl(['model', 'export', String(runId), '--db', databasePath, '--format', 'hf', '--policy', 's', '--out', path.join(folder.dir, 'run-s-hf'), '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ format: 'hf', policy: 's', step: 2, lora: true });
    expect(fs.existsSync(path.join(folder.dir, 'run-s-hf', 'model.safetensors'))).toBe(true);
    const gguf = marsrl(['model', 'export', String(runId), '--db', databasePath, '--format', 'gguf', '--policy', 's', '--out', path.join(folder.dir, 'run-s.gguf')]);
    expect(gguf.code, gguf.stderr).toBe(0);
    expect(fs.readFileSync(path.join(folder.dir, 'run-s.gguf')).subarray(0, 4).toString('latin1')).toBe('GGUF');
    const noPolicy = marsrl(['model', 'export', String(runId), '--db', databasePath, '--format', 'peft', '--out', path.join(folder.dir, 'run-cli-never')]);
    expect(noPolicy.code).not.toBe(0);
    expect(noPolicy.stderr).toMatch(/pick one with --policy ID/);
  }, 120_000);
});
