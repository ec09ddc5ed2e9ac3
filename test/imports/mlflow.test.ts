/**
 * The MLflow reader (issue 39): the file store fixture (test/fixtures/imports/mlflow/mlruns, written
 * as mlflow/store/tracking/file_store.py writes it) and the SQL store built from sqlite-store.sql.
 * Expected points come from an independent plain reading in this test — a line loop that splits
 * each metrics file as `_get_metric_from_line` does, and plain SQL over mlflow.db — never from
 * numbers written here.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { mlflowFormat } from '../../src-main/engine/imports/mlflow';
import { importFormat, IMPORT_FORMAT_REGISTRY } from '../../src-main/engine/imports/registry';
import { ImportSourceError, type ImportBatch, type ImportMetric } from '../../src-main/engine/imports/types';
import { tempFolder } from '../helpers/tmp';

const FIXTURES = path.join(__dirname, '../fixtures/imports/mlflow');
const MLRUNS = path.join(FIXTURES, 'mlruns');
const EXPERIMENT = '614281955204418839';
const RUN1 = '9c1f4d2e8a7b4c6d9e0f1a2b3c4d5e6f';
const RUN2 = '0a1b2c3d4e5f46a7b8c9d0e1f2a3b4c5';
const tmp = tempFolder('marsrl-mlflow-');

async function readAll(source: string, key: string, cursor: unknown = null, batchSize = 3): Promise<ImportBatch[]> {
  const batches: ImportBatch[] = [];
  for await (const batch of mlflowFormat.read(source, key, cursor, { batchSize })) batches.push(batch);
  return batches;
}

/** Every metrics file of a run folder, read in a plain loop: key = path under metrics/, fields split on ' ' as MLflow does. */
function plainPoints(runDir: string): ImportMetric[] {
  const points: ImportMetric[] = [];
  const root = path.join(runDir, 'metrics');
  const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(root, f)).isFile()).sort();
  for (const file of files) {
    for (const line of fs.readFileSync(path.join(root, file), 'utf8').split('\n')) {
      if (line === '') continue;
      const [ts, value, step] = line.split(' ');
      const number = value === 'nan' ? NaN : parseFloat(value);
      points.push({ step: Number(step), key: file.split(path.sep).join('/'), value: number, wallTime: Number(ts) / 1000 });
    }
  }
  return points;
}

function copyStore(name: string): string {
  const dest = path.join(tmp.dir, name);
  fs.cpSync(MLRUNS, dest, { recursive: true });
  return dest;
}

function buildDb(name: string): string {
  const file = path.join(tmp.dir, name);
  fs.rmSync(file, { force: true });
  const db = new Database(file);
  db.exec(fs.readFileSync(path.join(FIXTURES, 'sqlite-store.sql'), 'utf8'));
  db.close();
  return file;
}

