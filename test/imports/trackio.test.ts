/**
 * The trackio reader (issue 39) against databases built from SQL in the schemas trackio's own
 * code creates (test/fixtures/imports/trackio/*.sql, citing gradio-app/trackio's sqlite_storage.py).
 * Counts are checked against plain SQL over the same file — SQLite's own JSON functions count the
 * numeric values of each row — never against numbers written here.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { trackioFormat } from '../../src-main/engine/imports/trackio';
import { IMPORT_FORMAT_REGISTRY, importFormat } from '../../src-main/engine/imports/registry';
import { ImportSourceError, type ImportBatch } from '../../src-main/engine/imports/types';
import { tempFolder } from '../helpers/tmp';

const FIXTURES = path.join(__dirname, '../fixtures/imports/trackio');
const tmp = tempFolder('marsrl-trackio-');

/** Builds `<dir>/<name>.db` from a fixture script (databases are never committed). */
function buildDb(script: string, name: string, dir = tmp.dir): string {
  const file = path.join(dir, `${name}.db`);
  fs.rmSync(file, { force: true });
  const db = new Database(file);
  db.exec(fs.readFileSync(path.join(FIXTURES, script), 'utf8'));
  db.close();
  return file;
}

async function readAll(file: string, key: string, cursor: unknown = null, batchSize = 2): Promise<ImportBatch[]> {
  const batches: ImportBatch[] = [];
  for await (const batch of trackioFormat.read(file, key, cursor, { batchSize })) batches.push(batch);
  return batches;
}

/** The numeric values trackio wrote for a run, by plain SQL: numbers, and serialize_values' NaN/infinity strings. */
function sqlPoints(file: string, runColumn: string, run: string): Array<{ step: number; key: string; value: number }> {
  const db = new Database(file, { readonly: true });
  const rows = db
    .prepare(
      `SELECT m.step AS step, j.key AS key, j.value AS value, j.type AS type FROM metrics m, json_each(m.metrics) j
       WHERE json_valid(m.metrics) AND m.${runColumn} = ? AND (j.type IN ('integer', 'real') OR j.value IN ('NaN', 'Infinity', '-Infinity'))
       ORDER BY m.id, j.id`,
    )
    .all(run) as Array<{ step: number; key: string; value: number | string }>;
  db.close();
  return rows.map((row) => ({ step: row.step, key: row.key, value: typeof row.value === 'string' ? Number(row.value) : row.value }));
}

