/**
 * Statistics over seeds. Runs of one configuration differ only by seed, so the spread of a
 * group is the seed-to-seed spread; everything here is plain arithmetic on a few numbers.
 * Conventions: std is the unbiased sample std (N − 1), the usual choice for "± std over
 * seeds"; a group of one has std 0 and no confidence interval (null), not a made-up one.
 */
import type { CompareStats } from '#shared/contract';
import { maxNumber, minNumber } from '../util/arrays';

/** A metric over a group's runs: the StudioApi's CompareStats (one definition). */
export type Stats = CompareStats;

// Two-sided 95% Student-t critical values t(0.975, df) for df = 1..30; beyond, the normal 1.96.
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export function tCritical95(df: number): number {
  if (df < 1) return Number.NaN;
  return df <= T975.length ? T975[df - 1] : 1.96;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Stats of the finite values given; null when there are none (missing metrics stay missing). */
export function stats(values: readonly (number | null | undefined)[]): Stats | null {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const n = xs.length;
  if (n === 0) return null;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const std = n > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
  return {
    n,
    mean,
    std,
    min: minNumber(xs),
    max: maxNumber(xs),
    median: median(xs),
    ci95: n > 1 ? (tCritical95(n - 1) * std) / Math.sqrt(n) : null,
  };
}

export type BandKind = 'minmax' | 'std' | 'ci95';
export const BAND_KINDS: readonly BandKind[] = ['minmax', 'std', 'ci95'];

/** The band drawn around a group mean: [min, max], mean ± std, or mean ± 95% CI half-width. */
export function bandOf(s: Stats, kind: BandKind): [number, number] {
  if (kind === 'minmax') return [s.min, s.max];
  const half = kind === 'std' ? s.std : (s.ci95 ?? 0);
  return [s.mean - half, s.mean + half];
}

/** n choose k, exact for the small counts of seeds. */
export function binomial(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= Math.min(k, n - k); i++) r = (r * (n - Math.min(k, n - k) + i)) / i;
  return Math.round(r);
}

export interface SpreadTest {
  /** True when the seed ranges do not overlap (see exceedsSeedSpread); null when either group has < 2 seeds. */
  exceeds: boolean | null;
  /**
   * Probability that two groups of these sizes come out fully separated by chance if the
   * configuration made no difference (every ordering of the seeds equally likely):
   * 2 / C(nA + nB, nA). 1/3 for 2 vs 2 seeds, 1/10 for 3 vs 3, 1/35 for 4 vs 4.
   */
  chance: number | null;
}

/**
 * THE SPREAD RULE. A difference between group A and the baseline group B *exceeds the seed
 * spread* when both have at least two seeds and their ranges over seeds do not overlap:
 * min(A) > max(B) or max(A) < min(B) — every seed of one configuration beat every seed of the
 * other. It is descriptive, not a significance test: with 2 seeds a side, no-effect data pass it
 * one time in three, which `chance` reports next to it so nobody reads it as more than it is.
 * Ties (touching ranges) do not exceed.
 */
export function exceedsSeedSpread(a: readonly number[], b: readonly number[]): SpreadTest {
  const xa = a.filter(Number.isFinite);
  const xb = b.filter(Number.isFinite);
  if (xa.length < 2 || xb.length < 2) return { exceeds: null, chance: null };
  const separated = minNumber(xa) > maxNumber(xb) || maxNumber(xa) < minNumber(xb);
  return { exceeds: separated, chance: 2 / binomial(xa.length + xb.length, xa.length) };
}
