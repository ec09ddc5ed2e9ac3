import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src-main/engine/store';
import { trainRun } from '../../src-main/engine/training/trainer';
import { storeInTemp } from '../helpers/runs-db';
import { tinyConfig } from '../training/tiny';

const db = storeInTemp('pipeline.db');
let store: Store;

beforeAll(() => {
  store = db.store;
});

/** One policy for every role: every agent's batch moves the version the next agent decodes with. */
const sharedPolicy = { agents: { solver: 'solver', verifier: 'solver', corrector: 'solver' } };

async function run(name: string, overrides: Record<string, unknown>) {
  const config = tinyConfig({ optimization: { steps: 4, minibatch_size: 4, checkpoint_every: 0 }, ...overrides });
  const runId = store.runs.create({ name, config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
  const outcome = await trainRun({ store, runId, config, runDir: path.join(db.dir, name) });
  return { runId, outcome, config };
}

/**
 * Per (step, agent): the trainer's version when it started the agent's batch (an update span
 * records the version its update produced, so the first span's version − 1) minus the oldest
 * version among the batch's segments, from the stored rows.
 */
function batchStaleness(runId: number): { step: number; agent: string; staleness: number }[] {
  return store.db
    .prepare(
      `SELECT t.step, t.agent,
              (SELECT MIN(u.policy_version) FROM timeline u WHERE u.run_id = t.run_id AND u.kind = 'update' AND u.step = t.step AND u.agent = t.agent)
                - 1 - MIN(s.policy_version) AS staleness
       FROM turns t JOIN segments s ON s.turn_id = t.id JOIN episodes e ON e.id = t.episode_id
       WHERE t.run_id = ? AND e.split = 'train' GROUP BY t.step, t.agent HAVING staleness IS NOT NULL`,
    )
    .all(runId) as { step: number; agent: string; staleness: number }[];
}

describe('pipeline mode (rollout in this process)', () => {
  it.each([0, 1, 2])('holds max_staleness %i in policy versions, logged per agent and per step', async (maxStaleness) => {
    const { runId, outcome } = await run(`bound-${maxStaleness}`, { ...sharedPolicy, pipeline: { mode: 'pipeline', segment_tokens: 8, max_segments: 2, max_staleness: maxStaleness } });
    expect(outcome.status).toBe('done');
    const batches = batchStaleness(runId);
    expect(batches.length).toBeGreaterThanOrEqual(8);
    for (const b of batches) expect(b.staleness, `${b.agent} at step ${b.step}`).toBeLessThanOrEqual(maxStaleness);
    if (maxStaleness === 0) expect(batches.every((b) => b.staleness === 0)).toBe(true);
    const logged = store.metrics.series(runId, 'pipeline/staleness').items.map((p) => p.value);
    expect(logged).toHaveLength(4);
    expect(Math.max(...logged)).toBeLessThanOrEqual(maxStaleness);
    // Waits, when the rollout had to hold the bound, are on the timeline with the segments.
    const kinds = new Set(store.events.timeline(runId).map((s) => s.kind));
    expect(kinds).toContain('segment');
    expect(kinds).toContain('update');
    if (maxStaleness === 0) expect(kinds).toContain('wait');
    // A rollout in this process shares its thread: it never gets a gradient share.
    const updaters = new Set(store.events.timeline(runId).filter((s) => s.kind === 'update').map((s) => s.worker));
    expect(updaters.size).toBe(1);
  });

  it('sync with one shared policy trains Verifier1 on data one update old; pipeline at max_staleness 0 does not', async () => {
    const sync = await run('sync-shared', { ...sharedPolicy, pipeline: { mode: 'sync', segment_tokens: 8, max_segments: 2 } });
    expect(Math.max(...batchStaleness(sync.runId).filter((b) => b.agent === 'verifier1').map((b) => b.staleness))).toBeGreaterThan(0);
    // The starting evaluation, split between trainer and rollout in the pipeline, equals sync's.
    const pipelined = await run('pipeline-shared', { ...sharedPolicy, pipeline: { mode: 'pipeline', segment_tokens: 8, max_segments: 2, max_staleness: 0 } });
    const atStart = (runId: number) => Object.fromEntries(store.metrics.keys(runId).filter((k) => k.startsWith('eval/')).map((k) => [k, store.metrics.series(runId, k).items.find((p) => p.step === 0)?.value]));
    expect(Object.keys(atStart(sync.runId)).length).toBeGreaterThan(8);
    expect(atStart(pipelined.runId)).toEqual(atStart(sync.runId));
    // Both processes spent time on it.
    expect(new Set(store.events.timeline(pipelined.runId).filter((s) => s.kind === 'eval' && s.step === 0).map((s) => s.worker)).size).toBe(2);
  });

  it('waits for the whole episode when the math needs it: shared rewards, global advantages', async () => {
    const episodeScoped = { ...sharedPolicy, reward: { scheme: 'shared' }, advantage: { mode: 'global' } };
    const { runId, outcome } = await run('episode-scope', { ...episodeScoped, pipeline: { mode: 'pipeline', segment_tokens: 8, max_segments: 2, max_staleness: 0 } });
    expect(outcome).toEqual({ status: 'done', step: 4 });
    // Step 0 is decoded with the starting weights in both modes (no update of this step can be
    // waited for), so its rewards and advantages, scored once the episodes are whole, equal sync's.
    const sync = await run('episode-scope-sync', { ...episodeScoped, pipeline: { mode: 'sync', segment_tokens: 8, max_segments: 2 } });
    const scores = (id: number) =>
      store.db
        .prepare(
          `SELECT t.agent, t.text, r.value AS reward, a.value AS advantage, a.mu, a.sigma FROM turns t JOIN rewards r ON r.turn_id = t.id JOIN advantages a ON a.turn_id = t.id
           JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'train' AND t.step = 0 ORDER BY t.id`,
        )
        .all(id);
    expect(scores(runId).length).toBeGreaterThan(6);
    expect(scores(runId)).toEqual(scores(sync.runId));
    // Global advantages over every agent of a prompt: they sum to ~0 per group.
    const sums = store.db
      .prepare(`SELECT a.group_key, t.step, SUM(a.value) AS total, COUNT(*) AS n FROM advantages a JOIN turns t ON t.id = a.turn_id WHERE a.run_id = ? GROUP BY t.step, a.group_key`)
      .all(runId) as { total: number; n: number }[];
    for (const s of sums) if (s.n > 1) expect(Math.abs(s.total)).toBeLessThan(1e-6 * s.n + 1e-9);
    // The rollout could not wait for same-step updates of the shared policy; later agents of a
    // step are trained after earlier agents' updates, as in sync, and only by those.
    for (const b of batchStaleness(runId)) expect(b.staleness).toBeLessThanOrEqual(b.agent === 'solver' ? 0 : 4);
  });
});
