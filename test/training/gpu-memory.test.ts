/**
 * Device-memory accounting per policy (issue #15): the byte counts are the tensors' sizes, and a
 * run over `runtime.gpu_memory_limit_mb` ends with a message naming what did not fit and the
 * fields that shrink it, after which it resumes from its last checkpoint.
 */
import * as tf from '@tensorflow/tfjs-core';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { createModel } from '../../src-main/engine/gpt/model';
import { kvCacheBytes } from '../../src-main/engine/checkpoint/families';
import { GpuMemoryError, MemoryBudget, optimizerBytes, weightBytes } from '../../src-main/engine/model/gpu-memory';
import { PLAIN_STRATEGY } from '../../src-main/engine/model/ops';
import { createOptimizer } from '../../src-main/engine/model/optim';
import type { Store } from '../../src-main/engine/store';
import { trainRun } from '../../src-main/engine/training/trainer';
import { storeInTemp } from '../helpers/runs-db';
import { tinyConfig } from './tiny';

const CONFIG = { vocabSize: 11, d_model: 16, n_layers: 2, n_heads: 2, context: 32, mlp_ratio: 2 };
const OPT = { lr: 1e-3, beta1: 0.9, beta2: 0.999, weight_decay: 0, grad_clip: 1 };

beforeAll(async () => {
  await initBackend('wasm');
});

describe('byte counts from tensor sizes', () => {
  it('weights, Adam moments and a concat KV cache count exactly what their tensors hold', () => {
    const model = createModel(CONFIG, 1, { kernels: PLAIN_STRATEGY });
    expect(weightBytes(model)).toBe(model.variables.reduce((s, v) => s + v.size * 4, 0));
    const tensorAdam = createOptimizer(model, OPT, undefined, 'tensor');
    const before = tf.memory().numBytes;
    const jsAdam = createOptimizer(model, OPT, undefined, 'js');
    expect(tf.memory().numBytes).toBe(before); // js moments are not tensors
    expect(optimizerBytes(jsAdam, model.numParams)).toBe(0);
    const state = tensorAdam.getState();
    expect(optimizerBytes(tensorAdam, model.numParams)).toBe((state.m.length + state.v.length) * 4);
    // A 'concat' cache after a prefill of 5 positions and 3 decode steps: 8 positions, 3 rows.
    const rows = [
      [1, 2, 3, 4, 5],
      [2, 3, 4, 5, 6],
      [0, 0, 1, 2, 3],
    ];
    let { cache } = model.prefill(rows, [0, 0, 2], 8);
    for (let t = 0; t < 3; t++) cache = model.decodeStep(new Int32Array([1, 2, 3]), new Int32Array([5 + t, 5 + t, 3 + t]), cache).cache;
    expect(cache.mode).toBe('concat');
    const held = cache.layers.reduce((s, p) => s + (p.k.size + p.v.size) * 4, 0);
    expect(kvCacheBytes(model, 3, 8)).toBe(held);
    model.disposeCache(cache);
    jsAdam.dispose();
    tensorAdam.dispose();
    model.dispose();
  });

  it('the budget names what did not fit and the fields that shrink it', () => {
    const budget = new MemoryBudget(1000);
    budget.setResident('solver', { weights: 600, optimizer: 0 });
    expect(() => budget.setResident('verifier', { weights: 300, optimizer: 200 })).toThrow(
      /weights \(0\.00 MiB\) and optimizer state \(0\.00 MiB\) of policy "verifier" does not fit in runtime\.gpu_memory_limit_mb.*policies\.verifier\.model\.d_model/,
    );
    budget.setResident('verifier', { weights: 300, optimizer: 0 });
    expect(() => budget.reserveCache('solver', 101, '6 sequences')).toThrow(GpuMemoryError);
    budget.reserveCache('solver', 100, '6 sequences'); // exactly at the limit fits
    expect(budget.totalBytes).toBe(1000);
    budget.releaseCache('solver');
    expect(budget.totalBytes).toBe(900);
    expect(new MemoryBudget(0).limitBytes).toBe(0);
  });
});

describe('a run over its memory limit', () => {
  const db = storeInTemp('mem.db');
  let store: Store;
  beforeAll(() => {
    store = db.store;
  });

  it('ends with the message, and resumes from its last checkpoint once the limit allows', async () => {
    const config = tinyConfig({ optimization: { steps: 2, minibatch_size: 16, checkpoint_every: 1 } });
    const runId = store.runs.create({ name: 'mem', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
    store.runs.setStatus(runId, 'running');
    const runDir = path.join(db.dir, 'run');
    // First: stop after step 0 (checkpointed).
    const stop = new AbortController();
    const first = await trainRun({ store, runId, config, runDir, signal: stop.signal, onProgress: (p) => p.phase === 'rl' && p.step >= 1 && stop.abort('test stop') });
    expect(first.status).toBe('interrupted');
    const report = store.events.latestOfKind(runId, 'gpu_memory')!.data as { policies: Record<string, { weights: number; optimizer: number }> };
    const resident = Object.values(report.policies).reduce((s, m) => s + m.weights + m.optimizer, 0);
    expect(report.policies.solver.weights).toBeGreaterThan(0);
    expect(store.metrics.series(runId, 'memory/solver/weights_bytes').items[0].value).toBe(report.policies.solver.weights);

    // Resumed with a limit that holds the weights but not a rollout's key/value cache.
    const limited = { ...config, runtime: { ...config.runtime, gpu_memory_limit_mb: (resident + 512) / 2 ** 20 } };
    const failed = await trainRun({ store, runId, config: limited, runDir, resume: true });
    expect(failed.status).toBe('failed');
    const reason = failed.status === 'failed' ? failed.reason : '';
    expect(reason).toMatch(/out of GPU memory budget: the key\/value cache of policy "solver" for \d+ sequences of up to \d+ tokens \(solver\).*does not fit/);
    expect(reason).toMatch(/rollout\.solver_group, rollout\.problems_per_step, rollout\.max_response_tokens, policies\.solver\.model\.context, or raise runtime\.gpu_memory_limit_mb/);

    // Resumed without the limit: it finishes from the step-0 checkpoint.
    const done = await trainRun({ store, runId, config, runDir, resume: true });
    expect(done.status).toBe('done');
    expect(done.step).toBe(2);
    const steps = store.metrics.series(runId, 'solver/reward/mean').items.map((p) => p.step);
    expect(steps).toEqual([0, 1]);
  });
});
