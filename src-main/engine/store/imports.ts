/**
 * Import bookkeeping (issue 39, schema v10): which Studio run a source run of another tool was
 * imported as, and the reader's cursor within it. The importer (engine/imports/importer.ts) saves
 * the cursor in the same transaction as the batch of rows it moved past, so the cursor never says
 * more was stored than was.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { ImportFormatId, ImportOrigin } from '#shared/contract';
import { parseJsonColumn } from './json';
import { camelColumns } from './columns';
import type { NewRun } from './types';
import type { RunsRepo } from './runs';

export interface ImportSourceRow extends ImportOrigin {
  runId: number;
  /** The reader's cursor after the last stored batch (null: nothing read yet). */
  cursor: unknown;
  /** Source bytes read so far. */
  bytes: number;
}

export interface NewImportedRun extends Omit<NewRun, 'status'> {
  format: ImportFormatId;
  path: string;
  sourceKey: string;
  /** When the source run started and ended (ms since the epoch), if it says. */
  startedAt: number | null;
  endedAt: number | null;
}

// The row as read (camelColumns names each column by its field); the cursor is parsed after.
const IMPORT = `${camelColumns(['run_id', 'format', 'path', 'source_key', 'digest', 'bytes', 'imported_at', 'updated_at'])}, cursor_json`;
type ImportRecord = Omit<ImportSourceRow, 'cursor'> & { cursor_json: string | null };

function toRow({ cursor_json, ...r }: ImportRecord): ImportSourceRow {
  return { ...r, cursor: parseJsonColumn<unknown>(cursor_json, null) };
}

export class ImportsRepo {
  private readonly bySource: Statement;
  private readonly byRun: Statement;
  private readonly insert: Statement;
  private readonly saveCursorStmt: Statement;
  private readonly finishStmt: Statement;

  constructor(
    private readonly db: Database,
    private readonly runs: RunsRepo,
  ) {
    this.bySource = db.prepare(`SELECT ${IMPORT} FROM import_sources WHERE format = ? AND path = ? AND source_key = ?`);
    this.byRun = db.prepare(`SELECT ${IMPORT} FROM import_sources WHERE run_id = ?`);
    this.insert = db.prepare(
      `INSERT INTO import_sources (run_id, format, path, source_key, digest, cursor_json, bytes, imported_at, updated_at)
       VALUES (@runId, @format, @path, @sourceKey, '', NULL, 0, @now, @now)`,
    );
    this.saveCursorStmt = db.prepare('UPDATE import_sources SET cursor_json = ?, bytes = ?, updated_at = ? WHERE run_id = ?');
    this.finishStmt = db.prepare('UPDATE import_sources SET digest = ?, updated_at = ? WHERE run_id = ?');
  }

  /** The import of a source run (format, absolute path, key within the source), or null. */
  find(format: ImportFormatId, path: string, sourceKey: string): ImportSourceRow | null {
    const r = this.bySource.get(format, path, sourceKey) as ImportRecord | undefined;
    return r ? toRow(r) : null;
  }

  ofRun(runId: number): ImportSourceRow | null {
    const r = this.byRun.get(runId) as ImportRecord | undefined;
    return r ? toRow(r) : null;
  }

  /**
   * A new, finished run for a source run, with its import row, in one transaction: a run is never
   * seen without its origin (it would read as a Studio run that could be resumed).
   */
  createRun(run: NewImportedRun, now = Date.now()): number {
    return this.db.transaction(() => {
      const runId = this.runs.create({ ...run, status: 'done' }, now);
      this.db.prepare('UPDATE runs SET started_at = ?, ended_at = ? WHERE id = ?').run(run.startedAt, run.endedAt ?? now, runId);
      this.insert.run({ runId, format: run.format, path: run.path, sourceKey: run.sourceKey, now });
      return runId;
    })();
  }

  /** Set a run's start where the source did not say it and the first records do (wall times of metrics). */
  setStartIfUnknown(runId: number, startedAt: number): void {
    this.db.prepare('UPDATE runs SET started_at = ? WHERE id = ? AND started_at IS NULL').run(startedAt, runId);
  }

  /** Saved in the transaction of the batch it moves past. */
  saveCursor(runId: number, cursor: unknown, bytes: number, now = Date.now()): void {
    this.saveCursorStmt.run(cursor === undefined ? null : JSON.stringify(cursor), bytes, now, runId);
  }

  /** The digest of the source's bytes once an import of it ends. */
  finish(runId: number, digest: string, now = Date.now()): void {
    this.finishStmt.run(digest, now, runId);
  }
}
