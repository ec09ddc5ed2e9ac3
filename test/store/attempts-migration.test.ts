/**
 * Schema v5 (attempts) on a database written before it: a run killed after committing steps 0–3
 * and resumed from its checkpoint of step 1 holds two copies of steps 2–3. The migration keeps
 * every row, rebuilds which attempt wrote each from the `resumed` event and the rows' own times,
 * and marks the killed attempt's rows of the redone steps superseded; readers and every export
 * then show one attempt per step.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runExport } from '../../src-main/engine/export';
import { LATEST_SCHEMA_VERSION, openStore } from '../../src-main/engine/store';
import { openDatabase } from '../../src-main/engine/store/db';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const STARTED = 1_000_000;
/** When `marsrl resume` logged `resumed` (checkpoint of step 1): attempt 2 begins. */
const RESUMED = STARTED + 50_000;
const OLD_TABLES = ['episodes', 'turns', 'segments', 'rewards', 'advantages', 'events', 'timeline', 'problems'];

interface Seeded {
  /** turn ids by (attempt, step, split), as the test wrote them */
  turns: { id: number; attempt: number; step: number; split: 'train' | 'test' }[];
}

/** A version-4 database (the schema before attempts) holding one killed-and-resumed run. */
function seedVersion4(dbPath: string): Seeded {
  const db = openDatabase(dbPath, { targetVersion: 4 });
  expect(db.pragma('user_version', { simple: true })).toBe(4);
  db.prepare(
    "INSERT INTO runs (id, name, status, config_json, code_version, seed, created_at, started_at) VALUES (1, 'resumed run', 'done', '{}', '0.1.0', 1, ?, ?)",
  ).run(STARTED - 10, STARTED);
  db.prepare("INSERT INTO problems (id, run_id, split, family, problem_key, question, answer) VALUES (1, 1, 'train', 'sort', 'k1', 'sort 31', '13'), (2, 1, 'test', 'sort', 'k2', 'sort 97', '79')").run();
  const seeded: Seeded = { turns: [] };
  let episodeId = 0;
  let turnId = 0;
  const insertEpisode = db.prepare('INSERT INTO episodes (id, run_id, step, problem_id, split, final_answer, correct, rounds) VALUES (?, 1, ?, ?, ?, NULL, 0, 1)');
  const insertTurn = db.prepare(
    `INSERT INTO turns (id, run_id, episode_id, step, agent, policy_id, round, group_id, parent_turn_id, sample_index, prompt, text, token_count, parsed, correct, format_valid, policy_version_min, policy_version_max, created_at)
     VALUES (?, 1, ?, ?, 'solver', 'solver', 0, 0, NULL, ?, 'sort 31', ?, 2, NULL, ?, 1, 0, 0, ?)`,
  );
  const insertReward = db.prepare("INSERT INTO rewards (turn_id, run_id, value, components_json, scheme) VALUES (?, 1, ?, '{}', 'decoupled')");
  const insertSegment = db.prepare("INSERT INTO segments (id, turn_id, run_id, seg_index, token_start, token_end, text, finished, policy_version, started_at, ended_at, worker) VALUES (?, ?, 1, 0, 0, 2, 'x', 1, 0, ?, ?, 'w')");
  const insertTimeline = db.prepare("INSERT INTO timeline (run_id, kind, agent, worker, step, policy_version, started_at, ended_at, tokens) VALUES (1, ?, 'solver', 'w', ?, 0, ?, ?, 0)");
  const insertMetric = db.prepare('INSERT OR REPLACE INTO metrics (run_id, key_id, step, wall_time, value) VALUES (1, ?, ?, ?, ?)');
  db.prepare("INSERT INTO metric_keys (id, key) VALUES (1, 'solver/reward/mean'), (2, 'eval/system/accuracy'), (3, 'pretrain/solver/loss')").run();
  /** One episode of `step` written at `time`: two sampled solver turns with different rewards (a pair). */
  const episode = (attempt: number, step: number, split: 'train' | 'test', time: number) => {
    const e = ++episodeId;
    insertEpisode.run(e, step, split === 'train' ? 1 : 2, split);
    for (let sample = 0; sample < 2; sample++) {
      const t = ++turnId;
      insertTurn.run(t, e, step, sample, `answer ${attempt}.${step}.${sample}`, sample, time + sample);
      insertReward.run(t, sample === 0 ? 1 : 0);
      insertSegment.run(t, t, time, time + 1);
      seeded.turns.push({ id: t, attempt, step, split });
    }
    insertTimeline.run(split === 'test' ? 'eval' : 'segment', step, time, time + 1);
  };
  // Attempt 1: warm start, evaluation at 0, steps 0–3 with evaluations after each; the
  // checkpoint of step 1 was written after the evaluation at step 2; killed after step 3.
  insertMetric.run(3, 7, 0.5, 2.0);
  for (let step = 0; step <= 3; step++) {
    const time = STARTED + 1000 + step * 10_000;
    episode(1, step, 'train', time);
    episode(1, step + 1, 'test', time + 5000);
    insertMetric.run(1, step, (time - STARTED) / 1000, 0.1 * (step + 1));
    insertMetric.run(2, step + 1, (time + 5000 - STARTED) / 1000, 0.2 * (step + 1));
  }
  db.prepare("INSERT INTO checkpoints (run_id, step, policy_id, path, created_at) VALUES (1, 1, 'solver', '/ckpt/step-000001/solver', ?)").run(STARTED + 17_000);
  db.prepare("INSERT INTO events (run_id, step, time, level, kind, message) VALUES (1, 1, ?, 'info', 'resumed', 'resumed from the checkpoint of step 1')").run(RESUMED);
  // Attempt 2 redoes steps 2 and 3 (and the evaluations at 3 and 4), and does not reach step 4 yet.
  for (let step = 2; step <= 3; step++) {
    const time = RESUMED + 1000 + (step - 2) * 10_000;
    episode(2, step, 'train', time);
    episode(2, step + 1, 'test', time + 5000);
    insertMetric.run(1, step, (time - STARTED) / 1000, 0.7 + step);
    insertMetric.run(2, step + 1, (time + 5000 - STARTED) / 1000, 0.9);
  }
  db.close();
  return seeded;
}

