/**
 * MLflow's SQL store in SQLite (`mlflow.db`, the default tracking URI since MLflow 3.x): tables of
 * mlflow/store/tracking/dbmodels/models.py — `runs(run_uuid, name, experiment_id, start_time,
 * end_time, lifecycle_stage, …)`, `metrics(key, value, timestamp, step, is_nan, run_uuid)` with
 * primary key (key, timestamp, step, run_uuid, value, is_nan) (SqlMetric), `params(key, value,
 * run_uuid)`, `tags(key, value, run_uuid)`. Columns are read with PRAGMA table_info because the
 * alembic migrations added them over time: `step` (migration "add step to metrics", server default
 * 0) and `is_nan` (with NaN stored as value 0, is_nan 1: `_get_metric_value_details`). That
 * function also stores ±inf as ±1.7976931348623157e308 because "Sql can not represent Infs";
 * MLflow reads the sentinel back as stored, this reader reads it as the ±Infinity that was logged
 * (a chart would otherwise scale to 1.8e308). Timestamps are ms since the epoch.
 *
 * Reading a run: the rows with rowid above the cursor's base, ordered by (key, step, timestamp) as
 * MLflow's `get_metric_history` does; the cursor is {base, max, after}: rows up to rowid `max` are
 * being read, `after` is the last (key, step, timestamp, rowid) yielded. A re-import reads nothing;
 * rows MLflow added later (higher rowids) are read next.
 */
import type { Database as Db } from 'better-sqlite3';
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import type { ImportIssue } from '#shared/contract';
import type { ImportBatch, ImportMetric, ReadOptions, ScanResult } from '../types';
import { ImportSourceError } from '../types';
import { openReadOnly, sqliteFileMatching, tableColumns } from '../sqlite';
import { emptyTally, scannedRun, type RunInfo } from './run-info';

interface SqlSchema {
  step: boolean;
  isNan: boolean;
  runName: boolean;
  lifecycle: boolean;
}

export function detectSqliteStore(path: string): boolean {
  return sqliteFileMatching(path, (db) => tableColumns(db, 'runs').includes('run_uuid') && tableColumns(db, 'metrics').includes('run_uuid'));
}

function readSchema(db: Db, file: string): SqlSchema {
  const metrics = tableColumns(db, 'metrics');
  const runs = tableColumns(db, 'runs');
  for (const [table, found, column] of [
    ['runs', runs, 'run_uuid'],
    ['metrics', metrics, 'run_uuid'],
    ['metrics', metrics, 'key'],
    ['metrics', metrics, 'value'],
    ['metrics', metrics, 'timestamp'],
  ] as const) {
    if (!found.includes(column)) {
      throw new ImportSourceError(`${file}: MLflow table "${table}" has no ${column} column (found: ${found.join(', ') || 'no such table'}); not an MLflow tracking database`, file);
    }
  }
  return { step: metrics.includes('step'), isNan: metrics.includes('is_nan'), runName: runs.includes('name'), lifecycle: runs.includes('lifecycle_stage') };
}

function keyValueTable(db: Db, table: 'params' | 'tags', run: string): Record<string, string> {
  const found = tableColumns(db, table);
  if (!['key', 'value', 'run_uuid'].every((column) => found.includes(column))) return {};
  const rows = db.prepare(`SELECT key, value FROM ${table} WHERE run_uuid = ? ORDER BY key`).all(run) as Array<{ key: string; value: string | null }>;
  return Object.fromEntries(rows.map((row) => [row.key, row.value ?? '']));
}

interface RunRow {
  id: string;
  name: unknown;
  startTime: unknown;
  endTime: unknown;
  stage: unknown;
}

/** The runs, less those MLflow marks deleted (lifecycle_stage, SqlRun; listed as issues). */
function runInfos(db: Db, schema: SqlSchema, file: string, issues: ImportIssue[]): RunInfo[] {
  const name = schema.runName ? 'name' : 'NULL';
  const stage = schema.lifecycle ? 'lifecycle_stage' : 'NULL';
  const rows = db.prepare(`SELECT run_uuid AS id, ${name} AS name, start_time AS startTime, end_time AS endTime, ${stage} AS stage FROM runs ORDER BY start_time, run_uuid`).all() as RunRow[];
  const deleted = rows.filter((row) => row.stage === 'deleted');
  for (const row of deleted) issues.push({ file: '', position: '', message: `${file}: run ${row.id} is deleted in MLflow (lifecycle_stage: deleted); not imported` });
  return rows
    .filter((row) => row.stage !== 'deleted')
    .map(({ id, name: runName, startTime, endTime }) => ({ id, name: runName, startTime, endTime, params: keyValueTable(db, 'params', id), tags: keyValueTable(db, 'tags', id) }));
}

function step(schema: SqlSchema): string {
  return schema.step ? 'step' : '0';
}

