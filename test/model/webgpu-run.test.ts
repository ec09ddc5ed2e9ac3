/**
 * Whole training runs on the webgpu backend (issue #15): warm start, rollout decode, evaluation,
 * the KL reference, PPO updates, checkpoints and resume, in both pipeline modes, in this process
 * and in the run manager's worker processes, against the same run on the cpu backend.
 *
 * On machines without a GPU this runs on Mesa's llvmpipe (a software adapter), as webgpu.test.ts
 * does; a missing adapter fails here (CI installs Mesa 25 from bookworm-backports).
 *
 * The cpu reference runs in this process: TensorFlow.js keeps both backends registered, and
 * `tf.setBackend('cpu')` around `trainRun` computes the reference on cpu (its stored backend
 * label is this process's choice, webgpu; only its numbers are used). Every read then takes the
 * synchronous path (readback.ts), so the reference is also the unchanged wasm/cpu code path.
 *
 * Tolerances. WebGPU's float32 kernels sum in another order than cpu's loops: logits differ by
 * ~1e-6 after the 4 warm-start steps (Adam normalises the update, so tiny gradient differences
 * stay tiny in the weights). The sampler draws token j of a stream from its own uniform u
 * (sampling.ts), so a sampled token differs only where u falls within ~1e-6 of a boundary of the
 * cumulative distribution: for the few hundred tokens of a step, a chance of about 1e-4. The
 * first step's texts are therefore compared exactly, and its PPO losses, KL terms and gradient
 * norms (which read every token's behaviour and reference log-probabilities) at 1e-3 relative;
 * the warm-start losses at 1e-4.
 */
import * as tf from '@tensorflow/tfjs-core';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { loadCheckpoint } from '../../src-main/engine/checkpoint/checkpoint';
import { openStore, type Store } from '../../src-main/engine/store';
import { trainRun, type TrainOutcome } from '../../src-main/engine/training/trainer';
import { createRunManager } from '../../src-main/runner/manager';
import { marsrl } from '../helpers/cli';
import { runsDatabase } from '../helpers/runs-db';
import { tempDir } from '../helpers/tmp';
import type { PolicyRuntime } from '../../src-main/engine/training/policies';
import { decodeInSegmentsAsync } from '../../src-main/engine/training/rollout';
import { tinyConfig } from '../training/tiny';
import { requireWebGpu } from '../helpers/webgpu';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
/** The run manager's database (its worker processes open it by path). */
const database = runsDatabase();

beforeAll(async () => {
  await requireWebGpu('the webgpu run tests');
  tmp = tempDir('marsrl-webgpu-run-');
  store = openStore(path.join(tmp.dir, 'runs.db'));
});

afterAll(() => {
  store?.close();
  tmp?.cleanup();
});

/**
 * Smaller than tinyConfig (llvmpipe runs every kernel on the CPU): one problem per step, one
 * round, with a KL reference (so freezeReference runs), an evaluation with its fixed judged set
 * at the start and the end, and a checkpoint every step.
 */
function config(mode: 'sync' | 'pipeline', steps = 2): RunConfig {
  return tinyConfig({
    runtime: { backend: 'webgpu' },
    task: { family: 'sort', difficulty: 2, train_size: 16, test_size: 6 },
    rollout: { problems_per_step: 1, solver_group: 3, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 32, selection: 'adaptive' },
    pretrain: { steps: 2, batch_size: 8, warmup_steps: 1 },
    pipeline: { mode, segment_tokens: 16, max_segments: 2 },
    optimization: { steps, minibatch_size: 16, checkpoint_every: 1, kl_coef: 0.01 },
    eval: { every: 0, k: 2, problems: 2 },
  });
}

async function runOn(backend: 'webgpu' | 'cpu', name: string, cfg: RunConfig): Promise<{ runId: number; outcome: TrainOutcome; runDir: string }> {
  const runId = store.runs.create({ name, config: cfg as unknown as Record<string, unknown>, codeVersion: 'test', seed: cfg.seed });
  store.runs.setStatus(runId, 'running');
  const runDir = path.join(tmp.dir, name);
  await tf.setBackend(backend);
  try {
    const outcome = await trainRun({ store, runId, config: cfg, runDir });
    return { runId, outcome, runDir };
  } finally {
    await tf.setBackend('webgpu');
  }
}

interface TurnRow {
  id: number;
  agent: string;
  text: string;
  token_count: number;
  segments: number;
}

function turns(runId: number, step: number, agent?: string): TurnRow[] {
  return (
    store.db
      .prepare(
        `SELECT t.id, t.agent, t.text, t.token_count, (SELECT COUNT(*) FROM segments s WHERE s.turn_id = t.id) AS segments
         FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND t.step = ? AND e.split = 'train' ORDER BY t.id`,
      )
      .all(runId, step) as TurnRow[]
  ).filter((t) => agent === undefined || t.agent === agent);
}

