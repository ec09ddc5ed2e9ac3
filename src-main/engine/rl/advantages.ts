/**
 * Advantage normalization modes by name (verl core_algos style: pure functions in a registry; an
 * unknown name fails with the list of known ones).
 *
 * Shapes. An `AdvantageFn` reads the turns of ONE group: `turns[i] = { agent, reward }`, i = 0…N−1,
 * any agents in any order, and returns `N` results in the same order:
 * `{ value: A_i, mu: the baseline subtracted, sigma: the scale divided by (before ε), groupKey }`.
 *
 * Group key. One group is one prompt: every turn generated for one problem in one step, across all
 * agents (solver, verifier1, corrector1, …). Agent k's statistics are over agent k's turns in that
 * group, whichever selected input each turn read; this is Dr. MAS's "samples of agent k for the
 * same prompt". `computeAdvantages` groups a batch by any key the caller gives (the problem key by
 * default in the pipeline; a finer key such as problem/input turn works the same way).
 *
 * Modes (Dr. MAS, Feng et al., Table 3; μ, σ over the whole group, μ_k, σ_k over agent k's turns):
 * | mode       | A_i                    | note                                                    |
 * |------------|------------------------|---------------------------------------------------------|
 * | global     | (R_i − μ) / (σ + ε)    | vanilla GRPO over the multi-agent group                 |
 * | agentwise  | (R_i − μ_k) / (σ_k + ε)| Dr. MAS's fix                                           |
 * | agent-mean | (R_i − μ_k) / (σ + ε)  | ablation: agent baseline, shared scale                  |
 * | agent-std  | (R_i − μ) / (σ_k + ε)  | ablation: shared baseline, agent scale                  |
 * | no-std     | R_i − μ_k              | Dr. GRPO (Liu et al. 2025): no division; σ reported as 1 |
 *
 * Conventions.
 * - std: `unbiased` divides by N − 1 (torch.std, the Dr. MAS / verl reference code; the default);
 *   `population` divides by N (Dr. MAS Eq. 5).
 * - ε (default 1e-6) is added to σ, not to σ². With σ_k = 0 (agent k's rewards all equal) and a
 *   baseline that is not μ_k (`agent-std`), A = (R − μ)/ε is huge: that is the reference formula,
 *   kept on purpose so the ablation shows why agent-wise scales need agent-wise baselines.
 * - A statistic over a single sample (a group of one, or an agent with one turn in its group):
 *   `zero` (default): no baseline, no signal, so every turn that uses it gets A = 0 (reported
 *   μ = that sample's reward, σ = 0 when the one-sample statistic is a σ).
 *   `verl`: the reference code's rule, mean 0 and std 1 for that statistic, so agentwise and no-std
 *   give the raw reward (divided by 1 + ε). The two rules agree everywhere else.
 * Rewards must be finite; an empty group returns [].
 */
import { Registry } from '../util/registry';
import {
  ADVANTAGE_MODES,
  AdvantageSchema,
  SINGLE_SAMPLE_RULES,
  STD_CONVENTIONS,
} from '../config/schema';

export type AdvantageMode = (typeof ADVANTAGE_MODES)[number];
export type StdConvention = (typeof STD_CONVENTIONS)[number];
export type SingleSampleRule = (typeof SINGLE_SAMPLE_RULES)[number];

export interface AdvantageTurn {
  agent: string;
  reward: number;
}

export interface AdvantageOptions {
  std: StdConvention;
  singleSample: SingleSampleRule;
  eps: number;
}

export interface TurnAdvantage {
  value: number;
  /** The baseline subtracted. */
  mu: number;
  /** The scale divided by, before ε is added (1 when the mode does not divide). */
  sigma: number;
  groupKey: string;
  /** A factor `value` was multiplied by after normalization (classBalanceWeights); absent means 1. */
  weight?: number;
}

export type AdvantageFn = (turns: readonly AdvantageTurn[], options: AdvantageOptions, groupKey?: string) => TurnAdvantage[];

const schemaDefaults = AdvantageSchema.parse({});
export const DEFAULT_ADVANTAGE_OPTIONS: AdvantageOptions = {
  std: schemaDefaults.std,
  singleSample: schemaDefaults.single_sample,
  eps: schemaDefaults.eps,
};

/** Per-group statistics, laid out as arrays: index 0 is the whole group, index 1 + k is agent k. */
interface GroupStatistics {
  /** turns[i] belongs to agent slot agentSlot[i] (≥ 1). */
  agentSlot: Int32Array;
  count: Float64Array;
  mean: Float64Array;
  std: Float64Array;
  agents: string[];
}

