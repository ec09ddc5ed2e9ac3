/**
 * Reads for counterfactual credit (issue 40): the stored turns of one advantage group (the
 * group a turn was normalised in: its episode's trained turns with the same group key, of the
 * same attempt), and every group of a run, streamed episode by episode in one indexed pass, so a
 * run's divergence from each alternative normalization is computed without a query per episode.
 */
import type { Database, Statement } from 'better-sqlite3';

/** One trained turn with its stored reward and advantage (rl/counterfactual.ts's StoredCreditTurn). */
export interface CreditTurnRow {
  turnId: number;
  agent: string;
  parentTurnId: number | null;
  /** Solver/Corrector: answer right; Verifier: verdict matches the truth. null: not stored. */
  correct: boolean | null;
  formatValid: boolean;
  reward: number;
  advantage: number;
  /** advantage.verifier_class_balance's weight (1 without it). */
  weight: number;
  groupKey: string;
}

/** One group: its turns by id and where they come from. */
export interface CreditGroupRows {
  runId: number;
  step: number;
  episodeId: number;
  /** The episode's stored outcome (the system's final answer right); false when not stored. */
  episodeCorrect: boolean;
  /** The run's scheme and mode as the rows name them. */
  scheme: string;
  mode: string;
  turns: CreditTurnRow[];
}

interface RawRow {
  turnId: number;
  runId: number;
  step: number;
  episodeId: number;
  episodeCorrect: number | null;
  agent: string;
  parentTurnId: number | null;
  correct: number | null;
  formatValid: number;
  reward: number;
  scheme: string;
  advantage: number;
  mode: string;
  weight: number | null;
  groupKey: string;
}

const COLUMNS = `t.id AS turnId, t.run_id AS runId, t.step, t.episode_id AS episodeId, e.correct AS episodeCorrect, t.agent,
  t.parent_turn_id AS parentTurnId, t.correct, t.format_valid AS formatValid, r.value AS reward, r.scheme,
  a.value AS advantage, a.mode, a.weight, a.group_key AS groupKey`;
const FROM = `FROM turns t JOIN rewards r ON r.turn_id = t.id JOIN advantages a ON a.turn_id = t.id JOIN episodes e ON e.id = t.episode_id`;

const toTurn = (r: RawRow): CreditTurnRow => ({
  turnId: r.turnId,
  agent: r.agent,
  parentTurnId: r.parentTurnId,
  correct: r.correct === null ? null : r.correct !== 0,
  formatValid: r.formatValid !== 0,
  reward: r.reward,
  advantage: r.advantage,
  weight: r.weight ?? 1,
  groupKey: r.groupKey,
});

function groupOf(rows: RawRow[]): CreditGroupRows {
  const head = rows[0];
  return { runId: head.runId, step: head.step, episodeId: head.episodeId, episodeCorrect: head.episodeCorrect === 1, scheme: head.scheme, mode: head.mode, turns: rows.map(toTurn) };
}

export class CreditRepo {
  private readonly turnStmt: Statement;
  private readonly membersStmt: Statement;
  private readonly runStmt: Statement;

  constructor(db: Database) {
    this.turnStmt = db.prepare(`SELECT t.episode_id AS episodeId, a.group_key AS groupKey, t.superseded_by AS supersededBy ${FROM} WHERE t.id = ?`);
    // A group is one prompt's turns of one step (training/scoring.ts: the key is per episode), so the episode index finds them.
    this.membersStmt = db.prepare(`SELECT ${COLUMNS} ${FROM} WHERE t.episode_id = ? AND a.group_key = ? AND t.superseded_by IS ? ORDER BY t.id`);
    // turns_run_step serves the range; the sort by (episode, id) keeps each group's rows together.
    this.runStmt = db.prepare(`SELECT ${COLUMNS} ${FROM} WHERE t.run_id = ? AND t.superseded_by IS NULL ORDER BY t.episode_id, a.group_key, t.id`);
  }

  /** The group turn `turnId`'s advantage was computed in, or null when it has no advantage (a held-out turn, or no such turn). */
  groupOfTurn(turnId: number): CreditGroupRows | null {
    const turn = this.turnStmt.get(turnId) as { episodeId: number; groupKey: string; supersededBy: number | null } | undefined;
    if (!turn) return null;
    const rows = this.membersStmt.all(turn.episodeId, turn.groupKey, turn.supersededBy) as RawRow[];
    return rows.length === 0 ? null : groupOf(rows);
  }

  /** Every group of the run's live attempt, episode by episode (ascending id), each once. */
  *runGroups(runId: number): Generator<CreditGroupRows> {
    let current: RawRow[] = [];
    for (const row of this.runStmt.iterate(runId) as IterableIterator<RawRow>) {
      const head = current[0];
      if (head && (head.episodeId !== row.episodeId || head.groupKey !== row.groupKey)) {
        yield groupOf(current);
        current = [];
      }
      current.push(row);
    }
    if (current.length > 0) yield groupOf(current);
  }
}
