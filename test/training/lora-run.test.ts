/**
 * Runs that train LoRA adapters (issue #14, step 1 of the LoRA brief). In one process: three
 * policies on one base hold it once, train only their adapters with their own optimizers, take
 * the base with adapters off as the KL reference, and a LoRA checkpoint (PEFT files, the base's
 * path and digests) restores adapters and optimizer state bit for bit. Through the run manager, as
 * `marsrl run` / `marsrl resume` start runs: Dr. MAS's three settings — one adapter shared by every
 * role, one adapter per role on one base, different bases per role — and a resumed LoRA run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { loadHfModel } from '../../src-main/engine/hf/load';
import { heldHfBaseCount, LoraHfModel, peftTensorNames, PEFT_CONFIG, PEFT_WEIGHTS } from '../../src-main/engine/hf/lora';
import { openSafetensors, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { MemoryBudget } from '../../src-main/engine/model/gpu-memory';
import { loraBaseFromFolder } from '../../src-main/engine/checkpoint/checkpoint';
import { readAnyCheckpointManifest, type HfCheckpointManifest } from '../../src-main/engine/checkpoint/manifest';
import type { Store } from '../../src-main/engine/store';
import { responseLogProbs, ppoStep, type PolicySample } from '../../src-main/engine/training/ppo';
import { createPolicy, loadPolicies, savePolicies, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { loadTaskData } from '../../src-main/engine/training/task-data';
import { exportPolicyModel } from '../../src-main/engine/checkpoint/run-export';
import { createRunManager } from '../../src-main/runner/manager';
import { Rng } from '../../src-main/engine/util/rng';
import { runsDatabase } from '../helpers/runs-db';
import { resumeToExit, runStoppedAfterFirstStep } from '../helpers/stop-resume';
import { tempDir } from '../helpers/tmp';
import { writeTinyQwen3Model } from './hf-tiny';
import { tinyConfig } from './tiny';

const folder = tempDir('marsrl-lora-run-');
let baseDir: string;
let otherBaseDir: string;
beforeAll(async () => {
  await initBackend('wasm');
  baseDir = writeTinyQwen3Model(path.join(folder.dir, 'base'));
  otherBaseDir = writeTinyQwen3Model(path.join(folder.dir, 'other'), { seed: 9 });
});
afterAll(() => folder.cleanup());

const RANK = 2;
/**
 * Adapter parameters of the tiny Qwen3 (hidden 16, 2 heads × 8, 1 KV head, MLP 32, one layer) at
 * rank 2, r · (in + out) per module: q 16→16, k 16→8, v 16→8, o 16→16, gate 16→32, up 16→32,
 * down 32→16.
 */
const ADAPTER_PARAMS = RANK * ((16 + 16) + (16 + 8) + (16 + 8) + (16 + 16) + (16 + 32) + (16 + 32) + (32 + 16));

const lora = (p: string, lr = 1e-2, dropout = 0) => ({ model: { kind: 'hf', path: p, lora: { rank: RANK, alpha: 4, dropout } }, optimizer: { lr, weight_decay: 0.1 } });

function runConfig(opts: { policies: Record<string, unknown>; agents: Record<string, string>; mode?: 'sync' | 'pipeline'; steps?: number; kl?: number }): RunConfig {
  return tinyConfig({
    policies: opts.policies,
    agents: opts.agents,
    rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 12, selection: 'random' },
    optimization: { steps: opts.steps ?? 2, minibatch_size: 8, checkpoint_every: 1, kl_coef: opts.kl ?? 0.05 },
    pipeline: { mode: opts.mode ?? 'sync', segment_tokens: 6, max_segments: 2, max_staleness: 1, gradient_share: 0.5 },
  });
}

function samplesFor(policy: PolicyRuntime, seed: number): PolicySample[] {
  const rng = new Rng(seed, 'test/lora-samples');
  return [0, 1, 2].map((i) => {
    const prompt = policy.tokenizer.promptTokens('solver', `sort 3${i}1`);
    const response = Array.from({ length: 5 }, () => Math.floor(rng.next() * 400));
    return { tokens: [...prompt, ...response], responseStart: prompt.length, behaviourLogProbs: [], advantage: i === 1 ? -1 : 1 };
  });
}

