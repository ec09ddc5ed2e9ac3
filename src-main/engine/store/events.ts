/** Events (errors, warnings, checkpoints, interruptions), checkpoints and the pipeline timeline. */
import { keysetPage, pageLimit } from './keyset';
import type { Database, Statement } from 'better-sqlite3';
import { parseJsonColumn, toJsonColumn } from './json';
import { CURRENT_ATTEMPT } from './trajectories';
import { camelColumns } from './columns';
import type { CheckpointRow, EventLevel, EventRow, KeysetPage, TimelineRow } from './types';

// The JSON columns (metrics_json, data_json) are parsed after the read; the rest arrive as fields.
const EVENT = `${camelColumns(['id', 'run_id', 'step', 'time', 'level', 'kind', 'message'])}, data_json`;
const CHECKPOINT = `${camelColumns(['id', 'run_id', 'step', 'policy_id', 'path', 'created_at'])}, metrics_json`;
const TIMELINE = camelColumns(['id', 'run_id', 'kind', 'agent', 'worker', 'step', 'policy_version', 'started_at', 'ended_at', 'tokens']);

type WithJson<T, K extends keyof T, C extends string> = Omit<T, K> & Record<C, string | null>;
type EventRecord = WithJson<EventRow, 'data', 'data_json'>;
type CheckpointRecord = WithJson<CheckpointRow, 'metrics', 'metrics_json'>;

export class EventsRepo {
  readonly insertEvent: Statement;
  readonly insertCheckpoint: Statement;
  readonly insertTimeline: Statement;
  private readonly page: Statement;
  private readonly checkpointsOfRun: Statement;
  private readonly latestCheckpointStmt: Statement;
  private readonly timelineOfRun: Statement;
  private readonly latestOfKindStmt: Statement;
  private readonly sinceStmt: Statement;

  constructor(db: Database) {
    this.insertEvent = db.prepare(
      'INSERT INTO events (run_id, step, time, level, kind, message, data_json) VALUES (@runId, @step, @time, @level, @kind, @message, @data)',
    );
    this.insertCheckpoint = db.prepare(
      'INSERT INTO checkpoints (run_id, step, policy_id, path, created_at, metrics_json) VALUES (@runId, @step, @policyId, @path, @createdAt, @metrics)',
    );
    this.insertTimeline = db.prepare(
      `INSERT INTO timeline (run_id, kind, agent, worker, step, policy_version, started_at, ended_at, tokens, attempt)
       VALUES (@runId, @kind, @agent, @worker, @step, @policyVersion, @startedAt, @endedAt, @tokens, ${CURRENT_ATTEMPT})`,
    );
    this.page = db.prepare(`SELECT ${EVENT} FROM events WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?`);
    this.checkpointsOfRun = db.prepare(`SELECT ${CHECKPOINT} FROM checkpoints WHERE run_id = ? ORDER BY step, id`);
    this.latestCheckpointStmt = db.prepare(`SELECT ${CHECKPOINT} FROM checkpoints WHERE run_id = ? ORDER BY step DESC, id DESC LIMIT 1`);
    this.timelineOfRun = db.prepare(`SELECT ${TIMELINE} FROM timeline WHERE run_id = ? AND started_at >= ? AND superseded_by IS NULL ORDER BY started_at LIMIT ?`);
    this.latestOfKindStmt = db.prepare(`SELECT ${EVENT} FROM events WHERE run_id = ? AND kind = ? ORDER BY id DESC LIMIT 1`);
    this.sinceStmt = db.prepare(`SELECT ${EVENT} FROM events WHERE id > ? ORDER BY id LIMIT ?`);
  }

  static eventParams(e: Omit<EventRow, 'id'>) {
    return { ...e, data: toJsonColumn(e.data) };
  }

  static checkpointParams(c: Omit<CheckpointRow, 'id'>) {
    return { ...c, metrics: toJsonColumn(c.metrics) };
  }

  /** Events go straight in (not batched): an error must be on disk before a crash can follow it. */
  log(runId: number, level: EventLevel, kind: string, message: string, data: Record<string, unknown> | null = null, step: number | null = null): void {
    this.insertEvent.run(EventsRepo.eventParams({ runId, step, time: Date.now(), level, kind, message, data }));
  }

  events(runId: number, afterId = 0, limit?: number): KeysetPage<EventRow> {
    const capped = pageLimit(limit, 200, 1000);
    const rows = (this.page.all(runId, afterId, capped + 1) as EventRecord[]).map(toEvent);
    return keysetPage(rows, capped, (row) => row.id);
  }

  /** Events of every run after `afterId`, in id order: what another process wrote since a watcher last looked (app/watch.ts). */
  since(afterId: number, limit: number): EventRow[] {
    return (this.sinceStmt.all(afterId, limit) as EventRecord[]).map(toEvent);
  }

  /** The newest event of one kind in a run (e.g. something a run recorded once and reads on resume). */
  latestOfKind(runId: number, kind: string): EventRow | null {
    const r = this.latestOfKindStmt.get(runId, kind) as EventRecord | undefined;
    return r ? toEvent(r) : null;
  }

  addCheckpoint(c: Omit<CheckpointRow, 'id'>): void {
    this.insertCheckpoint.run(EventsRepo.checkpointParams(c));
  }

  checkpoints(runId: number): CheckpointRow[] {
    return (this.checkpointsOfRun.all(runId) as CheckpointRecord[]).map(toCheckpoint);
  }

  latestCheckpoint(runId: number): CheckpointRow | null {
    const r = this.latestCheckpointStmt.get(runId) as CheckpointRecord | undefined;
    return r ? toCheckpoint(r) : null;
  }

  timeline(runId: number, fromTime = 0, limit = 100_000): TimelineRow[] {
    return this.timelineOfRun.all(runId, fromTime, limit) as TimelineRow[];
  }
}

function toCheckpoint({ metrics_json, ...r }: CheckpointRecord): CheckpointRow {
  return { ...r, metrics: parseJsonColumn(metrics_json, null) };
}

function toEvent({ data_json, ...r }: EventRecord): EventRow {
  return { ...r, data: parseJsonColumn(data_json, null) };
}
