import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRecords, type RecordItem } from '../../src-main/engine/tfevents/tfrecord';
import { EventFileWriter, eventFileName } from '../../src-main/engine/tfevents/writer';
import { decodeEvent } from '../../src-main/engine/tfevents/events';
import { frame, readEventFile, writeFixtureFile } from '../helpers/tfevents-independent';
import { tempFolder } from '../helpers/tmp';

const tmp = tempFolder('marsrl-tfrecord-');

async function collect(file: string, start: number, finished: boolean, windowBytes?: number): Promise<RecordItem[]> {
  const items: RecordItem[] = [];
  for await (const item of readRecords(file, start, { finished, windowBytes })) items.push(item);
  return items;
}

function threeRecords(name: string): { file: string; offsets: number[]; size: number } {
  const file = path.join(tmp.dir, name);
  const offsets = writeFixtureFile(file, [
    { fileVersion: 'brain.Event:2', wallTime: 100 },
    { tag: 'loss', step: 1, value: 0.5, wallTime: 101, style: 'simple' },
    { tag: 'loss', step: 2, value: 0.25, wallTime: 102, style: 'simple' },
  ]);
  return { file, offsets, size: fs.statSync(file).size };
}

describe('TFRecord framing', () => {
  it('reads the records an independent writer framed, with their offsets, through a small window', async () => {
    const { file, offsets, size } = threeRecords('ok.tfevents');
    for (const windowBytes of [1, 17, 1 << 20]) {
      const items = await collect(file, 0, true, windowBytes);
      const records = items.filter((i) => i.kind === 'record');
      expect(records.map((r) => r.offset)).toEqual(offsets);
      expect(items.at(-1)).toEqual({ kind: 'end', resumeAt: size, pending: false });
    }
  });

  it('resumes from a byte offset', async () => {
    const { file, offsets } = threeRecords('resume.tfevents');
    const items = await collect(file, offsets[2], true);
    const records = items.filter((i) => i.kind === 'record');
    expect(records.map((r) => r.offset)).toEqual([offsets[2]]);
    expect(decodeEvent((records[0] as { data: Buffer }).data).step).toBe(2);
  });

  it('leaves a record cut short in a file being written for the next read, and reads it once complete', async () => {
    const { file, offsets, size } = threeRecords('growing.tfevents');
    const whole = fs.readFileSync(file);
    for (const cut of [offsets[2] + 5, offsets[2] + 12, size - 1]) {
      fs.writeFileSync(file, whole.subarray(0, cut));
      const items = await collect(file, 0, false);
      expect(items.filter((i) => i.kind === 'record')).toHaveLength(2);
      expect(items.filter((i) => i.kind === 'issue')).toHaveLength(0);
      expect(items.at(-1)).toEqual({ kind: 'end', resumeAt: offsets[2], pending: true });
    }
    fs.writeFileSync(file, whole);
    const rest = await collect(file, offsets[2], false);
    expect(rest.filter((i) => i.kind === 'record').map((r) => r.offset)).toEqual([offsets[2]]);
  });

  it('reports a truncated record in a finished file with the file and the byte offset', async () => {
    const { file, offsets, size } = threeRecords('truncated.tfevents');
    fs.truncateSync(file, size - 3);
    const items = await collect(file, 0, true);
    const issue = items.find((i) => i.kind === 'issue');
    expect(issue?.kind === 'issue' && issue.error.message).toMatch(new RegExp(`truncated\\.tfevents: truncated record.*record at byte ${offsets[2]}\\)`));
    expect(issue?.kind === 'issue' && issue.error.offset).toBe(offsets[2]);
    expect(items.filter((i) => i.kind === 'record')).toHaveLength(2);
  });

  it('skips a record whose data CRC fails and reads on', async () => {
    const { file, offsets } = threeRecords('datacrc.tfevents');
    const bytes = fs.readFileSync(file);
    bytes[offsets[1] + 12 + 2] ^= 0xff;
    fs.writeFileSync(file, bytes);
    const items = await collect(file, 0, true);
    expect(items.filter((i) => i.kind === 'record').map((r) => r.offset)).toEqual([offsets[0], offsets[2]]);
    const issue = items.find((i) => i.kind === 'issue');
    expect(issue?.kind === 'issue' && issue.error.message).toContain(`data CRC mismatch`);
    expect(issue?.kind === 'issue' && issue.error.message).toContain(`datacrc.tfevents`);
    expect(issue?.kind === 'issue' && issue.error.offset).toBe(offsets[1]);
    expect(issue?.kind === 'issue' && issue.fatal).toBe(false);
  });

  it('stops a file whose record length is corrupted', async () => {
    const { file, offsets, size } = threeRecords('lengthcrc.tfevents');
    const bytes = fs.readFileSync(file);
    bytes[offsets[1]] ^= 0x01;
    fs.writeFileSync(file, bytes);
    const items = await collect(file, 0, false);
    expect(items.filter((i) => i.kind === 'record')).toHaveLength(1);
    const issue = items.find((i) => i.kind === 'issue');
    expect(issue?.kind === 'issue' && issue.error.message).toMatch(/corrupted record length.*record at byte \d+/);
    expect(issue?.kind === 'issue' && issue.error.offset).toBe(offsets[1]);
    expect(items.at(-1)).toEqual({ kind: 'end', resumeAt: size, pending: false });
  });

  it('says once that a file was rewritten shorter than the last read, then reads on from its end', async () => {
    const { file, size } = threeRecords('rewritten.tfevents');
    const items = await collect(file, size + 40, false);
    expect(items).toHaveLength(2);
    expect(items[0].kind === 'issue' && items[0].error.message).toMatch(/rewritten\.tfevents: the file is now \d+ bytes, shorter than where the last read stopped.*record at byte \d+/);
    expect(items[1]).toEqual({ kind: 'end', resumeAt: size, pending: false });
  });

  it('frames what it writes as the independent reader expects', () => {
    const file = path.join(tmp.dir, eventFileName(1_700_000_000, 0, 'host', 42));
    expect(path.basename(file)).toBe('events.out.tfevents.1700000000.host.42.0');
    const writer = new EventFileWriter(file, 1_700_000_000.5);
    writer.scalar('a/b c', 3, 1.5, 1_700_000_001.25);
    writer.scalar('a/b c', 4, -2, 1_700_000_002);
    writer.close();
    const read = readEventFile(file);
    expect(read.fileVersion).toBe('brain.Event:2');
    expect(read.firstWallTime).toBe(1_700_000_000.5);
    expect(read.scalars).toEqual([
      { tag: 'a/b c', step: 3, value: 1.5, wallTime: 1_700_000_001.25, pluginName: 'scalars' },
      { tag: 'a/b c', step: 4, value: -2, wallTime: 1_700_000_002, pluginName: null },
    ]);
    expect(frame(new Uint8Array(0)).length).toBe(16);
  });
});
