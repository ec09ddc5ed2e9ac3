/**
 * Scanning and reading an MLflow file store: each metrics file streamed line by line. The cursor
 * of a run is, per metrics file, the byte offset and line number after the last line read, so a
 * re-import reads nothing and a file that grew (MLflow only appends, `append_to`) yields its new lines.
 */
import { statSync } from 'node:fs';
import type { ImportIssue } from '#shared/contract';
import type { ImportBatch, ImportMetric, ReadOptions, ScanResult } from '../types';
import { fileRuns, findRun, keyValues, resourceFiles, type FileRun } from './file-store';
import { lineIssue, linesFrom, parseMetricLine } from './metric-lines';
import { emptyTally, scannedRun, type MetricTally } from './run-info';

type FileCursor = Record<string, { offset: number; line: number }>;

interface MetricFile {
  key: string;
  file: string;
  /** Relative to the imported path. */
  rel: string;
}

function metricFiles(run: FileRun): MetricFile[] {
  return resourceFiles(run, 'metrics').map(({ key, file }) => ({ key, file, rel: `${run.rel}/metrics/${key}` }));
}

function issueAt(rel: string, line: number, message: string): ImportIssue {
  return { file: rel, position: `line ${line}`, message: `${rel}, line ${line}: ${message}` };
}

/** A last line without its newline: MLflow is writing it, or the file was cut; read once it is complete. */
function tailIssue(metric: MetricFile, end: number, line: number): ImportIssue | null {
  const size = statSync(metric.file).size;
  if (size <= end) return null;
  return issueAt(metric.rel, line, `no newline after byte ${end} (${size - end} bytes): a write in progress or a cut file; left for the next import`);
}

/** Every line of one metrics file from a position, as points or issues. */
async function* fileRecords(metric: MetricFile, from: { offset: number; line: number }): AsyncGenerator<{ point?: ImportMetric; issue?: ImportIssue; end: number; line: number }> {
  let end = from.offset;
  let next = from.line;
  for await (const line of linesFrom(metric.file, from.offset, from.line)) {
    const parsed = parseMetricLine(line.text);
    const message = lineIssue(parsed, line.text);
    const issue = message === null ? undefined : issueAt(metric.rel, line.number, message);
    const point = parsed.ok ? { step: parsed.step, key: metric.key, value: parsed.value, wallTime: parsed.timestamp / 1000 } : undefined;
    end = line.end;
    next = line.number + 1;
    yield { point, issue, end, line: next };
  }
  const tail = tailIssue(metric, end, next);
  if (tail) yield { issue: tail, end, line: next };
}

async function tallyRun(run: FileRun, issues: ImportIssue[]): Promise<MetricTally> {
  const tally = emptyTally();
  for (const metric of metricFiles(run)) {
    for await (const record of fileRecords(metric, { offset: 0, line: 1 })) {
      if (record.issue) issues.push(record.issue);
      if (!record.point) continue;
      tally.points += 1;
      tally.keys.add(record.point.key);
      tally.steps.add(record.point.step);
    }
  }
  return tally;
}

function runInfo(run: FileRun) {
  return { id: run.id, name: run.meta.run_name, startTime: run.meta.start_time, endTime: run.meta.end_time, params: keyValues(run, 'params'), tags: keyValues(run, 'tags') };
}

export async function scanFileStore(path: string, signal?: AbortSignal): Promise<ScanResult> {
  const result: ScanResult = { runs: [], issues: [], files: 0, bytes: 0 };
  for (const run of fileRuns(path, result.issues)) {
    if (signal?.aborted) break;
    const tally = await tallyRun(run, result.issues);
    result.runs.push(scannedRun(runInfo(run), tally));
    for (const metric of metricFiles(run)) {
      result.files += 1;
      result.bytes += statSync(metric.file).size;
    }
  }
  return result;
}

function cursorOf(value: unknown): FileCursor {
  return typeof value === 'object' && value !== null ? { ...(value as FileCursor) } : {};
}

/** The points of one run after the cursor: files in key order, batches of `batchSize` points. */
export async function* readFileStore(path: string, key: string, cursor: unknown, options: ReadOptions): AsyncGenerator<ImportBatch> {
  const run = findRun(path, key);
  const state = cursorOf(cursor);
  let bytesDone = 0;
  let batch: ImportBatch | null = null;
  for (const metric of metricFiles(run)) {
    const from = state[metric.key] ?? { offset: 0, line: 1 };
    for await (const record of fileRecords(metric, from)) {
      if (options.signal?.aborted) return;
      batch ??= { metrics: [], episodes: [], checkpoints: [], issues: [], cursor: null, bytesDone };
      if (record.point) batch.metrics.push(record.point);
      if (record.issue) batch.issues.push(record.issue);
      bytesDone += record.end - (state[metric.key]?.offset ?? from.offset);
      state[metric.key] = { offset: record.end, line: record.line };
      if (batch.metrics.length >= options.batchSize) {
        yield { ...batch, cursor: { ...state }, bytesDone };
        batch = null;
      }
    }
  }
  if (batch) yield { ...batch, cursor: { ...state }, bytesDone };
}
