/**
 * Importing runs made elsewhere (issue 39): which format a path is (the registry's readers decide),
 * what it holds before anything is written (the preview), and the import itself.
 *
 * Each source run becomes one read-only Studio run, found again by (format, absolute path, source
 * key) on a later import. Its records arrive in batches from the format's reader; each batch is
 * stored with the reader's cursor in one transaction (store-batch.ts), so a re-import adds nothing
 * and a grown source adds only its new records, and a cancelled import keeps its whole batches.
 * Memory stays flat: one batch at a time.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ImportFormatId, ImportIssue, ImportPreview, ImportPreviewRequest, ImportRequest, ImportRunResult, ImportSummary } from '#shared/contract';
import type { Store } from '../store';
import { sourceDigest } from './digest';
import { IMPORT_FORMAT_REGISTRY } from './registry';
import { ImportedRunWriter } from './store-batch';
import { ImportRequestError, type ImportFormat, type ScannedRun, type ScanResult } from './types';

/** Records per batch asked of a reader: large enough for fast transactions, small enough for flat memory. */
export const IMPORT_BATCH_SIZE = 5000;

/** Issues a summary lists at most; the run's events hold them all. */
const MAX_SUMMARY_ISSUES = 1000;

export interface ImportProgress {
  /** Source bytes read, of `total` (the scan's count). */
  done: number;
  total: number;
  /** Records stored so far (metric points, turns, checkpoints). */
  records: number;
}

export interface ImporterOptions {
  /** The formats to choose from (tests pass their own); the built-in registry by default. */
  registry?: readonly ImportFormat[];
  signal?: AbortSignal;
  onProgress?: (progress: ImportProgress) => void;
  /** A Studio run was created for a source run, or an existing one is being added to. */
  onRun?: (runId: number, created: boolean) => void;
  batchSize?: number;
}

export interface ImportOutcome extends ImportSummary {
  /** Stopped by the signal: the batches stored before it stay. */
  cancelled: boolean;
}

const describeFormats = (registry: readonly ImportFormat[]) =>
  registry.length === 0 ? 'this build has no import formats' : `the formats it reads are ${registry.map((f) => `${f.id} (${f.label})`).join(', ')}`;

/** The absolute path of a request, refused when there is nothing there to read. */
export function sourcePath(given: string): string {
  const absolute = path.resolve(given);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(absolute);
  } catch {
    throw new ImportRequestError(`${absolute} does not exist: give the folder or file to import`, 'path');
  }
  if (stat.isDirectory() && fs.readdirSync(absolute).length === 0) throw new ImportRequestError(`${absolute} is an empty folder: there is nothing to import`, 'path');
  return absolute;
}

/** The format to read `absolute` with: the one asked for, else the first in the registry that recognizes it. */
export function chooseFormat(absolute: string, asked: ImportFormatId | undefined, registry: readonly ImportFormat[] = IMPORT_FORMAT_REGISTRY): ImportFormat {
  if (asked !== undefined) {
    const format = registry.find((f) => f.id === asked);
    if (!format) throw new ImportRequestError(`${asked} is not a format this build imports: ${describeFormats(registry)}`, 'format');
    return format;
  }
  const found = registry.find((f) => {
    try {
      return f.detect(absolute);
    } catch {
      return false; // A reader that cannot look at the path does not recognize it.
    }
  });
  if (!found) throw new ImportRequestError(`${absolute} is not a source MarsRL Studio recognizes: ${describeFormats(registry)}; name one with --format (format in the API) if it is one of them`, 'path');
  return found;
}

export async function previewImport(store: Store, request: ImportPreviewRequest, options: ImporterOptions = {}): Promise<ImportPreview> {
  const absolute = sourcePath(request.path);
  const format = chooseFormat(absolute, request.format, options.registry);
  const scan = await format.scan(absolute, { signal: options.signal });
  return {
    path: absolute,
    format: format.id,
    files: scan.files,
    bytes: scan.bytes,
    runs: scan.runs.map(({ config: _config, tags: _tags, startedAt: _start, endedAt: _end, ...run }) => ({ ...run, existingRunId: store.imports.find(format.id, absolute, run.key)?.runId ?? null })),
    issues: scan.issues,
  };
}

function selectRuns(scan: ScanResult, keys: readonly string[] | undefined, absolute: string): ScannedRun[] {
  if (keys === undefined) return scan.runs;
  const byKey = new Map(scan.runs.map((r) => [r.key, r]));
  const missing = keys.filter((k) => !byKey.has(k));
  if (missing.length > 0) {
    const known = scan.runs.map((r) => r.key);
    throw new ImportRequestError(`${absolute} has no run ${missing.join(', ')}: its runs are ${known.length ? known.slice(0, 20).join(', ') + (known.length > 20 ? ` and ${known.length - 20} more` : '') : 'none'}`, 'runs');
  }
  return [...new Set(keys)].map((k) => byKey.get(k)!);
}

