/**
 * The preview of a trackio source: one pass over each table, row by row (better-sqlite3's
 * `iterate`, so the file is never held in memory), counting what `read` would import.
 */
import { statSync } from 'node:fs';
import type { Database as Db } from 'better-sqlite3';
import type { ImportIssue } from '#shared/contract';
import { ImportSourceError, type ScanResult, type ScannedRun } from '../types';
import { openReadOnly, readSchema, type TrackioSchema } from './schema';
import { runKey, trackioFiles, type TrackioFile } from './source';
import { countGenerations, parseMetricsJson, timestampSeconds, type TraceRecord } from './values';

interface RunTally {
  name: string;
  steps: Set<number>;
  keys: Set<string>;
  points: number;
  generations: number;
  episodes: number;
  agents: Set<string>;
  config: Record<string, unknown>;
  first: number | null;
  last: number | null;
}

type Tallies = Map<string, RunTally>;

function tally(tallies: Tallies, run: string, name: unknown): RunTally {
  let found = tallies.get(run);
  if (!found) {
    found = { name: typeof name === 'string' && name !== '' ? name : run, steps: new Set(), keys: new Set(), points: 0, generations: 0, episodes: 0, agents: new Set(), config: {}, first: null, last: null };
    tallies.set(run, found);
  }
  return found;
}

function seen(run: RunTally, seconds: number | null): void {
  if (seconds === null) return;
  const ms = seconds * 1000;
  run.first = run.first === null ? ms : Math.min(run.first, ms);
  run.last = run.last === null ? ms : Math.max(run.last, ms);
}

/** Counts the traces that become episodes (those with an assistant message); returns how many. */
function addTraces(run: RunTally, traces: TraceRecord[]): number {
  let episodes = 0;
  for (const trace of traces) {
    const { generations, agents } = countGenerations(trace.messages);
    if (generations === 0) continue;
    run.generations += generations;
    episodes += 1;
    for (const agent of agents) run.agents.add(agent);
  }
  run.episodes += episodes;
  return episodes;
}

export function rowIssue(file: TrackioFile, table: string, rowid: number, message: string): ImportIssue {
  return { file: file.rel, position: `row ${rowid}`, message: `${file.label}: table ${table}, row ${rowid}: ${message}` };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function scanMetrics(db: Db, schema: NonNullable<TrackioSchema['metrics']>, file: TrackioFile, tallies: Tallies, issues: ImportIssue[]): void {
  const timestamp = schema.timestamp ?? 'NULL';
  const rows = db.prepare(`SELECT rowid AS rid, "${schema.run}" AS run, "${schema.name}" AS name, step, metrics, ${timestamp} AS ts FROM metrics ORDER BY rowid`);
  for (const row of rows.iterate() as Iterable<{ rid: number; run: unknown; name: unknown; step: unknown; metrics: unknown; ts: unknown }>) {
    const run = tally(tallies, String(row.run), row.name);
    try {
      const parsed = parseMetricsJson(String(row.metrics));
      if (typeof row.step !== 'number') throw new Error(`step is ${JSON.stringify(row.step)}, not a number`);
      run.points += parsed.values.length;
      for (const { key } of parsed.values) run.keys.add(key);
      if (addTraces(run, parsed.traces) > 0 || parsed.values.length > 0) run.steps.add(row.step);
      seen(run, timestampSeconds(row.ts));
    } catch (error) {
      issues.push(rowIssue(file, 'metrics', row.rid, errorText(error)));
    }
  }
}

function scanConfigs(db: Db, schema: NonNullable<TrackioSchema['configs']>, file: TrackioFile, tallies: Tallies, issues: ImportIssue[]): void {
  const rows = db.prepare(`SELECT rowid AS rid, "${schema.run}" AS run, "${schema.name}" AS name, config FROM configs ORDER BY rowid`);
  for (const row of rows.iterate() as Iterable<{ rid: number; run: unknown; name: unknown; config: unknown }>) {
    const run = tally(tallies, String(row.run), row.name);
    try {
      const config: unknown = JSON.parse(String(row.config));
      if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new Error('the config column is not a JSON object');
      run.config = config as Record<string, unknown>;
    } catch (error) {
      issues.push(rowIssue(file, 'configs', row.rid, errorText(error)));
    }
  }
}

function scanTraces(db: Db, schema: NonNullable<TrackioSchema['traces']>, file: TrackioFile, tallies: Tallies, issues: ImportIssue[]): void {
  const step = schema.step ?? '0';
  const rows = db.prepare(`SELECT rowid AS rid, "${schema.run}" AS run, "${schema.name}" AS name, ${step} AS step, messages FROM traces ORDER BY rowid`);
  for (const row of rows.iterate() as Iterable<{ rid: number; run: unknown; name: unknown; step: unknown; messages: unknown }>) {
    const run = tally(tallies, String(row.run), row.name);
    try {
      if (typeof row.step !== 'number') throw new Error(`step is ${JSON.stringify(row.step)}, not a number`);
      const messages: unknown = JSON.parse(String(row.messages));
      if (addTraces(run, [{ key: '', index: null, messages, metadata: null }]) > 0) run.steps.add(row.step);
    } catch (error) {
      issues.push(rowIssue(file, 'traces', row.rid, errorText(error)));
    }
  }
}

function scannedRun(file: TrackioFile, run: string, t: RunTally): ScannedRun {
  const steps = [...t.steps].sort((a, b) => a - b);
  return {
    key: runKey(file, run),
    name: t.name,
    steps: steps.length,
    firstStep: steps.length > 0 ? steps[0] : null,
    lastStep: steps.length > 0 ? steps[steps.length - 1] : null,
    metricKeys: [...t.keys].sort(),
    metricPoints: t.points,
    generations: t.generations,
    episodes: t.episodes,
    agents: [...t.agents].sort(),
    config: t.config,
    tags: [],
    startedAt: t.first,
    endedAt: t.last,
  };
}

function scanFile(file: TrackioFile, issues: ImportIssue[]): ScannedRun[] {
  const db = openReadOnly(file.path);
  try {
    const schema = readSchema(db, file.label);
    const tallies: Tallies = new Map();
    if (schema.configs) scanConfigs(db, schema.configs, file, tallies, issues);
    if (schema.metrics) scanMetrics(db, schema.metrics, file, tallies, issues);
    if (schema.traces) scanTraces(db, schema.traces, file, tallies, issues);
    return [...tallies].map(([run, t]) => scannedRun(file, run, t));
  } finally {
    db.close();
  }
}

/** Scans every file; in a folder a file trackio could not have written is an issue and the others are read. */
export function scanTrackio(path: string, signal?: AbortSignal): ScanResult {
  const files = trackioFiles(path);
  const result: ScanResult = { runs: [], issues: [], files: 0, bytes: 0 };
  for (const file of files) {
    if (signal?.aborted) break;
    try {
      result.runs.push(...scanFile(file, result.issues));
    } catch (error) {
      if (!(error instanceof ImportSourceError) || files.length === 1) throw error;
      result.issues.push({ file: file.rel, position: '', message: error.message });
      continue;
    }
    result.files += 1;
    result.bytes += statSync(file.path).size;
  }
  return result;
}
