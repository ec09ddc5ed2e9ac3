import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LATEST_SCHEMA_VERSION, MIGRATIONS, openStore, SchemaTooNewError } from '../../src-main/engine/store';
import { openDatabase } from '../../src-main/engine/store/db';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const TABLES = ['runs', 'problems', 'episodes', 'turns', 'segments', 'rewards', 'advantages', 'metrics', 'events', 'checkpoints'];

/** Fill a version-1 database with rows in every table, written with v1's own column set. */
function seedVersion1(dbPath: string): Record<string, unknown[]> {
  const db = openDatabase(dbPath, { targetVersion: 1 });
  expect(db.pragma('user_version', { simple: true })).toBe(1);
  db.exec(`
    INSERT INTO runs (id, name, status, preset, config_json, code_version, seed, created_at, notes)
      VALUES (1, 'old run', 'done', 'quick', '{"seed":3,"task":{"family":"sort"}}', '0.0.1', 3, 1000, 'kept'),
             (2, 'second', 'interrupted', NULL, '{}', '0.0.1', 4, 2000, '');
    INSERT INTO problems (id, run_id, split, family, problem_key, question, answer, meta_json)
      VALUES (1, 1, 'train', 'sort', 'k1', 'sort 31', '13', NULL), (2, 1, 'test', 'sort', 'k2', 'sort 97', '79', '{"d":2}');
    INSERT INTO episodes (id, run_id, step, problem_id, split, final_answer, correct, rounds)
      VALUES (1, 1, 0, 1, 'train', '13', 1, 1), (2, 1, 1, 2, 'test', '97', 0, 1);
    INSERT INTO turns (id, run_id, episode_id, step, agent, policy_id, round, group_id, parent_turn_id, sample_index,
        prompt, text, token_count, parsed, correct, format_valid, policy_version_min, policy_version_max, created_at)
      VALUES (1, 1, 1, 0, 'solver', 'solver', 0, 0, NULL, 0, 'sort 31', '13', 2, '13', 1, 1, 0, 0, 1),
             (2, 1, 1, 0, 'verifier1', 'verifier', 1, 1, 1, 0, 'sort 31|13', 'V:ok', 4, 'approve', 1, 1, 0, 0, 2),
             (3, 1, 2, 1, 'solver', 'solver', 0, 0, NULL, 0, 'sort 97', '97', 2, '97', 0, 1, 1, 1, 3);
    INSERT INTO segments (id, turn_id, run_id, seg_index, token_start, token_end, text, finished, policy_version, started_at, ended_at, worker)
      VALUES (1, 1, 1, 0, 0, 2, '13', 1, 0, 10, 11, 'rollout-0'), (2, 2, 1, 0, 0, 4, 'V:ok', 1, 0, 12, 13, 'rollout-0');
    INSERT INTO rewards (turn_id, run_id, value, components_json, scheme) VALUES (1, 1, 1.0, '{"correctness":1}', 'decoupled'), (3, 1, 0.0, '{}', 'decoupled');
    INSERT INTO advantages (turn_id, run_id, value, mode, group_key, mu, sigma) VALUES (1, 1, 0.7, 'agentwise', 'e1', 0.5, 0.4);
    INSERT INTO metrics (run_id, step, wall_time, key, value) VALUES
      (1, 0, 1.5, 'solver/reward/mean', 0.25), (1, 1, 2.5, 'solver/reward/mean', 0.5), (1, 1, 2.5, 'eval/system/accuracy', 0.75),
      (2, 0, 0.5, 'solver/reward/mean', 0.125);
    INSERT INTO events (id, run_id, step, time, level, kind, message, data_json) VALUES (1, 2, 3, 99, 'warning', 'interrupted', 'worker killed', NULL);
    INSERT INTO checkpoints (id, run_id, step, policy_id, path, created_at, metrics_json) VALUES (1, 1, 1, 'solver', '/x/ckpt', 50, NULL);
  `);
  const snapshot: Record<string, unknown[]> = {};
  for (const table of TABLES) snapshot[table] = db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all();
  db.close();
  return snapshot;
}

