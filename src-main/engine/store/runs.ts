/** Runs: creation with the resolved config snapshot, status transitions, listing by keyset. */
import { equalityFilters, keysetPage, pageLimit } from './keyset';
import type { Database } from 'better-sqlite3';
import { StatementCache } from './statements';
import { parseJsonColumn, toJsonColumn } from './json';
import { supersedeRedoneRows } from './migrations';
import type { ImportOrigin } from '#shared/contract';
import type { KeysetPage, NewRun, RunAttemptRow, RunRow, RunStatus } from './types';

interface RunRecord {
  id: number;
  name: string;
  status: RunStatus;
  status_reason: string | null;
  preset: string | null;
  config_json: string;
  code_version: string;
  backend: string | null;
  backend_json: string | null;
  seed: number;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
  notes: string;
  tags_json: string;
  worker_pid: number | null;
  heartbeat_at: number | null;
  attempt?: number;
  stop_requested_at?: number | null;
  stop_reason?: string | null;
  checker_version?: string | null;
  import_json?: string | null;
}

/**
 * Every read of a run carries its import origin (store/imports.ts, schema v10) as one JSON column,
 * so a RunRow says whether it is an imported, read-only run without a second query.
 */
const RUN_COLUMNS = `runs.*, (SELECT json_object('format', i.format, 'path', i.path, 'sourceKey', i.source_key, 'digest', i.digest, 'importedAt', i.imported_at, 'updatedAt', i.updated_at)
  FROM import_sources i WHERE i.run_id = runs.id) AS import_json`;

function toRun(r: RunRecord): RunRow {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    statusReason: r.status_reason,
    preset: r.preset,
    config: parseJsonColumn(r.config_json, {}),
    codeVersion: r.code_version,
    backend: r.backend,
    backendInfo: parseJsonColumn(r.backend_json, null),
    seed: r.seed,
    createdAt: r.created_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    notes: r.notes,
    tags: parseJsonColumn<string[]>(r.tags_json, []),
    workerPid: r.worker_pid,
    heartbeatAt: r.heartbeat_at,
    attempt: r.attempt ?? 1,
    stopRequest: r.stop_requested_at === null || r.stop_requested_at === undefined ? null : { at: r.stop_requested_at, reason: r.stop_reason ?? 'stopped by the user' },
    checkerVersion: r.checker_version ?? null,
    imported: parseJsonColumn<ImportOrigin | null>(r.import_json, null),
  };
}

export interface ListRunsOptions {
  beforeId?: number;
  limit?: number;
  status?: RunStatus;
  search?: string;
}

export interface RunCounts {
  problems: number;
  episodes: number;
  turns: number;
  /** Turns of killed attempts whose steps a resume redid (kept, left out of every reader). */
  supersededTurns: number;
  segments: number;
  metrics: number;
  events: number;
  checkpoints: number;
}

export class RunsRepo {
  // Every statement is prepared on first use and kept (statements.ts), written where it is used.
  private readonly statements: StatementCache;

  constructor(private readonly db: Database) {
    this.statements = new StatementCache(db);
  }

  create(run: NewRun, now = Date.now()): number {
    const insert = this.statements.get(
      `INSERT INTO runs (name, status, preset, config_json, code_version, seed, created_at, notes, tags_json, checker_version)
       VALUES (@name, @status, @preset, @config_json, @code_version, @seed, @created_at, @notes, @tags_json, @checker_version)`,
    );
    const result = insert.run({
      name: run.name,
      status: run.status ?? 'queued',
      preset: run.preset ?? null,
      config_json: JSON.stringify(run.config),
      code_version: run.codeVersion,
      seed: run.seed,
      created_at: now,
      notes: run.notes ?? '',
      tags_json: JSON.stringify(run.tags ?? []),
      checker_version: run.checkerVersion ?? null,
    });
    const id = Number(result.lastInsertRowid);
    this.statements.get('INSERT OR IGNORE INTO run_attempts (run_id, attempt, started_at, resumed_from_step, checker_version) VALUES (?, 1, ?, NULL, ?)').run(id, now, run.checkerVersion ?? null);
    return id;
  }

