/**
 * Opening the experiment store: pragmas and migrations. Every process that touches the store
 * (the Electron main process, CLI, rollout and trainer workers) opens it through here so all of
 * them agree on WAL, foreign keys and how long to wait for a writer.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Database as DatabaseHandle } from 'better-sqlite3';
import { migrate, schemaVersion } from './migrations';
import { describeStoreFailure, StoreOpenError } from './errors';

export interface OpenOptions {
  /**
   * Path of a better-sqlite3 native addon built for another ABI. Electron passes its own build
   * here (made by `npm start`) so the Node build stays in node_modules for the CLI and tests.
   */
  nativeBinding?: string;
  readonly?: boolean;
  /** Stop at this schema version instead of the latest (tests of migrations). */
  targetVersion?: number;
  /** How long a writer waits for another process's transaction before failing (ms). */
  busyTimeoutMs?: number;
}

export function openDatabase(databasePath: string, options: OpenOptions = {}): DatabaseHandle {
  if (databasePath !== ':memory:' && !options.readonly) {
    fs.mkdirSync(path.dirname(databasePath), { recursive: true });
  }
  if (options.readonly && !fs.existsSync(databasePath)) {
    throw new Error(`No database at ${databasePath}: start a run first, or pass --db PATH / MARSRL_DB.`);
  }
  let db: DatabaseHandle;
  try {
    db = new Database(databasePath, {
      readonly: options.readonly ?? false,
      // MARSRL_NATIVE_SQLITE (set by `npm start`) reaches every process the app starts, so run
      // workers load the Electron build of the addon too.
      nativeBinding: options.nativeBinding ?? process.env.MARSRL_NATIVE_SQLITE,
    });
  } catch (error) {
    throw described(error, databasePath);
  }
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
    if (!options.readonly) {
      // WAL lets the UI read while workers write; NORMAL sync is durable across process
      // crashes (only an OS crash can lose the last transactions), which is the failure the
      // run manager has to survive.
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    db.pragma('foreign_keys = ON');
    if (options.readonly) {
      // A read-only handle cannot migrate; it still refuses a newer schema.
      migrate(db, databasePath, schemaVersion(db));
    } else {
      migrate(db, databasePath, options.targetVersion);
    }
    return db;
  } catch (error) {
    db.close();
    throw described(error, databasePath);
  }
}

/**
 * A damaged, foreign or read-only database file says so, with its path and what to do, instead
 * of SQLite's bare "file is not a database" (issue #36); anything else is rethrown as it is.
 */
function described(error: unknown, databasePath: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code === 'SQLITE_FULL') return error;
  const message = describeStoreFailure(error, databasePath);
  return message ? new StoreOpenError(message, { cause: error }) : error;
}
