import { describe, expect, it } from 'vitest';
import type { CompareSeriesResult } from '#shared/contract';
import { compareChartOption, runColor } from '../../src-renderer/src/charts/compareOption';
import { parseAxesText } from '../../src-renderer/src/stores/studies';
import { formatDeltaValue, formatGroupStats, formatMetric } from '#shared/format';
import { deltaTone } from '../../src-renderer/src/util/compareFormat';

const data: CompareSeriesResult = {
  key: 'solver/grad_norm',
  xAxis: 'step',
  lines: [
    { runId: 1, name: 'a', group: 'decoupled', points: [[0, 1], [1, 3]], totalPoints: 2 },
    { runId: 2, name: 'b', group: 'shared', points: [[0, 2], [1, 4]], totalPoints: 2 },
  ],
  bands: [
    { group: 'decoupled', runIds: [1], points: [{ x: 0, step: 0, mean: 1, lo: 0.5, hi: 1.5, n: 1 }, { x: 1, step: 1, mean: 3, lo: 2, hi: 4, n: 1 }], clippedTo: null },
    { group: 'shared', runIds: [2], points: [{ x: 0, step: 0, mean: 2, lo: 2, hi: 2, n: 1 }], clippedTo: null },
  ],
};

type S = { id: string; data: [number, number][]; stack?: string; areaStyle?: unknown };

describe('compare chart option', () => {
  it('draws one coloured line per run when not grouped', () => {
    const option = compareChartOption({ data, smoothing: 0, grouped: false }) as { series: S[]; legend: { data: string[] } };
    expect(option.series.map((s) => s.id)).toEqual(['run:1', 'run:2']);
    expect(option.legend.data).toEqual(['#1 a', '#2 b']);
    // A plain legend wraps instead of paging (issue 18).
    expect((option.legend as unknown as { type: string }).type).toBe('plain');
  });

  it('draws each group as a mean line over a stacked band (lower edge + height)', () => {
    const option = compareChartOption({ data, smoothing: 0, grouped: true }) as { series: S[]; legend: { data: string[] } };
    const lo = option.series.find((s) => s.id === 'lo:decoupled')!;
    const band = option.series.find((s) => s.id === 'band:decoupled')!;
    expect(lo.data).toEqual([[0, 0.5], [1, 2]]);
    expect(band.data).toEqual([[0, 1], [1, 2]]);
    expect(band.stack).toBe(lo.stack);
    expect(band.areaStyle).toBeTruthy();
    expect(option.series.find((s) => s.id === 'mean:shared')!.data).toEqual([[0, 2]]);
    expect(option.legend.data).toEqual(['decoupled', 'shared']);
  });

  it('smooths with the debiased EMA and has distinct colours for 20 runs', () => {
    const option = compareChartOption({ data, smoothing: 0.5, grouped: false }) as { series: S[] };
    // Debiased EMA of [1, 3] with weight 0.5: 1, then (0.5·0.5 + 0.5·3)/(1 − 0.25) = 2.333…
    expect(option.series[0].data[1][1]).toBeCloseTo(1.75 / 0.75, 10);
    expect(new Set(Array.from({ length: 20 }, (_, i) => runColor(i))).size).toBe(20);
  });
});

describe('compare formatting and the study form', () => {
  it('formats values, deltas and group stats', () => {
    expect(formatMetric(0.8123, 'fraction')).toBe('0.812');
    expect(formatMetric(null, 'ratio')).toBe('—');
    expect(formatMetric(185, 'seconds')).toBe('3m05s');
    expect(formatDeltaValue(-0.05, 'fraction')).toBe('−0.050');
    expect(formatGroupStats({ n: 2, mean: 0.5, std: 0.1, min: 0.4, max: 0.6, median: 0.5, ci95: 0.9 }, 'fraction')).toBe('0.500 ± 0.100');
    expect(deltaTone(0.1, { id: 'x', label: 'x', better: 'lower', unit: 'ratio' })).toBe('bad');
    expect(deltaTone(0.1, { id: 'x', label: 'x', better: 'higher', unit: 'ratio' })).toBe('good');
  });

  it('reads axes lines, typing numbers and booleans, and names bad lines', () => {
    expect(parseAxesText('reward.scheme: decoupled, shared\nrollout.rounds: 1, 2\n')).toEqual({ axes: { 'reward.scheme': ['decoupled', 'shared'], 'rollout.rounds': [1, 2] }, problems: [] });
    expect(parseAxesText('nonsense\nadvantage.mode:').problems).toEqual(['line 1: write "config.path: value1, value2"', 'line 2: advantage.mode has no values']);
  });
});