describe('trackio import', () => {
  it('detects a trackio .db and a folder of them, and not an MLflow database', () => {
    const file = buildDb('current.sql', 'math-project');
    expect(trackioFormat.detect(file)).toBe(true);
    expect(trackioFormat.detect(tmp.dir)).toBe(true);
    expect(importFormat('trackio')).toBe(trackioFormat);
    expect(IMPORT_FORMAT_REGISTRY.filter((format) => format.detect(file)).map((format) => format.id)).toEqual(['trackio']);
    const mlflow = path.join(tmp.dir, 'mlflow-like.sqlite');
    const db = new Database(mlflow);
    db.exec('CREATE TABLE runs (run_uuid TEXT); CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, step INTEGER, run_uuid TEXT)');
    db.close();
    expect(trackioFormat.detect(mlflow)).toBe(false);
    expect(trackioFormat.detect(path.join(FIXTURES, 'current.sql'))).toBe(false);
  });

  it('scans runs keyed by run_id with counts equal to plain SQL over the file', async () => {
    const file = buildDb('current.sql', 'scan-project');
    const scan = await trackioFormat.scan(file, {});
    const db = new Database(file, { readonly: true });
    const runIds = (db.prepare('SELECT DISTINCT run_id FROM metrics ORDER BY run_id').all() as Array<{ run_id: string }>).map((r) => r.run_id);
    db.close();
    expect(scan.runs.map((run) => run.key).sort()).toEqual(runIds);
    for (const run of scan.runs) {
      const points = sqlPoints(file, 'run_id', run.key);
      expect(run.metricPoints).toBe(points.length);
      expect(run.metricKeys).toEqual([...new Set(points.map((p) => p.key))].sort());
      expect(run.name).toBe('grpo-math');
    }
    const first = scan.runs.find((run) => run.key === '3f2a9c1e')!;
    expect(first.config).toMatchObject({ lr: 1e-6, batch_size: 64, model: 'Qwen2.5-1.5B' });
    expect(first.generations).toBe(3);
    expect(first.episodes).toBe(2);
    expect(first.agents).toEqual(['solver', 'unknown', 'verifier1']);
    expect(first.startedAt).toBe(Date.parse('2026-05-30T09:00:01.250Z'));
    expect(scan.files).toBe(1);
    expect(scan.bytes).toBe(fs.statSync(file).size);
    expect(scan.issues.map((issue) => `${issue.position} ${issue.message}`)).toEqual([
      expect.stringMatching(/^row 5 scan-project\.db: table metrics, row 5: .*JSON/),
      expect.stringMatching(/^row 4 scan-project\.db: table traces, row 4: .*JSON/),
    ]);
  });

  it('reads values, wall times and traces as episodes; re-reading from the cursor yields nothing', async () => {
    const file = buildDb('current.sql', 'read-project');
    const batches = await readAll(file, '3f2a9c1e');
    const metrics = batches.flatMap((b) => b.metrics);
    const expected = sqlPoints(file, 'run_id', '3f2a9c1e');
    expect(metrics.map(({ step, key, value }) => ({ step, key, value }))).toEqual(expected);
    expect(metrics[0].wallTime).toBeCloseTo(Date.parse('2026-05-30T09:00:01.250Z') / 1000, 6);
    const issues = batches.flatMap((b) => b.issues);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ file: '', position: 'row 5' });
    const episodes = batches.flatMap((b) => b.episodes);
    expect(episodes).toHaveLength(2);
    expect(episodes[0].turns).toHaveLength(1);
    expect(episodes[0].turns[0]).toMatchObject({ agent: 'unknown', role: null, text: '2 + 2 = 4. \\boxed{4}', finishReason: 'stop' });
    expect(episodes[0].turns[0].prompt).toBe('system: You are a careful solver.\n\nuser: What is 2 + 2?');
    expect(episodes[0].problem?.question).toBe('What is 2 + 2?');
    expect(episodes[1].step).toBe(1);
    expect(episodes[1].turns.map((t) => [t.agent, t.role, t.round, t.text])).toEqual([
      ['solver', 'solver', 0, 'x = 2'],
      ['verifier1', 'verifier', 1, 'The solution is correct.'],
    ]);
    const cursor = batches[batches.length - 1].cursor;
    expect(await readAll(file, '3f2a9c1e', JSON.parse(JSON.stringify(cursor)))).toEqual([]);
    // An import stopped after its first batch goes on from that batch's cursor, adding nothing twice.
    const resumed = await readAll(file, '3f2a9c1e', JSON.parse(JSON.stringify(batches[0].cursor)));
    expect([...batches[0].metrics, ...resumed.flatMap((b) => b.metrics)]).toEqual(metrics);
    expect([...batches[0].episodes, ...resumed.flatMap((b) => b.episodes)]).toEqual(episodes);
  });

  it('a grown database yields only the rows added since the cursor', async () => {
    const file = buildDb('current.sql', 'grow-project');
    const before = await readAll(file, '7b41d0aa', null, 100);
    const cursor = before[before.length - 1].cursor;
    const db = new Database(file);
    db.prepare('INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)').run('7b41d0aa', '2026-05-31T10:00:03+00:00', 'grpo-math', 2, '{"train/loss":0.9}');
    db.prepare('INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)').run('3f2a9c1e', '2026-05-31T10:00:03+00:00', 'grpo-math', 9, '{"train/loss":0.1}');
    db.close();
    const after = await readAll(file, '7b41d0aa', cursor, 100);
    expect(after.flatMap((b) => b.metrics)).toEqual([{ step: 2, key: 'train/loss', value: 0.9, wallTime: Date.parse('2026-05-31T10:00:03Z') / 1000 }]);
    expect(after.flatMap((b) => b.episodes)).toEqual([]);
  });

  it('reads the trackio 0.23 schema (run_name, traces inside the metrics JSON)', async () => {
    const file = buildDb('legacy-0.23.sql', 'legacy');
    const scan = await trackioFormat.scan(file, {});
    expect(scan.runs.map((run) => run.key).sort()).toEqual(['other-run', 'sft-baseline']);
    const sft = scan.runs.find((run) => run.key === 'sft-baseline')!;
    expect(sft.metricPoints).toBe(sqlPoints(file, 'run_name', 'sft-baseline').length);
    expect(sft.config).toEqual({ epochs: 3 });
    expect(sft.episodes).toBe(1);
    const batches = await readAll(file, 'sft-baseline');
    expect(batches.flatMap((b) => b.metrics).map((m) => m.value)).toEqual([2.5, 2.25]);
    const episodes = batches.flatMap((b) => b.episodes);
    expect(episodes.map((e) => [e.step, e.turns.map((t) => t.text)])).toEqual([[1, ['Hello!']]]);
  });

  it('refuses a metrics table without run_id or run_name, naming the file, table, column and what it found', async () => {
    const file = buildDb('no-run-column.sql', 'broken');
    await expect(trackioFormat.scan(file, {})).rejects.toThrow(ImportSourceError);
    await expect(trackioFormat.scan(file, {})).rejects.toThrow(/broken\.db: trackio table "metrics" has no run_id \(or run_name\) column \(found: id, timestamp, step, metrics\)/);
  });

  it('in a folder, a broken project is an issue and the others are read', async () => {
    const dir = path.join(tmp.dir, 'folder');
    fs.mkdirSync(dir, { recursive: true });
    buildDb('current.sql', 'good', dir);
    buildDb('no-run-column.sql', 'bad', dir);
    const scan = await trackioFormat.scan(dir, {});
    expect(scan.issues.filter((issue) => issue.file === 'bad.db')).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/folder\/bad\.db: trackio table "metrics" has no run_id/) }),
    ]);
    expect(scan.runs.map((run) => run.key).sort()).toEqual(['good.db/3f2a9c1e', 'good.db/7b41d0aa']);
    const batches = await readAll(dir, 'good.db/7b41d0aa');
    expect(batches.flatMap((b) => b.metrics).length).toBe(sqlPoints(path.join(dir, 'good.db'), 'run_id', '7b41d0aa').length);
  });

  it('an empty folder is a clear error naming it', async () => {
    const dir = path.join(tmp.dir, 'empty');
    fs.mkdirSync(dir, { recursive: true });
    expect(trackioFormat.detect(dir)).toBe(false);
    await expect(trackioFormat.scan(dir, {})).rejects.toThrow(new RegExp(`${dir.replace(/[/\\.]/g, '\\$&')}: no trackio project database`));
  });
});
