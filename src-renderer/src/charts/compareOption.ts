/**
 * The compare view's chart: pure ECharts option builders, tested without a browser.
 * - Overlay: one line per run, one colour per run (or per group, when grouped, so a group reads
 *   as one configuration).
 * - Grouped: each group's mean as a bold line with its band (min–max, ± std or ± 95% CI) as a
 *   shaded area, the member runs faint underneath.
 * Smoothing is TensorBoard's debiased EMA, applied to each drawn line (run, mean, band edges).
 */
import type { CompareBand, CompareSeriesResult, CompareXAxis } from '#shared/contract';
import { describeMetric, unitLabel } from '#shared/metric-catalog';
import { chartTooltip, type ChartOption } from './echarts';
import { formatTick } from './format';
import { CHART_BASE, CHART_THEME } from './palette';
import { debiasedEma } from './smoothing';

const BASE = ['#f0883e', '#58a6ff', '#3fb950', '#d2a8ff', '#e3b341', '#ff7b72', '#79c0ff', '#f778ba', '#7ee787', '#ffa657'];

/** The i-th of many distinguishable colours: a fixed palette, then golden-angle hues (20+ runs). */
export function runColor(index: number): string {
  if (index < BASE.length) return BASE[index];
  const hue = Math.round((index * 137.508) % 360);
  return `hsl(${hue}, 70%, ${index % 2 ? 62 : 72}%)`;
}

export const X_AXIS_LABELS: Record<CompareXAxis, string> = { step: 'RL step', wall: 'wall time (s)', samples: 'samples seen' };

export interface CompareChartInput {
  data: CompareSeriesResult;
  smoothing: number;
  /** Draw group means and bands (needs data.bands) instead of one coloured line per run. */
  grouped: boolean;
  /**
   * The compared runs in order: a run's colour is its place here, so small multiples of several
   * metrics colour a run alike even where some run lacks a metric. Without it, the line's index.
   */
  runOrder?: readonly number[];
  /** False for small multiples: their narrow tiles share one legend drawn by the view instead. */
  legend?: boolean;
}

type Pair = [number, number];

/** Below this many seeds a spread band says little (a 95% CI over 2 seeds uses t = 12.7). */
export const FEW_SEEDS = 3;

const BAND_WORDS: Record<CompareBand, string> = { minmax: 'min–max', std: '± 1 std', ci95: '95% CI (Student t)' };

/**
 * What a group's band stands on, in words, and whether to warn: the seeds per step (the fewest
 * and the most, since runs of different lengths drop out), and the range it was clipped to.
 */
export function bandNote(band: CompareSeriesResult['bands'][number], kind: CompareBand): { text: string; warn: boolean } {
  const ns = band.points.map((p) => p.n);
  const least = ns.length ? Math.min(...ns) : 0;
  const most = ns.length ? Math.max(...ns) : 0;
  const seeds = least === most ? `n = ${most} seed${most === 1 ? '' : 's'}` : `n = ${least}–${most} seeds per step`;
  const warn = least < FEW_SEEDS && kind !== 'minmax';
  const parts = [`${band.group}: ${BAND_WORDS[kind]} over ${seeds}`];
  if (warn) parts.push(least < 2 ? 'a single seed has no spread: the band is empty there' : `too few seeds for a meaningful ${kind === 'ci95' ? 'interval' : 'spread'}; use ${FEW_SEEDS}+ seeds or min–max`);
  if (band.clippedTo) parts.push(`clipped to the metric's range [${band.clippedTo[0]}, ${band.clippedTo[1]}]`);
  return { text: parts.join(' · '), warn };
}

