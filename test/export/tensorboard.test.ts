/**
 * A Studio run's metrics as TensorBoard event files, read back by the independent reader
 * (protobufjs + @aws-crypto/crc32c) and by the Studio's own TensorBoard import.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExportError, runExport, runFolderName } from '../../src-main/engine/export';
import { tensorboardFormat } from '../../src-main/engine/imports/tensorboard';
import type { ImportMetric } from '../../src-main/engine/imports/types';
import { readEventFile } from '../helpers/tfevents-independent';
import { marsrl, marsrlMain } from '../helpers/cli';
import { callStudio } from '../../src-main/api/dispatch';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { toErrorShape } from '#shared/errors';
import type { StudioEvent } from '#shared/contract';
import { buildExportRequest, emptyForm, suggestedOutPath } from '../../src-renderer/src/util/exportForm';
import { storeInTemp } from '../helpers/runs-db';

const db = storeInTemp('tb-export.db', 'marsrl-tb-export-');
const START_MS = 1_700_000_000_123;
let alpha: number;
let weird: number;
let empty: number;

interface Point {
  key: string;
  step: number;
  wallTime: number;
  value: number;
}

/** Keys with different step sets (gaps, a late start), values that are not float32-exact. */
function alphaPoints(): Point[] {
  const points: Point[] = [];
  // More steps than one keyset page (5,000) of a key holds.
  for (let step = 0; step < 5600; step++) {
    points.push({ key: 'solver/grad_norm', step, wallTime: step * 1.37, value: Math.sin(step) * 1e3 + 1 / 3 });
    if (step % 3 === 0) points.push({ key: 'eval/system/accuracy', step, wallTime: step * 1.37 + 0.01, value: (step % 97) / 97 });
    if (step >= 1000) points.push({ key: 'reward mean', step, wallTime: step * 1.37 + 0.02, value: -step / 7 });
  }
  return points;
}

beforeAll(() => {
  const { store } = db;
  alpha = store.runs.create({ name: 'alpha', config: {}, codeVersion: 'test', seed: 1 }, START_MS - 5000);
  store.runs.setStatus(alpha, 'running', null, START_MS);
  weird = store.runs.create({ name: 'a/b: "weird" run', config: {}, codeVersion: 'test', seed: 2 }, START_MS);
  empty = store.runs.create({ name: 'empty', config: {}, codeVersion: 'test', seed: 3 }, START_MS);
  const w = store.writer({ flushIntervalMs: 0 });
  for (const p of alphaPoints()) w.metric({ runId: alpha, ...p });
  w.metric({ runId: weird, key: 'x', step: 5, wallTime: 2, value: 1e-9 });
  w.close();
});

function out(name: string): string {
  const dir = path.join(db.dir, name);
  fs.mkdirSync(dir);
  return dir;
}

const storePoints = (runId: number): Point[] =>
  db.store.db.prepare('SELECT k.key, m.step, m.wall_time AS wallTime, m.value FROM metrics m JOIN metric_keys k ON k.id = m.key_id WHERE m.run_id = ? ORDER BY m.step, k.key').all(runId) as Point[];