describe('migration to attempts (v5)', () => {
  it('keeps every row, rebuilds each row\'s attempt and marks the killed attempt\'s redone rows superseded', () => {
    const dbPath = path.join(tmp.dir, 'v4.db');
    const seeded = seedVersion4(dbPath);
    const raw = openDatabase(dbPath, { targetVersion: 4 });
    const before: Record<string, unknown[]> = {};
    for (const table of OLD_TABLES) before[table] = raw.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all();
    const metricsBefore = raw.prepare('SELECT * FROM metrics ORDER BY key_id, step').all();
    raw.close();

    const store = openStore(dbPath);
    expect(store.schemaVersion).toBe(LATEST_SCHEMA_VERSION);
    // Every row kept: the old columns of every table read back unchanged.
    for (const table of OLD_TABLES) {
      const after = (store.db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all() as Record<string, unknown>[]).map(({ attempt: _a, superseded_by: _s, weight: _w, ...rest }) => rest);
      expect(after, table).toEqual(before[table]);
    }
    // Metrics: the live table plus the superseded ones are exactly the metrics there were.
    const live = store.db.prepare('SELECT run_id, key_id, step, wall_time, value FROM metrics').all();
    const kept = store.db.prepare('SELECT run_id, key_id, step, wall_time, value FROM superseded_metrics').all();
    const order = (rows: unknown[]) => (rows as { key_id: number; step: number }[]).slice().sort((a, b) => a.key_id - b.key_id || a.step - b.step);
    expect(order([...live, ...kept])).toEqual(order(metricsBefore));

    expect(store.runs.get(1)!.attempt).toBe(2);
    expect(store.runs.attempts(1).map((a) => [a.attempt, a.startedAt, a.resumedFromStep])).toEqual([
      [1, STARTED, null],
      [2, RESUMED, 2],
    ]);
    const turns = store.db.prepare('SELECT id, attempt, superseded_by AS supersededBy FROM turns ORDER BY id').all() as { id: number; attempt: number; supersededBy: number | null }[];
    for (const t of seeded.turns) {
      const row = turns.find((r) => r.id === t.id)!;
      expect(row.attempt, `turn ${t.id}`).toBe(t.attempt);
      // Redone by attempt 2: training of steps ≥ 2, evaluations at steps > 2.
      const redone = t.attempt === 1 && (t.split === 'train' ? t.step >= 2 : t.step > 2);
      expect(row.supersededBy, `turn ${t.id} (attempt ${t.attempt}, ${t.split} step ${t.step})`).toBe(redone ? 2 : null);
    }
    const episodes = store.db.prepare('SELECT step, split, attempt, superseded_by AS by FROM episodes WHERE superseded_by IS NOT NULL ORDER BY id').all();
    expect(episodes).toEqual([
      { step: 2, split: 'train', attempt: 1, by: 2 },
      { step: 3, split: 'test', attempt: 1, by: 2 },
      { step: 3, split: 'train', attempt: 1, by: 2 },
      { step: 4, split: 'test', attempt: 1, by: 2 },
    ]);
    // Metrics of the redone steps are the redo's (its values replaced attempt 1's); the evaluation
    // at step 2 and the warm-start loss were never redone and stay.
    const series = (key: string) => store.metrics.series(1, key).items.map((p) => [p.step, p.value]);
    expect(series('solver/reward/mean')).toEqual([[0, 0.1], [1, 0.2], [2, 2.7], [3, 3.7]]);
    expect(series('eval/system/accuracy')).toEqual([[1, 0.2], [2, 0.4], [3, 0.9], [4, 0.9]]);
    expect(series('pretrain/solver/loss')).toEqual([[7, 2]]);
    expect(store.integrityCheck()).toEqual(['ok']);
    expect(store.db.pragma('foreign_key_check')).toEqual([]);
    store.close();
  });

  it('a killed attempt\'s values of steps the redo has not reached move aside, not away', () => {
    const dbPath = path.join(tmp.dir, 'partial.db');
    seedVersion4(dbPath);
    // Attempt 1 had also logged step 5's reward before the kill; attempt 2 never got there.
    const raw = openDatabase(dbPath, { targetVersion: 4 });
    raw.prepare('INSERT INTO metrics (run_id, key_id, step, wall_time, value) VALUES (1, 1, 5, ?, 9.5)').run((RESUMED - 2000 - STARTED) / 1000);
    raw.close();
    const store = openStore(dbPath);
    expect(store.metrics.series(1, 'solver/reward/mean').items.map((p) => p.step)).toEqual([0, 1, 2, 3]);
    expect(store.db.prepare('SELECT step, value, attempt, superseded_by AS by FROM superseded_metrics WHERE key_id = 1').all()).toEqual([{ step: 5, value: 9.5, attempt: 1, by: 2 }]);
    store.close();
  });

  it.each(['jsonl', 'parquet'] as const)('exports of the migrated run (trajectories, sft, pairs; %s) hold one attempt per step', async (container) => {
    const dbPath = path.join(tmp.dir, `export-${container}.db`);
    const seeded = seedVersion4(dbPath);
    const store = openStore(dbPath);
    const liveIds = seeded.turns.filter((t) => !(t.attempt === 1 && (t.split === 'train' ? t.step >= 2 : t.step > 2))).map((t) => t.id).sort((a, b) => a - b);
    const read = async (format: 'trajectories' | 'sft' | 'pairs', includeSuperseded = false) => {
      const out = path.join(tmp.dir, `${format}-${includeSuperseded}.${container}`);
      await runExport(store, { runs: [1], format, container, out, filters: { correct: 'any', formatValid: 'any', includeSuperseded } });
      if (container === 'jsonl') return fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      const { parquetReadObjects } = await import('hyparquet');
      const buffer = fs.readFileSync(out);
      return (await parquetReadObjects({ file: buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) })) as Record<string, unknown>[];
    };
    const trajectories = await read('trajectories');
    expect(trajectories.map((r) => Number(r.turn_id)).sort((a, b) => a - b)).toEqual(liveIds);
    const sft = await read('sft');
    expect(sft.map((r) => Number(r.turn_id)).sort((a, b) => a - b)).toEqual(liveIds);
    const pairs = await read('pairs');
    // One pair per live episode (two samples, rewards 1 and 0), each naming the live attempt.
    const liveEpisodes = new Set(seeded.turns.filter((t) => liveIds.includes(t.id)).map((t) => `${t.step}/${t.split}`));
    expect(pairs).toHaveLength(liveEpisodes.size);
    for (const rows of [trajectories, sft, pairs]) {
      const seen = new Map<string, Set<number>>();
      for (const r of rows) seen.set(`${Number(r.step)}/${String(r.split)}`, (seen.get(`${Number(r.step)}/${String(r.split)}`) ?? new Set()).add(Number(r.attempt)));
      for (const attempts of seen.values()) expect(attempts.size).toBe(1);
      expect(seen.get('2/train')).toEqual(new Set([2]));
    }
    const everything = await read('pairs', true);
    expect(everything).toHaveLength(liveEpisodes.size + 4);
    store.close();
  });
});