/** Two PPO updates with non-zero advantages (so B leaves zero and Adam's moments fill). */
function train(policy: PolicyRuntime, samples: PolicySample[], updates = 2): void {
  for (let u = 0; u < updates; u++) {
    const behaviour = responseLogProbs(policy.model, samples, 1, policy.tokenizer.padId);
    const batch = samples.map((s, i) => ({ ...s, behaviourLogProbs: behaviour[i] }));
    const result = ppoStep(policy.model, policy.optimizer, batch, { clip: 0.2, klCoef: 0, temperature: 1, padId: policy.tokenizer.padId });
    expect(result.skipped).toBe(false);
  }
}

describe('LoRA policies in one process', () => {
  it('three roles, three policies on one base: the base is held once, only adapters train, each with its own optimizer, and the KL reference is the base with adapters off', async () => {
    expect(heldHfBaseCount()).toBe(0);
    const config = runConfig({ policies: { s: lora(baseDir, 1e-2), v: lora(baseDir, 3e-3), c: lora(baseDir, 1e-3) }, agents: { solver: 's', verifier: 'v', corrector: 'c' } });
    const { tokenizer } = loadTaskData(config);
    const policies = ['s', 'v', 'c'].map((id) => createPolicy(id, config.policies[id], tokenizer, config.seed).policy);
    try {
      expect(heldHfBaseCount()).toBe(1);
      const base = loadHfModel(baseDir).model;
      for (const p of policies) {
        expect(p.model).toBeInstanceOf(LoraHfModel);
        const model = p.model as LoraHfModel;
        // What travels between processes and what the optimizer holds: the adapters only.
        expect(model.numParams).toBe(ADAPTER_PARAMS);
        expect(p.model.getWeights().length).toBe(ADAPTER_PARAMS);
        expect(p.optimizer.getState().m.length).toBe(ADAPTER_PARAMS);
        expect(model.base.model.variables.every((v) => !v.trainable)).toBe(true);
      }
      expect(policies.map((p) => p.optimizer.currentLr)).toEqual([1e-2, 3e-3, 1e-3]);
      for (const p of policies) await p.freezeReference();
      expect(heldHfBaseCount()).toBe(1);
      train(policies[0], samplesFor(policies[0], 1));
      const rows = [policies[0].tokenizer.promptTokens('solver', 'sort 312')];
      const trained = policies[0].model.lastLogits(rows, [0]);
      const reference = policies[0].reference!.lastLogits(rows, [0]);
      const untouched = policies[1].model.lastLogits(rows, [0]);
      const baseLogits = base.lastLogits(rows, [0]);
      expect(policies[0].reference!.numParams).toBe(0);
      // The reference is the base exactly; the trained policy moved; the other policies' adapters did not.
      expect(Array.from(reference)).toEqual(Array.from(baseLogits));
      expect(Array.from(untouched)).toEqual(Array.from(baseLogits));
      expect(Math.max(...trained.map((x, i) => Math.abs(x - baseLogits[i])))).toBeGreaterThan(1e-6);
      base.dispose();
    } finally {
      for (const p of policies) p.dispose();
    }
    expect(heldHfBaseCount()).toBe(0);
  });

  it('device-memory accounting counts a shared base once however many policies register it, and names them when it does not fit', () => {
    const budget = new MemoryBudget(10_000);
    budget.setResident('s', { weights: 1000, optimizer: 2000 });
    budget.setShared('base-a', 4000, ['s', 'v']);
    budget.setShared('base-a', 4000, ['s', 'v']);
    expect(budget.totalBytes).toBe(7000);
    expect(budget.sharedReport()).toEqual({ 'base-a': 4000 });
    expect(() => budget.setShared('base-b', 4000, ['j'])).toThrow(/the frozen base \(0\.00 MiB\) that "j" share does not fit.*policies\.j\.model\.path/);
  });

  it('a LoRA checkpoint is a PEFT folder with the base named; loading restores adapters and optimizer exactly, so the next update is the same', async () => {
    const config = runConfig({ policies: { s: lora(baseDir) }, agents: { solver: 's', verifier: 's', corrector: 's' } });
    const { tokenizer } = loadTaskData(config);
    const policy = createPolicy('s', config.policies.s, tokenizer, config.seed).policy;
    const samples = samplesFor(policy, 2);
    train(policy, samples);
    const dir = path.join(folder.dir, 'ckpt-exact');
    await savePolicies(dir, new Map([['s', policy]]), config, 4, {});
    const manifest = readAnyCheckpointManifest(path.join(dir, 's')) as HfCheckpointManifest;
    expect(manifest.lora?.base).toEqual(loraBaseFromFolder(baseDir));
    expect(manifest.lora?.settings).toMatchObject({ rank: RANK, alpha: 4 });
    expect(fs.existsSync(path.join(dir, 's', 'weights.safetensors'))).toBe(false);
    const adapterConfig = JSON.parse(fs.readFileSync(path.join(dir, 's', PEFT_CONFIG), 'utf8')) as Record<string, unknown>;
    expect(adapterConfig).toMatchObject({ peft_type: 'LORA', r: RANK, lora_alpha: 4, base_model_name_or_path: path.resolve(baseDir) });
    const names = [...openSafetensors(path.join(dir, 's', PEFT_WEIGHTS)).tensors.keys()].sort();
    const hfConfig = (policy.model as LoraHfModel).config;
    expect(names).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'].flatMap((m) => Object.values(peftTensorNames(hfConfig, 0, m as 'q_proj'))).sort());

    const loaded = loadPolicies(dir, config).policies.get('s')!;
    try {
      expect(heldHfBaseCount()).toBe(1);
      expect(loaded.version).toBe(policy.version);
      expect(Array.from(loaded.model.getWeights())).toEqual(Array.from(policy.model.getWeights()));
      const [a, b] = [policy.optimizer.getState(), loaded.optimizer.getState()];
      expect(b.step).toBe(a.step);
      expect(Array.from(b.m)).toEqual(Array.from(a.m));
      expect(Array.from(b.v)).toEqual(Array.from(a.v));
      train(policy, samples, 1);
      train(loaded, samples, 1);
      expect(Array.from(loaded.model.getWeights())).toEqual(Array.from(policy.model.getWeights()));
    } finally {
      loaded.dispose();
      policy.dispose();
    }
    expect(heldHfBaseCount()).toBe(0);
  });

  it('starts from an init checkpoint: full hf weights become the base exactly; a LoRA checkpoint brings its base and adapters; other settings are refused; both export merged', async () => {
    const fullConfig = runConfig({ policies: { full: { model: { kind: 'hf', path: baseDir }, optimizer: { lr: 1e-2 } } }, agents: { solver: 'full', verifier: 'full', corrector: 'full' } });
    const full = createPolicy('full', fullConfig.policies.full, loadTaskData(fullConfig).tokenizer, fullConfig.seed).policy;
    // A warm start that is not the folder's weights.
    full.model.setWeights(full.model.getWeights().map((x, i) => x * (1 + 0.3 * Math.sin(i))));
    const warm = path.join(folder.dir, 'warm');
    await savePolicies(warm, new Map([['full', full]]), fullConfig, 0, {});
    const withInit = (init: string, rank = RANK) => runConfig({ policies: { s: { ...lora(baseDir), init, model: { kind: 'hf', path: baseDir, lora: { rank, alpha: 4 } } } }, agents: { solver: 's', verifier: 's', corrector: 's' } });
    const config = withInit(path.join(warm, 'full'));
    const policy = createPolicy('s', config.policies.s, loadTaskData(config).tokenizer, config.seed).policy;
    const adapted = path.join(folder.dir, 'adapted');
    const rows = [policy.tokenizer.promptTokens('solver', 'sort 213')];
    try {
      expect(policy.source.family === 'hf' && policy.source.lora?.base.kind).toBe('checkpoint');
      expect(Array.from(policy.model.lastLogits(rows, [0]))).toEqual(Array.from(full.model.lastLogits(rows, [0])));
      train(policy, samplesFor(policy, 3));
      await savePolicies(adapted, new Map([['s', policy]]), config, 1, {});
      expect((readAnyCheckpointManifest(path.join(adapted, 's')) as HfCheckpointManifest).lora?.base).toMatchObject({ kind: 'checkpoint', path: path.join(warm, 'full') });

      const again = withInit(path.join(adapted, 's'));
      const resumed = createPolicy('s', again.policies.s, loadTaskData(again).tokenizer, again.seed).policy;
      expect(heldHfBaseCount()).toBe(1);
      expect(Array.from(resumed.model.getWeights())).toEqual(Array.from(policy.model.getWeights()));
      expect(resumed.optimizer.stepCount).toBe(0);
      resumed.dispose();
      const other = withInit(path.join(adapted, 's'), 3);
      expect(() => createPolicy('s', other.policies.s, loadTaskData(other).tokenizer, other.seed)).toThrow(/policies\.s\.model\.lora: the init checkpoint .* holds adapters of other settings \(rank 3 vs 2 in the checkpoint\)/);

      // Merged out of a checkpoint-based LoRA: the warm start's weights plus the adapters.
      const merged = path.join(folder.dir, 'adapted-hf');
      await exportPolicyModel({ source: { checkpoint: path.join(adapted, 's') }, format: 'hf', out: merged });
      const back = loadHfModel(merged).model;
      const got = back.lastLogits(rows, [0]);
      const want = policy.model.lastLogits(rows, [0]);
      back.dispose();
      expect(Math.max(...got.map((x, i) => Math.abs(x - want[i])))).toBeLessThanOrEqual(1e-4);
    } finally {
      policy.dispose();
      full.dispose();
    }
    expect(heldHfBaseCount()).toBe(0);
  });

  it('refuses to resume adapters on a base folder that now holds other weights, naming the folder', async () => {
    const changing = writeTinyQwen3Model(path.join(folder.dir, 'changing'));
    const config = runConfig({ policies: { s: lora(changing) }, agents: { solver: 's', verifier: 's', corrector: 's' } });
    const policy = createPolicy('s', config.policies.s, loadTaskData(config).tokenizer, config.seed).policy;
    const dir = path.join(folder.dir, 'ckpt-changed');
    await savePolicies(dir, new Map([['s', policy]]), config, 0, {});
    policy.dispose();
    writeTinyQwen3Model(changing, { seed: 77 });
    expect(() => loadPolicies(dir, config)).toThrow(new RegExp(`LoRA base ${changing.replace(/[/.]/g, '\\$&')} now holds other weights.*restore the original folder`));
    expect(heldHfBaseCount()).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Through the run manager

let store: Store;
let databasePath: string;
const database = runsDatabase();
beforeAll(() => {
  ({ store, databasePath } = database);
});

function latestCheckpoint(runId: number, policyId: string): string {
  const rows = store.db.prepare('SELECT path FROM checkpoints WHERE run_id = ? AND policy_id = ? ORDER BY step DESC, id DESC LIMIT 1').all(runId, policyId) as { path: string }[];
  expect(rows.length).toBe(1);
  return rows[0].path;
}

async function runToEnd(config: RunConfig, name: string): Promise<number> {
  const manager = createRunManager({ store, databasePath });
  const { runId } = await manager.start({ config: config as unknown as Record<string, unknown>, name });
  await manager.waitForExit(runId);
  const failure = store.events.events(runId).items.find((e) => e.level === 'error');
  expect(store.runs.get(runId)!.status, failure?.message).toBe('done');
  return runId;
}

/** The run's device-memory event: the shared bases (bytes by key) and each policy's weight bytes. */
function memoryOf(runId: number): { sharedBases: Record<string, number>; policies: Record<string, { weights: number }> } {
  return store.events.latestOfKind(runId, 'gpu_memory')!.data as { sharedBases: Record<string, number>; policies: Record<string, { weights: number }> };
}

const baseBytes = (dir: string) => {
  const m = loadHfModel(dir).model;
  const bytes = m.numParams * 4;
  m.dispose();
  return bytes;
};

/** A LoRA checkpoint of the run: its manifest (checked to be a LoRA one on `base`) and its A, B tensors. */
function loraCheckpoint(runId: number, policyId: string, base: string): { manifest: HfCheckpointManifest; tensors: Map<string, Float32Array> } {
  const dir = latestCheckpoint(runId, policyId);
  const manifest = readAnyCheckpointManifest(dir) as HfCheckpointManifest;
  expect(manifest.family).toBe('hf');
  expect(manifest.lora?.base.path).toBe(path.resolve(base));
  expect(manifest.model.numParams).toBe(ADAPTER_PARAMS);
  const st = openSafetensors(path.join(dir, PEFT_WEIGHTS));
  return { manifest, tensors: new Map([...st.tensors].map(([name, t]) => [name, readTensorF32(t)])) };
}

describe('runs that train LoRA adapters (Dr. MAS settings)', () => {
  it('one adapter shared by every role: trains, counts the base once, checkpoints adapters moved by exactly the optimizer it configured', async () => {
    const config = runConfig({ policies: { qwen: lora(baseDir) }, agents: { solver: 'qwen', verifier: 'qwen', corrector: 'qwen' } });
    const runId = await runToEnd(config, 'lora shared');
    const memory = memoryOf(runId);
    expect(Object.values(memory.sharedBases)).toEqual([baseBytes(baseDir)]);
    // The policy's own weights are its adapters; its KL reference (the base, adapters off) adds nothing.
    expect(memory.policies.qwen.weights).toBe(ADAPTER_PARAMS * 4);
    const { manifest, tensors } = loraCheckpoint(runId, 'qwen', baseDir);
    expect(manifest.step).toBe(1);
    const updates = manifest.optimizer!.step;
    expect(updates).toBeGreaterThan(0);
    // A random policy earns no reward variance, so the PPO gradient is zero; AdamW's decoupled
    // decay then scales every A by exactly (1 − lr·wd) per update, and B stays 0.
    // The run's adapters at their start: the same policy made here from the same seed.
    const fresh = createPolicy('qwen', config.policies.qwen, loadTaskData(config).tokenizer, config.seed).policy.model as LoraHfModel;
    const initial = fresh.loraWeights();
    const q = peftTensorNames(fresh.config, 0, 'q_proj');
    fresh.dispose();
    const factor = Math.pow(1 - 1e-2 * 0.1, updates);
    const a0 = initial.get('model.layers.0.self_attn.q_proj')!.a;
    const a1 = tensors.get(q.a)!;
    for (let i = 0; i < a0.length; i++) expect(a1[i]).toBeCloseTo(a0[i] * factor, 6);
    expect(tensors.get(q.b)!.every((x) => x === 0)).toBe(true);
  }, 120_000);

  it('one adapter per role on one base, in pipeline mode: three adapters, one base, adapters sent to the rollout process', async () => {
    const runId = await runToEnd(
      // The Corrector's adapters with PEFT's lora_dropout (training passes only, in both processes).
      runConfig({ policies: { s: lora(baseDir), v: lora(baseDir, 3e-3), c: lora(baseDir, 1e-3, 0.1) }, agents: { solver: 's', verifier: 'v', corrector: 'c' }, mode: 'pipeline', steps: 3 }),
      'lora per role',
    );
    expect(Object.values(memoryOf(runId).sharedBases)).toEqual([baseBytes(baseDir)]);
    for (const id of ['s', 'v', 'c']) expect(loraCheckpoint(runId, id, baseDir).manifest.step).toBe(2);
    expect(loraCheckpoint(runId, 'c', baseDir).manifest.lora?.settings.dropout).toBe(0.1);
    // The rollout process decoded with the versions the trainer sent (adapters adopted there):
    // with max_staleness 1, step 2 cannot be decoded with the starting adapters.
    const versions = store.db.prepare(`SELECT MAX(s.policy_version) AS v FROM segments s JOIN turns t ON t.id = s.turn_id WHERE t.run_id = ? AND t.policy_id = 's'`).get(runId) as { v: number };
    expect(versions.v).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('different bases per role (heterogeneous): each base held once', async () => {
    const runId = await runToEnd(runConfig({ policies: { s: lora(baseDir), j: lora(otherBaseDir) }, agents: { solver: 's', verifier: 'j', corrector: 'j' } }), 'lora heterogeneous');
    expect(Object.values(memoryOf(runId).sharedBases).sort()).toEqual([baseBytes(baseDir), baseBytes(otherBaseDir)].sort());
    loraCheckpoint(runId, 's', baseDir);
    loraCheckpoint(runId, 'j', otherBaseDir);
  }, 120_000);

  it('a LoRA run stopped after a step resumes from its adapters with the versions and optimizer steps it had', async () => {
    const config = runConfig({ policies: { qwen: lora(baseDir) }, agents: { solver: 'qwen', verifier: 'qwen', corrector: 'qwen' }, steps: 3 });
    const runId = await runStoppedAfterFirstStep(store, databasePath, config, 'lora resume');
    expect(store.runs.get(runId)!.status).toBe('interrupted');
    const before = loraCheckpoint(runId, 'qwen', baseDir).manifest;
    await resumeToExit(store, databasePath, runId);
    const failure = store.events.events(runId).items.find((e) => e.level === 'error');
    expect(store.runs.get(runId)!.status, failure?.message).toBe('done');
    expect(store.events.events(runId).items.some((e) => e.kind === 'resumed')).toBe(true);
    const after = loraCheckpoint(runId, 'qwen', baseDir).manifest;
    expect(after.step).toBe(2);
    // The optimizer continued from its saved step (not from 0 again).
    expect(after.optimizer!.step).toBeGreaterThan(before.optimizer!.step);
    const last = store.db
      .prepare(`SELECT MIN(s.policy_version) AS v FROM segments s JOIN turns t ON t.id = s.turn_id WHERE t.run_id = ? AND t.policy_id = 'qwen' AND t.step = 2`)
      .get(runId) as { v: number };
    expect(last.v).toBeGreaterThanOrEqual(before.optimizer!.step);
  }, 120_000);
});