describe('migrations', () => {
  it('creates every table from an empty file and records the latest version', () => {
    const store = openStore(path.join(tmp.dir, 'fresh.db'));
    expect(store.schemaVersion).toBe(LATEST_SCHEMA_VERSION);
    expect(LATEST_SCHEMA_VERSION).toBe(MIGRATIONS.length);
    const tables = (store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);
    for (const t of [...TABLES, 'metric_keys', 'id_blocks', 'timeline', 'rejudges', 'rejudged_turns']) expect(tables).toContain(t);
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(store.integrityCheck()).toEqual(['ok']);
    store.close();
  });

  it('migrates a version-1 database to the latest, keeping every row', () => {
    const dbPath = path.join(tmp.dir, 'v1.db');
    const before = seedVersion1(dbPath);
    const store = openStore(dbPath);
    expect(store.schemaVersion).toBe(LATEST_SCHEMA_VERSION);

    for (const table of TABLES.filter((t) => t !== 'metrics' && t !== 'runs')) {
      // v5 gave episodes and turns their attempt (1: these runs were never resumed).
      const rows = (store.db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all() as Record<string, unknown>[]).map((row) => {
        if (table === 'advantages') {
          // v6 gave each advantage the weight it was multiplied by: 1, none, for rows written before.
          const { weight, ...rest } = row;
          expect(weight, table).toBe(1);
          return rest;
        }
        if (table !== 'episodes' && table !== 'turns') return row;
        const { attempt, superseded_by, ...rest } = row;
        expect([attempt, superseded_by], table).toEqual([1, null]);
        return rest;
      });
      expect(rows, table).toEqual(before[table]);
    }
    // runs gained tags, worker, attempt, checker-version (v7: NULL, unknown for runs made before) and stop-request columns; everything it had is unchanged.
    const runsAfter = store.db.prepare('SELECT * FROM runs ORDER BY id').all() as Record<string, unknown>[];
    expect(
      runsAfter.map(({ tags_json, worker_pid, heartbeat_at, attempt, checker_version, stop_requested_at, stop_reason, ...rest }) => (expect([tags_json, worker_pid, heartbeat_at, attempt, checker_version, stop_requested_at, stop_reason]).toEqual(['[]', null, null, 1, null, null, null]), rest)),
    ).toEqual(before.runs);

    // metrics moved to the key dictionary: every (run, key, step, wall time, value) survives.
    const metricsAfter = store.db
      .prepare('SELECT m.run_id, m.step, m.wall_time, k.key, m.value FROM metrics m JOIN metric_keys k ON k.id = m.key_id ORDER BY m.run_id, k.key, m.step')
      .all();
    const metricsBefore = (before.metrics as Record<string, unknown>[])
      .map((m) => ({ run_id: m.run_id, step: m.step, wall_time: m.wall_time, key: m.key, value: m.value }))
      .sort((a, b) => Number(a.run_id) - Number(b.run_id) || String(a.key).localeCompare(String(b.key)) || Number(a.step) - Number(b.step));
    expect(metricsAfter).toEqual(metricsBefore);
    expect(store.metrics.series(1, 'solver/reward/mean').items.map((p) => p.value)).toEqual([0.25, 0.5]);

    // New ids continue after the migrated ones rather than colliding with them.
    expect(store.ids.next('turns')).toBe(4);
    expect(store.ids.next('episodes')).toBe(3);
    expect(store.integrityCheck()).toEqual(['ok']);
    expect(store.db.pragma('foreign_key_check')).toEqual([]);
    store.close();
  });

  it('refuses a database written by a newer schema and leaves it untouched', () => {
    const dbPath = path.join(tmp.dir, 'future.db');
    openStore(dbPath).close();
    const raw = new Database(dbPath);
    raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 5}`);
    raw.close();
    expect(() => openStore(dbPath)).toThrow(SchemaTooNewError);
    expect(() => openStore(dbPath)).toThrow(new RegExp(`schema version ${LATEST_SCHEMA_VERSION + 5}.*upgrade MarsRL Studio`, 's'));
    const check = new Database(dbPath);
    expect(check.pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA_VERSION + 5);
    check.close();
  });

  it('rolls a failing migration back completely', () => {
    const dbPath = path.join(tmp.dir, 'broken.db');
    const db = openDatabase(dbPath, { targetVersion: 1 });
    // A metric row whose run does not exist makes v2's foreign-key check fail.
    db.pragma('foreign_keys = OFF');
    db.prepare("INSERT INTO metrics (run_id, step, wall_time, key, value) VALUES (42, 0, 0, 'x', 1)").run();
    db.close();
    expect(() => openStore(dbPath)).toThrow(/foreign-key violations; nothing was changed/);
    const check = new Database(dbPath);
    expect(check.pragma('user_version', { simple: true })).toBe(1);
    expect(check.prepare('SELECT COUNT(*) AS n FROM metrics').get()).toEqual({ n: 1 });
    check.close();
  });
});
