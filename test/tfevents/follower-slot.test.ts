import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tensorBoardReader } from '../../src-main/engine/engines/follow/tensorboard-slot';
import { writeFixtureFile, type FixtureEvent } from '../helpers/tfevents-independent';
import { tempFolder } from '../helpers/tmp';

const tmp = tempFolder('marsrl-tb-slot-');

function events(from: number, to: number): FixtureEvent[] {
  const out: FixtureEvent[] = [{ fileVersion: 'brain.Event:2', wallTime: 1 }];
  for (let s = from; s < to; s++) out.push({ tag: 'critic/score/mean', step: s, value: s / 4, wallTime: 100 + s, style: 'simple' });
  return out;
}

describe("the follower's TensorBoard reader", () => {
  it('reads new scalars of a growing folder across calls, leaving a record being written for later', () => {
    const dir = path.join(tmp.dir, 'tensorboard');
    expect(tensorBoardReader.readScalars(dir, null).scalars).toEqual([]);
    fs.mkdirSync(dir);
    const first = path.join(dir, 'events.out.tfevents.1700000000.h.1.0');
    const offsets = writeFixtureFile(first, events(0, 3));
    const whole = fs.readFileSync(first);
    fs.writeFileSync(first, whole.subarray(0, whole.length - 3));
    const a = tensorBoardReader.readScalars(dir, null);
    expect(a.scalars).toEqual([
      { tag: 'critic/score/mean', step: 0, value: 0, wallTime: 100, file: path.basename(first), offset: offsets[1] },
      { tag: 'critic/score/mean', step: 1, value: 0.25, wallTime: 101, file: path.basename(first), offset: offsets[2] },
    ]);
    expect(a.warnings).toEqual([]);
    fs.writeFileSync(first, whole);
    // A resumed writer opens a later file.
    writeFixtureFile(path.join(dir, 'events.out.tfevents.1700000500.h.2.0'), events(3, 5));
    const b = tensorBoardReader.readScalars(dir, JSON.parse(JSON.stringify(a.cursor)));
    expect(b.scalars.map((s) => s.step)).toEqual([2, 3, 4]);
    expect(tensorBoardReader.readScalars(dir, b.cursor).scalars).toEqual([]);
  });

  it('warns of a bad record with its file and byte, and reads on', () => {
    const dir = path.join(tmp.dir, 'bad');
    fs.mkdirSync(dir);
    const file = path.join(dir, 'events.out.tfevents.1.h.1.0');
    const offsets = writeFixtureFile(file, events(0, 3));
    const bytes = fs.readFileSync(file);
    bytes[offsets[2] + 13] ^= 1;
    fs.writeFileSync(file, bytes);
    const result = tensorBoardReader.readScalars(dir, null);
    expect(result.scalars.map((s) => s.step)).toEqual([0, 2]);
    expect(result.warnings).toEqual([`events.out.tfevents.1.h.1.0: data CRC mismatch in a record of ${offsets[3] - offsets[2] - 16} bytes; record skipped (record at byte ${offsets[2]})`]);
  });
});
