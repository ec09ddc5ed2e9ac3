/**
 * TensorBoard log folders (issue 39): each folder holding `events.out.tfevents.*` files is one
 * source run (locate.ts), its scalars become metrics with the tag as the key verbatim, the step
 * and the event's wall time. torch's simple_value scalars and TF2's tensor scalars both count
 * (tfevents/events.ts). Read streamed, file by file in name order; the cursor is the byte offset
 * reached in each file, so a file that grew yields only its new records and a record still being
 * written is read next time. A bad record is an issue naming the file and its byte offset.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ImportIssue } from '#shared/contract';
import { readScalars, type ScalarItem } from '../../tfevents/scalars';
import { ImportSourceError, type ImportBatch, type ImportFormat, type ImportMetric, type ReadOptions, type ScannedRun, type ScanResult } from '../types';
import { holdsEventFiles, issueFile, locate, runDir, type TensorBoardSource } from './locate';

/** Per file of a run: the byte offset to read from next. */
interface TensorBoardCursor {
  files: Record<string, number>;
}

function cursorOf(raw: unknown): TensorBoardCursor {
  const files = (raw as Partial<TensorBoardCursor> | null)?.files;
  return { files: files && typeof files === 'object' ? { ...files } : {} };
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new Error('import cancelled');
}

/** One file of a run, with its offset to read from, and whether a later file shows it is finished. */
interface RunFile {
  name: string;
  full: string;
  start: number;
  finished: boolean;
}

function runFiles(source: TensorBoardSource, key: string, cursor: TensorBoardCursor): RunFile[] {
  const names = source.runs.get(key);
  if (!names) throw new ImportSourceError(`no TensorBoard run ${JSON.stringify(key)} in ${source.root} (no event files in that folder now); its runs: ${[...source.runs.keys()].join(', ')}`, key);
  const dir = runDir(source, key);
  return names.map((name, i) => ({ name, full: path.join(dir, name), start: cursor.files[name] ?? 0, finished: i < names.length - 1 }));
}

function toIssue(source: TensorBoardSource, key: string, file: string, item: Extract<ScalarItem, { kind: 'issue' }>): ImportIssue {
  return { file: issueFile(source, key, file), position: `byte ${item.error.offset}`, message: item.error.reason };
}

/** Scan: what each run holds, read once through. */
async function scanRun(source: TensorBoardSource, key: string, issues: ImportIssue[], signal?: AbortSignal): Promise<{ run: ScannedRun; bytes: number }> {
  const steps = new Set<number>();
  const keys = new Set<string>();
  let points = 0;
  let records = 0;
  let startedAt: number | null = null;
  let endedAt: number | null = null;
  let bytes = 0;
  for (const file of runFiles(source, key, { files: {} })) {
    bytes += fs.statSync(file.full).size;
    for await (const item of readScalars(file.full, 0, { finished: file.finished })) {
      if (item.kind === 'issue') issues.push(toIssue(source, key, file.name, item));
      if (item.kind !== 'event') continue;
      if (item.wallTime > 0) {
        startedAt = Math.min(startedAt ?? Infinity, item.wallTime * 1000);
        endedAt = Math.max(endedAt ?? -Infinity, item.wallTime * 1000);
      }
      for (const scalar of item.scalars) keys.add(scalar.tag);
      if (item.scalars.length > 0) steps.add(item.step);
      points += item.scalars.length;
      if (++records % 10_000 === 0) throwIfAborted(signal);
    }
  }
  const sorted = [...steps].sort((a, b) => a - b);
  const name = key === '.' ? path.basename(source.root) : key;
  const run: ScannedRun = {
    key,
    name,
    steps: sorted.length,
    firstStep: sorted.length ? sorted[0] : null,
    lastStep: sorted.length ? sorted[sorted.length - 1] : null,
    metricKeys: [...keys].sort(),
    metricPoints: points,
    generations: 0,
    episodes: 0,
    agents: [],
    config: {},
    tags: [],
    startedAt,
    endedAt,
  };
  return { run, bytes };
}

async function scan(given: string, options: { signal?: AbortSignal }): Promise<ScanResult> {
  const source = locate(given);
  const issues: ImportIssue[] = [];
  const runs: ScannedRun[] = [];
  let files = 0;
  let bytes = 0;
  for (const key of source.runs.keys()) {
    throwIfAborted(options.signal);
    const scanned = await scanRun(source, key, issues, options.signal);
    runs.push(scanned.run);
    files += source.runs.get(key)?.length ?? 0;
    bytes += scanned.bytes;
  }
  return { runs, issues, files, bytes };
}

/** Batches of one run's scalars after the cursor, each with the cursor just past it. */
async function* read(given: string, runKey: string, rawCursor: unknown | null, options: ReadOptions): AsyncGenerator<ImportBatch> {
  const source = locate(given);
  const cursor = cursorOf(rawCursor);
  let metrics: ImportMetric[] = [];
  let issues: ImportIssue[] = [];
  const batch = (): ImportBatch => {
    const out: ImportBatch = { metrics, episodes: [], checkpoints: [], issues, cursor: { files: { ...cursor.files } }, bytesDone: Object.values(cursor.files).reduce((a, b) => a + b, 0) };
    metrics = [];
    issues = [];
    return out;
  };
  for (const file of runFiles(source, runKey, cursor)) {
    for await (const item of readScalars(file.full, file.start, { finished: file.finished })) {
      if (item.kind === 'issue') issues.push(toIssue(source, runKey, file.name, item));
      else if (item.kind === 'end') cursor.files[file.name] = item.resumeAt;
      else {
        for (const scalar of item.scalars) metrics.push({ key: scalar.tag, step: item.step, value: scalar.value, wallTime: item.wallTime || null });
        cursor.files[file.name] = item.next;
      }
      if (metrics.length >= options.batchSize) {
        throwIfAborted(options.signal);
        yield batch();
      }
    }
  }
  yield batch();
}

export const tensorboardFormat: ImportFormat = {
  id: 'tensorboard',
  label: 'TensorBoard event files',
  detect: (given) => holdsEventFiles(given),
  scan,
  read,
};