export function scanSqliteStore(path: string): ScanResult {
  const db = openReadOnly(path);
  try {
    const schema = readSchema(db, basename(path));
    const issues: ImportIssue[] = [];
    const runs = runInfos(db, schema, basename(path), issues).map((info) => {
      const tally = emptyTally();
      const rows = db.prepare(`SELECT key, ${step(schema)} AS step FROM metrics WHERE run_uuid = ?`).raw().iterate(info.id) as Iterable<[string, number]>;
      for (const [key, at] of rows) {
        tally.points += 1;
        tally.keys.add(key);
        tally.steps.add(at);
      }
      return scannedRun(info, tally);
    });
    return { runs, issues, files: 1, bytes: statSync(path).size };
  } finally {
    db.close();
  }
}

interface SqlCursor {
  base: number;
  max: number;
  after: [string, number, number, number] | null;
}

function cursorOf(value: unknown): SqlCursor {
  const cursor = (value ?? {}) as Partial<SqlCursor>;
  const base = Number(cursor.base ?? 0);
  return { base, max: Number(cursor.max ?? base), after: Array.isArray(cursor.after) ? cursor.after : null };
}

interface MetricRow {
  rid: number;
  key: string;
  value: number;
  timestamp: number | null;
  step: number;
  isNan: number;
}

/** The rows of the range (base, max] after the cursor's position, in MLflow's history order, as one sorted pass. */
function rangeRows(db: Db, schema: SqlSchema, run: string, cursor: SqlCursor): IterableIterator<MetricRow> {
  const order = `key, ${step(schema)}, timestamp, rowid`;
  const after = cursor.after === null ? '' : `AND (${order}) > (?, ?, ?, ?)`;
  const sql =
    `SELECT rowid AS rid, key, value, timestamp, ${step(schema)} AS step, ${schema.isNan ? 'is_nan' : '0'} AS isNan FROM metrics ` +
    `WHERE run_uuid = ? AND rowid > ? AND rowid <= ? ${after} ORDER BY ${order}`;
  return db.prepare(sql).iterate(run, cursor.base, cursor.max, ...(cursor.after ?? [])) as IterableIterator<MetricRow>;
}

/** The largest finite double: MLflow's stand-in for an infinite value. */
const INF_SENTINEL = Number.MAX_VALUE;

function metricValue(row: MetricRow): number {
  if (row.isNan) return NaN;
  if (Math.abs(row.value) === INF_SENTINEL) return Math.sign(row.value) * Infinity;
  return row.value;
}

function point(row: MetricRow): ImportMetric {
  return { step: row.step, key: row.key, value: metricValue(row), wallTime: row.timestamp === null ? null : row.timestamp / 1000 };
}

function batchOf(rows: MetricRow[], cursor: SqlCursor, bytes: { done: number }): ImportBatch {
  // Progress in the rows' payload bytes (the key's text and three 8-byte numbers): SQLite pages have no per-run offset.
  for (const row of rows) bytes.done += Buffer.byteLength(row.key) + 24;
  return { metrics: rows.map(point), episodes: [], checkpoints: [], issues: [], cursor, bytesDone: bytes.done };
}

/**
 * Rows of the range (base, max] after the cursor's position, in batches. One statement is stepped
 * through (SQLite sorts once; the connection is this reader's own, so it may stay open across a
 * yield); a batch goes out once the row after it is seen, so the last batch closes the range.
 */
function* readRange(db: Db, schema: SqlSchema, run: string, start: SqlCursor, options: ReadOptions, bytes: { done: number }): Generator<ImportBatch> {
  let pending: MetricRow[] = [];
  for (const row of rangeRows(db, schema, run, start)) {
    if (options.signal?.aborted) return;
    if (pending.length === options.batchSize) {
      const last = pending[pending.length - 1];
      yield batchOf(pending, { ...start, after: [last.key, last.step, last.timestamp ?? 0, last.rid] }, bytes);
      pending = [];
    }
    pending.push(row);
  }
  if (pending.length > 0) yield batchOf(pending, { base: start.max, max: start.max, after: null }, bytes);
}

export async function* readSqliteStore(path: string, run: string, cursorValue: unknown, options: ReadOptions): AsyncGenerator<ImportBatch> {
  const db = openReadOnly(path);
  try {
    const schema = readSchema(db, basename(path));
    const known = db.prepare('SELECT 1 FROM runs WHERE run_uuid = ?').get(run);
    if (!known) throw new ImportSourceError(`${basename(path)}: no MLflow run "${run}" in table runs`, path);
    const bytes = { done: 0 };
    let cursor = cursorOf(cursorValue);
    if (cursor.after !== null) {
      yield* readRange(db, schema, run, cursor, options, bytes);
      cursor = { base: cursor.max, max: cursor.max, after: null };
    }
    const top = (db.prepare('SELECT MAX(rowid) AS top FROM metrics WHERE run_uuid = ?').get(run) as { top: number | null }).top ?? 0;
    if (top > cursor.base) yield* readRange(db, schema, run, { base: cursor.base, max: top, after: null }, options, bytes);
  } finally {
    db.close();
  }
}
