/**
 * Replays (issue 40, schema v11): chains played again with another checkpoint or an endpoint,
 * kept in their own tables apart from the run's episodes, turns, rewards and metrics, which a
 * replay never writes.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { ReplayDetail, ReplaySummary, ReplayTurn } from '#shared/contract';
import type { TurnRecord } from './trajectories';
import { camelColumns } from './columns';

export interface NewReplay {
  runId: number;
  episodeId: number | null;
  problemId: number | null;
  question: string;
  reference: string | null;
  model: unknown;
  modelLabel: string;
  decoding: 'greedy' | 'sampled';
  seed: number;
  reproducible: boolean | null;
  reproducibleReason: string | null;
  storedSeconds: number | null;
  createdAt: number;
}

export interface ReplayEnd {
  status: 'done' | 'failed';
  error: string | null;
  matchesStored: boolean | null;
  finalAnswer: string | null;
  correct: boolean | null;
  seconds: number;
}

/** A replays row as SELECT reads it: the summary's fields, with SQLite's 0/1 where it has booleans. */
type ReplayRecord = Omit<ReplaySummary, 'reproducible' | 'matchesStored' | 'correct'> & {
  reference: string | null;
  reproducible: number | null;
  matchesStored: number | null;
  correct: number | null;
};

/** A replay_turns row: a turns row's texts and judgement (trajectories.ts's TurnRecord), its place and its match. */
interface ReplayTurnRecord extends Pick<TurnRecord, 'agent' | 'round' | 'prompt' | 'text' | 'token_count' | 'parsed' | 'correct' | 'format_valid'> {
  idx: number;
  same_as_stored: number | null;
}

const flag = (v: number | null): boolean | null => (v === null ? null : v === 1);
const bit = (v: boolean | null): number | null => (v === null ? null : v ? 1 : 0);

function toSummary({ reference: _reference, ...r }: ReplayRecord): ReplaySummary {
  return { ...r, reproducible: flag(r.reproducible), matchesStored: flag(r.matchesStored), correct: flag(r.correct) };
}

const COLUMNS = camelColumns(['id', 'run_id', 'episode_id', 'problem_id', 'question', 'reference', 'decoding', 'seed', 'status', 'error', 'reproducible', 'reproducible_reason', 'matches_stored', 'final_answer', 'correct', 'seconds', 'stored_seconds', 'created_at'], 'r');
const SELECT = `SELECT ${COLUMNS}, r.model_label AS model, (SELECT COUNT(*) FROM replay_turns t WHERE t.replay_id = r.id) AS turnCount FROM replays r`;

export class ReplaysRepo {
  private readonly insertStmt: Statement;
  private readonly turnStmt: Statement;
  private readonly endStmt: Statement;

  constructor(private readonly db: Database) {
    this.insertStmt = db.prepare(`INSERT INTO replays (run_id, episode_id, problem_id, question, reference, model_json, model_label, decoding, seed, status, reproducible, reproducible_reason, stored_seconds, created_at)
      VALUES (@runId, @episodeId, @problemId, @question, @reference, @modelJson, @modelLabel, @decoding, @seed, 'running', @reproducible, @reproducibleReason, @storedSeconds, @createdAt)`);
    this.turnStmt = db.prepare(`INSERT INTO replay_turns (replay_id, idx, agent, round, prompt, text, token_count, parsed, correct, format_valid, same_as_stored)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.endStmt = db.prepare('UPDATE replays SET status = ?, error = ?, matches_stored = ?, final_answer = ?, correct = ?, seconds = ? WHERE id = ?');
  }

  create(r: NewReplay): number {
    const { model, ...rest } = r;
    return Number(this.insertStmt.run({ ...rest, modelJson: JSON.stringify(model), reproducible: bit(r.reproducible) }).lastInsertRowid);
  }

  addTurn(replayId: number, t: ReplayTurn): void {
    this.turnStmt.run(replayId, t.index, t.agent, t.round, t.prompt, t.text, t.tokenCount, t.parsed, bit(t.correct), t.formatValid ? 1 : 0, bit(t.sameAsStored));
  }

  finish(replayId: number, end: ReplayEnd): void {
    this.endStmt.run(end.status, end.error, bit(end.matchesStored), end.finalAnswer, bit(end.correct), end.seconds, replayId);
  }

  get(replayId: number): ReplayDetail | null {
    const row = this.db.prepare(`${SELECT} WHERE r.id = ?`).get(replayId) as ReplayRecord | undefined;
    if (!row) return null;
    const turns = (this.db.prepare('SELECT * FROM replay_turns WHERE replay_id = ? ORDER BY idx').all(replayId) as ReplayTurnRecord[]).map(
      (t): ReplayTurn => ({ index: t.idx, agent: t.agent, round: t.round, prompt: t.prompt, text: t.text, tokenCount: t.token_count, parsed: t.parsed, correct: flag(t.correct), formatValid: t.format_valid === 1, sameAsStored: flag(t.same_as_stored) }),
    );
    return { replay: toSummary(row), reference: row.reference, turns };
  }

  /** Every checkpoint row of every run (replays may play any run's checkpoint), newest run first. */
  allCheckpoints(): { runId: number; runName: string; step: number; policyId: string; path: string }[] {
    return this.db.prepare('SELECT c.run_id AS runId, r.name AS runName, c.step, c.policy_id AS policyId, c.path FROM checkpoints c JOIN runs r ON r.id = c.run_id ORDER BY c.run_id DESC, c.step DESC, c.id').all() as { runId: number; runName: string; step: number; policyId: string; path: string }[];
  }

  list(runId: number): ReplaySummary[] {
    return (this.db.prepare(`${SELECT} WHERE r.run_id = ? ORDER BY r.id DESC`).all(runId) as ReplayRecord[]).map(toSummary);
  }
}