/** A metric's value at `step`, or its first value when `step` is 'first'. */
function metric(runId: number, key: string, step: number | 'first', from: Store = store): number {
  const items = from.metrics.series(runId, key).items;
  const point = step === 'first' ? items[0] : items.find((p) => p.step === step);
  if (!point) throw new Error(`run ${runId} has no metric ${key} at step ${step}`);
  return point.value;
}

function closeRel(a: number, b: number, rel: number): void {
  expect(Math.abs(a - b), `${a} vs ${b}`).toBeLessThanOrEqual(rel * Math.max(Math.abs(a), Math.abs(b), 1e-3));
}

let gpu: Awaited<ReturnType<typeof runOn>>;
let cpu: Awaited<ReturnType<typeof runOn>>;

describe('a tiny run on webgpu equals the same run on cpu', () => {
  beforeAll(async () => {
    gpu = await runOn('webgpu', 'gpu-sync', config('sync'));
    cpu = await runOn('cpu', 'cpu-sync', config('sync'));
  }, 120_000);

  it('completes on webgpu, with the backend stored, turns, segments, metrics and checkpoints', async () => {
    expect(gpu.outcome).toEqual({ status: 'done', step: 2 });
    expect(store.runs.get(gpu.runId)!.backend).toBe('webgpu');
    const step0 = turns(gpu.runId, 0);
    expect(step0.filter((t) => t.agent === 'solver').length).toBe(3);
    expect(step0.some((t) => t.agent === 'verifier1')).toBe(true);
    for (const t of step0) if (t.token_count > 0) expect(t.segments, `turn ${t.id}`).toBeGreaterThan(0);
    expect(Number.isFinite(metric(gpu.runId, 'solver/loss', 1))).toBe(true);
    expect(Number.isFinite(metric(gpu.runId, 'eval/system/accuracy', 2))).toBe(true);
    expect(metric(gpu.runId, 'eval/fixed/answers', 0)).toBe(4);
    // The last checkpoint holds the trained weights (read back asynchronously on webgpu).
    const last = path.join(gpu.runDir, 'checkpoints', 'step-000001', 'solver');
    expect(fs.existsSync(path.join(last, 'weights.bin'))).toBe(true);
    const loaded = loadCheckpoint(last);
    try {
      expect(loaded.step).toBe(1);
      expect(loaded.optimizer?.stepCount).toBeGreaterThan(0);
      expect((await loaded.model.getWeightsAsync()).every(Number.isFinite)).toBe(true);
    } finally {
      loaded.model.dispose();
      loaded.optimizer?.dispose();
    }
  });

  it('the warm start and the first step: the same sampled tokens, log-probabilities and losses as cpu', () => {
    expect(cpu.outcome).toEqual({ status: 'done', step: 2 });
    // Warm-start losses are logged every 10 steps: the first step of each policy.
    for (const key of ['pretrain/solver/loss', 'pretrain/verifier/loss', 'pretrain/corrector/loss']) closeRel(metric(gpu.runId, key, 'first'), metric(cpu.runId, key, 'first'), 1e-4);
    for (const key of ['pretrain/solver/solver_score', 'pretrain/verifier/verifier_score']) expect(metric(gpu.runId, key, 'first')).toBe(metric(cpu.runId, key, 'first'));
    const g = turns(gpu.runId, 0);
    const c = turns(cpu.runId, 0);
    expect(g.filter((t) => t.token_count > 1).length).toBeGreaterThan(3); // real sampled text, not empty turns
    expect(g.map((t) => [t.agent, t.text])).toEqual(c.map((t) => [t.agent, t.text]));
    for (const key of ['solver/loss', 'solver/grad_norm', 'solver/kl', 'verifier1/loss', 'verifier1/grad_norm', 'eval/system/accuracy', 'eval/solver/avg@2']) {
      closeRel(metric(gpu.runId, key, 0), metric(cpu.runId, key, 0), 1e-3);
    }
    // Identical texts give identical rewards.
    expect(metric(gpu.runId, 'solver/reward/mean', 0)).toBe(metric(cpu.runId, 'solver/reward/mean', 0));
  });

  it('a run resumed from its checkpoint on webgpu continues to the new last step', async () => {
    const more = config('sync', 3);
    await tf.setBackend('webgpu');
    const outcome = await trainRun({ store, runId: gpu.runId, config: more, runDir: gpu.runDir, resume: true });
    expect(outcome).toEqual({ status: 'done', step: 3 });
    expect(turns(gpu.runId, 2, 'solver').length).toBe(3);
    expect(Number.isFinite(metric(gpu.runId, 'solver/loss', 2))).toBe(true);
    expect(store.events.latestOfKind(gpu.runId, 'resumed')?.message).toMatch(/resumed from the checkpoint of step 1/);
  }, 60_000);
});