export function compareChartOption({ data, smoothing, grouped, runOrder, legend: showLegend = true }: CompareChartInput): ChartOption {
  const smooth = (points: readonly Pair[]): Pair[] => debiasedEma(points, smoothing);
  const series: Record<string, unknown>[] = [];
  const legend: string[] = [];
  const common = { type: 'line', animation: false, connectNulls: false, emphasis: { disabled: true }, sampling: undefined };
  if (grouped && data.bands.length) {
    const groupIndex = new Map(data.bands.map((b, i) => [b.group, i]));
    for (const line of data.lines) {
      const color = runColor(groupIndex.get(line.group ?? '') ?? 0);
      series.push({ ...common, id: `run:${line.runId}`, name: line.group ?? '', data: smooth(line.points), showSymbol: false, silent: true, lineStyle: { width: 1, opacity: 0.25, color }, itemStyle: { color }, z: 1, tooltip: { show: false } });
    }
    data.bands.forEach((band, i) => {
      const color = runColor(i);
      const lo = smooth(band.points.map((p) => [p.x, p.lo]));
      const hi = smooth(band.points.map((p) => [p.x, p.hi]));
      const stack = `band:${i}`;
      // A band is two stacked lines: the lower edge (invisible) and hi − lo filled above it.
      series.push({ ...common, id: `lo:${band.group}`, name: band.group, stack, data: lo, showSymbol: false, silent: true, lineStyle: { opacity: 0 }, itemStyle: { color }, z: 2, tooltip: { show: false } });
      series.push({ ...common, id: `band:${band.group}`, name: band.group, stack, data: hi.map(([x, y], j) => [x, y - lo[j][1]]), showSymbol: false, silent: true, lineStyle: { opacity: 0 }, areaStyle: { color, opacity: 0.2 }, itemStyle: { color }, z: 2, tooltip: { show: false } });
      series.push({ ...common, id: `mean:${band.group}`, name: band.group, data: smooth(band.points.map((p) => [p.x, p.mean])), showSymbol: band.points.length < 24, symbolSize: 5, lineStyle: { width: 2.2, color }, itemStyle: { color }, z: 3 });
      legend.push(band.group);
    });
  } else {
    data.lines.forEach((line, i) => {
      const place = runOrder?.indexOf(line.runId) ?? -1;
      const color = runColor(place >= 0 ? place : i);
      const name = `#${line.runId} ${line.name}`;
      series.push({ ...common, id: `run:${line.runId}`, name, data: smooth(line.points), showSymbol: line.points.length < 24, symbolSize: 4, lineStyle: { width: 1.5, color }, itemStyle: { color }, z: 2 });
      legend.push(name);
    });
  }
  const range = describeMetric(data.key).range;
  return {
    ...CHART_BASE,
    // A plain legend wraps onto more rows instead of paging (issue 18: 8 runs needed arrows);
    // the plot starts below however many rows it takes (about 5 entries a row).
    legend: { show: showLegend, type: 'plain', top: 0, data: legend, textStyle: { color: CHART_THEME.textStrong } },
    grid: { left: 26, right: 16, top: showLegend ? 34 + 22 * Math.max(0, Math.ceil(legend.length / 5) - 1) : 16, bottom: 28, containLabel: true },
    tooltip: chartTooltip('axis'),
    xAxis: {
      type: 'value',
      name: X_AXIS_LABELS[data.xAxis],
      nameLocation: 'middle',
      nameGap: 22,
      scale: true,
      axisLine: { lineStyle: { color: CHART_THEME.axis } },
      axisLabel: { color: CHART_THEME.text, formatter: (v: number) => formatTick(v) },
      // Steps and samples are counted: whole-number ticks (issue 35).
      ...(data.xAxis !== 'wall' ? { minInterval: 1 } : {}),
      splitLine: { show: false },
    },
    yAxis: {
      type: 'value',
      scale: true,
      name: unitLabel(describeMetric(data.key).unit),
      nameLocation: 'middle',
      nameGap: 40,
      nameTextStyle: { color: CHART_THEME.text },
      // Never past the metric's range (a share's axis ends at 1): data near an edge ends the axis
      // there; otherwise (null) ECharts picks round bounds.
      ...(range
        ? {
            min: (v: { min: number; max: number }) => (v.min < range[0] + (v.max - v.min) * 0.1 ? range[0] : null),
            max: (v: { min: number; max: number }) => (v.max > range[1] - (v.max - v.min) * 0.1 ? range[1] : null),
          }
        : {}),
      axisLabel: { color: CHART_THEME.text, formatter: (v: number) => formatTick(v) },
      splitLine: { lineStyle: { color: CHART_THEME.grid } },
    },
    series,
  } as ChartOption;
}
