/**
 * `marsrl import` on every fixture format with the real registry (issue 39): the format is
 * detected, the preview's counts are what the import writes, a second import adds nothing — and
 * each bad input the issue names gets a message naming its file. The fixtures are the formats'
 * own (test/fixtures/imports/*, each citing the code that writes it); the TensorBoard file is
 * written by the independent protobufjs writer.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { frame, encodeFixtureEvent, writeFixtureFile } from '../helpers/tfevents-independent';
import { marsrlInProcess } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';

const FIXTURES = path.resolve('test/fixtures/imports');
let tmp: ReturnType<typeof tempDir>;
let db: string;

beforeAll(() => {
  tmp = tempDir();
  db = path.join(tmp.dir, 'studio.db');
});
afterAll(() => tmp.cleanup());

const marsrl = (...args: string[]) => marsrlInProcess(db, args);

function sqliteFrom(script: string, name: string): string {
  const file = path.join(tmp.dir, name);
  const handle = new Database(file);
  handle.exec(fs.readFileSync(script, 'utf8'));
  handle.close();
  return file;
}

function tensorboardFolder(): string {
  const dir = path.join(tmp.dir, 'tb');
  fs.mkdirSync(dir, { recursive: true });
  const scalars = [0, 1, 2, 3].map((step) => ({ tag: 'train/loss', step, value: 1 / (step + 1), wallTime: 1.7e9 + step, style: 'simple' as const }));
  writeFixtureFile(path.join(dir, 'events.out.tfevents.1700000000.host.1.0'), [{ fileVersion: 'brain.Event:2', wallTime: 1.7e9 }, ...scalars]);
  return dir;
}

interface PreviewJson {
  format: string;
  runs: { key: string; metricPoints: number; generations: number; episodes: number }[];
}

describe('marsrl import on each format', () => {
  const sources = (): [string, string][] => [
    ['marsrl', path.join(FIXTURES, 'marsrl/outputs')],
    ['verl', path.join(FIXTURES, 'verl/run')],
    ['drmas', path.join(FIXTURES, 'drmas/run')],
    ['mlflow', path.join(FIXTURES, 'mlflow/mlruns')],
    ['mlflow', sqliteFrom(path.join(FIXTURES, 'mlflow/sqlite-store.sql'), 'mlflow.db')],
    ['trackio', sqliteFrom(path.join(FIXTURES, 'trackio/current.sql'), 'project.db')],
    ['tensorboard', tensorboardFolder()],
  ];

  it('detects the format, imports what the preview counted, and adds nothing the second time', async () => {
    for (const [format, source] of sources()) {
      const preview = JSON.parse((await marsrl('import', source, '--dry-run', '--json')).out) as PreviewJson;
      expect([source, preview.format]).toEqual([source, format]);
      const first = await marsrl('import', source, '--yes', '--json');
      expect(first.code).toBe(0);
      const imported = JSON.parse(first.out) as { runs: { key: string; runId: number; created: boolean; metricPoints: number; turns: number; episodes: number }[] };
      for (const run of preview.runs) {
        const result = imported.runs.find((r) => r.key === run.key)!;
        // Derived accuracy points (a MarsRL evaluation) are written after the batches, not counted as read.
        expect([source, run.key, result.created, result.turns, result.episodes, result.metricPoints]).toEqual([source, run.key, true, run.generations, run.episodes, run.metricPoints]);
        const store = openStore(db);
        expect(store.runs.get(result.runId)?.imported).toMatchObject({ format, sourceKey: run.key });
        store.close();
      }
      const again = JSON.parse((await marsrl('import', source, '--yes', '--json')).out) as { runs: { created: boolean; metricPoints: number; turns: number }[] };
      expect(again.runs.every((r) => !r.created && r.metricPoints === 0 && r.turns === 0)).toBe(true);
    }
  });
});

describe('marsrl import on bad input names the file', () => {
  it('an empty folder', async () => {
    const empty = path.join(tmp.dir, 'empty');
    fs.mkdirSync(empty);
    const { code, err } = await marsrl('import', empty, '--yes');
    expect(code).not.toBe(0);
    expect(err).toContain(empty);
    expect(err).toMatch(/empty/);
  });

  it('a truncated TensorBoard record and a CRC mismatch: each reported with the file and byte, the rest imported', async () => {
    const dir = path.join(tmp.dir, 'tb-bad');
    fs.mkdirSync(dir);
    const good = (step: number) => frame(encodeFixtureEvent({ tag: 'loss', step, value: step, wallTime: 1.7e9, style: 'simple' }));
    const corrupt = Buffer.from(good(1));
    corrupt[corrupt.length - 6] ^= 0xff; // a data byte: the data CRC no longer matches
    // The older file has a later file beside it, so its cut-off last record is final, not still being written.
    fs.writeFileSync(path.join(dir, 'events.out.tfevents.1.h.1.0'), Buffer.concat([good(0), corrupt, good(2), good(3).subarray(0, 10)]));
    fs.writeFileSync(path.join(dir, 'events.out.tfevents.2.h.1.0'), good(4));
    const { code, out } = await marsrl('import', dir, '--yes');
    expect(code).toBe(0);
    expect(out).toMatch(/events\.out\.tfevents\.1\.h\.1\.0, byte \d+: .*(crc|CRC)/);
    expect(out).toMatch(/events\.out\.tfevents\.1\.h\.1\.0, byte \d+: .*(truncated|cut|short)/i);
    expect(out).toContain('3 metric points');
  });

  it('a MarsRL JSONL line cut in half', async () => {
    const dir = path.join(tmp.dir, 'marsrl-bad');
    fs.cpSync(path.join(FIXTURES, 'marsrl/outputs'), dir, { recursive: true });
    const file = path.join(dir, '0.json.0');
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines[2] = lines[2].slice(0, Math.floor(lines[2].length / 2));
    fs.writeFileSync(file, lines.join('\n'));
    const { code, out } = await marsrl('import', dir, '--yes');
    expect(code).toBe(0);
    expect(out).toContain('0.json.0, line 3');
    expect(out).toContain('3 episodes');
  });

  it('a trackio metrics table without run_id', async () => {
    const file = sqliteFrom(path.join(FIXTURES, 'trackio/no-run-column.sql'), 'broken.db');
    const { code, err, out } = await marsrl('import', file, '--yes');
    expect(code).not.toBe(0);
    expect(`${out}\n${err}`).toMatch(/broken\.db.*metrics.*run_id/);
  });

  it('an MLflow metric line of two fields: read as step 0 as MLflow does, and said so with its file and line', async () => {
    const root = path.join(tmp.dir, 'mlruns-bad');
    fs.cpSync(path.join(FIXTURES, 'mlflow/mlruns'), root, { recursive: true });
    const metric = findMetricFile(root);
    fs.appendFileSync(metric, '1700000009000 0.5\n');
    const line = fs.readFileSync(metric, 'utf8').split('\n').filter((l) => l !== '').length;
    const { code, out } = await marsrl('import', root, '--yes');
    expect(code).toBe(0);
    expect(out).toContain(`${path.relative(root, metric)}, line ${line}`);
    expect(out).toMatch(/step 0/);
  });
});

function findMetricFile(root: string): string {
  for (const entry of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && path.basename(entry.parentPath) === 'metrics') return path.join(entry.parentPath, entry.name);
  }
  throw new Error(`no metrics file under ${root}`);
}
