/**
 * Re-judgements of a run's turns by a newer answer checker (schema v7, issue #34): what
 * `marsrl rejudge` reads (a run's turns with their references) and what it records beside the
 * original verdicts, which it never rewrites.
 */
import type { Database } from 'better-sqlite3';
import { parseJsonColumn } from './json';

/** One turn as a re-judgement needs it: its text, stored verdict, parent, and its problem's reference. */
export interface TurnToRejudge {
  id: number;
  step: number;
  agent: string;
  parentTurnId: number | null;
  text: string;
  parsed: string | null;
  correct: boolean | null;
  split: 'train' | 'test';
  reference: string;
}

export interface RejudgedTurnRow {
  turnId: number;
  oldCorrect: boolean | null;
  newCorrect: boolean;
  oldParsed: string | null;
  newParsed: string | null;
  reason: string;
}

export interface RejudgeRow {
  id: number;
  runId: number;
  checkerVersion: string;
  judgedVersion: string | null;
  createdAt: number;
  turnsChecked: number;
  changed: number;
  summary: Record<string, unknown>;
}

export interface NewRejudge {
  runId: number;
  checkerVersion: string;
  judgedVersion: string | null;
  turnsChecked: number;
  changes: readonly RejudgedTurnRow[];
  summary: Record<string, unknown>;
}

export class RejudgesRepo {
  constructor(private readonly db: Database) {}

  /**
   * A page of the run's live turns (superseded ones left out) that belong to a problem, by id: a
   * parent turn comes before the turns that read it.
   */
  turnsPage(runId: number, afterId: number, limit: number): TurnToRejudge[] {
    const rows = this.db
      .prepare(
        `SELECT t.id, t.step, t.agent, t.parent_turn_id AS parentTurnId, t.text, t.parsed, t.correct, e.split, p.answer AS reference
         FROM turns t JOIN episodes e ON e.id = t.episode_id JOIN problems p ON p.id = e.problem_id
         WHERE t.run_id = ? AND t.id > ? AND t.superseded_by IS NULL
         ORDER BY t.id LIMIT ?`,
      )
      .all(runId, afterId, limit) as (Omit<TurnToRejudge, 'correct'> & { correct: number | null })[];
    return rows.map((r) => ({ ...r, correct: r.correct === null ? null : r.correct === 1 }));
  }

  /** The stored verdict of one turn (a parent outside the pages read so far). */
  storedCorrect(turnId: number): boolean | null {
    const r = this.db.prepare('SELECT correct FROM turns WHERE id = ?').get(turnId) as { correct: number | null } | undefined;
    return r === undefined || r.correct === null ? null : r.correct === 1;
  }

  /** Records a re-judgement and the turns whose verdict it changed, in one transaction; returns its id. */
  record(rejudge: NewRejudge, now = Date.now()): number {
    return this.db.transaction(() => {
      const id = Number(
        this.db
          .prepare('INSERT INTO rejudges (run_id, checker_version, judged_version, created_at, turns_checked, changed, summary_json) VALUES (?, ?, ?, ?, ?, ?, ?)')
          .run(rejudge.runId, rejudge.checkerVersion, rejudge.judgedVersion, now, rejudge.turnsChecked, rejudge.changes.length, JSON.stringify(rejudge.summary)).lastInsertRowid,
      );
      const insert = this.db.prepare('INSERT INTO rejudged_turns (rejudge_id, turn_id, old_correct, new_correct, old_parsed, new_parsed, reason) VALUES (?, ?, ?, ?, ?, ?, ?)');
      for (const c of rejudge.changes) {
        insert.run(id, c.turnId, c.oldCorrect === null ? null : Number(c.oldCorrect), Number(c.newCorrect), c.oldParsed, c.newParsed, c.reason);
      }
      return id;
    }).immediate();
  }

  /** A run's re-judgements, newest first. */
  list(runId: number): RejudgeRow[] {
    const rows = this.db.prepare('SELECT * FROM rejudges WHERE run_id = ? ORDER BY id DESC').all(runId) as Record<string, unknown>[];
    return rows.map((r) => ({
      id: r.id as number,
      runId: r.run_id as number,
      checkerVersion: r.checker_version as string,
      judgedVersion: (r.judged_version as string | null) ?? null,
      createdAt: r.created_at as number,
      turnsChecked: r.turns_checked as number,
      changed: r.changed as number,
      summary: parseJsonColumn(r.summary_json as string, {}),
    }));
  }

  /** The turns one re-judgement changed. */
  changes(rejudgeId: number): RejudgedTurnRow[] {
    const rows = this.db.prepare('SELECT * FROM rejudged_turns WHERE rejudge_id = ? ORDER BY turn_id').all(rejudgeId) as Record<string, unknown>[];
    return rows.map((r) => ({
      turnId: r.turn_id as number,
      oldCorrect: r.old_correct === null ? null : r.old_correct === 1,
      newCorrect: r.new_correct === 1,
      oldParsed: (r.old_parsed as string | null) ?? null,
      newParsed: (r.new_parsed as string | null) ?? null,
      reason: r.reason as string,
    }));
  }
}
