/**
 * Replays of a reasoning-system run's episodes (issue 40) against `marsrl serve-model` serving
 * the shipped quick checkpoints: the replay runs the run's own chain code (`playChain`) with the
 * run's call seeds, so the greedy and the sampled chains come back text for text; another seed
 * draws other samples; a replay never adds a turn, an episode or a metric to the run.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { initBackend } from '../../src-main/engine/model/backend';
import { resolveConfig } from '../../src-main/engine/preflight';
import { runReplay } from '../../src-main/engine/replay/replay';
import { openStore, type Store } from '../../src-main/engine/store';
import { systemRun } from '../../src-main/engine/system/system-run';
import { loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { approvals } from '../helpers/key-approvals';
import { QUICK_CHECKPOINTS } from '../helpers/model-server';
import { tempDir } from '../helpers/tmp';

const KEY = 'replay-secret-key-2b7e151628aed2a6';
const ENV = { REPLAY_KEY: KEY };
const POOL = { keyApprovals: approvals({ REPLAY_KEY: ['127.0.0.1'] }) };

let tmp: ReturnType<typeof tempDir>;
let server: ModelServer;
let store: Store;
let runId = 0;

function servedConfig(url: string): RunConfig {
  const base = presetDocument('quick');
  const roles = ['solver', 'verifier', 'corrector'];
  return resolveConfig(
    deepMerge(base, {
      pipeline: { mode: 'sync' },
      eval: { problems: 4, k: 2 },
      system: { mode: 'chain' },
      endpoints: Object.fromEntries(roles.map((role) => [role, { base_url: url, model: role, api_key_env: 'REPLAY_KEY', concurrency: 4, timeout_s: 60 }])),
      policies: Object.fromEntries(roles.map((role) => [role, { ...(base.policies as Record<string, object>)[role], endpoint: role }])),
    }),
  );
}

beforeAll(async () => {
  await initBackend('wasm');
  tmp = tempDir('marsrl-replay-system-');
  const policies = ['solver', 'verifier', 'corrector'].map((role) => loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, role)));
  server = await createModelServer({ policies, token: KEY, batchWindowMs: 2, log: () => {} });
  store = openStore(path.join(tmp.dir, 'runs.db'));
  const config = servedConfig(server.baseUrl);
  runId = store.runs.create({ name: 'served', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
  store.runs.setStatus(runId, 'running');
  expect(await systemRun({ store, runId, config, env: ENV, pool: POOL })).toEqual({ status: 'done', step: 0 });
}, 120_000);

afterAll(async () => {
  store?.close();
  await server?.close();
  tmp?.cleanup();
});

function episodeOf(part: string, problem: number) {
  const items = store.trajectories.pageEpisodes({ runId, split: 'test', limit: 1000 }).items;
  const e = items.find((x) => (x.meta as { eval?: string; problem?: number }).eval === part && (x.meta as { problem?: number }).problem === problem);
  if (!e) throw new Error(`no ${part} episode of problem ${problem}`);
  return e;
}

const chainTexts = (episodeId: number, sample: number) =>
  store.trajectories
    .episodeTurns(episodeId)
    .filter((t) => t.sampleIndex === sample && t.supersededBy === null)
    .map((t) => [t.agent, t.text]);

function rows() {
  const count = (table: string) => (store.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE run_id = ?`).get(runId) as { n: number }).n;
  return [count('turns'), count('episodes'), count('metrics'), count('rewards')];
}

describe('replaying a system run served by marsrl serve-model', () => {
  it('gives every greedy and every sampled chain of the run text for text with the run seed', async () => {
    const before = rows();
    for (const [part, decoding] of [['greedy', 'greedy'], ['sampled', 'sampled']] as const) {
      for (let p = 0; p < 4; p++) {
        const e = episodeOf(part, p);
        const id = await runReplay(store, { runId, episodeId: e.id }, { env: ENV, pool: POOL });
        const r = store.replays.get(id)!;
        expect(r.replay.error).toBeNull();
        expect(r.replay.decoding).toBe(decoding);
        expect(r.replay.reproducible).toBe(true);
        expect(r.turns.map((t) => [t.agent, t.text])).toEqual(chainTexts(e.id, 0));
        expect(r.replay.matchesStored).toBe(true);
      }
    }
    expect(rows()).toEqual(before);
  }, 120_000);

  it('draws other samples with another seed, and plays a prompt typed by hand with one endpoint for every role', async () => {
    let differs = 0;
    for (let p = 0; p < 4; p++) {
      const e = episodeOf('sampled', p);
      const r = store.replays.get(await runReplay(store, { runId, episodeId: e.id, seed: 12345 }, { env: ENV, pool: POOL }))!;
      expect(r.replay.seed).toBe(12345);
      if (!r.replay.matchesStored) differs++;
    }
    expect(differs).toBeGreaterThan(0);
    const question = episodeOf('greedy', 0);
    const byHand = store.replays.get(await runReplay(store, { runId, prompt: store.trajectories.getProblem(question.problemId!)!.question, endpoint: 'solver' }, { env: ENV, pool: POOL }))!;
    expect(byHand.replay.error).toBeNull();
    expect(byHand.replay.status).toBe('done');
    expect(byHand.replay.model).toBe('endpoint solver');
    expect(byHand.replay.reproducible).toBeNull();
    expect(byHand.turns[0].agent).toBe('solver');
    expect(byHand.turns.every((t) => t.correct === null)).toBe(true);
  }, 60_000);
});
