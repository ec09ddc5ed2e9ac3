/**
 * MLflow's SQL store in SQLite (`mlflow.db`, the default tracking URI since MLflow 3.x): tables of
 * mlflow/store/tracking/dbmodels/models.py — `runs(run_uuid, name, experiment_id, start_time,
 * end_time, lifecycle_stage, …)`, `metrics(key, value, timestamp, step, is_nan, run_uuid)` with
 * primary key (key, timestamp, step, run_uuid, value, is_nan) (SqlMetric), `params(key, value,
 * run_uuid)`, `tags(key, value, run_uuid)`. Columns are read with PRAGMA table_info because the
 * alembic migrations added them over time: `step` (migration "add step to metrics", server default
 * 0) and `is_nan` (with NaN stored as value 0, is_nan 1: `_get_metric_value_details`; ±inf are
 * stored as ±1.7976931348623157e308 and, as in MLflow's `SqlMetric.to_mlflow_entity`, read back as
 * stored). Timestamps are ms since the epoch.
 *
 * Reading a run: the rows with rowid above the cursor's base, ordered by (key, step, timestamp) as
 * MLflow's `get_metric_history` does; the cursor is {base, max, after}: rows up to rowid `max` are
 * being read, `after` is the last (key, step, timestamp, rowid) yielded. A re-import reads nothing;
 * rows MLflow added later (higher rowids) are read next.
 */
import type { Database as Db } from 'better-sqlite3';
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import type { ImportBatch, ImportMetric, ReadOptions, ScanResult } from '../types';
import { ImportSourceError } from '../types';
import { openReadOnly, tableColumns } from '../trackio/schema';
import { isSqliteFile } from '../trackio/source';
import { emptyTally, scannedRun, type RunInfo } from './run-info';

interface SqlSchema {
  step: boolean;
  isNan: boolean;
  runName: boolean;
}

export function detectSqliteStore(path: string): boolean {
  if (!isSqliteFile(path)) return false;
  try {
    const db = openReadOnly(path);
    try {
      return tableColumns(db, 'runs').includes('run_uuid') && tableColumns(db, 'metrics').includes('run_uuid');
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
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
  return { step: metrics.includes('step'), isNan: metrics.includes('is_nan'), runName: runs.includes('name') };
}

function keyValueTable(db: Db, table: 'params' | 'tags', run: string): Record<string, string> {
  const found = tableColumns(db, table);
  if (!['key', 'value', 'run_uuid'].every((column) => found.includes(column))) return {};
  const rows = db.prepare(`SELECT key, value FROM ${table} WHERE run_uuid = ? ORDER BY key`).all(run) as Array<{ key: string; value: string | null }>;
  return Object.fromEntries(rows.map((row) => [row.key, row.value ?? '']));
}

function runInfos(db: Db, schema: SqlSchema): RunInfo[] {
  const name = schema.runName ? 'name' : 'NULL';
  const rows = db.prepare(`SELECT run_uuid AS id, ${name} AS name, start_time AS startTime, end_time AS endTime FROM runs ORDER BY start_time, run_uuid`).all() as Array<{ id: string; name: unknown; startTime: unknown; endTime: unknown }>;
  return rows.map((row) => ({ ...row, params: keyValueTable(db, 'params', row.id), tags: keyValueTable(db, 'tags', row.id) }));
}

function step(schema: SqlSchema): string {
  return schema.step ? 'step' : '0';
}

export function scanSqliteStore(path: string): ScanResult {
  const db = openReadOnly(path);
  try {
    const schema = readSchema(db, basename(path));
    const runs = runInfos(db, schema).map((info) => {
      const tally = emptyTally();
      const rows = db.prepare(`SELECT key, ${step(schema)} AS step FROM metrics WHERE run_uuid = ?`).raw().iterate(info.id) as Iterable<[string, number]>;
      for (const [key, at] of rows) {
        tally.points += 1;
        tally.keys.add(key);
        tally.steps.add(at);
      }
      return scannedRun(info, tally);
    });
    return { runs, issues: [], files: 1, bytes: statSync(path).size };
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

function page(db: Db, schema: SqlSchema, run: string, cursor: SqlCursor, limit: number): MetricRow[] {
  const order = `key, ${step(schema)}, timestamp, rowid`;
  const after = cursor.after === null ? '' : `AND (${order}) > (?, ?, ?, ?)`;
  const sql =
    `SELECT rowid AS rid, key, value, timestamp, ${step(schema)} AS step, ${schema.isNan ? 'is_nan' : '0'} AS isNan FROM metrics ` +
    `WHERE run_uuid = ? AND rowid > ? AND rowid <= ? ${after} ORDER BY ${order} LIMIT ?`;
  return db.prepare(sql).all(run, cursor.base, cursor.max, ...(cursor.after ?? []), limit) as MetricRow[];
}

function point(row: MetricRow): ImportMetric {
  return { step: row.step, key: row.key, value: row.isNan ? NaN : row.value, wallTime: row.timestamp === null ? null : row.timestamp / 1000 };
}

/** Rows of the range (base, max] after the cursor's position, in batches; the last batch closes the range. */
function* readRange(db: Db, schema: SqlSchema, run: string, start: SqlCursor, options: ReadOptions, bytes: { done: number }): Generator<ImportBatch> {
  let cursor = start;
  for (;;) {
    if (options.signal?.aborted) return;
    const rows = page(db, schema, run, cursor, options.batchSize + 1);
    if (rows.length === 0) return;
    const more = rows.length > options.batchSize;
    const taken = more ? rows.slice(0, options.batchSize) : rows;
    const last = taken[taken.length - 1];
    cursor = more ? { ...cursor, after: [last.key, last.step, last.timestamp ?? 0, last.rid] } : { base: cursor.max, max: cursor.max, after: null };
    // Progress in the rows' payload bytes (the key's text and three 8-byte numbers): SQLite pages have no per-run offset.
    for (const row of taken) bytes.done += Buffer.byteLength(row.key) + 24;
    yield { metrics: taken.map(point), episodes: [], checkpoints: [], issues: [], cursor, bytesDone: bytes.done };
    if (!more) return;
  }
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
