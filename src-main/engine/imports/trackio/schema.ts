/**
 * The tables of a trackio project database, read with `PRAGMA table_info` because the schema has
 * changed between trackio versions (gradio-app/trackio, trackio/sqlite_storage.py):
 *
 * - 0.1 (commit 752f6d21): `metrics(id, timestamp, project_name, run_name, step, epoch, batch, metrics)`;
 * - up to 0.23 (8e26ab93^, sqlite_storage.py:249-266): `metrics(id, timestamp, run_name, step, metrics)`,
 *   `configs(id, run_name, config, created_at)`;
 * - 0.24 (8e26ab93, #505) added `run_id` to `metrics` and `configs` so two runs may share a name;
 *   0.25.1+ (0b53a413, #559) moved traces out of the metrics JSON into `traces(id, run_id, timestamp,
 *   run_name, step, key, trace_index, messages, metadata, …)` (HEAD sqlite_storage.py:495-545).
 *
 * trackio itself keys a run by `run_id` where the column exists, else by `run_name`
 * (`_supports_run_ids`, sqlite_storage.py:782, and the `metrics_run_key` choice at :677); so does
 * this reader. A table trackio requires but without a run column, `step` or `metrics` is not read:
 * the error names the file, the table, the missing column and the columns found.
 */
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import { ImportSourceError } from '../types';

export interface RunColumns {
  /** The column that keys a run (`run_id`, or `run_name` before trackio 0.24). */
  run: string;
  /** The column holding the run's display name (`run_name`), or the run column. */
  name: string;
}

export interface TrackioSchema {
  metrics: (RunColumns & { timestamp: string | null }) | null;
  configs: RunColumns | null;
  traces: (RunColumns & { step: string | null; key: string | null; traceIndex: string | null; metadata: string | null; timestamp: string | null }) | null;
}

/** Opens a database read-only: an import never writes the source (and never creates a missing file). */
export function openReadOnly(file: string): Db {
  return new Database(file, { readonly: true, fileMustExist: true });
}

export function tableColumns(db: Db, table: string): string[] {
  const rows = db.prepare(`PRAGMA table_info(${JSON.stringify(table)})`).all() as Array<{ name: string }>;
  return rows.map((row) => row.name);
}

/** True when the database looks like a trackio project (a `metrics` table with a JSON `metrics` column, or trackio's `configs`). */
export function looksLikeTrackio(db: Db): boolean {
  const metrics = tableColumns(db, 'metrics');
  if (metrics.includes('metrics')) return true;
  return tableColumns(db, 'configs').includes('config') && !tableColumns(db, 'runs').includes('run_uuid');
}

function missing(file: string, table: string, column: string, found: string[]): ImportSourceError {
  return new ImportSourceError(
    `${file}: trackio table "${table}" has no ${column} column (found: ${found.join(', ') || 'no columns'}); ` +
      'trackio writes run_id since 0.24 and run_name before, so this is not a trackio project database this importer can read',
    file,
  );
}

function runColumns(file: string, table: string, found: string[]): RunColumns {
  const run = found.includes('run_id') ? 'run_id' : found.includes('run_name') ? 'run_name' : null;
  if (run === null) throw missing(file, table, 'run_id (or run_name)', found);
  return { run, name: found.includes('run_name') ? 'run_name' : run };
}

function optional(found: string[], column: string): string | null {
  return found.includes(column) ? column : null;
}

/** The schema of one trackio file, or an ImportSourceError naming what is missing. */
export function readSchema(db: Db, file: string): TrackioSchema {
  const metricsFound = tableColumns(db, 'metrics');
  const configsFound = tableColumns(db, 'configs');
  const tracesFound = tableColumns(db, 'traces');
  if (metricsFound.length === 0 && configsFound.length === 0) {
    throw new ImportSourceError(`${file}: no trackio "metrics" or "configs" table; not a trackio project database`, file);
  }
  let metrics: TrackioSchema['metrics'] = null;
  if (metricsFound.length > 0) {
    for (const column of ['step', 'metrics']) if (!metricsFound.includes(column)) throw missing(file, 'metrics', column, metricsFound);
    metrics = { ...runColumns(file, 'metrics', metricsFound), timestamp: optional(metricsFound, 'timestamp') };
  }
  let configs: TrackioSchema['configs'] = null;
  if (configsFound.length > 0) {
    if (!configsFound.includes('config')) throw missing(file, 'configs', 'config', configsFound);
    configs = runColumns(file, 'configs', configsFound);
  }
  let traces: TrackioSchema['traces'] = null;
  if (tracesFound.length > 0) {
    if (!tracesFound.includes('messages')) throw missing(file, 'traces', 'messages', tracesFound);
    traces = {
      ...runColumns(file, 'traces', tracesFound),
      step: optional(tracesFound, 'step'),
      key: optional(tracesFound, 'key'),
      traceIndex: optional(tracesFound, 'trace_index'),
      metadata: optional(tracesFound, 'metadata'),
      timestamp: optional(tracesFound, 'timestamp'),
    };
  }
  return { metrics, configs, traces };
}