  /**
   * A resume starts a new attempt that redoes the steps from `fromStep` (the step after the
   * checkpoint it loaded): in one transaction the run's attempt goes up and every earlier
   * attempt's rows of those steps are marked superseded by it (migrations.ts v5 says which). Rows
   * the new attempt writes afterwards carry its number. `checkerVersion` is the answer checker
   * the new attempt judges with (it may be newer than the run's first). Returns the new attempt.
   */
  beginAttempt(id: number, fromStep: number, now = Date.now(), checkerVersion: string | null = null): { attempt: number; superseded: { turns: number; episodes: number; metrics: number } } {
    return this.db.transaction(() => {
      const current = (this.statements.get('SELECT attempt FROM runs WHERE id = ?').get(id) as { attempt: number } | undefined)?.attempt;
      if (current === undefined) throw new Error(`run ${id} does not exist`);
      const attempt = current + 1;
      this.statements.get('UPDATE runs SET attempt = ? WHERE id = ?').run(attempt, id);
      this.statements.get('INSERT INTO run_attempts (run_id, attempt, started_at, resumed_from_step, checker_version) VALUES (?, ?, ?, ?, ?)').run(id, attempt, now, fromStep, checkerVersion);
      return { attempt, superseded: supersedeRedoneRows(this.db, id, attempt, fromStep) };
    }).immediate();
  }

  attempts(id: number): RunAttemptRow[] {
    return this.statements
      .get('SELECT run_id AS runId, attempt, started_at AS startedAt, resumed_from_step AS resumedFromStep, checker_version AS checkerVersion FROM run_attempts WHERE run_id = ? ORDER BY attempt')
      .all(id) as RunAttemptRow[];
  }

