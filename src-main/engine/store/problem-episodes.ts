/**
 * One problem, many episodes (issue 40): the reads behind the view of a problem across the steps of
 * a run and across runs. A run writes each problem once (`problems`, unique on run, split and key)
 * and one episode per step it samples the problem at, so a problem's history is its episodes by
 * `problem_id`. Every read here is served by an index (test/store/problem-episodes.test.ts checks
 * the query plans): a run's problems by the (run_id, split, problem_key) unique index, its episodes
 * by episodes_run_step, one problem's episodes by episodes_problem, their turns by turns_episode.
 */
import type { Database } from 'better-sqlite3';
import type { EpisodeSummary } from '#shared/contract';
import { boolColumn, parseJsonColumn } from './json';
import { StatementCache } from './statements';
import type { EpisodeRow, ProblemRecord, ProblemRow, Split } from './types';

export type { ProblemRecord };

/** A problem's episodes in one run, folded: count, right ones, and the outcome at the last step. */
export interface ProblemOutcomeRecord {
  episodes: number;
  solved: number;
  lastStep: number;
  lastCorrect: boolean | null;
}

const PROBLEM_COLUMNS = 'id, run_id, split, family, problem_key, question, answer';

export function toProblem(r: Record<string, unknown>): ProblemRecord {
  return {
    id: r.id as number,
    runId: r.run_id as number,
    split: r.split as Split,
    family: r.family as string,
    problemKey: r.problem_key as string,
    question: r.question as string,
    answer: r.answer as string,
  };
}

/**
 * An episodes row's own columns as the API shows them, meta aside (the trajectory browser adds it,
 * a problem's episodes leave it out), with the attempt that wrote it. Read from `SELECT e.*` or by id.
 */
export function episodeColumns(r: Record<string, unknown>): Omit<EpisodeRow, 'meta'> & { attempt: number; supersededBy: number | null } {
  return {
    id: r.id as number,
    runId: r.run_id as number,
    step: r.step as number,
    problemId: r.problem_id as number | null,
    split: r.split as Split,
    finalAnswer: r.final_answer as string | null,
    correct: boolColumn(r.correct as number | null),
    rounds: r.rounds as number,
    attempt: (r.attempt as number | undefined) ?? 1,
    supersededBy: (r.superseded_by as number | null | undefined) ?? null,
  };
}

/** The SQL of each read, exported so the test can ask SQLite for its plan. */
export const PROBLEM_EPISODE_SQL = {
  problemsOfRun: `SELECT ${PROBLEM_COLUMNS} FROM problems WHERE run_id = ?`,
  problemById: `SELECT ${PROBLEM_COLUMNS}, meta_json FROM problems WHERE id = ?`,
  problemByKey: `SELECT ${PROBLEM_COLUMNS} FROM problems WHERE run_id = ? AND split = ? AND problem_key = ?`,
  problemsOfSplit: `SELECT ${PROBLEM_COLUMNS} FROM problems WHERE run_id = ? AND split = ?`,
  // Live rows only: a resume's redone steps leave the killed attempt's episodes superseded. With
  // one max() in an aggregate, SQLite takes the bare columns (step, correct) from the row holding
  // it: the episode of the latest step, and of that step the one written last (highest id).
  outcomesOfRun: `SELECT problem_id, COUNT(*), SUM(correct = 1), MAX(step * 4294967296 + id), step, correct
    FROM episodes WHERE run_id = ? AND superseded_by IS NULL AND problem_id IS NOT NULL GROUP BY problem_id`,
  episodesOfProblem: `SELECT e.*, (SELECT COUNT(*) FROM turns t WHERE t.episode_id = e.id) AS turn_count
    FROM episodes e WHERE e.problem_id = ? AND e.superseded_by IS NULL ORDER BY e.step, e.id`,
  episodeOfTurn: 'SELECT t.run_id, e.problem_id FROM turns t LEFT JOIN episodes e ON e.id = t.episode_id WHERE t.id = ?',
} as const;

export class ProblemEpisodesRepo {
  private readonly statements: StatementCache;

  constructor(db: Database) {
    this.statements = new StatementCache(db);
  }

  /** Every problem a run wrote (a few thousand rows at most: problems are written once per run). */
  problemsOfRun(runId: number): ProblemRecord[] {
    // Raw rows: half the time of row objects on a run of 5 000 problems.
    const rows = this.statements.get(PROBLEM_EPISODE_SQL.problemsOfRun).raw().all(runId) as [number, number, Split, string, string, string, string][];
    return rows.map(([id, run, split, family, problemKey, question, answer]) => ({ id, runId: run, split, family, problemKey, question, answer }));
  }

  /** One problem by id, with its meta: the one read of a problem row (TrajectoryRepo.getProblem serves it too). */
  problem(id: number): ProblemRow | null {
    const r = this.statements.get(PROBLEM_EPISODE_SQL.problemById).get(id) as Record<string, unknown> | undefined;
    return r ? { ...toProblem(r), meta: parseJsonColumn(r.meta_json as string | null, null) } : null;
  }

  /** The run's problem with this stable id, by the unique (run_id, split, problem_key) index. */
  problemByKey(runId: number, split: Split, problemKey: string): ProblemRecord | null {
    const r = this.statements.get(PROBLEM_EPISODE_SQL.problemByKey).get(runId, split, problemKey) as Record<string, unknown> | undefined;
    return r ? toProblem(r) : null;
  }

  /** The run's problems of one split, for matching by text where the ids differ. */
  problemsOfSplit(runId: number, split: Split): ProblemRecord[] {
    return (this.statements.get(PROBLEM_EPISODE_SQL.problemsOfSplit).all(runId, split) as Record<string, unknown>[]).map(toProblem);
  }

  /**
   * Each problem's episodes in a run, folded by SQLite in one pass over episodes_run_step (a third
   * of the time of folding the rows in JavaScript on 25 000 episodes): count, right ones, and the
   * outcome of the episode written last at the problem's latest step.
   */
  outcomesOfRun(runId: number): Map<number, ProblemOutcomeRecord> {
    const out = new Map<number, ProblemOutcomeRecord>();
    const rows = this.statements.get(PROBLEM_EPISODE_SQL.outcomesOfRun).raw().all(runId) as [number, number, number, number, number, number | null][];
    for (const [problemId, episodes, solved, , lastStep, correct] of rows) out.set(problemId, { episodes, solved, lastStep, lastCorrect: boolColumn(correct) });
    return out;
  }

  /** A problem's live episodes in step order, as the browser lists episodes (the question and reference from `problem`). */
  episodesOfProblem(problem: ProblemRecord): EpisodeSummary[] {
    const rows = this.statements.get(PROBLEM_EPISODE_SQL.episodesOfProblem).all(problem.id) as Record<string, unknown>[];
    return rows.map((r) => ({ ...episodeColumns(r), question: problem.question, reference: problem.answer, turnCount: r.turn_count as number }));
  }

  /** The run and problem of a turn's episode; null for no such turn, problemId null for a turn outside any episode. */
  problemOfTurn(turnId: number): { runId: number; problemId: number | null } | null {
    const r = this.statements.get(PROBLEM_EPISODE_SQL.episodeOfTurn).get(turnId) as { run_id: number; problem_id: number | null } | undefined;
    return r ? { runId: r.run_id, problemId: r.problem_id } : null;
  }
}
