import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importFormat, IMPORT_FORMAT_REGISTRY } from '../../src-main/engine/imports/registry';
import { tensorboardFormat } from '../../src-main/engine/imports/tensorboard';
import type { ImportBatch, ImportMetric } from '../../src-main/engine/imports/types';
import { writeFixtureFile, type FixtureEvent } from '../helpers/tfevents-independent';
import { tempFolder } from '../helpers/tmp';

const tmp = tempFolder('marsrl-tb-import-');

/** torch SummaryWriter style: file_version, then one simple_value per add_scalar. */
function torchEvents(steps: number, wall0: number, tag = 'train/loss'): FixtureEvent[] {
  const events: FixtureEvent[] = [{ fileVersion: 'brain.Event:2', wallTime: wall0 }];
  for (let s = 0; s < steps; s++) events.push({ tag, step: s, value: 1 / (s + 1), wallTime: wall0 + s + 1, style: 'simple' });
  return events;
}

async function readAll(dir: string, key: string, cursor: unknown = null, batchSize = 5000): Promise<ImportBatch[]> {
  const batches: ImportBatch[] = [];
  for await (const b of tensorboardFormat.read(dir, key, cursor, { batchSize })) batches.push(b);
  return batches;
}

const metricsOf = (batches: ImportBatch[]): ImportMetric[] => batches.flatMap((b) => b.metrics);

