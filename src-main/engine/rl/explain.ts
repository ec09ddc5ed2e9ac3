/**
 * A turn's advantage laid out so a reader can recompute it by hand (issue 35): the group it was
 * normalised in (its members' rewards), the baseline and scale the mode takes from it (mean, std,
 * count), the formula, and the formula with the numbers in. The statistics are recomputed here
 * from the members' stored rewards with plain loops, the conventions of advantages.ts (std:
 * unbiased N − 1 or population N; ε added to σ; a one-sample statistic by `single_sample`), so
 * the page shows what the numbers give, and says so if the stored value differs.
 */
import type { AdvantageExplanation, AdvantageStatistic } from '#shared/contract';
import type { AdvantageGroupRows } from '../store';
import { MODE_SHAPES, type AdvantageOptions, type ModeShape } from './advantages';

/** Where each mode takes its baseline and its scale: advantages.ts's table (Dr. MAS Table 3). */
const SHAPES: Readonly<Record<string, ModeShape | undefined>> = MODE_SHAPES;

/** A statistic with its working, and the whole explanation: the StudioApi's shapes (one definition). */
export type StatisticExplained = AdvantageStatistic;
export type { AdvantageExplanation };

const fmt = (x: number) => (Number.isInteger(x) ? String(x) : Number(x.toPrecision(6)).toString());

function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

function std(values: readonly number[], convention: AdvantageOptions['std']): number {
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) ** 2;
  const divisor = convention === 'unbiased' ? values.length - 1 : values.length;
  return divisor > 0 ? Math.sqrt(squares / divisor) : 0;
}

export function explainAdvantage(group: AdvantageGroupRows, options: AdvantageOptions): AdvantageExplanation {
  const shape = SHAPES[group.mode];
  if (!shape) throw new Error(`advantage mode "${group.mode}" has no explanation; known modes: ${Object.keys(SHAPES).join(', ')}`);
  const membersOf = (scope: 'group' | 'agent') => group.members.filter((m) => scope === 'group' || m.agent === group.agent);
  const verl = options.singleSample === 'verl';
  const sub = (scope: 'group' | 'agent') => (scope === 'agent' ? '_k' : '');

  const baselineMembers = membersOf(shape.baseline);
  const baselineRewards = baselineMembers.map((m) => m.reward);
  const baselineSingle = baselineMembers.length === 1;
  const mu = baselineSingle && verl ? 0 : mean(baselineRewards);
  const baseline: StatisticExplained = {
    scope: shape.baseline,
    symbol: `μ${sub(shape.baseline)}`,
    turnIds: baselineMembers.map((m) => m.turnId),
    count: baselineMembers.length,
    value: mu,
    working: `(${baselineRewards.map(fmt).join(' + ')}) / ${baselineRewards.length} = ${fmt(mean(baselineRewards))}`,
    singleSample: baselineSingle ? (verl ? 'one sample: mean taken as 0 (single_sample: verl)' : 'one sample: no baseline, so A = 0 (single_sample: zero)') : null,
  };

  let scale: StatisticExplained | null = null;
  let sigma = 1;
  let scaleSingle = false;
  if (shape.scale !== 'none') {
    const scaleMembers = membersOf(shape.scale);
    const rewards = scaleMembers.map((m) => m.reward);
    scaleSingle = scaleMembers.length === 1;
    sigma = scaleSingle ? (verl ? 1 : 0) : std(rewards, options.std);
    const m = mean(rewards);
    const divisor = options.std === 'unbiased' ? `${rewards.length} − 1` : String(rewards.length);
    scale = {
      scope: shape.scale,
      symbol: `σ${sub(shape.scale)}`,
      turnIds: scaleMembers.map((x) => x.turnId),
      count: scaleMembers.length,
      value: sigma,
      working: `√(((${rewards.map((r) => `${fmt(r)} − ${fmt(m)}`).join(')² + (')})²) / (${divisor})) = ${fmt(std(rewards, options.std))}`,
      singleSample: scaleSingle ? (verl ? 'one sample: std taken as 1 (single_sample: verl)' : 'one sample: no spread, so A = 0 (single_sample: zero)') : null,
    };
  }

  const zeroed = !verl && (baselineSingle || scaleSingle);
  const normalised = zeroed ? 0 : scale === null ? group.reward - mu : (group.reward - mu) / (sigma + options.eps);
  const weight = group.weight ?? 1;
  const recomputed = normalised * weight;
  const formula = scale === null ? `A = R − ${baseline.symbol}` : `A = (R − ${baseline.symbol}) / (${scale.symbol} + ε)`;
  const weighted = weight === 1 ? '' : ` × ${fmt(weight)} (class balance)`;
  // A weight multiplies the whole normalised value: bracket a bare difference so it reads so.
  const difference = `${fmt(group.reward)} − ${fmt(mu)}`;
  const numbers = scale === null ? (weight === 1 ? difference : `(${difference})`) : `(${difference}) / (${fmt(sigma)} + ${options.eps})`;
  const substituted = zeroed ? `A = 0 (${baseline.singleSample ?? scale?.singleSample})${weighted}` : `A = ${numbers}${weighted} = ${fmt(recomputed)}`;
  return {
    turnId: group.turnId,
    agent: group.agent,
    mode: group.mode,
    groupKey: group.groupKey,
    members: group.members,
    reward: group.reward,
    baseline,
    scale,
    std: options.std,
    eps: options.eps,
    formula,
    substituted,
    weight,
    recomputed,
    stored: group.value,
    storedMu: group.mu,
    storedSigma: group.sigma,
  };
}
