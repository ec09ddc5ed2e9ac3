/**
 * Gradient-norm spikes (the Dr. MAS diagnostic): how far a run's worst step sits above its
 * typical step. The median is the reference because a few spikes barely move it, whereas they
 * drag the mean towards themselves and hide.
 */
import { median } from './stats';
import { maxNumber } from '../util/arrays';

export interface SpikeStats {
  /** max / median of the series; null when the series is empty or its median is not positive. */
  maxOverMedian: number | null;
  /** Points strictly above `threshold` × median. */
  count: number;
  median: number | null;
  max: number | null;
}

/** Default spike threshold: a step more than 3× the run's median gradient norm. */
export const DEFAULT_SPIKE_THRESHOLD = 3;

export function spikeStats(values: readonly number[], threshold = DEFAULT_SPIKE_THRESHOLD): SpikeStats {
  const xs = values.filter(Number.isFinite);
  if (xs.length === 0) return { maxOverMedian: null, count: 0, median: null, max: null };
  const m = median(xs);
  const max = maxNumber(xs);
  if (!(m > 0)) return { maxOverMedian: null, count: 0, median: m, max };
  return { maxOverMedian: max / m, count: xs.filter((v) => v > threshold * m).length, median: m, max };
}