  get(id: number): RunRow | null {
    const r = this.statements.get(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`).get(id) as RunRecord | undefined;
    return r ? toRun(r) : null;
  }

  /** A run by numeric id or, failing that, by its (latest) name, as the CLI's `show RUN` takes either. */
  find(idOrName: string): RunRow | null {
    if (/^\d+$/.test(idOrName)) {
      const byId = this.get(Number(idOrName));
      if (byId) return byId;
    }
    const r = this.statements.get(`SELECT ${RUN_COLUMNS} FROM runs WHERE name = ? ORDER BY id DESC LIMIT 1`).get(idOrName) as RunRecord | undefined;
    return r ? toRun(r) : null;
  }

  setStatus(id: number, status: RunStatus, reason: string | null = null, now = Date.now()): void {
    this.statements
      .get(
        `UPDATE runs SET status = @status, status_reason = @reason,
           started_at = CASE WHEN @status = 'running' AND started_at IS NULL THEN @now ELSE started_at END,
           ended_at = CASE WHEN @status IN ('done','failed','interrupted') THEN @now WHEN @status = 'running' THEN NULL ELSE ended_at END
         WHERE id = @id`,
      )
      .run({ id, status, reason, now });
    // A stop request is for the attempt it was made during: once that attempt has ended (or a new
    // one is queued), it must not stop the next.
    if (status !== 'running') this.statements.get('UPDATE runs SET stop_requested_at = NULL, stop_reason = NULL WHERE id = ?').run(id);
  }

  /**
   * Record that someone asked the run to stop (issue 35). The process that owns the run polls
   * this (runner/worker.ts) and stops at its next safe point; any process may write it. Only a
   * run still queued or running takes a request; returns whether it did. The first request's
   * time and reason are kept (a second Stop does not restart the wait).
   */
  requestStop(id: number, reason: string, now = Date.now()): boolean {
    return (
      this.statements
        .get("UPDATE runs SET stop_requested_at = COALESCE(stop_requested_at, ?), stop_reason = COALESCE(stop_reason, ?) WHERE id = ? AND status IN ('queued', 'running')")
        .run(now, reason, id).changes === 1
    );
  }

  /** The pending stop request of a run, or null; a cheap read by primary key, polled every second by its worker. */
  stopRequest(id: number): { at: number; reason: string } | null {
    const row = this.statements.get('SELECT stop_requested_at AS at, stop_reason AS reason FROM runs WHERE id = ?').get(id) as { at: number | null; reason: string | null } | undefined;
    return row && row.at !== null ? { at: row.at, reason: row.reason ?? 'stopped by the user' } : null;
  }

  /**
   * Take an interrupted or failed run for a resume: one conditional UPDATE, so of two processes
   * resuming the same run at once exactly one wins; the other gets false and must refuse.
   */
  claimForResume(id: number): boolean {
    return this.statements.get("UPDATE runs SET status = 'queued', status_reason = NULL, stop_requested_at = NULL, stop_reason = NULL WHERE id = ? AND status IN ('interrupted', 'failed')").run(id).changes === 1;
  }

  setBackend(id: number, backend: string, info: Record<string, unknown>): void {
    this.statements.get('UPDATE runs SET backend = ?, backend_json = ? WHERE id = ?').run(backend, toJsonColumn(info), id);
  }

  setNotes(id: number, notes: string): void {
    this.statements.get('UPDATE runs SET notes = ? WHERE id = ?').run(notes, id);
  }

  setTags(id: number, tags: string[]): void {
    this.statements.get('UPDATE runs SET tags_json = ? WHERE id = ?').run(JSON.stringify(tags), id);
  }

  /** The worker process that owns a running run reports in; null pid releases the run. */
  heartbeat(id: number, pid: number | null, now = Date.now()): void {
    this.statements.get('UPDATE runs SET worker_pid = ?, heartbeat_at = ? WHERE id = ?').run(pid, now, id);
  }

  delete(id: number): boolean {
    return this.statements.get('DELETE FROM runs WHERE id = ?').run(id).changes > 0;
  }

  /** Newest first, keyset-paged on id. */
  list(options: ListRunsOptions = {}): KeysetPage<RunRow> {
    const limit = pageLimit(options.limit, 50, 500);
    const where: string[] = [];
    const params: Record<string, unknown> = { limit: limit + 1 };
    if (options.beforeId !== undefined) {
      where.push('id < @beforeId');
      params.beforeId = options.beforeId;
    }
    equalityFilters(where, params, { status: { column: 'status', value: options.status || undefined } });
    if (options.search) {
      where.push(
        "(name LIKE @search ESCAPE '\\' OR preset LIKE @search ESCAPE '\\' OR tags_json LIKE @search ESCAPE '\\' OR json_extract(config_json, '$.task.family') LIKE @search ESCAPE '\\')",
      );
      params.search = `%${options.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    }
    const sql = `SELECT ${RUN_COLUMNS} FROM runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
    const rows = (this.statements.get(sql).all(params) as RunRecord[]).map(toRun);
    return keysetPage(rows, limit, (row) => row.id);
  }

  /** Row counts; episodes and turns are the live attempt's, superseded turns are counted apart. */
  counts(id: number): RunCounts {
    const count = (table: string, where = '') =>
      (this.statements.get(`SELECT COUNT(*) AS n FROM ${table} WHERE run_id = ? ${where}`).get(id) as { n: number }).n;
    return {
      problems: count('problems'),
      episodes: count('episodes', 'AND superseded_by IS NULL'),
      turns: count('turns', 'AND superseded_by IS NULL'),
      supersededTurns: count('turns', 'AND superseded_by IS NOT NULL'),
      segments: count('segments'),
      metrics: count('metrics'),
      events: count('events'),
      checkpoints: count('checkpoints'),
    };
  }

  /**
   * Runs left `running` whose `reasonOf` says why nothing runs them any more are marked
   * interrupted with that reason (see liveness.ts). Returns their ids.
   */
  markStale(reasonOf: (run: RunRow) => string | null): number[] {
    const marked: number[] = [];
    for (const run of (this.statements.get(`SELECT ${RUN_COLUMNS} FROM runs WHERE status = 'running'`).all() as RunRecord[]).map(toRun)) {
      const reason = reasonOf(run);
      if (reason === null) continue;
      // Only if it is still `running` (its worker may have finished it meanwhile).
      const changed = this.statements
        .get("UPDATE runs SET status = 'interrupted', status_reason = ?, ended_at = ?, worker_pid = NULL, stop_requested_at = NULL, stop_reason = NULL WHERE id = ? AND status = 'running'")
        .run(reason, Date.now(), run.id).changes;
      if (changed) marked.push(run.id);
    }
    return marked;
  }

  /** Runs left `running` by a process that no longer exists are marked interrupted. */
  markStaleRunning(reason: string, isAlive: (run: RunRow) => boolean): number[] {
    const stale = (this.statements.get(`SELECT ${RUN_COLUMNS} FROM runs WHERE status = 'running'`).all() as RunRecord[])
      .map(toRun)
      .filter((run) => !isAlive(run));
    for (const run of stale) this.setStatus(run.id, 'interrupted', reason);
    return stale.map((run) => run.id);
  }
}