describe('pipeline mode on webgpu', () => {
  it('in one process: completes, and its first Solver group equals the synchronous cpu run', async () => {
    const pipe = await runOn('webgpu', 'gpu-pipeline', config('pipeline'));
    expect(pipe.outcome).toEqual({ status: 'done', step: 2 });
    // The Solver of step 0 decodes before any update in either mode; later agents may see newer weights.
    expect(turns(pipe.runId, 0, 'solver').map((t) => t.text)).toEqual(turns(cpu.runId, 0, 'solver').map((t) => t.text));
    expect(turns(pipe.runId, 1).length).toBeGreaterThan(0);
    expect(Number.isFinite(metric(pipe.runId, 'eval/system/accuracy', 2))).toBe(true);
  }, 120_000);

  it('in the run manager worker processes (trainer and rollout): done, stored as webgpu', async () => {
    const manager = createRunManager({ store: database.store, databasePath: database.databasePath });
    const { runId } = await manager.start({ config: config('pipeline') as unknown as Record<string, unknown>, name: 'gpu workers' });
    await manager.waitForExit(runId);
    const run = database.store.runs.get(runId)!;
    const failure = database.store.events.events(runId).items.find((e) => e.level === 'error');
    expect(run.status, failure?.message).toBe('done');
    expect(run.backend).toBe('webgpu');
    const workers = database.store.db.prepare("SELECT DISTINCT worker FROM timeline WHERE run_id = ? AND kind = 'segment'").all(runId) as { worker: string }[];
    expect(workers.length).toBeGreaterThan(0);
    const solverTurns = database.store.db.prepare("SELECT COUNT(*) AS n FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'train' AND t.agent = 'solver'").get(runId) as { n: number };
    expect(solverTurns.n).toBe(6);
    // pipeline.gradient_share (0.5 by default): the rollout process computed gradient parts on webgpu too.
    const rolloutUpdates = database.store.db.prepare("SELECT COUNT(*) AS n FROM timeline WHERE run_id = ? AND kind = 'update' AND worker LIKE 'rollout-%'").get(runId) as { n: number };
    expect(rolloutUpdates.n).toBeGreaterThan(0);
  }, 180_000);
});

describe('a model family without asynchronous reads', () => {
  // Only what decodeInSegments reads before it decodes: the family check comes first.
  const twinless = { id: 'qwen', model: { family: 'hf', context: 64 }, tokenizer: { stopTokens: [0] } } as unknown as PolicyRuntime;
  const request = [{ promptText: 'x', promptTokens: [1, 2], streamId: 0 }];
  const options = { seed: 1, temperature: 1, topP: 1, maxNewTokens: 4, segmentTokens: 4, maxSegments: 1, agent: 'solver' };

  it('fails on webgpu with a message naming the policy, the family and the calls it lacks', async () => {
    await expect(decodeInSegmentsAsync(twinless, request, options)).rejects.toThrow(
      /^decoding solver \(policy "qwen"\): the hf model family has no asynchronous readback \(prefillAsync, decodeStepAsync, lastLogitsAsync, getWeightsAsync\) and the webgpu backend .*set runtime\.backend to wasm or cpu/,
    );
  });
});

describe('marsrl pretrain on webgpu', () => {
  it('warm-starts and saves checkpoints whose weights equal the same warm start on cpu', () => {
    const policy = { model: { d_model: 16, n_layers: 1, n_heads: 2, context: 128, mlp_ratio: 2 } };
    const raw = {
      seed: 5,
      task: { family: 'sort', difficulty: 2, train_size: 12, test_size: 4 },
      policies: { solver: policy, verifier: policy, corrector: policy },
      rollout: { max_response_tokens: 24 },
      pipeline: { segment_tokens: 12 },
      pretrain: { steps: 2, batch_size: 4, warmup_steps: 1 },
      eval: { problems: 2 },
    };
    const out = (backend: string) => {
      const file = path.join(tmp.dir, `pretrain-${backend}.json`);
      fs.writeFileSync(file, JSON.stringify({ ...raw, runtime: { backend } }));
      const dir = path.join(tmp.dir, `pretrained-${backend}`);
      const r = marsrl(['pretrain', '--config', file, '--out', dir, '--eval-every', '1', '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(backend === 'webgpu' ? /Backend webgpu/ : /Backend cpu/);
      return { dir, report: JSON.parse(r.stdout) as { policies: Record<string, { chosenStep: number }> } };
    };
    const gpu = out('webgpu');
    const cpu = out('cpu');
    for (const id of ['solver', 'verifier', 'corrector']) {
      expect(gpu.report.policies[id].chosenStep).toBe(cpu.report.policies[id].chosenStep);
      expect(gpu.report.policies[id].chosenStep).toBeGreaterThanOrEqual(1); // trained weights, not the initial ones
      // Read back as plain files: both were written by the same synchronous checkpoint writer.
      const g = new Float32Array(new Uint8Array(fs.readFileSync(path.join(gpu.dir, id, 'weights.bin'))).buffer);
      const c = new Float32Array(new Uint8Array(fs.readFileSync(path.join(cpu.dir, id, 'weights.bin'))).buffer);
      expect(g.length).toBe(c.length);
      let worst = 0;
      for (let i = 0; i < g.length; i++) worst = Math.max(worst, Math.abs(g[i] - c[i]));
      // Two AdamW steps of lr 1e-3 from the same initialisation (see the tolerances above).
      expect(worst, id).toBeLessThan(1e-5);
    }
  }, 120_000);
});
