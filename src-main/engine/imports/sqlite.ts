/**
 * SQLite sources (trackio's project files, MLflow's `mlflow.db`): recognised by SQLite's 16-byte
 * header (https://www.sqlite.org/fileformat.html, "The Database Header"), opened read-only (an
 * import never writes or creates a source), their columns read with `PRAGMA table_info` because
 * both tools have changed their schemas across versions.
 */
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import { closeSync, openSync, readSync, statSync } from 'node:fs';

const SQLITE_HEADER = 'SQLite format 3\u0000';

/** The first 16 bytes of a file are SQLite's magic string (never reads more). */
export function isSqliteFile(path: string): boolean {
  let fd: number | null = null;
  try {
    if (!statSync(path).isFile()) return false;
    fd = openSync(path, 'r');
    const header = Buffer.alloc(16);
    return readSync(fd, header, 0, 16, 0) === 16 && header.toString('latin1') === SQLITE_HEADER;
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** Opens a database read-only: an import never writes the source (and never creates a missing file). */
export function openReadOnly(file: string): Db {
  return new Database(file, { readonly: true, fileMustExist: true });
}

/**
 * A SQLite file that, opened read-only, `matches` (a source's sniffing): false for any other file,
 * and for one that cannot be opened or read.
 */
export function sqliteFileMatching(path: string, matches: (db: Db) => boolean): boolean {
  if (!isSqliteFile(path)) return false;
  try {
    const db = openReadOnly(path);
    try {
      return matches(db);
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}

export function tableColumns(db: Db, table: string): string[] {
  const rows = db.prepare(`PRAGMA table_info(${JSON.stringify(table)})`).all() as Array<{ name: string }>;
  return rows.map((row) => row.name);
}

