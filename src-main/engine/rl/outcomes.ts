/**
 * What a reward reads as a turn's outcome, in one place for training and for the counterfactual
 * credit of issue 40 (rl/counterfactual.ts): the chains of an episode (Solver → Verifier →
 * Corrector paths through its tree), each turn's trajectory outcome over them, and the rule that
 * picks, per reward scheme, the outcome the scheme is given. training/scoring.ts and
 * training/rollout.ts call these, so rewards recomputed from stored turns follow the same rule.
 */
import type { Role } from '#shared/agents';
import { computeRewards, type RewardOptions, type RewardTurn, type TurnReward } from './rewards';

/** A turn of an episode as the chains read it: its role and the position of the turn it read. */
export interface TreeTurn {
  role: Role;
  /** Position (in the episode's turn list) of the turn it read; null for a Solver sample. */
  parent: number | null;
}

/**
 * The chains of an episode: every path from a verified Solver turn down to a leaf, by position.
 * With no Verifier turn at all (rounds = 0) every Solver turn is its own chain.
 */
export function episodeChains(turns: readonly TreeTurn[]): number[][] {
  const children = new Map<number, number[]>();
  turns.forEach((t, index) => {
    if (t.parent === null) return;
    const list = children.get(t.parent) ?? [];
    list.push(index);
    children.set(t.parent, list);
  });
  const chains: number[][] = [];
  const walk = (index: number, path: number[]) => {
    const next = children.get(index) ?? [];
    if (next.length === 0) {
      chains.push([...path, index]);
      return;
    }
    for (const child of next) walk(child, [...path, index]);
  };
  const solverTurns = turns.map((t, index) => ({ t, index })).filter(({ t }) => t.role === 'solver');
  const verified = solverTurns.filter(({ index }) => children.has(index));
  for (const root of verified.length > 0 ? verified : solverTurns) walk(root.index, []);
  return chains;
}

/** A turn as its trajectory outcome reads it. */
export interface OutcomeTurn {
  role: Role;
  correct: boolean;
}

/**
 * Whether each turn's trajectory ended right, for shared rewards. A grouped episode holds many
 * trajectories (Solver sample → Verifier → Corrector → …); giving every turn the one
 * majority-vote outcome of the episode would make every reward in a group equal, so GRPO-style
 * normalization would see σ = 0 and nothing would train. Instead a turn shares the outcome of the
 * chains that run through it (the right answer of the chain's last Solver/Corrector turn),
 * by majority when several chains pass through it; a Solver sample no Verifier selected is its
 * own trajectory.
 */
export function trajectoryOutcomesOf(turns: readonly OutcomeTurn[], chains: readonly (readonly number[])[]): boolean[] {
  const votes = turns.map(() => ({ right: 0, total: 0 }));
  for (const chain of chains) {
    const decider = [...chain].reverse().find((i) => turns[i].role !== 'verifier');
    const right = decider !== undefined && turns[decider].correct;
    for (const i of chain) {
      votes[i].total++;
      if (right) votes[i].right++;
    }
  }
  return turns.map((t, i) => (votes[i].total === 0 ? t.correct : votes[i].right * 2 >= votes[i].total));
}

/**
 * The outcome a scheme is given for an episode's turns: `shared` reads each turn's trajectory
 * outcome, every other scheme the episode's one outcome (a decoupled reward reads neither).
 */
export function schemeOutcome(scheme: string, turns: readonly OutcomeTurn[], chains: readonly (readonly number[])[], episodeCorrect: boolean): boolean | boolean[] {
  return scheme === 'shared' ? trajectoryOutcomesOf(turns, chains) : episodeCorrect;
}

/** Rewards of one prompt's turns under `scheme`, given one outcome for all or one per turn. */
export function rewardsWithOutcome(scheme: string, turns: readonly RewardTurn[], outcome: boolean | readonly boolean[], options: RewardOptions): TurnReward[] {
  return typeof outcome === 'boolean'
    ? computeRewards(scheme, turns, { correct: outcome }, options)
    : turns.map((turn, i) => computeRewards(scheme, [turn], { correct: outcome[i] }, options)[0]);
}
