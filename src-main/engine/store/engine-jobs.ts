/**
 * The Ray jobs of engine runs (issue 38, migration v9): one row per attempt of a run that veRL or
 * DrMAS trains. The follower's cursor is saved in the same transaction as the rows it read, so a
 * Studio killed and restarted mid-job goes on from exactly where the store stands: no turn read
 * twice, none skipped. The address is the dashboard URL as configured (a token is named by its
 * environment variable in the run's config, never stored).
 */
import type { Database, Statement } from 'better-sqlite3';
import { parseJsonColumn } from './json';

export interface EngineJobRow {
  runId: number;
  attempt: number;
  engine: string;
  submissionId: string;
  address: string;
  /** The run's engine folder as this machine sees it. */
  localRunDir: string;
  /** The shell line Ray runs: what the form showed before launch. */
  entrypoint: string;
  /** What the follower reads (follow/spec.ts FollowSpec), so a restarted Studio re-attaches without the plan. */
  spec: unknown;
  /** Ray's last status (PENDING … FAILED), null before the first answer. */
  status: string | null;
  /** Ray's message, or the traceback's last line for a failed job. */
  message: string | null;
  /** The follower's cursor (follow/follower.ts FollowState). */
  cursor: unknown;
  submittedAt: number;
  updatedAt: number;
}

/** A job not seen to end: Ray had not answered yet, or it was PENDING or RUNNING when last polled. */
const UNFINISHED = "(status IS NULL OR status IN ('PENDING','RUNNING'))";

interface RawRow {
  run_id: number;
  attempt: number;
  engine: string;
  submission_id: string;
  address: string;
  local_run_dir: string;
  entrypoint: string;
  spec_json: string;
  status: string | null;
  message: string | null;
  cursor_json: string;
  submitted_at: number;
  updated_at: number;
}

const fromRaw = (r: RawRow): EngineJobRow => ({
  runId: r.run_id,
  attempt: r.attempt,
  engine: r.engine,
  submissionId: r.submission_id,
  address: r.address,
  localRunDir: r.local_run_dir,
  entrypoint: r.entrypoint,
  spec: parseJsonColumn<unknown>(r.spec_json, null),
  status: r.status,
  message: r.message,
  cursor: parseJsonColumn<unknown>(r.cursor_json, null),
  submittedAt: r.submitted_at,
  updatedAt: r.updated_at,
});

export class EngineJobsRepo {
  private readonly insertStmt: Statement;
  private readonly cursorStmt: Statement;
  private readonly statusStmt: Statement;

  constructor(private readonly db: Database) {
    this.insertStmt = db.prepare(
      `INSERT INTO engine_jobs (run_id, attempt, engine, submission_id, address, local_run_dir, entrypoint, spec_json, status, message, cursor_json, submitted_at, updated_at)
       VALUES (@runId, @attempt, @engine, @submissionId, @address, @localRunDir, @entrypoint, @spec, NULL, NULL, @cursor, @now, @now)`,
    );
    this.cursorStmt = db.prepare('UPDATE engine_jobs SET cursor_json = ?, updated_at = ? WHERE run_id = ? AND attempt = ?');
    this.statusStmt = db.prepare('UPDATE engine_jobs SET status = ?, message = ?, updated_at = ? WHERE run_id = ? AND attempt = ?');
  }

  /** Records an attempt's job before it is submitted (the submission id is the attempt's own, so a second try attaches). */
  add(job: Omit<EngineJobRow, 'status' | 'message' | 'submittedAt' | 'updatedAt'>, now = Date.now()): void {
    this.insertStmt.run({ ...job, spec: JSON.stringify(job.spec), cursor: JSON.stringify(job.cursor), now });
  }

  saveCursor(runId: number, attempt: number, cursor: unknown, now = Date.now()): void {
    this.cursorStmt.run(JSON.stringify(cursor), now, runId, attempt);
  }

  setStatus(runId: number, attempt: number, status: string, message: string | null, now = Date.now()): void {
    this.statusStmt.run(status, message, now, runId, attempt);
  }

  /** The run's jobs, first attempt first. */
  list(runId: number): EngineJobRow[] {
    return (this.db.prepare('SELECT * FROM engine_jobs WHERE run_id = ? ORDER BY attempt').all(runId) as RawRow[]).map(fromRaw);
  }

  /** The run's latest job when it had not ended when last seen (the one to follow, stop or re-attach to), else null. */
  unfinishedJob(runId: number): EngineJobRow | null {
    const row = this.db.prepare(`SELECT * FROM engine_jobs WHERE run_id = ? AND ${UNFINISHED} AND attempt = (SELECT MAX(attempt) FROM engine_jobs WHERE run_id = ?)`).get(runId, runId) as RawRow | undefined;
    return row ? fromRaw(row) : null;
  }

  latest(runId: number): EngineJobRow | null {
    const row = this.db.prepare('SELECT * FROM engine_jobs WHERE run_id = ? ORDER BY attempt DESC LIMIT 1').get(runId) as RawRow | undefined;
    return row ? fromRaw(row) : null;
  }

  /** The problems a run already holds, by `split/problem_key` (a re-attached follower reuses them). */
  problemIds(runId: number): Map<string, number> {
    const rows = this.db.prepare('SELECT id, split, problem_key FROM problems WHERE run_id = ?').all(runId) as { id: number; split: string; problem_key: string }[];
    return new Map(rows.map((r) => [`${r.split}/${r.problem_key}`, r.id]));
  }

  /** The step of the run's last checkpoint (0: none), where an engine's `resume_mode=auto` goes on from. */
  lastCheckpointStep(runId: number): number {
    return (this.db.prepare('SELECT MAX(step) AS step FROM checkpoints WHERE run_id = ?').get(runId) as { step: number | null }).step ?? 0;
  }

  /** The highest step with a metric (0: none). */
  lastMetricStep(runId: number): number {
    return (this.db.prepare('SELECT MAX(step) AS step FROM metrics WHERE run_id = ?').get(runId) as { step: number | null }).step ?? 0;
  }

  /** The run's last engine traceback: its error line and whole text, or null. */
  lastTraceback(runId: number): { error: string; text: string | null } | null {
    const row = this.db.prepare("SELECT message, data_json FROM events WHERE run_id = ? AND kind = 'engine_traceback' ORDER BY id DESC LIMIT 1").get(runId) as { message: string; data_json: string | null } | undefined;
    if (!row) return null;
    const data = parseJsonColumn<{ traceback?: unknown; error?: unknown }>(row.data_json, {});
    return { error: typeof data.error === 'string' ? data.error : row.message, text: typeof data.traceback === 'string' ? data.traceback : null };
  }

  /** Whether another run's job on `address` has not ended (a local head shared by two runs stays up). */
  othersRunningOn(address: string, runId: number): boolean {
    return this.db.prepare(`SELECT 1 FROM engine_jobs WHERE run_id != ? AND address = ? AND ${UNFINISHED} LIMIT 1`).get(runId, address) !== undefined;
  }

  /** Runs whose latest job had not ended when last seen: the ones a starting Studio re-attaches to. */
  unfinished(): EngineJobRow[] {
    const rows = this.db
      .prepare(`SELECT * FROM engine_jobs j WHERE attempt = (SELECT MAX(attempt) FROM engine_jobs WHERE run_id = j.run_id) AND ${UNFINISHED}`)
      .all() as RawRow[];
    return rows.map(fromRaw);
  }
}
