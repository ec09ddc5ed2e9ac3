/**
 * DuckDB as the independent reader of exports: what a researcher would use on the files, and no
 * code shared with the writer. Values come back normalised to plain JS (bigint → number, DuckDB
 * MAP entries → object) so they compare directly with rows read from SQLite.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';

let connection: Promise<DuckDBConnection> | null = null;

function connect(): Promise<DuckDBConnection> {
  connection ??= DuckDBInstance.create(':memory:').then((db) => db.connect());
  return connection;
}

export function normalize(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = normalize(v);
    return out;
  }
  return value;
}

export async function duck(sql: string): Promise<Record<string, unknown>[]> {
  const c = await connect();
  const reader = await c.runAndReadAll(sql);
  return reader.getRowObjectsJS().map((row) => normalize(row) as Record<string, unknown>);
}

/** `read_parquet('file')` or `read_json('file')`, by container. */
export function source(file: string, container: 'jsonl' | 'parquet'): string {
  const quoted = `'${file.replace(/'/g, "''")}'`;
  return container === 'parquet' ? `read_parquet(${quoted})` : `read_json(${quoted}, format = 'newline_delimited')`;
}

/** DuckDB column types of a file, by name. */
export async function columnTypes(file: string, container: 'jsonl' | 'parquet'): Promise<Record<string, string>> {
  const rows = await duck(`DESCRIBE SELECT * FROM ${source(file, container)}`);
  return Object.fromEntries(rows.map((r) => [r.column_name as string, r.column_type as string]));
}

/**
 * Reward components as an object whichever way they were read: a Parquet MAP arrives as
 * [{key, value}], a JSON object as a STRUCT over the union of keys (absent keys null).
 */
export function components(value: unknown): Record<string, number> | null {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return Object.fromEntries(value.map((e: { key: string; value: number }) => [e.key, e.value]));
  return Object.fromEntries(Object.entries(value as Record<string, number | null>).filter(([, v]) => v !== null)) as Record<string, number>;
}
