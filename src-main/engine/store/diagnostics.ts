/**
 * Reads that explain what a run's numbers came from (issue 35): the group a turn's advantage was
 * normalised in, the turns an episode filter matched, and the counts of each agent's outputs
 * over a run's last training steps (what an agent collapsed to one output looks like).
 */
import type { Database } from 'better-sqlite3';
import { correctorFilterTurns, verifierFilterTurn, type EpisodePageQuery } from './trajectories';

export interface AdvantageGroupMember {
  turnId: number;
  agent: string;
  reward: number;
  advantage: number;
}

export interface AdvantageGroupRows {
  turnId: number;
  agent: string;
  reward: number;
  value: number;
  mode: string;
  groupKey: string;
  mu: number;
  sigma: number;
  weight: number;
  /** Every turn of the turn's episode whose advantage has the same group key (the turn too), by id. */
  members: AdvantageGroupMember[];
}

/** Verdicts of one Verifier agent; `right*` and `wrong*` are by the truth of the solution judged. */
export interface VerifierCounts {
  agent: string;
  approvals: number;
  rejections: number;
  rightApproved: number;
  rightRejected: number;
  wrongApproved: number;
  wrongRejected: number;
}

/** Repairs of one Corrector agent: how many returned the answer they were given, by its truth. */
export interface CorrectorCounts {
  agent: string;
  repairs: number;
  unchanged: number;
  wrongInputs: number;
  wrongUnchanged: number;
}

export interface AgentOutputCounts {
  /** The training steps counted (inclusive), or null when the run has no training turns. */
  steps: [number, number] | null;
  verifiers: VerifierCounts[];
  correctors: CorrectorCounts[];
}

export class DiagnosticsRepo {
  constructor(private readonly db: Database) {}

  /** The group turn `turnId`'s advantage was computed over, or null when it has none. */
  advantageGroup(turnId: number): AdvantageGroupRows | null {
    const turn = this.db
      .prepare(
        `SELECT t.id AS turnId, t.agent, t.episode_id AS episodeId, t.superseded_by AS supersededBy, r.value AS reward,
                a.value, a.mode, a.group_key AS groupKey, a.mu, a.sigma, a.weight
           FROM turns t JOIN rewards r ON r.turn_id = t.id JOIN advantages a ON a.turn_id = t.id WHERE t.id = ?`,
      )
      .get(turnId) as (Omit<AdvantageGroupRows, 'members'> & { episodeId: number | null; supersededBy: number | null }) | undefined;
    if (!turn || turn.episodeId === null) return null;
    // A group is one prompt's turns of one step (training/scoring.ts: the key is per episode), so the
    // episode index finds them; the attempt that wrote them is the turn's own.
    const members = this.db
      .prepare(
        `SELECT t.id AS turnId, t.agent, r.value AS reward, a.value AS advantage
           FROM turns t JOIN rewards r ON r.turn_id = t.id JOIN advantages a ON a.turn_id = t.id
          WHERE t.episode_id = ? AND a.group_key = ? AND t.superseded_by IS ? ORDER BY t.id`,
      )
      .all(turn.episodeId, turn.groupKey, turn.supersededBy) as AdvantageGroupMember[];
    const { episodeId: _episode, supersededBy: _superseded, ...rest } = turn;
    return { ...rest, weight: rest.weight ?? 1, members };
  }

  /** The turns of an episode that the Verifier or Corrector episode filter matched (issue 35: highlight them). */
  matchingTurns(episodeId: number, filters: Pick<EpisodePageQuery, 'verifier' | 'corrector'>): number[] {
    const ids = new Set<number>();
    if (filters.verifier !== undefined) {
      for (const r of this.db.prepare(`SELECT v.id FROM turns v WHERE v.episode_id = ? AND ${verifierFilterTurn(filters.verifier, 'v')}`).all(episodeId) as { id: number }[]) ids.add(r.id);
    }
    if (filters.corrector !== undefined) {
      for (const r of this.db.prepare(`SELECT c.id ${correctorFilterTurns(filters.corrector)} AND c.episode_id = ?`).all(episodeId) as { id: number }[]) ids.add(r.id);
    }
    return [...ids].sort((a, b) => a - b);
  }

  /**
   * Each Verifier's verdicts and each Corrector's repairs over the last `lastSteps` training steps
   * of the live attempt. A Verifier turn's `correct` is whether its verdict matched the truth, so
   * the solution it judged was right exactly when (approve) = (correct). A Corrector's input is
   * the answer its rejecting verdict judged (the verdict's parent); "unchanged" compares the
   * parsed answers, trimmed; a repair with no readable answer is a change.
   */
  agentOutputCounts(runId: number, lastSteps: number): AgentOutputCounts {
    const last = (this.db.prepare("SELECT MAX(step) AS step FROM episodes WHERE run_id = ? AND split = 'train' AND superseded_by IS NULL").get(runId) as { step: number | null }).step;
    if (last === null) return { steps: null, verifiers: [], correctors: [] };
    const from = Math.max(0, last - lastSteps + 1);
    const inWindow = `t.run_id = @runId AND t.step BETWEEN @from AND @last AND t.superseded_by IS NULL
      AND EXISTS (SELECT 1 FROM episodes e WHERE e.id = t.episode_id AND e.split = 'train')`;
    const verifiers = this.db
      .prepare(
        `SELECT t.agent,
                SUM(t.parsed = 'approve') AS approvals, SUM(t.parsed = 'reject') AS rejections,
                SUM(t.parsed = 'approve' AND t.correct = 1) AS rightApproved, SUM(t.parsed = 'reject' AND t.correct = 0) AS rightRejected,
                SUM(t.parsed = 'approve' AND t.correct = 0) AS wrongApproved, SUM(t.parsed = 'reject' AND t.correct = 1) AS wrongRejected
           FROM turns t WHERE ${inWindow} AND t.agent LIKE 'verifier%' GROUP BY t.agent ORDER BY t.agent`,
      )
      .all({ runId, from, last }) as VerifierCounts[];
    const correctors = this.db
      .prepare(
        `SELECT t.agent, COUNT(*) AS repairs,
                SUM(t.parsed IS NOT NULL AND TRIM(t.parsed) = TRIM(i.parsed)) AS unchanged,
                SUM(i.correct = 0) AS wrongInputs,
                SUM(i.correct = 0 AND t.parsed IS NOT NULL AND TRIM(t.parsed) = TRIM(i.parsed)) AS wrongUnchanged
           FROM turns t JOIN turns v ON v.id = t.parent_turn_id JOIN turns i ON i.id = v.parent_turn_id
          WHERE ${inWindow} AND t.agent LIKE 'corrector%' GROUP BY t.agent ORDER BY t.agent`,
      )
      .all({ runId, from, last }) as CorrectorCounts[];
    return { steps: [from, last], verifiers, correctors };
  }
}