function groupStatistics(turns: readonly AdvantageTurn[], convention: StdConvention): GroupStatistics {
  const agents: string[] = [];
  const slotOf = new Map<string, number>();
  const agentSlot = new Int32Array(turns.length);
  turns.forEach((turn, i) => {
    if (!Number.isFinite(turn.reward)) throw new Error(`advantage: reward of turn ${i} (${turn.agent}) is not finite: ${turn.reward}`);
    let slot = slotOf.get(turn.agent);
    if (slot === undefined) {
      agents.push(turn.agent);
      slot = agents.length;
      slotOf.set(turn.agent, slot);
    }
    agentSlot[i] = slot;
  });
  const slots = agents.length + 1;
  const count = new Float64Array(slots);
  const sum = new Float64Array(slots);
  for (let i = 0; i < turns.length; i++) {
    count[0] += 1;
    sum[0] += turns[i].reward;
    count[agentSlot[i]] += 1;
    sum[agentSlot[i]] += turns[i].reward;
  }
  const mean = sum.map((s, slot) => s / count[slot]);
  // Two passes (mean, then squared deviations) avoid the cancellation of E[R²] − E[R]².
  const squares = new Float64Array(slots);
  for (let i = 0; i < turns.length; i++) {
    squares[0] += (turns[i].reward - mean[0]) ** 2;
    squares[agentSlot[i]] += (turns[i].reward - mean[agentSlot[i]]) ** 2;
  }
  const std = squares.map((sq, slot) => {
    const divisor = convention === 'unbiased' ? count[slot] - 1 : count[slot];
    return divisor > 0 ? Math.sqrt(sq / divisor) : 0; // a one-sample σ is replaced by the single-sample rule
  });
  return { agentSlot, count, mean, std, agents };
}

/** Where a mode takes its baseline and its scale from. */
export interface ModeShape {
  baseline: 'group' | 'agent';
  scale: 'group' | 'agent' | 'none';
}

/**
 * Each built-in mode's baseline and scale (Dr. MAS Table 3): the one table the registry below and
 * the advantage explanation (explain.ts) both read. A mode of another shape registers its own
 * function and has no explanation page.
 */
export const MODE_SHAPES: Readonly<Record<AdvantageMode, ModeShape>> = {
  global: { baseline: 'group', scale: 'group' },
  agentwise: { baseline: 'agent', scale: 'agent' },
  'agent-mean': { baseline: 'agent', scale: 'group' },
  'agent-std': { baseline: 'group', scale: 'agent' },
  'no-std': { baseline: 'agent', scale: 'none' },
};

function normalize(shape: ModeShape): AdvantageFn {
  return (turns, options, groupKey = '') => {
    if (turns.length === 0) return [];
    if (!(options.eps >= 0)) throw new Error(`advantage: eps must be ≥ 0, got ${options.eps}`);
    const stats = groupStatistics(turns, options.std);
    const verl = options.singleSample === 'verl';
    return turns.map((turn, i) => {
      const baselineSlot = shape.baseline === 'group' ? 0 : stats.agentSlot[i];
      const scaleSlot = shape.scale === 'none' ? -1 : shape.scale === 'group' ? 0 : stats.agentSlot[i];
      const baselineSingle = stats.count[baselineSlot] === 1;
      const scaleSingle = scaleSlot >= 0 && stats.count[scaleSlot] === 1;
      const mu = baselineSingle && verl ? 0 : stats.mean[baselineSlot];
      const sigma = scaleSlot < 0 ? 1 : scaleSingle ? (verl ? 1 : 0) : stats.std[scaleSlot];
      if (!verl && (baselineSingle || scaleSingle)) return { value: 0, mu, sigma, groupKey };
      const value = scaleSlot < 0 ? turn.reward - mu : (turn.reward - mu) / (sigma + options.eps);
      return { value, mu, sigma, groupKey };
    });
  };
}

const registry = new Registry<AdvantageFn>('advantage mode', 'modes');

/** Adds a mode; a name can be registered once (a silent override would change old runs' meaning). */
export const registerAdvantage = (name: string, fn: AdvantageFn): void => registry.register(name, fn);
export const getAdvantage = (name: string): AdvantageFn => registry.get(name);
export const listAdvantages = (): string[] => registry.names();

for (const [mode, shape] of Object.entries(MODE_SHAPES)) registerAdvantage(mode, normalize(shape));

// The config schema and this registry must agree on the built-in names (the schema's list lives in
// the vocabulary leaf, below this folder, so it cannot read the registry).
for (const mode of ADVANTAGE_MODES) getAdvantage(mode);

/**
 * Advantages for a batch holding many groups: turns are grouped by `groupKey`, each group is
 * normalized alone, and results come back in the input order.
 */
