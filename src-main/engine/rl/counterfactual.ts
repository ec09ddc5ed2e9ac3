/**
 * Counterfactual credit (issue 40): for the stored turns of one advantage group (one prompt's
 * turns of one step), the reward each turn would have had under every reward scheme and the
 * advantage under every normalization mode, computed by the code training uses: the reward
 * registry (rewards.ts) given each scheme's outcome (outcomes.ts), and the advantage registry
 * (advantages.ts) over the group, scaled by the turn's stored class-balance weight (that weight
 * reads the judged solutions' truth, not the rewards, so it is the same under every mode).
 *
 * Under the run's own scheme the advantages are computed from the stored rewards, so the cell of
 * the run's (scheme, mode) reproduces the stored advantage; the other schemes' rewards are
 * recomputed from the stored correctness, format and tree. A turn whose correctness is unknown
 * (an imported run that did not write it) gives null for the schemes it cannot be recomputed
 * under.
 *
 * Pure: no store, no I/O. Dr. MAS (Feng et al.): the distance between the run's advantages and
 * the agent-wise ones is the variance inflation of global normalization, on the run's own data.
 */
import { roleOf } from '#shared/agents';
import { computeAdvantages, listAdvantages, type AdvantageOptions } from './advantages';
import { episodeChains, rewardsWithOutcome, schemeOutcome } from './outcomes';
import { listRewards, type RewardOptions } from './rewards';
import type { CreditTurnRow } from '../store/credit';

/** One stored turn of a group, as the store reads it (rows of turns ⋈ rewards ⋈ advantages; store/credit.ts). */
export type StoredCreditTurn = CreditTurnRow;

/** How the run scored: its scheme, mode and their options (from its config snapshot). */
export interface CreditSettings {
  scheme: string;
  mode: string;
  rewardOptions: RewardOptions;
  advantageOptions: AdvantageOptions;
  /** The episode's stored outcome (the system's final answer right); read only by schemes that use it. */
  episodeCorrect: boolean;
}

export interface TurnCredit {
  turnId: number;
  agent: string;
  /** scheme (schemesOf the run's) → the reward under it (the run's scheme: the stored reward); null when it cannot be recomputed. */
  rewards: Record<string, number | null>;
  /** scheme → mode → the advantage under both; null where the scheme's rewards are null. */
  advantages: Record<string, Record<string, number | null>>;
  /** The run's scheme recomputed from the stored outcomes equals the stored reward (null: not recomputable). */
  rewardMatches: boolean | null;
}

/** Every scheme and mode the registries hold: what the panel and the export show. */
export function creditSchemes(): string[] {
  return listRewards();
}

/**
 * The schemes a run's credit is shown under: the registry's, and first the run's own when it is
 * not one of them (an imported run's `verl:reward`), whose rewards are then the stored ones, so
 * every mode still normalises what the run was rewarded with.
 */
export function schemesOf(runScheme: string): string[] {
  const known = creditSchemes();
  return known.includes(runScheme) ? known : [runScheme, ...known];
}

/** The run's own scheme and mode are ones the registries compute, so its cell can reproduce the stored advantage. */
export function reproducible(runScheme: string, runMode: string): boolean {
  return creditSchemes().includes(runScheme) && creditModes().includes(runMode);
}
export function creditModes(): string[] {
  return listAdvantages();
}

/**
 * Rewards of the group under `scheme`: recomputed from each turn's stored correctness and format,
 * with the scheme's outcome rule over the group's tree. null when a turn's correctness is unknown.
 */
function recomputedRewards(turns: readonly StoredCreditTurn[], scheme: string, settings: CreditSettings): number[] | null {
  if (turns.some((t) => t.correct === null)) return null;
  const position = new Map(turns.map((t, i) => [t.turnId, i]));
  const tree = turns.map((t) => ({ role: roleOf(t.agent), parent: t.parentTurnId === null ? null : (position.get(t.parentTurnId) ?? null), correct: t.correct === true }));
  const outcome = schemeOutcome(scheme, tree, episodeChains(tree), settings.episodeCorrect);
  const rewardTurns = turns.map((t, i) => ({ agent: t.agent, role: tree[i].role, correct: tree[i].correct, formatValid: t.formatValid }));
  return rewardsWithOutcome(scheme, rewardTurns, outcome, settings.rewardOptions).map((r) => r.value);
}

/** Advantages of the group's rewards under `mode`, times each turn's stored weight. */
function advantagesOf(turns: readonly StoredCreditTurn[], rewards: readonly number[], mode: string, options: AdvantageOptions): number[] {
  const normalized = computeAdvantages(
    turns.map((t, i) => ({ agent: t.agent, reward: rewards[i], groupKey: t.groupKey })),
    mode,
    options,
  );
  return normalized.map((a, i) => a.value * turns[i].weight);
}

/**
 * The counterfactual credit of every turn of one group, in the input order. `turns` must be the
 * whole group (every trained turn of the prompt at that step, each with a parent in the list or
 * none), as training scored it.
 */
export function counterfactualGroup(turns: readonly StoredCreditTurn[], settings: CreditSettings): TurnCredit[] {
  const schemes = schemesOf(settings.scheme);
  const modes = creditModes();
  const rewardsBy = new Map<string, number[] | null>();
  for (const scheme of schemes) rewardsBy.set(scheme, scheme === settings.scheme ? turns.map((t) => t.reward) : recomputedRewards(turns, scheme, settings));
  const own = creditSchemes().includes(settings.scheme) ? recomputedRewards(turns, settings.scheme, settings) : null;
  const advantagesBy = new Map<string, number[] | null>();
  for (const scheme of schemes) {
    const rewards = rewardsBy.get(scheme)!;
    for (const mode of modes) advantagesBy.set(`${scheme}\u0000${mode}`, rewards === null ? null : advantagesOf(turns, rewards, mode, settings.advantageOptions));
  }
  return turns.map((t, i) => ({
    turnId: t.turnId,
    agent: t.agent,
    rewards: Object.fromEntries(schemes.map((s) => [s, rewardsBy.get(s)?.[i] ?? null])),
    advantages: Object.fromEntries(schemes.map((s) => [s, Object.fromEntries(modes.map((m) => [m, advantagesBy.get(`${s}\u0000${m}`)?.[i] ?? null]))])),
    rewardMatches: own === null ? null : Math.abs(own[i] - t.reward) <= 1e-9,
  }));
}