/** The Studio run of a source run: the one it was imported as before, else a new one. */
function studioRun(store: Store, format: ImportFormat, absolute: string, run: ScannedRun, request: ImportRequest, several: boolean): { runId: number; created: boolean } {
  const existing = store.imports.find(format.id, absolute, run.key);
  if (existing) return { runId: existing.runId, created: false };
  const name = request.name === undefined ? run.name : several ? `${request.name} ${run.name}` : request.name;
  const where = `${absolute}${run.key === '.' ? '' : ` (run ${run.key})`}`;
  const runId = store.imports.createRun({
    name,
    // The source's own configuration under one key: views that read a Studio config (task, reward
    // scheme, advantage mode) find nothing of theirs and show the format instead.
    config: { source: { format: format.id, path: absolute, run: run.key, config: run.config } },
    codeVersion: `${format.id} (imported)`,
    seed: 0,
    notes: `Imported from ${format.label} ${where}.`,
    tags: [...new Set([...run.tags, ...(request.tags ?? [])])],
    format: format.id,
    path: absolute,
    sourceKey: run.key,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
  });
  return { runId, created: true };
}

export async function runImport(store: Store, request: ImportRequest, options: ImporterOptions = {}): Promise<ImportOutcome> {
  const started = performance.now();
  const absolute = sourcePath(request.path);
  const format = chooseFormat(absolute, request.format, options.registry);
  const scan = await format.scan(absolute, { signal: options.signal });
  const selected = selectRuns(scan, request.runs, absolute);
  const progress: ImportProgress = { done: 0, total: scan.bytes, records: 0 };
  const issues: ImportIssue[] = [...scan.issues];
  const results: ImportRunResult[] = [];
  let cancelled = false;
  // The digest is the whole source's: hashed once, after the first run read to its end.
  let digest: string | null = null;
  for (const run of selected) {
    if (options.signal?.aborted) {
      cancelled = true;
      break;
    }
    const { runId, created } = studioRun(store, format, absolute, run, request, selected.length > 1);
    options.onRun?.(runId, created);
    const result: ImportRunResult = { key: run.key, runId, created, metricPoints: 0, turns: 0, episodes: 0 };
    results.push(result);
    cancelled = await readInto(store, format, absolute, run.key, runId, { result, progress, issues, options });
    if (cancelled) break;
    if (format.derivesAccuracy) deriveAccuracy(store, runId);
    digest ??= await sourceDigest(absolute);
    store.imports.finish(runId, digest);
  }
  return { path: absolute, format: format.id, runs: results, issues: uniqueIssues(issues), seconds: (performance.now() - started) / 1000, cancelled };
}

/**
 * Accuracy per step from every stored episode of an imported run (recomputed whole, so a grown
 * source's new episodes count): `<split>/system/accuracy` the share of judged episodes whose final
 * answer is right, `<split>/solver/accuracy` the share whose first judged Solver reply is — the
 * keys the Studio's own runs log (metric catalog), `eval/` for the held-out split.
 */
export function deriveAccuracy(store: Store, runId: number): void {
  const rows = store.db
    .prepare(
      `SELECT e.step AS step, e.split AS split, AVG(e.correct) AS system,
              AVG((SELECT t.correct FROM turns t WHERE t.episode_id = e.id AND t.agent = 'solver' AND t.correct IS NOT NULL ORDER BY t.id LIMIT 1)) AS solver
       FROM episodes e WHERE e.run_id = ? AND e.correct IS NOT NULL GROUP BY e.step, e.split ORDER BY e.step`,
    )
    .all(runId) as { step: number; split: string; system: number; solver: number | null }[];
  store.db.transaction(() => {
    for (const row of rows) {
      const prefix = row.split === 'test' ? 'eval/' : '';
      store.metrics.insertPoint.run({ runId, keyId: store.metrics.keyId(`${prefix}system/accuracy`), step: row.step, wallTime: 0, value: row.system });
      if (row.solver !== null) store.metrics.insertPoint.run({ runId, keyId: store.metrics.keyId(`${prefix}solver/accuracy`), step: row.step, wallTime: 0, value: row.solver });
    }
  })();
}

interface ReadState {
  result: ImportRunResult;
  progress: ImportProgress;
  issues: ImportIssue[];
  options: ImporterOptions;
}

/** Reads one source run after its saved cursor, storing batch by batch; returns whether it was cancelled. */
async function readInto(store: Store, format: ImportFormat, absolute: string, key: string, runId: number, state: ReadState): Promise<boolean> {
  const { result, progress, issues, options } = state;
  const writer = new ImportedRunWriter(store, runId, format.id);
  const cursor = store.imports.ofRun(runId)?.cursor ?? null;
  const base = progress.done;
  try {
    for await (const batch of format.read(absolute, key, cursor, { signal: options.signal, batchSize: options.batchSize ?? IMPORT_BATCH_SIZE })) {
      const stored = writer.write(batch);
      result.metricPoints += stored.metricPoints;
      result.turns += stored.turns;
      result.episodes += stored.episodes;
      // The summary keeps the first issues (flat memory on a source of bad lines); every one is an event of the run.
      for (const issue of batch.issues) if (issues.length < MAX_SUMMARY_ISSUES) issues.push(issue);
      progress.records += stored.metricPoints + stored.turns + stored.checkpoints;
      progress.done = Math.min(progress.total, base + batch.bytesDone);
      options.onProgress?.({ ...progress });
      // Let the process answer between batches (the app's window, a cancel) even when the reader never waits on I/O.
      await new Promise((resolve) => setImmediate(resolve));
      // Cancel between batches: the batches stored stay, with the cursor past them.
      if (options.signal?.aborted) return true;
    }
  } catch (error) {
    if (options.signal?.aborted) return true;
    throw error;
  }
  return false;
}

function uniqueIssues(issues: readonly ImportIssue[]): ImportIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.file}\u0000${i.position}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
