/**
 * StudioApi.exportModel (issue #14, "Adapters out"): the run page's model export. A run's LoRA
 * checkpoint leaves as a PEFT folder holding the very adapters trained; a relative folder lands
 * under the per-user exports folder; what the engine refuses comes back on the dialog's field.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { resolveConfig } from '../../src-main/engine/preflight';
import { openSafetensors, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { type Store } from '../../src-main/engine/store';
import { createPolicy, savePolicies, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { Rng } from '../../src-main/engine/util/rng';
import type { ModelExportResult, StudioApi } from '#shared/contract';
import { refusal as refusalOf } from '../helpers/errors';
import { serviceInTemp } from '../helpers/service';
import { useStudioHome } from '../helpers/env';
import { trainedLookingAdapters } from '../hf/fixtures';
import { writeTinyQwen3Model } from '../training/hf-tiny';

const studio = serviceInTemp('http', 'marsrl-export-model-');
let store: Store;
let service: StudioApi;
let policy: PolicyRuntime;
let runId = 0;
let bareRunId = 0;
let restoreHome: (() => void) | undefined;
/** The trained lora_B of layer 0's v_proj, in PEFT's [out, r] layout. */
let trainedB: Float32Array;

beforeAll(async () => {
  await initBackend('wasm');
  ({ store, service } = studio);
  restoreHome = useStudioHome(path.join(studio.dir, 'home'));
  const modelDir = writeTinyQwen3Model(path.join(studio.dir, 'qwen3-tiny'));
  const config = resolveConfig({
    task: { family: 'math' },
    policies: { solver: { model: { kind: 'hf', path: modelDir, lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] } } } },
    agents: { solver: 'solver', verifier: 'solver', corrector: 'solver' },
  });
  policy = createPolicy('solver', config.policies.solver, loadTaskData(config).tokenizer, 7).policy;
  // Trained-looking adapters: B away from its zero start, so the export's values can be told apart.
  trainedLookingAdapters(policy.model, new Rng(11, 'test/export-model'));
  const spec = policy.model.specs.find((s) => s.name.includes('layers.0') && s.name.includes('v_proj') && s.name.includes('lora_B'));
  if (!spec) throw new Error(`no v_proj lora_B among ${policy.model.specs.map((s) => s.name).join(', ')}`);
  // The policy keeps B transposed ([r, out], engine/hf/lora.ts); PEFT's file holds B as [out, r].
  const [r, out] = spec.shape;
  const stored = policy.model.getWeights().slice(spec.offset, spec.offset + spec.size);
  trainedB = new Float32Array(r * out);
  for (let k = 0; k < r; k++) for (let o = 0; o < out; o++) trainedB[o * r + k] = stored[k * out + o];

  runId = store.runs.create({ name: 'lora run', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: 1, status: 'done' });
  const stepDir = path.join(studio.dir, 'checkpoints', 'step-000002');
  savePolicies(stepDir, new Map([['solver', policy]]), config, 2, {});
  store.events.addCheckpoint({ runId, step: 2, policyId: 'solver', path: path.join(stepDir, 'solver'), createdAt: Date.now(), metrics: null });
  bareRunId = store.runs.create({ name: 'no checkpoints', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: 1, status: 'failed' });
});
afterAll(() => {
  restoreHome?.();
  policy?.dispose();
});

const refusal = (request: unknown) => refusalOf(service, 'exportModel', [request]);

describe('exportModel', () => {
  it('writes the run’s adapters as a PEFT folder under the exports folder, holding the trained values', async () => {
    const result = (await callStudio(service, 'exportModel', [{ runId, format: 'peft', out: 'tiny-adapters' }])) as ModelExportResult;
    const out = path.join(studio.dir, 'home', 'exports', 'tiny-adapters');
    expect(result).toMatchObject({ format: 'peft', out, policy: 'solver', step: 2, lora: true });
    expect(result.written.map((f) => path.basename(f)).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const config = JSON.parse(fs.readFileSync(path.join(out, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8 });
    const { tensors } = openSafetensors(path.join(out, 'adapter_model.safetensors'));
    // PEFT's names; v_proj of the tiny model maps 16 → 8 (one KV head of 8): A is 4 × 16, B is 8 × 4.
    const a = tensors.get('base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight');
    const b = tensors.get('base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight');
    expect(a?.shape).toEqual([4, 16]);
    expect(b?.shape).toEqual([8, 4]);
    expect([...readTensorF32(b!)]).toEqual([...trainedB]);
    expect(tensors.has('base_model.model.model.layers.0.mlp.down_proj.lora_A.weight')).toBe(false);
  });

  it('refuses to overwrite the folder unless asked, in the dialog’s words, at the output field', async () => {
    const shape = await refusal({ runId, format: 'peft', out: 'tiny-adapters' });
    expect(shape.code).toBe('invalid_request');
    expect(shape.issues?.map((i) => i.path)).toEqual(['out']);
    expect(shape.message).toMatch(/already exists; choose another folder or tick "Replace an existing folder"/);
    const again = (await callStudio(service, 'exportModel', [{ runId, format: 'peft', out: 'tiny-adapters', force: true }])) as ModelExportResult;
    expect(again.step).toBe(2);
  });

  it('places what the checkpoints cannot give at its field: a step not kept, a run with none', async () => {
    const step = await refusal({ runId, format: 'peft', out: 'x', step: 7 });
    expect(step.issues?.map((i) => i.path)).toEqual(['step']);
    expect(step.message).toMatch(/no checkpoint of "solver" at step 7; steps on disk: 2/);
    const none = await refusal({ runId: bareRunId, format: 'hf', out: 'y' });
    expect(none.issues?.map((i) => i.path)).toEqual(['runId']);
    expect(none.message).toMatch(/has no checkpoints yet/);
    expect(fs.existsSync(path.join(studio.dir, 'home', 'exports', 'y'))).toBe(false);
  });

  it('rejects a bad payload at the boundary, naming the field', async () => {
    expect((await refusal({ runId, format: 'gguf', out: 'z' })).message).toMatch(/exportModel\.0\.format/);
    expect((await refusal({ runId, format: 'peft', out: '  ' })).message).toMatch(/exportModel\.0\.out: give the output folder/);
    expect((await refusal({ runId, format: 'peft', out: 'z', policy: 'Bad Id' })).message).toMatch(/exportModel\.0\.policy/);
    expect((await refusal({ runId: 999, format: 'peft', out: 'z' })).code).toBe('not_found');
  });
});
