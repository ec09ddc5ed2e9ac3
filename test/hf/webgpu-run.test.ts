/**
 * A whole run of the Hugging Face family on the webgpu backend (issue #15): a tiny random Qwen3
 * with LoRA adapters (issue #14) plays every role — rollout decode, the KL reference (the base with
 * adapters off), PPO updates of the adapters, held-out evaluation and a PEFT checkpoint — against
 * the same run on the cpu backend in this process (test/model/webgpu-run.test.ts explains the
 * method and the tolerances: sampled texts equal exactly, losses within 1e-3 relative).
 *
 * On machines without a GPU this runs on Mesa's llvmpipe; a missing adapter fails here (CI
 * installs Mesa 25 from bookworm-backports).
 */
import * as tf from '@tensorflow/tfjs-core';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { PEFT_WEIGHTS } from '../../src-main/engine/hf/lora';
import { openSafetensors, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { openStore, type Store } from '../../src-main/engine/store';
import { trainRun, type TrainOutcome } from '../../src-main/engine/training/trainer';
import { tempDir } from '../helpers/tmp';
import { writeTinyQwen3Model } from '../training/hf-tiny';
import { tinyConfig } from '../training/tiny';
import { requireWebGpu } from '../helpers/webgpu';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let baseDir: string;

beforeAll(async () => {
  await requireWebGpu('the Hugging Face webgpu run test');
  tmp = tempDir('marsrl-hf-webgpu-run-');
  store = openStore(path.join(tmp.dir, 'runs.db'));
  baseDir = writeTinyQwen3Model(path.join(tmp.dir, 'base'));
});

afterAll(() => {
  store?.close();
  tmp?.cleanup();
});

function config(): RunConfig {
  return tinyConfig({
    runtime: { backend: 'webgpu' },
    task: { family: 'sort', difficulty: 2, train_size: 16, test_size: 6 },
    policies: { qwen: { model: { kind: 'hf', path: baseDir, lora: { rank: 2, alpha: 4 } }, optimizer: { lr: 1e-2 } } },
    agents: { solver: 'qwen', verifier: 'qwen', corrector: 'qwen' },
    // A random model's turns all earn the same reward, so a group's advantages would be 0 and the
    // adapters (B = 0 at the start) would not move: groups of one under verl's single-sample rule
    // make the advantage the raw reward, and the format penalty makes it nonzero.
    rollout: { problems_per_step: 2, solver_group: 1, select_k: 1, verifier_group: 1, corrector_group: 1, rounds: 1, max_response_tokens: 8, selection: 'random' },
    reward: { format_penalty: 1 },
    advantage: { single_sample: 'verl' },
    pipeline: { mode: 'sync', segment_tokens: 4, max_segments: 2 },
    optimization: { steps: 1, minibatch_size: 8, checkpoint_every: 1, kl_coef: 0.05 },
    eval: { every: 0, k: 1, problems: 2 },
  });
}

async function runOn(backend: 'webgpu' | 'cpu', name: string): Promise<{ runId: number; outcome: TrainOutcome; runDir: string }> {
  const cfg = config();
  const runId = store.runs.create({ name, config: cfg as unknown as Record<string, unknown>, codeVersion: 'test', seed: cfg.seed });
  store.runs.setStatus(runId, 'running');
  const runDir = path.join(tmp.dir, name);
  await tf.setBackend(backend);
  try {
    return { runId, outcome: await trainRun({ store, runId, config: cfg, runDir }), runDir };
  } finally {
    await tf.setBackend('webgpu');
  }
}

function texts(runId: number): string[][] {
  return (store.db.prepare(`SELECT t.agent, t.text FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND t.step = 0 AND e.split = 'train' ORDER BY t.id`).all(runId) as { agent: string; text: string }[]).map((t) => [t.agent, t.text]);
}

function metric(runId: number, key: string): number {
  const point = store.metrics.series(runId, key).items.find((p) => p.step === 0);
  if (!point) throw new Error(`run ${runId} has no metric ${key} at step 0`);
  return point.value;
}

function adapters(runDir: string): Map<string, Float32Array> {
  const file = openSafetensors(path.join(runDir, 'checkpoints', 'step-000000', 'qwen', PEFT_WEIGHTS));
  return new Map([...file.tensors.values()].map((t) => [t.name, readTensorF32(t)]));
}

describe('a LoRA run of a tiny Qwen3 on webgpu equals the same run on cpu', () => {
  let gpu: Awaited<ReturnType<typeof runOn>>;
  let cpu: Awaited<ReturnType<typeof runOn>>;
  beforeAll(async () => {
    gpu = await runOn('webgpu', 'gpu');
    cpu = await runOn('cpu', 'cpu');
  }, 240_000);

  it('completes on webgpu with the backend stored, the same sampled texts, losses within 1e-3 and the same trained adapters within 1e-4', () => {
    expect(gpu.outcome).toEqual({ status: 'done', step: 1 });
    expect(cpu.outcome).toEqual({ status: 'done', step: 1 });
    expect(store.runs.get(gpu.runId)!.backend).toBe('webgpu');
    const g = texts(gpu.runId);
    expect(g.length).toBeGreaterThanOrEqual(4);
    expect(g).toEqual(texts(cpu.runId));
    for (const key of ['solver/loss', 'solver/kl', 'solver/grad_norm', 'verifier1/loss']) {
      const [a, b] = [metric(gpu.runId, key), metric(cpu.runId, key)];
      expect(Math.abs(a - b), `${key}: ${a} vs ${b}`).toBeLessThanOrEqual(1e-3 * Math.max(Math.abs(a), Math.abs(b), 1e-3));
    }
    // The PEFT checkpoint written on webgpu (read back asynchronously) holds the adapters cpu trained.
    const [ga, ca] = [adapters(gpu.runDir), adapters(cpu.runDir)];
    expect([...ga.keys()].sort()).toEqual([...ca.keys()].sort());
    let moved = 0;
    for (const [name, values] of ga) {
      const ref = ca.get(name)!;
      for (let i = 0; i < values.length; i++) {
        expect(Math.abs(values[i] - ref[i]), `${name}[${i}]`).toBeLessThanOrEqual(1e-4);
        if (name.includes('lora_B') && values[i] !== 0) moved++;
      }
    }
    expect(moved).toBeGreaterThan(0); // B starts at zero: the update reached the adapters
    expect(fs.existsSync(path.join(gpu.runDir, 'checkpoints', 'step-000000', 'qwen', 'adapter_config.json'))).toBe(true);
  });
});
