/**
 * A run with a Hugging Face policy end to end (issue #13), through the run manager and its worker
 * processes, as `marsrl run` and `marsrl resume` start them: a tiny random Qwen3 model plays the
 * Solver beside a GPT Verifier/Corrector (two families, two tokenizers in one run), in sync and in
 * pipeline mode (rollout in its own process), stores its turns, segments and rewards, writes
 * checkpoints of the hf family, and resumes from them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { diffConfigs } from '../../src-main/engine/compare/config-diff';
import { loadRuns } from '../../src-main/engine/compare/load';
import { hfModelIdentity } from '../../src-main/engine/hf/load';
import { openSafetensors, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { readAnyCheckpointManifest } from '../../src-main/engine/checkpoint/manifest';
import type { Store } from '../../src-main/engine/store';
import { MODEL_IDENTITY_EVENT } from '../../src-main/engine/training/trainer';
import { createRunManager } from '../../src-main/runner/manager';
import { runsDatabase } from '../helpers/runs-db';
import { resumeToExit, runStoppedAfterFirstStep } from '../helpers/stop-resume';
import { tempDir } from '../helpers/tmp';
import { writeTinyQwen3Model } from './hf-tiny';
import { tinyConfig } from './tiny';

let store: Store;
let databasePath: string;
let modelDir: string;
const database = runsDatabase();
const folder = tempDir('marsrl-hf-run-');
beforeAll(() => {
  ({ store, databasePath } = database);
  modelDir = writeTinyQwen3Model(path.join(folder.dir, 'qwen3-tiny'));
  return () => folder.cleanup();
});

const judge = { model: { d_model: 16, n_layers: 1, n_heads: 2, context: 128, mlp_ratio: 2 }, optimizer: { lr: 1e-3 } };
function hfConfig(mode: 'sync' | 'pipeline', steps: number) {
  return tinyConfig({
    policies: { qwen: { model: { kind: 'hf', path: modelDir }, optimizer: { lr: 1e-2, weight_decay: 0.1 } }, judge },
    agents: { solver: 'qwen', verifier: 'judge', corrector: 'judge' },
    rollout: { problems_per_step: 2, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 24, selection: 'random' },
    optimization: { steps, minibatch_size: 8, checkpoint_every: 1 },
    pipeline: { mode, segment_tokens: 8, max_segments: 2, max_staleness: 1, gradient_share: 0.5 },
  });
}

interface TurnRow {
  id: number;
  policy_id: string;
  text: string;
  token_count: number;
  reward: number | null;
  segments: number;
}

function turnsOf(runId: number): TurnRow[] {
  return store.db
    .prepare(
      `SELECT t.id, t.policy_id, t.text, t.token_count, r.value AS reward, (SELECT COUNT(*) FROM segments s WHERE s.turn_id = t.id) AS segments
       FROM turns t JOIN episodes e ON e.id = t.episode_id LEFT JOIN rewards r ON r.turn_id = t.id WHERE t.run_id = ? AND e.split = 'train' ORDER BY t.id`,
    )
    .all(runId) as TurnRow[];
}

/** The run's newest checkpoint folder of a policy. */
function latestCheckpoint(runId: number, policyId: string): string {
  const rows = store.db.prepare('SELECT path FROM checkpoints WHERE run_id = ? AND policy_id = ? ORDER BY step DESC, id DESC LIMIT 1').all(runId, policyId) as { path: string }[];
  expect(rows.length).toBe(1);
  return rows[0].path;
}

