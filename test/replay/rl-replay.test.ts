/**
 * Replays of an RL run's stored greedy evaluation chains (issue 40): with the checkpoint the
 * step's evaluation used (step S − 1's for the evaluation at step S, the starting policies at
 * step 0) and the run's seed, every replayed text equals the stored one, for the Studio GPT and
 * for a tiny Qwen3 Hugging Face folder with LoRA adapters; another checkpoint gives other texts;
 * a training episode is stored as not reproducible with the reason; the run's turns and metrics
 * are untouched.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { replayModels, runReplay, ReplayRequestError } from '../../src-main/engine/replay/replay';
import type { Store } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';
import { trainedRun } from '../helpers/trained-run';
import { writeTinyQwen3Model } from '../training/hf-tiny';
import { tinyConfig } from '../training/tiny';

const folder = tempDir('marsrl-replay-rl-');
let baseDir = '';
beforeAll(async () => {
  await initBackend('wasm');
  baseDir = writeTinyQwen3Model(path.join(folder.dir, 'base'));
});
afterAll(() => folder.cleanup());

const shape = { rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 12, selection: 'random' }, optimization: { steps: 2, minibatch_size: 8, checkpoint_every: 1 }, eval: { every: 1, k: 1, problems: 2 }, pipeline: { mode: 'sync', segment_tokens: 6, max_segments: 2 } };
const gpt = trainedRun('gpt', () => tinyConfig(shape), 120_000);
const lora = { model: { kind: 'hf', path: '', lora: { rank: 2, alpha: 4, dropout: 0 } }, optimizer: { lr: 0.3 } };
const hf = trainedRun('lora', () => tinyConfig({ ...shape, policies: { solver: { ...lora, model: { ...lora.model, path: baseDir } }, verifier: { ...lora, model: { ...lora.model, path: baseDir } }, corrector: { ...lora, model: { ...lora.model, path: baseDir } } } }), 180_000);

function evalEpisodes(store: Store, runId: number, step: number) {
  return store.trajectories.pageEpisodes({ runId, split: 'test', step, limit: 100 }).items;
}

/** The run's rows a replay must never change. */
function runRows(store: Store, runId: number) {
  const count = (table: string) => (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE run_id = ?`).get(runId) as { n: number }).n;
  return { turns: count('turns'), episodes: count('episodes'), metrics: JSON.stringify(store.metrics.latest(runId, store.metrics.keys(runId))) };
}

async function expectReproduced(store: Store, runId: number, step: number, checkpoint: number | 'init') {
  const [episode] = evalEpisodes(store, runId, step);
  expect(episode, `an evaluation episode at step ${step}`).toBeDefined();
  const stored = store.trajectories.episodeTurns(episode.id).filter((t) => t.supersededBy === null);
  const id = await runReplay(store, { runId, episodeId: episode.id, checkpoint: { step: checkpoint }, decoding: 'greedy' });
  const detail = store.replays.get(id)!;
  expect(detail.replay.error).toBeNull();
  expect(detail.replay.status).toBe('done');
  expect(detail.replay.reproducible).toBe(true);
  expect(detail.turns.map((t) => [t.agent, t.text])).toEqual(stored.map((t) => [t.agent, t.text]));
  expect(detail.replay.matchesStored).toBe(true);
  return { episode, stored, detail };
}

describe.each([
  ['the Studio GPT', gpt, 'gpt', false],
  ['a tiny Qwen3 with LoRA', hf, 'hf', true],
] as const)('replaying %s run', (_name, run, family, isLora) => {
  it('with the checkpoint each evaluation used gives the stored greedy texts exactly; another checkpoint differs', async () => {
    const { store, runId } = run;
    expect(run.outcome.status).toBe('done');
    const before = runRows(store, runId);
    await expectReproduced(store, runId, 1, 0);
    await expectReproduced(store, runId, 2, 1);
    // Step 0: the GPT was warm-started in memory and never saved (said, not claimed); the Qwen3
    // started from its folder with fresh adapters, which 'init' makes again.
    const [first] = evalEpisodes(store, runId, 0);
    const warm = store.replays.get(await runReplay(store, { runId, episodeId: first.id }))!;
    const warmStarted = store.events.latestOfKind(runId, 'warm_start') !== null;
    expect(warmStarted).toBe(family === 'gpt');
    expect(warm.replay.reproducible).toBe(!warmStarted);
    expect(warm.replay.matchesStored).toBe(warmStarted ? null : true);
    if (warmStarted) expect(warm.replay.reproducibleReason).toMatch(/warm-started in memory/);
    // Left out, the checkpoint is the one the episode's step was evaluated with.
    const [episode] = evalEpisodes(store, runId, 2);
    const byDefault = store.replays.get(await runReplay(store, { runId, episodeId: episode.id }))!;
    expect(byDefault.replay.model).toBe(`checkpoint of step 1 of run ${runId}`);
    expect(byDefault.replay.matchesStored).toBe(true);
    // The policies as made before the warm start, on the step-2 episode: other weights. The GPT's
    // texts differ; the tiny Qwen3's greedy texts come from its random base, which LoRA barely moves.
    const other = store.replays.get(await runReplay(store, { runId, episodeId: episode.id, checkpoint: { step: 'init' } }))!;
    expect(other.replay.status).toBe('done');
    if (family === 'gpt') expect(other.replay.matchesStored).toBe(false);
    // What the replay offered and loaded: the run's checkpoints on disk, of its family.
    const offered = replayModels(store, runId).checkpoints.filter((c) => c.runId === runId);
    expect(offered.map((c) => c.step).sort()).toEqual([0, 1]);
    for (const c of offered) expect([c.family, c.lora]).toEqual([family, isLora]);
    expect(runRows(store, runId)).toEqual(before);
    expect(store.replays.list(runId).length).toBe(5);
  }, 120_000);

  it('stores a training episode as not reproducible, with the reason, and still plays it', async () => {
    const { store, runId } = run;
    const [train] = store.trajectories.pageEpisodes({ runId, split: 'train', step: 1, limit: 1 }).items;
    const r = store.replays.get(await runReplay(store, { runId, episodeId: train.id, checkpoint: { step: 0 }, decoding: 'sampled', seed: 7 }))!;
    expect(r.replay.status).toBe('done');
    expect(r.replay.reproducible).toBe(false);
    expect(r.replay.reproducibleReason).toMatch(/batched, grouped rollout/);
    expect(r.replay.matchesStored).toBeNull();
    expect(r.turns[0].agent).toBe('solver');
    expect(r.replay.seed).toBe(7);
  }, 60_000);
});

describe('bad requests', () => {
  it('name the field', async () => {
    const { store, runId } = gpt;
    const [episode] = evalEpisodes(store, runId, 2);
    await expect(runReplay(store, { runId, episodeId: episode.id, checkpoint: { step: 0 }, endpoint: 'x' })).rejects.toThrow(/checkpoint or an endpoint, not both/);
    await expect(runReplay(store, { runId, episodeId: episode.id, checkpoint: { step: 40 } })).rejects.toMatchObject({ field: 'checkpoint.step' });
    await expect(runReplay(store, { runId, episodeId: 999_999 })).rejects.toBeInstanceOf(ReplayRequestError);
    await expect(runReplay(store, { runId, episodeId: episode.id, problemId: 1 })).rejects.toMatchObject({ field: 'episodeId' });
    await expect(runReplay(store, { runId, endpoint: 'none', prompt: 'x' })).rejects.toThrow(/no endpoint "none"/);
  });
});