export function computeAdvantages(
  turns: readonly (AdvantageTurn & { groupKey: string })[],
  mode: string,
  options: AdvantageOptions = DEFAULT_ADVANTAGE_OPTIONS,
): TurnAdvantage[] {
  const fn = getAdvantage(mode);
  const members = new Map<string, number[]>();
  turns.forEach((turn, i) => {
    const list = members.get(turn.groupKey);
    if (list) list.push(i);
    else members.set(turn.groupKey, [i]);
  });
  const out = new Array<TurnAdvantage>(turns.length);
  for (const [groupKey, indices] of members) {
    const results = fn(
      indices.map((i) => turns[i]),
      options,
      groupKey,
    );
    indices.forEach((turnIndex, j) => (out[turnIndex] = results[j]));
  }
  return out;
}

/**
 * Dr. MAS Lemma 4.2: under global normalization the second moment of agent k's gradient is inflated,
 * relative to agent-wise normalization, by F_k = (σ_k² + (μ_k − μ)²) / σ² over one group.
 *
 * Conventions and edge cases:
 * - Population variances (1/N), as in the lemma; then Σ_k n_k F_k / N = 1 exactly (law of total
 *   variance): the factors, weighted by sample counts, average to 1, and one agent's F_k can reach
 *   N / n_k (few samples and a far mean).
 * - An agent with one turn has σ_k = 0 and F_k = (μ_k − μ)² / σ².
 * - σ = 0 (every reward in the group equal) makes every term 0/0; both normalizations then give
 *   zero advantages, so there is no inflation and every F_k is reported as 1 (keeps the identity).
 * - No ε: this is a diagnostic ratio, not a normalization.
 * Returns agent → F_k for the agents present, in first-seen order; {} for an empty group.
 */
export function inflationFactors(turns: readonly AdvantageTurn[]): Record<string, number> {
  if (turns.length === 0) return {};
  const stats = groupStatistics(turns, 'population');
  const pooledVariance = stats.std[0] ** 2;
  const factors: Record<string, number> = {};
  stats.agents.forEach((agent, k) => {
    const slot = k + 1;
    factors[agent] = pooledVariance === 0 ? 1 : (stats.std[slot] ** 2 + (stats.mean[slot] - stats.mean[0]) ** 2) / pooledVariance;
  });
  return factors;
}

/** The mean of `inflationFactors` per agent over the groups of a batch in which the agent appears. */
export function meanInflationFactors(turns: readonly (AdvantageTurn & { groupKey: string })[]): Record<string, number> {
  const groups = new Map<string, AdvantageTurn[]>();
  for (const turn of turns) {
    const list = groups.get(turn.groupKey);
    if (list) list.push(turn);
    else groups.set(turn.groupKey, [turn]);
  }
  const sums = new Map<string, { total: number; groups: number }>();
  for (const group of groups.values()) {
    for (const [agent, factor] of Object.entries(inflationFactors(group))) {
      const entry = sums.get(agent) ?? { total: 0, groups: 0 };
      entry.total += factor;
      entry.groups += 1;
      sums.set(agent, entry);
    }
  }
  return Object.fromEntries([...sums].map(([agent, { total, groups: n }]) => [agent, total / n]));
}

/**
 * Class-balanced weights for one agent's turns of one step: turn i judged an input of class
 * `classes[i]` (for a Verifier: true when the solution it judged is right, false when wrong, null
 * when unknown). With both classes present each class gets the same total weight:
 *   w_c = N / (2 · N_c),  N = N_true + N_false,
 * so Σ w over the known turns stays N (the mean weight is 1) and a class that is rare pulls as
 * hard as a common one. This is the "balanced" class weight of logistic regression (King & Zeng
 * 2001; scikit-learn's class_weight="balanced" with two classes), applied to policy-gradient
 * advantages after Dr. MAS's normalization. Unknown turns and a step with one class only get
 * weight 1 (nothing to balance). Why a Verifier needs it (issue #14): MarsRL's adaptive selection
 * assumes wrong solutions are rare, but a weak Solver makes right ones rare; balanced selection
 * then cannot balance (a group with no right answer gives two wrong ones), and the Verifier's
 * cheapest reward is to reject everything.
 */
export function classBalanceWeights(classes: readonly (boolean | null)[]): number[] {
  let positives = 0;
  let negatives = 0;
  for (const c of classes) {
    if (c === true) positives++;
    else if (c === false) negatives++;
  }
  if (positives === 0 || negatives === 0) return classes.map(() => 1);
  const total = positives + negatives;
  return classes.map((c) => (c === null ? 1 : total / (2 * (c ? positives : negatives))));
}
