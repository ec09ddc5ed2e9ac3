/**
 * Counterfactual credit over the store (issue 40): a turn's credit from its stored group, and a
 * run's divergence from every alternative, each group read once (store/credit.ts) and computed by
 * counterfactual.ts. The run's reward and advantage options come from its config snapshot, as
 * training read them; a snapshot that no longer parses falls back to the defaults, which is what
 * a run without those fields trained with.
 */
import type { CounterfactualCredit, CreditDivergence } from '#shared/contract';
import { checkRunConfig } from '../config/load';
import { CreditRepo, type CreditGroupRows, type Store } from '../store';
import { DEFAULT_ADVANTAGE_OPTIONS, type AdvantageOptions } from './advantages';
import { counterfactualGroup, creditModes, reproducible, schemesOf, type CreditSettings, type TurnCredit } from './counterfactual';
import { CreditDivergenceAccumulator } from './credit-divergence';
import { DEFAULT_REWARD_OPTIONS, type RewardOptions } from './rewards';

/** The reward and advantage options a run scored with, read from its stored config. */
export function scoringOptionsOf(config: Record<string, unknown>): { rewardOptions: RewardOptions; advantageOptions: AdvantageOptions } {
  const checked = checkRunConfig(config);
  if (!checked.ok) return { rewardOptions: DEFAULT_REWARD_OPTIONS, advantageOptions: DEFAULT_ADVANTAGE_OPTIONS };
  const { reward, advantage } = checked.config;
  return {
    rewardOptions: { formatPenalty: reward.format_penalty, roleScale: reward.scale },
    advantageOptions: { std: advantage.std, singleSample: advantage.single_sample, eps: advantage.eps },
  };
}

/** Credit of every turn of one stored group; the scheme and mode are the rows' own. */
export function creditOfGroup(group: CreditGroupRows, options: ReturnType<typeof scoringOptionsOf>): TurnCredit[] {
  const settings: CreditSettings = { scheme: group.scheme, mode: group.mode, episodeCorrect: group.episodeCorrect, ...options };
  return counterfactualGroup(group.turns, settings);
}

/** One turn's counterfactual credit, or null when the turn has no advantage (none such, or held out). */
export function turnCounterfactual(store: Store, turnId: number): CounterfactualCredit | null {
  const group = new CreditRepo(store.db).groupOfTurn(turnId);
  if (!group) return null;
  const run = store.runs.get(group.runId);
  const credit = creditOfGroup(group, scoringOptionsOf(run?.config ?? {}));
  const index = group.turns.findIndex((t) => t.turnId === turnId);
  const own = group.turns[index];
  const mine = credit[index];
  const unknown = Object.values(mine.rewards).some((v) => v === null);
  return {
    turnId,
    runId: group.runId,
    step: group.step,
    episodeId: group.episodeId,
    agent: own.agent,
    scheme: group.scheme,
    mode: group.mode,
    schemes: schemesOf(group.scheme),
    modes: creditModes(),
    reproducible: reproducible(group.scheme, group.mode),
    stored: { reward: own.reward, advantage: own.advantage, weight: own.weight },
    rewards: mine.rewards,
    advantages: mine.advantages,
    rewardMatches: mine.rewardMatches,
    group: group.turns.map((t) => ({ turnId: t.turnId, agent: t.agent, reward: t.reward, advantage: t.advantage })),
    note: noteOf(group.scheme, group.mode, unknown),
  };
}

function noteOf(scheme: string, mode: string, unknownCorrectness: boolean): string | null {
  const notes: string[] = [];
  if (!reproducible(scheme, mode)) notes.push(`the run's ${scheme} · ${mode} is not a scheme and mode the Studio computes (a run made elsewhere): every mode is applied to its stored rewards instead`);
  if (unknownCorrectness) notes.push('some turns of the group have no stored correctness, so the Studio\'s schemes cannot be recomputed for them');
  return notes.length ? `${notes.join('; ')}.` : null;
}

/** The run's divergence from every alternative, per step and agent; null values where a run has no trained turns. */
export function runCreditDivergence(store: Store, runId: number): CreditDivergence {
  const started = performance.now();
  const run = store.runs.get(runId);
  const options = scoringOptionsOf(run?.config ?? {});
  let accumulator: CreditDivergenceAccumulator | null = null;
  for (const group of new CreditRepo(store.db).runGroups(runId)) {
    accumulator ??= new CreditDivergenceAccumulator(group.scheme, group.mode, schemesOf(group.scheme), creditModes());
    accumulator.add(group.step, group.turns, creditOfGroup(group, options));
  }
  if (!accumulator) {
    const checked = checkRunConfig(run?.config ?? {});
    const scheme = checked.ok ? checked.config.reward.scheme : '';
    const mode = checked.ok ? checked.config.advantage.mode : '';
    accumulator = new CreditDivergenceAccumulator(scheme, mode, schemesOf(scheme), creditModes());
  }
  return accumulator.result(runId, (performance.now() - started) / 1000);
}
