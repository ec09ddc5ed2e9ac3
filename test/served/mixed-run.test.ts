/**
 * Mixed systems in RL runs (issue #16): `marsrl serve-model` (in this process) serves the quick
 * Verifier checkpoint as the Verifier's endpoint, and a quick-like RL run started through the run
 * manager trains the quick Solver and Corrector locally against it, in sync mode and in pipeline
 * mode (whose rollout worker makes its own pool). The served Verifier is frozen: its turns are in
 * the store with rewards and advantages, but nothing of it is built, trained or checkpointed; the
 * pool's metrics are in the run's; the API key is in no database file, log or export. A run whose
 * endpoint goes away fails naming it and resumes from its checkpoint once it is back.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { runExport } from '../../src-main/engine/export';
import { loadCheckpoint } from '../../src-main/engine/checkpoint/checkpoint';
import { initBackend } from '../../src-main/engine/model/backend';
import { createRunManager } from '../../src-main/runner/manager';
import { loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { approvedHome } from '../helpers/key-approvals';
import { useStudioHome } from '../helpers/env';
import { runsDatabase } from '../helpers/runs-db';
import { QUICK_CHECKPOINTS } from '../helpers/model-server';

const KEY = 'mixed-run-secret-key-7c1d9e2f3a4b5c6d';
const KEY_ENV = 'MIXED_RUN_TEST_KEY';
const STEPS = 2;

const database = runsDatabase();
let server: ModelServer;
let home: ReturnType<typeof approvedHome>;
let restoreHome: (() => void) | undefined;

beforeAll(async () => {
  await initBackend('wasm');
  server = await createModelServer({ policies: [loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'verifier'))], token: KEY, log: () => {} });
  // The run's worker processes inherit this environment: the key reaches them only by the variable's name.
  process.env[KEY_ENV] = KEY;
  // Issue #36: and the data folder they read approves that variable for the loopback server.
  home = approvedHome({ [KEY_ENV]: ['127.0.0.1'] });
  restoreHome = useStudioHome(home.dir);
}, 60_000);

afterAll(async () => {
  delete process.env[KEY_ENV];
  restoreHome?.();
  home?.cleanup();
  await server?.close();
});

function mixedConfig(mode: 'sync' | 'pipeline', baseUrl = server.baseUrl, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return deepMerge(presetDocument('quick'), {
    task: { train_size: 200, test_size: 8 },
    pipeline: { mode, segment_tokens: 16, max_staleness: 1 },
    rollout: { problems_per_step: 4, solver_group: 4, select_k: 2, verifier_group: 2, corrector_group: 2, rounds: 1, selection: 'balanced' },
    optimization: { steps: STEPS, minibatch_size: 16, checkpoint_every: 1 },
    eval: { every: 0, k: 2, problems: 4 },
    endpoints: { judge: { base_url: baseUrl, model: 'verifier', api_key_env: KEY_ENV, concurrency: 4, retries: 1, timeout_s: 5 } },
    policies: { verifier: { endpoint: 'judge' } },
    ...changes,
  }) as Record<string, unknown>;
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/** Max |a − b| over two equally long weight vectors. */
function maxDifference(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

describe.each(['sync', 'pipeline'] as const)('an RL run with a served Verifier (%s mode)', (mode) => {
  it('trains the local Solver and Corrector against the frozen served Verifier, storing its turns like the others', async () => {
    const { store, databasePath } = database;
    const logs: string[] = [];
    const manager = createRunManager({ store, databasePath, onWorkerMessage: (m) => void logs.push(JSON.stringify(m)) });
    const { runId } = await manager.start({ config: mixedConfig(mode), name: `mixed ${mode}` });
    await manager.waitForExit(runId);
    const run = store.runs.get(runId)!;
    const errors = store.db.prepare("SELECT kind, message FROM events WHERE run_id = ? AND level = 'error'").all(runId);
    expect(run.status, JSON.stringify(errors)).toBe('done');

    const verifierTurns = store.db
      .prepare("SELECT t.policy_id AS policy, t.parsed AS parsed, t.token_count AS tokens, r.value AS reward, a.value AS advantage FROM turns t JOIN episodes e ON e.id = t.episode_id JOIN rewards r ON r.turn_id = t.id JOIN advantages a ON a.turn_id = t.id WHERE t.run_id = ? AND e.split = 'train' AND t.agent = 'verifier1'")
      .all(runId) as { policy: string; parsed: string | null; tokens: number; reward: number; advantage: number }[];
    // select_k 2 solutions of each of 4 problems, 2 verdicts each, every step.
    expect(verifierTurns.length).toBe(STEPS * 4 * 2 * 2);
    expect(new Set(verifierTurns.map((t) => t.policy))).toEqual(new Set(['verifier']));
    expect(verifierTurns.every((t) => Number.isFinite(t.reward) && Number.isFinite(t.advantage))).toBe(true);
    // Their lengths are the server's counts (the turns hold no local token ids), never 0.
    expect(verifierTurns.every((t) => t.tokens > 0)).toBe(true);
    expect(store.metrics.latest(runId, ['verifier1/response_length'])['verifier1/response_length']).toBeGreaterThan(0);
    // Served segments are stored too (the trajectory browser shows the turn being written).
    const servedSegments = store.db.prepare("SELECT COUNT(*) AS n FROM segments s JOIN turns t ON t.id = s.turn_id WHERE t.run_id = ? AND t.agent = 'verifier1'").get(runId) as { n: number };
    expect(servedSegments.n).toBeGreaterThanOrEqual(verifierTurns.length);
    // Held-out evaluation asked the served Verifier too: its greedy chains hold verifier turns.
    const evalVerifier = store.db.prepare("SELECT COUNT(*) AS n FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'test' AND t.agent = 'verifier1'").get(runId) as { n: number };
    expect(evalVerifier.n).toBeGreaterThan(0);

    // Checkpoints hold the Solver and Corrector only, and both moved away from their starting weights.
    const checkpoints = store.db.prepare('SELECT policy_id AS policy, path FROM checkpoints WHERE run_id = ? ORDER BY step DESC').all(runId) as { policy: string; path: string }[];
    expect(new Set(checkpoints.map((c) => c.policy))).toEqual(new Set(['solver', 'corrector']));
    const newest = path.dirname(checkpoints[0].path);
    expect(fs.existsSync(path.join(newest, 'verifier'))).toBe(false);
    for (const role of ['solver', 'corrector']) {
      const start = loadCheckpoint(path.join(QUICK_CHECKPOINTS, role));
      const trained = loadCheckpoint(path.join(newest, role));
      try {
        expect(maxDifference(start.model.getWeights(), trained.model.getWeights()), role).toBeGreaterThan(0);
      } finally {
        start.model.dispose();
        start.optimizer?.dispose();
        trained.model.dispose();
        trained.optimizer?.dispose();
      }
    }
    // No update of the frozen Verifier was ever made or measured.
    const verifierUpdates = store.db.prepare("SELECT COUNT(*) AS n FROM timeline WHERE run_id = ? AND kind = 'update' AND agent LIKE 'verifier%'").get(runId) as { n: number };
    expect(verifierUpdates.n).toBe(0);
    expect(store.metrics.latest(runId, ['verifier1/grad_norm'])['verifier1/grad_norm']).toBeUndefined();
    expect(store.metrics.latest(runId, ['solver/grad_norm'])['solver/grad_norm']).toBeGreaterThan(0);

    // The pool's metrics are the run's, at every step.
    const poolRequests = store.db.prepare("SELECT m.step AS step, m.value AS value FROM metrics m JOIN metric_keys k ON k.id = m.key_id WHERE m.run_id = ? AND k.key = 'pool/judge/requests' ORDER BY m.step").all(runId) as { step: number; value: number }[];
    expect(poolRequests.map((r) => r.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i));
    // The rollouts' calls and the step-0 evaluation's greedy Verifier calls all went through the pool.
    const greedyAtStart = store.db.prepare("SELECT COUNT(*) AS n FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'test' AND t.step = 0 AND t.agent = 'verifier1'").get(runId) as { n: number };
    expect(greedyAtStart.n).toBeGreaterThan(0);
    expect(poolRequests.at(-1)!.value).toBeGreaterThanOrEqual(verifierTurns.length + greedyAtStart.n);

    // The key is in no database file, run folder file (logs, checkpoints, config snapshots), worker message or export.
    const out = path.join(path.dirname(databasePath), `mixed-${mode}-export.jsonl`);
    await runExport(store, { runs: [runId], format: 'trajectories', container: 'jsonl', out, filters: { correct: 'any', formatValid: 'any' } });
    // Searched from another process: opening and closing the database file here would drop this
    // process's SQLite locks on it (POSIX advisory locks are per process), and a worker then reads
    // the WAL as abandoned. A control file holding the key shows that the search sees what it should.
    const root = path.dirname(databasePath);
    const control = path.join(root, `control-${mode}.txt`);
    fs.writeFileSync(control, `the key is ${KEY}\n`);
    expect(filesUnder(root)).toEqual(expect.arrayContaining([databasePath, out]));
    const found = spawnSync('grep', ['-rlF', KEY, root], { encoding: 'utf8' });
    fs.rmSync(control);
    expect(found.stdout.trim().split('\n')).toEqual([control]);
    expect(logs.join('\n')).not.toContain(KEY);
    expect(JSON.stringify(store.runs.get(runId))).not.toContain(KEY);
  }, 120_000);
});

describe('an RL run whose served Verifier goes away', () => {
  it('fails with the endpoint named (never its key), and resumes from its checkpoint once the endpoint is back', async () => {
    const { store, databasePath } = database;
    const policies = [loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'verifier'))];
    let judge: ModelServer | null = await createModelServer({ policies, token: KEY, log: () => {} });
    const port = Number(new URL(judge.baseUrl).port);
    const config = mixedConfig('sync', judge.baseUrl, { optimization: { steps: 6, minibatch_size: 16, checkpoint_every: 1 } });
    let closing: Promise<void> | null = null;
    const manager = createRunManager({
      store,
      databasePath,
      onWorkerMessage: (m) => {
        // Once step 0 is done (its checkpoint follows without the endpoint), the endpoint goes away.
        if (m.type === 'progress' && m.progress.phase === 'rl' && m.progress.step >= 1 && judge && !closing) closing = judge.close().then(() => void (judge = null));
      },
    });
    const { runId } = await manager.start({ config, name: 'mixed, endpoint lost' });
    await manager.waitForExit(runId);
    await closing;
    expect(store.runs.get(runId)!.status, JSON.stringify(store.db.prepare('SELECT kind, message FROM events WHERE run_id = ?').all(runId))).toBe('failed');
    const failure = store.db.prepare("SELECT * FROM events WHERE run_id = ? AND level = 'error' ORDER BY id").all(runId) as { kind: string; message: string }[];
    expect(failure.map((e) => e.message).join('\n')).toMatch(/endpoint judge/);
    expect(JSON.stringify(failure)).not.toContain(KEY);
    // The pool's own events (retries, the failure) name the endpoint.
    const served = store.db.prepare("SELECT kind, data_json AS data FROM events WHERE run_id = ? AND kind LIKE 'served/%'").all(runId) as { kind: string; data: string }[];
    expect(served.length).toBeGreaterThan(0);
    expect(served.every((e) => (JSON.parse(e.data) as { endpoint: string }).endpoint === 'judge')).toBe(true);
    const checkpointSteps = (store.db.prepare('SELECT DISTINCT step FROM checkpoints WHERE run_id = ?').all(runId) as { step: number }[]).map((r) => r.step);
    expect(checkpointSteps.length).toBeGreaterThan(0);
    expect(Math.max(...checkpointSteps)).toBeLessThan(5);

    // The endpoint is back on its address: the run resumes from its newest checkpoint and finishes.
    judge = await createModelServer({ policies, token: KEY, port, log: () => {} });
    try {
      await manager.resume(runId);
      await manager.waitForExit(runId);
      expect(store.runs.get(runId)!.status).toBe('done');
      expect(store.events.latestOfKind(runId, 'resumed')?.message).toMatch(new RegExp(`resumed from the checkpoint of step ${Math.max(...checkpointSteps)}`));
      const live = store.db.prepare("SELECT COUNT(*) AS n FROM turns t JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ? AND e.split = 'train' AND t.agent = 'verifier1' AND t.superseded_by IS NULL").get(runId) as { n: number };
      // One attempt's Verifier turns per step: none lost, none duplicated.
      expect(live.n).toBe(6 * 4 * 2 * 2);
      const events = store.db.prepare('SELECT * FROM events WHERE run_id = ?').all(runId);
      expect(JSON.stringify(events)).not.toContain(KEY);
    } finally {
      await judge.close();
    }
  }, 120_000);
});