describe('MLflow file store import', () => {
  it('detects an mlruns folder and an experiment folder, not an empty folder or a run folder', () => {
    expect(mlflowFormat.detect(MLRUNS)).toBe(true);
    expect(mlflowFormat.detect(path.join(MLRUNS, EXPERIMENT))).toBe(true);
    expect(mlflowFormat.detect(path.join(MLRUNS, EXPERIMENT, RUN1))).toBe(false);
    const empty = path.join(tmp.dir, 'empty-detect');
    fs.mkdirSync(empty, { recursive: true });
    expect(mlflowFormat.detect(empty)).toBe(false);
    expect(importFormat('mlflow')).toBe(mlflowFormat);
    expect(IMPORT_FORMAT_REGISTRY.filter((format) => format.detect(MLRUNS)).map((format) => format.id)).toEqual(['mlflow']);
  });

  it('scans both runs with names, params, tags and counts equal to a plain line loop', async () => {
    const scan = await mlflowFormat.scan(MLRUNS, {});
    expect(scan.issues).toEqual([]);
    expect(scan.runs.map((run) => run.key).sort()).toEqual([RUN1, RUN2].sort());
    for (const run of scan.runs) {
      const points = plainPoints(path.join(MLRUNS, EXPERIMENT, run.key));
      expect(run.metricPoints).toBe(points.length);
      expect(run.metricKeys).toEqual([...new Set(points.map((p) => p.key))].sort());
      expect(run.steps).toBe(new Set(points.map((p) => p.step)).size);
    }
    const first = scan.runs.find((run) => run.key === RUN1)!;
    expect(first.name).toBe(fs.readFileSync(path.join(MLRUNS, EXPERIMENT, RUN1, 'tags/mlflow.runName'), 'utf8'));
    expect(first.metricKeys).toContain('val/acc');
    expect(first.config).toEqual({ batch_size: '64', lr: '1e-06', model: 'Qwen/Qwen2.5-1.5B' });
    expect(first.tags).toEqual(['reward_mode=decoupled']);
    expect(first.startedAt).toBe(1748595600000);
    const second = scan.runs.find((run) => run.key === RUN2)!;
    expect(second.name).toBe('calm-fox-7'); // meta.yaml run_name: no mlflow.runName tag
    expect(second.endedAt).toBeNull();
  });

  it('reads every point as the plain loop does; re-reading from the cursor yields nothing', async () => {
    const batches = await readAll(MLRUNS, RUN1);
    const read = batches.flatMap((b) => b.metrics);
    const plain = plainPoints(path.join(MLRUNS, EXPERIMENT, RUN1));
    expect(read).toEqual(plain);
    expect(Number.isNaN(read.find((p) => p.key === 'loss' && p.step === 3)!.value)).toBe(true);
    expect(batches.every((b) => b.metrics.length <= 3)).toBe(true);
    const cursor = JSON.parse(JSON.stringify(batches[batches.length - 1].cursor));
    expect(await readAll(MLRUNS, RUN1, cursor)).toEqual([]);
  });

  it('a grown metrics file and a new metric file yield only the new lines', async () => {
    const store = copyStore('grown');
    const runDir = path.join(store, EXPERIMENT, RUN2);
    const before = await readAll(store, RUN2);
    const cursor = JSON.parse(JSON.stringify(before[before.length - 1].cursor));
    fs.appendFileSync(path.join(runDir, 'metrics/loss'), '1748596003000 0.95 2\n');
    fs.mkdirSync(path.join(runDir, 'metrics/val'), { recursive: true });
    fs.writeFileSync(path.join(runDir, 'metrics/val/acc'), '1748596003000 0.3 2\n');
    const after = (await readAll(store, RUN2, cursor)).flatMap((b) => b.metrics);
    expect(after).toEqual([
      { step: 2, key: 'loss', value: 0.95, wallTime: 1748596003 },
      { step: 2, key: 'val/acc', value: 0.3, wallTime: 1748596003 },
    ]);
  });

  it('a 2-field line is read as step 0 as MLflow does and reported; a garbled line is reported and the rest read', async () => {
    const store = copyStore('bad-lines');
    const loss = path.join(store, EXPERIMENT, RUN2, 'metrics/loss');
    fs.appendFileSync(loss, '1748596005000 0.5\nthis is not a metric\n1748596006000 0.4 4\n1748596007000 0.3');
    const rel = `${EXPERIMENT}/${RUN2}/metrics/loss`;
    const batches = await readAll(store, RUN2);
    const issues = batches.flatMap((b) => b.issues);
    expect(issues.map((issue) => [issue.file, issue.position])).toEqual([
      [rel, 'line 3'],
      [rel, 'line 4'],
      [rel, 'line 6'],
    ]);
    expect(issues[0].message).toMatch(new RegExp(`^${rel}, line 3: .*2 fields.*step 0, as MLflow does`));
    expect(issues[1].message).toMatch(/line 4: skipped: 5 fields .*"this is not a metric"/);
    expect(issues[2].message).toMatch(/line 6: no newline .*left for the next import/);
    const metrics = batches.flatMap((b) => b.metrics).filter((m) => m.key === 'loss');
    expect(metrics.map((m) => [m.step, m.value])).toEqual([[0, 1.02], [1, 0.98], [0, 0.5], [4, 0.4]]);
    const scan = await mlflowFormat.scan(store, {});
    expect(scan.issues.map((issue) => issue.position)).toEqual(['line 3', 'line 4', 'line 6']);
    // The unterminated line is read once MLflow finishes it (had it been read early, "0.3" might have been the start of "0.35").
    fs.appendFileSync(loss, ' 5\n');
    const cursor = JSON.parse(JSON.stringify(batches[batches.length - 1].cursor));
    const finished = (await readAll(store, RUN2, cursor)).flatMap((b) => b.metrics);
    expect(finished).toEqual([{ step: 5, key: 'loss', value: 0.3, wallTime: 1748596007 }]);
  });

  it('a run MLflow marks deleted is listed as an issue, not imported', async () => {
    const store = copyStore('deleted');
    const meta = path.join(store, EXPERIMENT, RUN2, 'meta.yaml');
    fs.writeFileSync(meta, fs.readFileSync(meta, 'utf8').replace('lifecycle_stage: active', 'lifecycle_stage: deleted'));
    const scan = await mlflowFormat.scan(store, {});
    expect(scan.runs.map((run) => run.key)).toEqual([RUN1]);
    expect(scan.issues).toEqual([expect.objectContaining({ file: `${EXPERIMENT}/${RUN2}/meta.yaml`, message: expect.stringMatching(/is deleted in MLflow/) })]);
  });

  it('an empty folder is a clear error naming it', async () => {
    const empty = path.join(tmp.dir, 'empty');
    fs.mkdirSync(empty, { recursive: true });
    await expect(mlflowFormat.scan(empty, {})).rejects.toThrow(ImportSourceError);
    await expect(mlflowFormat.scan(empty, {})).rejects.toThrow(`${empty}: no MLflow experiment`);
  });
});

