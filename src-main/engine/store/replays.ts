/**
 * Replays (issue 40, schema v11): chains played again with another checkpoint or an endpoint,
 * kept in their own tables apart from the run's episodes, turns, rewards and metrics, which a
 * replay never writes.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { ReplayDetail, ReplaySummary, ReplayTurn } from '#shared/contract';
import type { TurnRecord } from './trajectories';

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

interface ReplayRecord {
  id: number;
  run_id: number;
  episode_id: number | null;
  problem_id: number | null;
  question: string;
  reference: string | null;
  model_label: string;
  decoding: 'greedy' | 'sampled';
  seed: number;
  status: ReplaySummary['status'];
  error: string | null;
  reproducible: number | null;
  reproducible_reason: string | null;
  matches_stored: number | null;
  final_answer: string | null;
  correct: number | null;
  seconds: number | null;
  stored_seconds: number | null;
  created_at: number;
  turn_count: number;
}

/** A replay_turns row: a turns row's texts and judgement (trajectories.ts's TurnRecord), its place and its match. */
interface ReplayTurnRecord extends Pick<TurnRecord, 'agent' | 'round' | 'prompt' | 'text' | 'token_count' | 'parsed' | 'correct' | 'format_valid'> {
  idx: number;
  same_as_stored: number | null;
}

const flag = (v: number | null): boolean | null => (v === null ? null : v === 1);
const bit = (v: boolean | null): number | null => (v === null ? null : v ? 1 : 0);

function toSummary(r: ReplayRecord): ReplaySummary {
  return {
    id: r.id,
    runId: r.run_id,
    episodeId: r.episode_id,
    problemId: r.problem_id,
    question: r.question,
    model: r.model_label,
    decoding: r.decoding,
    seed: r.seed,
    status: r.status,
    error: r.error,
    reproducible: flag(r.reproducible),
    reproducibleReason: r.reproducible_reason,
    matchesStored: flag(r.matches_stored),
    finalAnswer: r.final_answer,
    correct: flag(r.correct),
    turnCount: r.turn_count,
    seconds: r.seconds,
    storedSeconds: r.stored_seconds,
    createdAt: r.created_at,
  };
}

const SELECT = 'SELECT r.*, (SELECT COUNT(*) FROM replay_turns t WHERE t.replay_id = r.id) AS turn_count FROM replays r';

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
