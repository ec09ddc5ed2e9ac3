/**
 * Series for overlay and group charts: each run's points on a chosen x-axis, and each group's
 * mean with a band over its runs.
 *
 * x-axes: `step` (the RL step), `wall` (seconds since the run started, as stored), `samples`
 * (samples seen: the sum over agents of `<agent>/samples` for every step up to and including
 * the point's step — the samples consumed by that step's update).
 *
 * Group bands are computed per step over the runs that have a value at that step (n is kept,
 * so a band built from fewer runs is visible as such); the x of a group point is the mean of
 * its runs' x at that step (on the step axis that is the step itself). Aligning by step rather
 * than by interpolated wall time keeps every band value an actual statistic of logged values.
 *
 * Bands are clipped to the metric's range (the catalog's: a share stays in [0, 1]): a 95% CI over
 * two seeds uses t = 12.7 and would otherwise stretch an accuracy axis to −1…4 (issue 18).
 */
import { describeMetric } from '#shared/metric-catalog';
import { minMax, type Point } from '../metrics/downsample';
import type { RunData, SeriesPoint } from './summary';
import { bandOf, stats, type BandKind } from './stats';

export type CompareXAxis = 'step' | 'wall' | 'samples';
export const COMPARE_X_AXES: readonly CompareXAxis[] = ['step', 'wall', 'samples'];

/** step → samples seen up to and including that step, from a run's `<agent>/samples` series. */
export function samplesSeen(series: Record<string, readonly SeriesPoint[]>): Map<number, number> {
  const perStep = new Map<number, number>();
  for (const [key, points] of Object.entries(series)) {
    if (!/^[^/]+\/samples$/.test(key) || key.startsWith('eval/')) continue;
    for (const p of points) perStep.set(p.step, (perStep.get(p.step) ?? 0) + p.value);
  }
  const cumulative = new Map<number, number>();
  let total = 0;
  for (const step of [...perStep.keys()].sort((a, b) => a - b)) {
    total += perStep.get(step)!;
    cumulative.set(step, total);
  }
  return cumulative;
}

/** The x of each point of `points` on `axis`; a point whose x is unknown (no samples logged yet) gets the samples of the last earlier step, or 0. */
export function toXY(points: readonly SeriesPoint[], axis: CompareXAxis, samples?: Map<number, number>): Point[] {
  if (axis === 'step') return points.map((p) => [p.step, p.value]);
  if (axis === 'wall') return points.map((p) => [p.wallTime, p.value]);
  const steps = [...(samples ?? new Map()).keys()].sort((a, b) => a - b);
  return points.map((p) => {
    let seen = 0;
    for (const s of steps) {
      if (s > p.step) break;
      seen = samples!.get(s)!;
    }
    return [seen, p.value];
  });
}

export interface RunLine {
  runId: number;
  name: string;
  group: string | null;
  points: Point[];
  totalPoints: number;
}

export interface BandPoint {
  x: number;
  step: number;
  mean: number;
  lo: number;
  hi: number;
  n: number;
}

export interface GroupBand {
  group: string;
  runIds: number[];
  points: BandPoint[];
  /** The metric's range the band was clipped to, or null for an unbounded metric. */
  clippedTo: [number, number] | null;
}

/** One run's line for `key` on `axis`, min/max-downsampled to `maxPoints` so spikes survive. */
export function runLine(run: RunData, key: string, axis: CompareXAxis, maxPoints = 1000, group: string | null = null): RunLine {
  const points = run.series[key] ?? [];
  const xy = toXY(points, axis, axis === 'samples' ? samplesSeen(run.series) : undefined);
  return { runId: run.runId, name: run.name, group, points: minMax(xy, maxPoints), totalPoints: xy.length };
}

/** Mean and band per step over a group's runs (see the header for the alignment rule). */
export function groupBand(runs: readonly RunData[], key: string, axis: CompareXAxis, band: BandKind, group: string, maxPoints = 1000): GroupBand {
  const byStep = new Map<number, { xs: number[]; ys: number[] }>();
  for (const run of runs) {
    const points = run.series[key] ?? [];
    const xy = toXY(points, axis, axis === 'samples' ? samplesSeen(run.series) : undefined);
    points.forEach((p, i) => {
      if (!Number.isFinite(p.value)) return;
      const entry = byStep.get(p.step) ?? { xs: [], ys: [] };
      entry.xs.push(xy[i][0]);
      entry.ys.push(p.value);
      byStep.set(p.step, entry);
    });
  }
  let steps = [...byStep.keys()].sort((a, b) => a - b);
  // Long runs: keep an even stride of steps (and the last) so a band costs at most maxPoints.
  if (steps.length > maxPoints && maxPoints >= 2) {
    const stride = Math.ceil(steps.length / maxPoints);
    steps = steps.filter((_, i) => i % stride === 0 || i === steps.length - 1);
  }
  const range = describeMetric(key).range;
  const points: BandPoint[] = steps.map((step) => {
    const { xs, ys } = byStep.get(step)!;
    const s = stats(ys)!;
    let [lo, hi] = bandOf(s, band);
    if (range) [lo, hi] = [Math.max(range[0], lo), Math.min(range[1], hi)];
    return { x: xs.reduce((a, b) => a + b, 0) / xs.length, step, mean: s.mean, lo, hi, n: s.n };
  });
  return { group, runIds: runs.map((r) => r.runId), points, clippedTo: range ? [range[0], range[1]] : null };
}