describe('MLflow SQLite store import', () => {
  /** Plain SQL: a run's points in MLflow's history order, NaN where is_nan, ±inf where MLflow stored its ±1.7976931348623157e308 stand-in. */
  function sqlPoints(file: string, run: string): ImportMetric[] {
    const db = new Database(file, { readonly: true });
    const rows = db.prepare('SELECT key, value, timestamp, step, is_nan FROM metrics WHERE run_uuid = ? ORDER BY key, step, timestamp').all(run) as Array<{ key: string; value: number; timestamp: number; step: number; is_nan: number }>;
    db.close();
    const value = (r: { value: number; is_nan: number }): number => (r.is_nan ? NaN : r.value === 1.7976931348623157e308 ? Infinity : r.value === -1.7976931348623157e308 ? -Infinity : r.value);
    return rows.map((r) => ({ step: r.step, key: r.key, value: value(r), wallTime: r.timestamp / 1000 }));
  }

  it('detects mlflow.db (and trackio does not take it)', () => {
    const file = buildDb('detect.db');
    expect(IMPORT_FORMAT_REGISTRY.filter((format) => format.detect(file)).map((format) => format.id)).toEqual(['mlflow']);
  });

  it('scans runs with names from the mlflow.runName tag or runs.name, params and counts from SQL', async () => {
    const file = buildDb('scan.db');
    const scan = await mlflowFormat.scan(file, {});
    const db = new Database(file, { readonly: true });
    const runs = db.prepare('SELECT run_uuid, name FROM runs').all() as Array<{ run_uuid: string; name: string }>;
    for (const { run_uuid, name } of runs) {
      const run = scan.runs.find((r) => r.key === run_uuid)!;
      const count = (db.prepare('SELECT COUNT(*) AS n, COUNT(DISTINCT step) AS s FROM metrics WHERE run_uuid = ?').get(run_uuid) as { n: number; s: number });
      expect(run.metricPoints).toBe(count.n);
      expect(run.steps).toBe(count.s);
      expect(run.name).toBe(name);
    }
    db.close();
    const first = scan.runs.find((r) => r.key === '5e0c2b7a91d34f0e8a6b4c2d1e0f9a8b')!;
    expect(first.config).toEqual({ batch_size: '64', lr: '1e-06' });
    expect(first.tags).toEqual(['reward_mode=decoupled']);
  });

  it('reads in (key, step, timestamp) order with NaN restored; re-read yields nothing; new rows only after growth', async () => {
    const file = buildDb('read.db');
    const run = '5e0c2b7a91d34f0e8a6b4c2d1e0f9a8b';
    const batches = await readAll(file, run, null, 2);
    expect(batches.flatMap((b) => b.metrics)).toEqual(sqlPoints(file, run));
    expect(batches.flatMap((b) => b.metrics).find((m) => m.key === 'grad_norm')?.value).toBe(Infinity);
    expect(Number.isNaN(batches.flatMap((b) => b.metrics).find((m) => m.key === 'loss' && m.step === 2)?.value)).toBe(true);
    const cursor = JSON.parse(JSON.stringify(batches[batches.length - 1].cursor));
    expect(await readAll(file, run, cursor, 2)).toEqual([]);
    // Resume mid-way: the cursor of the first batch continues exactly where it stopped.
    const resumed = await readAll(file, run, JSON.parse(JSON.stringify(batches[0].cursor)), 2);
    expect([...batches[0].metrics, ...resumed.flatMap((b) => b.metrics)]).toEqual(sqlPoints(file, run));
    const db = new Database(file);
    db.prepare('INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)').run('loss', 0.6, 1748595605000, run, 4, 0);
    db.prepare('INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)').run('aaa', 1, 1748595605000, run, 4, 0);
    db.close();
    const grown = (await readAll(file, run, cursor, 2)).flatMap((b) => b.metrics);
    expect(grown).toEqual([
      { step: 4, key: 'aaa', value: 1, wallTime: 1748595605 },
      { step: 4, key: 'loss', value: 0.6, wallTime: 1748595605 },
    ]);
  });

  it('a run MLflow marks deleted is listed as an issue, not imported', async () => {
    const file = buildDb('deleted.db');
    const db = new Database(file);
    db.prepare("UPDATE runs SET lifecycle_stage = 'deleted' WHERE run_uuid = ?").run('d4c3b2a1f0e94d8c8b7a6f5e4d3c2b1a');
    db.close();
    const scan = await mlflowFormat.scan(file, {});
    expect(scan.runs.map((run) => run.key)).toEqual(['5e0c2b7a91d34f0e8a6b4c2d1e0f9a8b']);
    expect(scan.issues.map((issue) => issue.message)).toEqual(['deleted.db: run d4c3b2a1f0e94d8c8b7a6f5e4d3c2b1a is deleted in MLflow (lifecycle_stage: deleted); not imported']);
  });

  it('a database without MLflow metrics columns is refused naming the file, table and column', async () => {
    const file = path.join(tmp.dir, 'not-mlflow.db');
    const db = new Database(file);
    db.exec('CREATE TABLE runs (run_uuid TEXT); CREATE TABLE metrics (run_uuid TEXT, key TEXT)');
    db.close();
    await expect(mlflowFormat.scan(file, {})).rejects.toThrow(/not-mlflow\.db: MLflow table "metrics" has no value column \(found: run_uuid, key\)/);
  });
});