describe.each(['sync', 'pipeline'] as const)('a run with a Hugging Face Solver (%s)', (mode) => {
  it('trains 2 RL steps, stores its turns, segments and rewards, records the model and checkpoints the hf family', async () => {
    const manager = createRunManager({ store, databasePath });
    const { runId } = await manager.start({ config: hfConfig(mode, 2) as unknown as Record<string, unknown>, name: `hf ${mode}` });
    await manager.waitForExit(runId);
    const run = store.runs.get(runId)!;
    const failure = store.events.events(runId).items.find((e) => e.level === 'error');
    expect(run.status, failure?.message).toBe('done');

    const turns = turnsOf(runId);
    const solver = turns.filter((t) => t.policy_id === 'qwen');
    const judged = turns.filter((t) => t.policy_id === 'judge');
    expect(solver.length).toBe(2 * 2 * 2); // steps × problems × solver_group
    expect(judged.length).toBeGreaterThan(0);
    for (const t of solver) {
      expect(t.token_count).toBeGreaterThan(0);
      expect(t.segments).toBeGreaterThan(0);
      expect(t.reward).not.toBeNull();
    }
    // The Solver's text is what its own tokenizer decodes: byte-level BPE output, not the GPT's characters.
    expect(solver.some((t) => t.text.length > 0)).toBe(true);
    // Each Solver turn's segments cover its response tokens exactly, in order.
    const coverage = store.db
      .prepare(`SELECT t.token_count AS tokens, SUM(s.token_end - s.token_start) AS covered, MIN(s.token_start) AS first FROM segments s JOIN turns t ON t.id = s.turn_id WHERE t.run_id = ? AND t.policy_id = 'qwen' GROUP BY t.id`)
      .all(runId) as { tokens: number; covered: number; first: number }[];
    expect(coverage.length).toBe(solver.length);
    for (const c of coverage) expect(c).toEqual({ tokens: c.tokens, covered: c.tokens, first: 0 });

    // Both policies were updated: update spans for the Solver and the Verifier.
    const updated = new Set(store.events.timeline(runId).filter((s) => s.kind === 'update').map((s) => s.agent));
    expect(updated).toContain('solver');
    expect(updated).toContain('verifier1');

    // The model identity the run records is the folder's own.
    const event = store.events.latestOfKind(runId, MODEL_IDENTITY_EVENT);
    const identity = (event?.data as { policies: Record<string, { family: string; path: string; configDigest: string; weightsDigest: string }> }).policies;
    const expected = hfModelIdentity(modelDir);
    expect(identity.qwen).toMatchObject({ family: 'hf', path: expected.path, configDigest: expected.configDigest, weightsDigest: expected.weightsDigest });
    expect(identity.judge.family).toBe('gpt');

    // The final checkpoint of the hf policy: family hf, the base named, weights moved by RL.
    const dir = latestCheckpoint(runId, 'qwen');
    const manifest = readAnyCheckpointManifest(dir);
    expect(manifest.family).toBe('hf');
    if (manifest.family !== 'hf') return;
    expect(manifest.step).toBe(1);
    expect(manifest.model.base).toEqual(expected);
    expect(manifest.optimizer?.step).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(dir, 'tokenizer', 'tokenizer.json'))).toBe(true);
    // A random Solver is never right, so its advantages may all be 0; AdamW's decoupled decay
    // still shrinks every matrix each update: the checkpoint holds the trained weights, not the base.
    // (The embedding is stored [D, V] in the checkpoint and [V, D] in the folder: compare norms.)
    const sumSquares = (a: Float32Array) => a.reduce((sum, v) => sum + v * v, 0);
    const trained = readTensorF32(openSafetensors(path.join(dir, 'weights.safetensors')).tensors.get('model.embed_tokens.weight')!);
    const base = readTensorF32(openSafetensors(modelDir).tensors.get('model.embed_tokens.weight')!);
    expect(trained.length).toBe(base.length);
    expect(sumSquares(trained)).toBeLessThan(sumSquares(base) * 0.9999);
    expect(readAnyCheckpointManifest(latestCheckpoint(runId, 'judge')).family ?? 'gpt').toBe('gpt');
  }, 240_000);
});

describe.each(['sync', 'pipeline'] as const)('resuming a run with a Hugging Face policy (%s)', (mode) => {
  it('stops after a step, resumes from the hf checkpoint with the versions it had, and finishes', async () => {
    const runId = await runStoppedAfterFirstStep(store, databasePath, hfConfig(mode, 3), `hf resume ${mode}`);
    expect(store.runs.get(runId)!.status).toBe('interrupted');
    const before = turnsOf(runId).length;
    await resumeToExit(store, databasePath, runId);
    const failure = store.events.events(runId).items.find((e) => e.level === 'error');
    expect(store.runs.get(runId)!.status, failure?.message).toBe('done');
    expect(store.events.events(runId).items.some((e) => e.kind === 'resumed')).toBe(true);
    expect(turnsOf(runId).length).toBeGreaterThan(before);
    expect(store.metrics.series(runId, 'solver/reward/mean').items.map((p) => p.step).slice(-1)).toEqual([2]);
    // The resumed Solver decodes with the version its checkpoint had, not from 0 again.
    const versions = store.db
      .prepare(`SELECT t.step, MIN(s.policy_version) AS v FROM segments s JOIN turns t ON t.id = s.turn_id WHERE t.run_id = ? AND t.policy_id = 'qwen' GROUP BY t.step ORDER BY t.step`)
      .all(runId) as { step: number; v: number }[];
    const last = versions[versions.length - 1];
    expect(last.step).toBe(2);
    expect(last.v).toBeGreaterThanOrEqual(1);
    expect(readAnyCheckpointManifest(latestCheckpoint(runId, 'qwen')).step).toBe(2);
  }, 240_000);
});

describe('comparing runs that started from different models', () => {
  it('the config diff shows the weights digest when the same folder held other weights', async () => {
    const dir = writeTinyQwen3Model(path.join(folder.dir, 'replaced'), { seed: 11 });
    const manager = createRunManager({ store, databasePath });
    const config = () => ({ ...hfConfig('sync', 0), policies: { ...hfConfig('sync', 0).policies, qwen: { ...hfConfig('sync', 0).policies.qwen, model: { kind: 'hf' as const, path: dir, dtype: 'float32' as const, enable_thinking: false } } } });
    const first = await manager.start({ config: config() as unknown as Record<string, unknown>, name: 'before' });
    await manager.waitForExit(first.runId);
    writeTinyQwen3Model(dir, { seed: 12 });
    const second = await manager.start({ config: config() as unknown as Record<string, unknown>, name: 'after' });
    await manager.waitForExit(second.runId);
    for (const id of [first.runId, second.runId]) expect(store.runs.get(id)!.status).toBe('done');
    const diff = diffConfigs(loadRuns(store, [first.runId, second.runId], [], false));
    // Same config text; only the model the Solver started from differs (its config.json is the same too).
    expect(diff.keys).toEqual(['models.qwen.weights_digest']);
    expect(diff.rows.map((r) => r.values['models.qwen.weights_digest'])).toEqual([expect.stringMatching(/^[0-9a-f]{64}$/), hfModelIdentity(dir).weightsDigest]);
  }, 240_000);
});
