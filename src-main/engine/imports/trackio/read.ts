/**
 * Reading one trackio run: its `metrics` rows, then its `traces` rows, each in rowid order from
 * the cursor. The cursor is the last rowid read per table, so a re-import reads nothing and a
 * grown database (trackio only appends: `bulk_log` inserts, sqlite_storage.py:1606) yields only
 * the rows added since. Pages are fetched with LIMIT so no statement stays open across a yield.
 * The run test is written `+run_id` so SQLite walks the table by rowid from the cursor instead of
 * trackio's (run_id, step) index, which would revisit every earlier row of the run on each page.
 */
import type { Database as Db } from 'better-sqlite3';
import type { ImportBatch, ImportMetric, ReadOptions } from '../types';
import { rowIssue } from './scan';
import { openReadOnly } from '../sqlite';
import { readSchema, type TrackioSchema } from './schema';
import { resolveRunKey, type TrackioFile } from './source';
import { parseMetricsJson, timestampSeconds, traceEpisode } from './values';

export interface TrackioCursor {
  metrics: number;
  traces: number;
}

function cursorOf(value: unknown): TrackioCursor {
  const cursor = (value ?? {}) as Partial<TrackioCursor>;
  return { metrics: Number(cursor.metrics ?? 0), traces: Number(cursor.traces ?? 0) };
}

function emptyBatch(cursor: TrackioCursor, bytesDone: number): ImportBatch {
  return { metrics: [], episodes: [], checkpoints: [], issues: [], cursor, bytesDone };
}

/**
 * One row's JSON text into the batch: its bytes counted, then `add` with the row's step; a step that
 * is not a number, or text `add` cannot read, becomes an issue naming the row instead.
 */
function readRow(batch: ImportBatch, file: TrackioFile, table: keyof TrackioCursor, row: { rid: number; step: unknown }, text: string, add: (step: number) => void): void {
  batch.bytesDone += Buffer.byteLength(text);
  try {
    if (typeof row.step !== 'number') throw new Error(`step is ${JSON.stringify(row.step)}, not a number`);
    add(row.step);
  } catch (error) {
    batch.issues.push(rowIssue(file, table, row.rid, error instanceof Error ? error.message : String(error)));
  }
}

interface MetricsRowData {
  rid: number;
  step: unknown;
  metrics: unknown;
  ts: unknown;
}

function metricsPage(db: Db, schema: NonNullable<TrackioSchema['metrics']>, run: string, after: number, limit: number): MetricsRowData[] {
  const timestamp = schema.timestamp ?? 'NULL';
  const sql = `SELECT rowid AS rid, step, metrics, ${timestamp} AS ts FROM metrics WHERE rowid > ? AND +"${schema.run}" = ? ORDER BY rowid LIMIT ?`;
  return db.prepare(sql).all(after, run, limit) as MetricsRowData[];
}

function readMetricsRow(row: MetricsRowData, file: TrackioFile, batch: ImportBatch): void {
  const text = String(row.metrics);
  readRow(batch, file, 'metrics', row, text, (step) => {
    const parsed = parseMetricsJson(text);
    const wallTime = timestampSeconds(row.ts);
    batch.metrics.push(...parsed.values.map(({ key, value }): ImportMetric => ({ step, key, value, wallTime })));
    for (const trace of parsed.traces) {
      const episode = traceEpisode(trace, step, { table: 'metrics', row: row.rid });
      if (episode) batch.episodes.push(episode);
    }
  });
}

interface TraceRowData {
  rid: number;
  step: unknown;
  messages: unknown;
  key: unknown;
  idx: unknown;
  metadata: unknown;
  ts: unknown;
}

function tracesPage(db: Db, schema: NonNullable<TrackioSchema['traces']>, run: string, after: number, limit: number): TraceRowData[] {
  const column = (name: string | null): string => (name === null ? 'NULL' : `"${name}"`);
  const sql =
    `SELECT rowid AS rid, ${column(schema.step)} AS step, messages, ${column(schema.key)} AS key, ${column(schema.traceIndex)} AS idx, ` +
    `${column(schema.metadata)} AS metadata, ${column(schema.timestamp)} AS ts FROM traces WHERE rowid > ? AND +"${schema.run}" = ? ORDER BY rowid LIMIT ?`;
  return db.prepare(sql).all(after, run, limit) as TraceRowData[];
}

function readTraceRow(row: TraceRowData, file: TrackioFile, batch: ImportBatch): void {
  const text = String(row.messages);
  readRow(batch, file, 'traces', row, text, (step) => {
    const messages: unknown = JSON.parse(text);
    const metadata: unknown = typeof row.metadata === 'string' ? JSON.parse(row.metadata) : null;
    const trace = { key: typeof row.key === 'string' ? row.key : '', index: typeof row.idx === 'number' ? row.idx : null, messages, metadata };
    const episode = traceEpisode(trace, step, { table: 'traces', row: row.rid, timestamp: row.ts ?? null });
    if (episode) batch.episodes.push(episode);
  });
}

/** A table read page by page: each row knows how to add itself to a batch. */
interface TableReader {
  table: keyof TrackioCursor;
  page: (after: number, limit: number) => Array<{ rid: number; read: (batch: ImportBatch) => void }>;
}

function* readTable(reader: TableReader, state: { cursor: TrackioCursor; bytes: number }, options: ReadOptions): Generator<ImportBatch> {
  for (;;) {
    if (options.signal?.aborted) return;
    const rows = reader.page(state.cursor[reader.table], options.batchSize);
    if (rows.length === 0) return;
    state.cursor = { ...state.cursor, [reader.table]: rows[rows.length - 1].rid };
    const batch = emptyBatch(state.cursor, state.bytes);
    for (const row of rows) row.read(batch);
    state.bytes = batch.bytesDone;
    yield batch;
  }
}

function readers(db: Db, schema: TrackioSchema, file: TrackioFile, run: string): TableReader[] {
  const list: TableReader[] = [];
  const { metrics, traces } = schema;
  if (metrics) {
    const page = (after: number, limit: number) => metricsPage(db, metrics, run, after, limit).map((row) => ({ rid: row.rid, read: (batch: ImportBatch) => readMetricsRow(row, file, batch) }));
    list.push({ table: 'metrics', page });
  }
  if (traces) {
    const page = (after: number, limit: number) => tracesPage(db, traces, run, after, limit).map((row) => ({ rid: row.rid, read: (batch: ImportBatch) => readTraceRow(row, file, batch) }));
    list.push({ table: 'traces', page });
  }
  return list;
}

/** The records of one source run after `cursor`, in batches of about `batchSize` rows. */
export async function* readTrackio(path: string, key: string, cursor: unknown, options: ReadOptions): AsyncGenerator<ImportBatch> {
  const { file, run } = resolveRunKey(path, key);
  const db = openReadOnly(file.path);
  try {
    const schema = readSchema(db, file.label);
    const state = { cursor: cursorOf(cursor), bytes: 0 };
    for (const reader of readers(db, schema, file, run)) {
      yield* readTable(reader, state, options);
    }
  } finally {
    db.close();
  }
}