function logdir(name: string): string {
  const dir = path.join(tmp.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

describe('TensorBoard import', () => {
  it('is registered and detects a log folder, a nested run and one event file', () => {
    expect(importFormat('tensorboard')).toBe(tensorboardFormat);
    expect(IMPORT_FORMAT_REGISTRY).toContain(tensorboardFormat);
    const dir = logdir('detect');
    expect(tensorboardFormat.detect(dir)).toBe(false);
    fs.mkdirSync(path.join(dir, 'a/b'), { recursive: true });
    writeFixtureFile(path.join(dir, 'a/b/events.out.tfevents.1.h.1.0'), torchEvents(1, 1));
    expect(tensorboardFormat.detect(dir)).toBe(true);
    expect(tensorboardFormat.detect(path.join(dir, 'a/b/events.out.tfevents.1.h.1.0'))).toBe(true);
  });

  it('finds one run per folder holding event files, named as TensorBoard names runs', async () => {
    const dir = logdir('runs');
    writeFixtureFile(path.join(dir, 'events.out.tfevents.1700000000.h.1.0'), torchEvents(3, 1.7e9));
    fs.mkdirSync(path.join(dir, 'seed1/train'), { recursive: true });
    writeFixtureFile(path.join(dir, 'seed1/train/events.out.tfevents.1700000000.h.2.0'), torchEvents(5, 1.7e9, 'reward mean'));
    fs.writeFileSync(path.join(dir, 'seed1/notes.txt'), 'not an event file');
    const scan = await tensorboardFormat.scan(dir, {});
    expect(scan.runs.map((r) => [r.key, r.name, r.metricPoints, r.steps, r.firstStep, r.lastStep, r.metricKeys])).toEqual([
      ['.', 'runs', 3, 3, 0, 2, ['train/loss']],
      ['seed1/train', 'seed1/train', 5, 5, 0, 4, ['reward mean']],
    ]);
    expect(scan.files).toBe(2);
    expect(scan.runs[0].startedAt).toBe(1.7e12);
    expect(scan.runs[0].endedAt).toBe((1.7e9 + 3) * 1000);
    expect(scan.issues).toEqual([]);
  });

  it('reads torch simple_value and TF2 tensor scalars with tag, step and wall time', async () => {
    const dir = logdir('styles');
    writeFixtureFile(path.join(dir, 'events.out.tfevents.1.h.1.0'), [
      { fileVersion: 'brain.Event:2', wallTime: 10 },
      { tag: 'torch', step: 1, value: 0.1, wallTime: 11, style: 'simple' },
      { tag: 'tf2', step: 2, value: 0.2, wallTime: 12, style: 'tensor-float' },
      { tag: 'tf2', step: 3, value: 0.3, wallTime: 13, style: 'tensor-content' },
      { graph: true, wallTime: 14 },
      { tag: 'keras', step: 4, value: 0.4, wallTime: 15, style: 'tensor-double' },
    ]);
    expect(metricsOf(await readAll(dir, '.'))).toEqual([
      { key: 'torch', step: 1, value: Math.fround(0.1), wallTime: 11 },
      { key: 'tf2', step: 2, value: Math.fround(0.2), wallTime: 12 },
      { key: 'tf2', step: 3, value: Math.fround(0.3), wallTime: 13 },
      { key: 'keras', step: 4, value: 0.4, wallTime: 15 },
    ]);
  });

  it('reads the files of a run in name order, in batches whose cursors resume without repeats', async () => {
    const dir = logdir('order');
    // A resumed writer starts a second file; name order is write order.
    writeFixtureFile(path.join(dir, 'events.out.tfevents.1700000100.h.9.0'), torchEvents(4, 200).map((e) => ('step' in e ? { ...e, step: e.step + 4 } : e)));
    writeFixtureFile(path.join(dir, 'events.out.tfevents.1700000000.h.8.0'), torchEvents(4, 100));
    const all = metricsOf(await readAll(dir, '.'));
    expect(all.map((m) => m.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const batches = await readAll(dir, '.', null, 3);
    expect(batches.slice(0, -1).every((b) => b.metrics.length === 3)).toBe(true);
    // Resume from every batch's cursor: exactly what followed it.
    let before = 0;
    for (const b of batches) {
      before += b.metrics.length;
      const rest = metricsOf(await readAll(dir, '.', JSON.parse(JSON.stringify(b.cursor))));
      expect(rest).toEqual(all.slice(before));
    }
  });

  it('yields only the new records of a grown file, and leaves a record being written for later', async () => {
    const dir = logdir('grow');
    const file = path.join(dir, 'events.out.tfevents.1.h.1.0');
    writeFixtureFile(file, torchEvents(6, 1));
    const whole = fs.readFileSync(file);
    fs.writeFileSync(file, whole.subarray(0, whole.length - 7));
    const first = await readAll(dir, '.');
    expect(metricsOf(first).map((m) => m.step)).toEqual([0, 1, 2, 3, 4]);
    expect(first.flatMap((b) => b.issues)).toEqual([]);
    fs.writeFileSync(file, whole);
    const second = await readAll(dir, '.', first.at(-1)?.cursor);
    expect(metricsOf(second).map((m) => m.step)).toEqual([5]);
    expect(second.at(-1)?.bytesDone).toBe(whole.length);
    expect(metricsOf(await readAll(dir, '.', second.at(-1)?.cursor))).toEqual([]);
  });

  it('names the file and byte of a bad record and imports the rest', async () => {
    const dir = logdir('bad');
    fs.mkdirSync(path.join(dir, 'run'));
    const older = path.join(dir, 'run/events.out.tfevents.1.h.1.0');
    const offsets = writeFixtureFile(older, torchEvents(4, 1));
    const bytes = fs.readFileSync(older);
    bytes[offsets[2] + 14] ^= 0x55; // data of step 1
    fs.writeFileSync(older, bytes.subarray(0, bytes.length - 2)); // and the last record cut short
    writeFixtureFile(path.join(dir, 'run/events.out.tfevents.2.h.1.0'), torchEvents(2, 9).map((e) => ('step' in e ? { ...e, step: e.step + 10 } : e)));
    const batches = await readAll(dir, 'run');
    expect(metricsOf(batches).map((m) => m.step)).toEqual([0, 2, 10, 11]);
    expect(batches.flatMap((b) => b.issues)).toEqual([
      { file: 'run/events.out.tfevents.1.h.1.0', position: `byte ${offsets[2]}`, message: expect.stringContaining('data CRC mismatch') },
      { file: 'run/events.out.tfevents.1.h.1.0', position: `byte ${offsets[4]}`, message: expect.stringContaining('truncated record') },
    ]);
    const scan = await tensorboardFormat.scan(dir, {});
    expect(scan.issues.map((i) => i.position)).toEqual([`byte ${offsets[2]}`, `byte ${offsets[4]}`]);
    expect(scan.runs[0].metricPoints).toBe(4);
  });

  it('imports one event file given by path; its issues name the path itself', async () => {
    const dir = logdir('single');
    const file = path.join(dir, 'events.out.tfevents.5.h.1.0');
    const offsets = writeFixtureFile(file, torchEvents(3, 1));
    const bytes = fs.readFileSync(file);
    bytes[offsets[1]] ^= 0xff; // a corrupted length: the file stops there
    fs.writeFileSync(file, bytes);
    const batches = await readAll(file, '.');
    expect(metricsOf(batches)).toEqual([]);
    expect(batches.flatMap((b) => b.issues)).toEqual([{ file: '', position: `byte ${offsets[1]}`, message: expect.stringContaining('corrupted record length') }]);
    await expect(tensorboardFormat.scan(path.join(dir, 'missing'), {})).rejects.toThrow(/does not exist/);
    await expect(readAll(dir, 'gone')).rejects.toThrow(/no TensorBoard run "gone" in .*; its runs: \./);
  });
});