describe('TensorBoard export', () => {
  it('writes each run as a TensorBoard run folder the independent reader reads back point for point', async () => {
    const dir = out('round-trip');
    const progress: [number, number][] = [];
    const result = await runExport(db.store, { runs: [alpha, weird], format: 'tensorboard', out: dir }, { onProgress: (d, t) => progress.push([d, t]) });
    const expected = storePoints(alpha);
    expect(expected.length).toBeGreaterThan(5000);
    expect(result.rows).toBe(expected.length + 1);
    expect(progress.at(-1)).toEqual([expected.length + 1, expected.length + 1]);
    expect(progress.length).toBeGreaterThan(2);
    expect(fs.readdirSync(dir).sort()).toEqual([`a_b_ _weird_ run-${weird}`, `alpha-${alpha}`]);

    const [alphaRun] = result.runs;
    expect(path.basename(alphaRun.file)).toMatch(new RegExp(`^events\\.out\\.tfevents\\.\\d{10}\\..+\\.${process.pid}\\.0$`));
    const read = readEventFile(alphaRun.file);
    expect(read.fileVersion).toBe('brain.Event:2');
    expect(read.firstWallTime).toBe(START_MS / 1000);
    // Step order, every point, float32 values (TensorBoard's scalars), wall time = start + offset.
    const got = read.scalars.map((s) => ({ key: s.tag, step: s.step, wallTime: s.wallTime, value: s.value }));
    expect(got).toEqual(expected.map((p) => ({ key: p.key, step: p.step, wallTime: START_MS / 1000 + p.wallTime, value: Math.fround(p.value) })));
    // The scalars plugin's metadata on each tag's first value only.
    expect(read.scalars.filter((s) => s.pluginName === 'scalars').map((s) => s.tag).sort()).toEqual(['eval/system/accuracy', 'reward mean', 'solver/grad_norm']);
    expect(result.bytes).toBe(result.runs.reduce((n, r) => n + fs.statSync(r.file).size, 0));
  });

  it('reads back through the TensorBoard import as the same values', async () => {
    const dir = out('via-import');
    await runExport(db.store, { runs: ['alpha', weird], format: 'tensorboard', out: dir });
    const scan = await tensorboardFormat.scan(dir, {});
    expect(scan.runs.map((r) => [r.key, r.metricPoints])).toEqual([
      [`a_b_ _weird_ run-${weird}`, 1],
      [`alpha-${alpha}`, storePoints(alpha).length],
    ]);
    const metrics: ImportMetric[] = [];
    for await (const batch of tensorboardFormat.read(dir, `alpha-${alpha}`, null, { batchSize: 1000 })) metrics.push(...batch.metrics);
    expect(metrics).toEqual(storePoints(alpha).map((p) => ({ key: p.key, step: p.step, value: Math.fround(p.value), wallTime: START_MS / 1000 + p.wallTime })));
  });

  it('names a run folder safely, with the id', () => {
    // Separators become _, leading and trailing dots go: never a path outside OUT.
    expect(runFolderName({ id: 7, name: '../..' })).toBe('_-7');
    expect(runFolderName({ id: 8, name: 'a\\b:c*d' })).toBe('a_b_c_d-8');
    expect(runFolderName({ id: 3, name: '...' })).toBe('run-3');
  });

  it('refuses an output that is not an existing folder, saying out is a folder for this format', async () => {
    const file = path.join(db.dir, 'a-file');
    fs.writeFileSync(file, '');
    await expect(runExport(db.store, { runs: [alpha], format: 'tensorboard', out: file })).rejects.toThrow(/out: .*a-file is a file; for the tensorboard format out is a folder/);
    await expect(runExport(db.store, { runs: [alpha], format: 'tensorboard', out: path.join(db.dir, 'nope/deeper') })).rejects.toThrow(/nor its parent .*nope exists; for the tensorboard format out is a folder/);
    expect(fs.existsSync(path.join(db.dir, 'nope'))).toBe(false);
    await expect(runExport(db.store, { runs: [alpha], format: 'tensorboard', out: db.dir, filters: { agents: ['solver'] } })).rejects.toThrow(/filters\.agents: the tensorboard format writes every metric point/);
    await expect(runExport(db.store, { runs: [empty], format: 'tensorboard', out: out('empty') })).rejects.toMatchObject({ code: 'empty_result' });
    expect(fs.readdirSync(path.join(db.dir, 'empty'))).toEqual([]);
  });

  it('refuses to replace an earlier export without force, and replaces it with force', async () => {
    const dir = out('force');
    await runExport(db.store, { runs: [weird], format: 'tensorboard', out: dir });
    const error = await runExport(db.store, { runs: [weird], format: 'tensorboard', out: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExportError);
    expect((error as ExportError).code).toBe('output_exists');
    const marker = path.join(dir, runFolderName({ id: weird, name: 'a/b: "weird" run' }), 'stale');
    fs.writeFileSync(marker, '');
    await runExport(db.store, { runs: [weird], format: 'tensorboard', out: dir, force: true });
    expect(fs.existsSync(marker)).toBe(false);
    expect(fs.readdirSync(dir)).toHaveLength(1);
  });

  it('leaves nothing behind when cancelled, not even the folder it made', async () => {
    const dir = out('cancel');
    const controller = new AbortController();
    const exporting = runExport(db.store, { runs: [weird, alpha], format: 'tensorboard', out: dir }, { signal: controller.signal, onProgress: (d) => d > 0 && controller.abort() });
    await expect(exporting).rejects.toMatchObject({ code: 'aborted' });
    expect(fs.readdirSync(dir)).toEqual([]);
    const made = path.join(dir, 'made');
    const again = new AbortController();
    const second = runExport(db.store, { runs: [alpha], format: 'tensorboard', out: made }, { signal: again.signal, onProgress: (d) => d > 0 && again.abort() });
    await expect(second).rejects.toMatchObject({ code: 'aborted' });
    expect(fs.existsSync(made)).toBe(false);
  });

  it('makes the output folder when its parent exists', async () => {
    const made = path.join(out('parent'), 'tb');
    const result = await runExport(db.store, { runs: [weird], format: 'tensorboard', out: made });
    expect(result.out).toBe(made);
    expect(readEventFile(result.runs[0].file).scalars).toEqual([{ tag: 'x', step: 5, value: Math.fround(1e-9), wallTime: START_MS / 1000 + 2, pluginName: 'scalars' }]);
  });

  it('runs from the command line: marsrl export RUN --format tensorboard --out DIR', async () => {
    const dir = out('cli');
    const run = marsrl(['export', 'alpha', '--format', 'tensorboard', '--out', dir, '--db', db.databasePath, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ format: 'tensorboard', out: dir, rows: storePoints(alpha).length });
    expect(readEventFile(result.runs[0].file).scalars).toHaveLength(storePoints(alpha).length);
    const asFile = await marsrlMain(['export', 'alpha', '--format', 'tensorboard', '--out', result.runs[0].file, '--db', db.databasePath]);
    expect(asFile.code).toBe(1);
    expect(asFile.stderr).toMatch(/for the tensorboard format out is a folder/);
  });

  it("runs through the API's startExport and reports where it wrote", async () => {
    const hub = new EventHub();
    const events: StudioEvent[] = [];
    hub.subscribe((e) => events.push(e));
    const service = createStudioService({ store: db.store, databasePath: db.store.path, transport: 'direct', hub });
    const dir = out('api');
    const { exportId } = (await callStudio(service, 'startExport', [{ runs: [weird], format: 'tensorboard', out: dir }])) as { exportId: string };
    for (let i = 0; i < 200 && !events.some((e) => e.type === 'export-finished'); i++) await new Promise((r) => setTimeout(r, 25));
    expect(events.find((e) => e.type === 'export-finished')).toMatchObject({ exportId, status: 'done', result: { out: dir, rows: 1, card: '' } });
    expect(fs.readdirSync(dir)).toEqual([runFolderName({ id: weird, name: 'a/b: "weird" run' })]);
    // The same validation answers the caller at once, in the form's words.
    const shape = await callStudio(service, 'startExport', [{ runs: [weird], format: 'tensorboard', out: readEventFileOf(dir) }]).catch(toErrorShape);
    expect(shape).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/is a file; for the tensorboard format out is a folder/) });
  });
});

describe("the export dialog's TensorBoard choice", () => {
  it('sends runs, format, folder and force only: no container or filters', () => {
    const form = { ...emptyForm(), runs: [4], format: 'tensorboard' as const, out: ' /data/tb ', agents: ['solver'], stepFrom: '3', force: true };
    expect(buildExportRequest(form)).toEqual({ request: { runs: [4], format: 'tensorboard', out: '/data/tb', force: true }, issues: [] });
    expect(buildExportRequest({ ...form, out: '' }).issues).toEqual([{ path: 'out', message: 'out: give the output folder (e.g. /data/tb-logs)' }]);
  });

  it('suggests a folder, not a file with an extension', () => {
    expect(suggestedOutPath('/exports', [{ id: 9, name: 'Sort 8' }], 'tensorboard', 'parquet')).toBe('/exports/sort-8-run9-tensorboard');
  });
});

function readEventFileOf(dir: string): string {
  const [run] = fs.readdirSync(dir);
  const [file] = fs.readdirSync(path.join(dir, run));
  return path.join(dir, run, file);
}
