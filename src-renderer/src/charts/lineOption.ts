/** The ECharts option of one metric panel: pure, so it is tested without a browser. */
import type { SeriesXAxis } from '#shared/contract';
import { unitLabel, type MetricUnit } from '#shared/metric-catalog';
import { chartTooltip, type ChartOption } from './echarts';
import { formatAxisX, formatTick } from './format';
import { formatValue } from '#shared/format';
import type { PanelLine } from './metricPanels';
import { CHART_BASE, CHART_THEME } from './palette';
import { debiasedEma } from './smoothing';

export type Points = readonly (readonly [number, number])[];

export interface LineChartInput {
  lines: readonly PanelLine[];
  /** Points by metric key. */
  data: ReadonlyMap<string, Points>;
  smoothing: number;
  xAxis: SeriesXAxis;
  /** Titles the y axis; every line of a panel has it. */
  unit?: MetricUnit;
  /** The values the metric can take (the catalog's: a share is in [0, 1]); the axis never runs past them. */
  range?: readonly [number, number];
  /** Series shorter than this are drawn as logged (the default is MIN_SMOOTHED_POINTS). */
  minSmoothedPoints?: number;
  /**
   * Told the tooltip's text whenever it is drawn: the canvas tooltip is invisible to screen
   * readers, so the panel repeats it in a live region.
   */
  onReadout?: (text: string) => void;
}

const RAW_PREFIX = 'raw:';

/**
 * Below this many points a series is drawn as it is: an average over a handful of evaluations
 * moves the last point far from the value the run scored (issue 18: a pass@4 of 1.0 drawn at 0.88).
 */
export const MIN_SMOOTHED_POINTS = 10;

/** Whether a line of `points` points is smoothed at slider `weight`. */
export function smoothsLine(points: number, weight: number, minPoints = MIN_SMOOTHED_POINTS): boolean {
  return weight > 0 && points >= minPoints;
}

interface TooltipParam {
  seriesId?: string;
  seriesName?: string;
  marker?: string;
  dataIndex?: number;
  value?: unknown;
  axisValue?: unknown;
}

/**
 * ECharts' "nice" number (echarts/lib/util/number.js `nice`, round = true): the tick interval it
 * picks for a span over `splitNumber` ticks. Reproduced to know the axis end it would draw.
 */
function niceInterval(span: number, splitNumber: number): number {
  const raw = span / splitNumber;
  const exponent = Math.floor(Math.log10(raw));
  const f = raw / 10 ** exponent;
  const nf = f < 1.5 ? 1 : f < 2.5 ? 2 : f < 4 ? 3 : f < 7 ? 5 : 10;
  return nf * 10 ** exponent;
}

export const Y_SPLIT_NUMBER = 4;

/**
 * The y axis's ends for a bounded metric (issue 35: share axes ran to 1.02 and 1.4): where the
 * rounded extent ECharts would draw passes a bound the data stays within, the axis ends at the
 * bound instead; otherwise ECharts chooses (null).
 */
export function boundedAxisEnd(range: readonly [number, number], end: 'min' | 'max'): (extent: { min: number; max: number }) => number | null {
  return ({ min, max }) => {
    if (!Number.isFinite(min) || !Number.isFinite(max)) return null;
    const [lo, hi] = range;
    if (min < lo || max > hi) return null;
    const interval = niceInterval(max - min || Math.abs(max) || 1, Y_SPLIT_NUMBER);
    if (end === 'max') return Math.ceil(max / interval - 1e-9) * interval > hi ? hi : null;
    return Math.floor(min / interval + 1e-9) * interval < lo ? lo : null;
  };
}

/** Axis ticks of a unit: bytes as KiB/MiB/GiB, everything else as formatTick does. */
function tickFormatter(unit: MetricUnit | undefined): (v: number) => string {
  if (unit !== 'bytes') return (v) => formatTick(v);
  return (v) => {
    const abs = Math.abs(v);
    const [div, suffix] = abs >= 2 ** 30 ? [2 ** 30, ' GiB'] : abs >= 2 ** 20 ? [2 ** 20, ' MiB'] : abs >= 2 ** 10 ? [2 ** 10, ' KiB'] : [1, ' B'];
    return `${Number((v / div).toPrecision(3))}${suffix}`;
  };
}

export function lineChartOption({ lines, data, smoothing, xAxis, unit, range, minSmoothedPoints = MIN_SMOOTHED_POINTS, onReadout }: LineChartInput): ChartOption {
  const series: Record<string, unknown>[] = [];
  /** The raw points of each smoothed line, by series id: the tooltip shows both. */
  const rawOf = new Map<string, Points>();
  for (const line of lines) {
    const points = data.get(line.key) ?? [];
    const smoothed = smoothsLine(points.length, smoothing, minSmoothedPoints);
    const common = {
      type: 'line',
      name: line.label,
      // Sparse series (evaluations every few steps, a warm start's single point) need their dots.
      showSymbol: points.length < 24,
      symbol: 'circle',
      symbolSize: 5,
      // Points arrive downsampled by the server; drawing every one keeps the spikes it kept.
      sampling: undefined,
      connectNulls: false,
      animation: false,
      color: line.color,
      emphasis: { disabled: true },
    };
    if (smoothed) {
      // The raw series stays visible underneath, faint, as in TensorBoard.
      series.push({ ...common, id: `${RAW_PREFIX}${line.key}`, silent: true, legendHoverLink: false, data: points, lineStyle: { width: 1, opacity: 0.22, type: line.dashed ? 'dashed' : 'solid' }, z: 1 });
      series.push({ ...common, id: line.key, name: `${line.label} (smoothed)`, data: debiasedEma(points, smoothing), lineStyle: { width: 1.6, type: line.dashed ? 'dashed' : 'solid' }, z: 2 });
      rawOf.set(line.key, points);
    } else {
      series.push({ ...common, id: line.key, data: points, lineStyle: { width: 1.4, type: line.dashed ? 'dashed' : 'solid' }, z: 2 });
    }
  }
  return {
    ...CHART_BASE,
    // The legend is HTML above the canvas (it wraps, and toggles lines by leaving them out).
    grid: { left: 22, right: 14, top: 10, bottom: 20, containLabel: true },
    tooltip: {
      ...chartTooltip('axis', { fontSize: 12, fontFamily: CHART_THEME.font }),
      axisPointer: { type: 'line', lineStyle: { color: '#4a525d', width: 1 } },
      formatter: (raw: unknown) => {
        const params = (Array.isArray(raw) ? raw : [raw]) as TooltipParam[];
        const shown = params.filter((p) => !String(p.seriesId ?? '').startsWith(RAW_PREFIX));
        if (shown.length === 0) return '';
        const x = Number(Array.isArray(shown[0].value) ? shown[0].value[0] : shown[0].axisValue);
        const header = xAxis === 'wall' ? `t = ${formatAxisX(x, 'wall')}` : `step ${formatAxisX(x, 'step')}`;
        const rows = shown.map((p) => {
          const drawn = formatValue(Array.isArray(p.value) ? Number(p.value[1]) : Number(p.value));
          const raw = rawOf.get(String(p.seriesId));
          if (!raw) return `${p.marker ?? ''}${p.seriesName ?? ''}   value ${drawn}`;
          // As TensorBoard: the value the run logged first, the smoothed curve's beside it.
          const value = raw[p.dataIndex ?? -1]?.[1];
          return `${p.marker ?? ''}${String(p.seriesName ?? '').replace(/ \(smoothed\)$/, '')}   value ${formatValue(value)} · smoothed ${drawn}`;
        });
        const text = [header, ...rows].join('\n');
        // Rich-text markers are `{name|}` style tags, meaningless outside the canvas.
        onReadout?.(text.replace(/\{[^|{}]*\|[^}]*\}/g, ''));
        return text;
      },
    },
    xAxis: {
      type: 'value',
      min: 'dataMin',
      max: 'dataMax',
      axisLine: { lineStyle: { color: CHART_THEME.axis } },
      axisTick: { show: false },
      splitLine: { show: false },
      // The data's last x is rarely a round tick and its label would crowd the one before it.
      axisLabel: { color: CHART_THEME.text, fontSize: 10, hideOverlap: true, showMaxLabel: false, formatter: (v: number) => formatAxisX(v, xAxis) },
      // Steps are whole numbers: one tick per step at most (issue 35: early charts read "0 0 0 1 1").
      ...(xAxis === 'step' ? { minInterval: 1 } : {}),
      name: xAxis === 'wall' ? 'wall time' : 'step',
      nameLocation: 'middle',
      nameGap: 20,
      nameTextStyle: { color: CHART_THEME.text, fontSize: 10 },
    },
    yAxis: {
      type: 'value',
      scale: true,
      ...(range ? { min: boundedAxisEnd(range, 'min'), max: boundedAxisEnd(range, 'max') } : {}),
      ...(unit === 'count' || unit === 'bytes' || unit === 'tokens' || unit === 'policy versions' ? { minInterval: 1 } : {}),
      name: unit ? unitLabel(unit) : undefined,
      nameLocation: 'middle',
      nameGap: 34,
      nameTextStyle: { color: CHART_THEME.text, fontSize: 10 },
      splitNumber: Y_SPLIT_NUMBER,
      axisLine: { show: false },
      axisTick: { show: false },
      splitLine: { lineStyle: { color: CHART_THEME.grid } },
      axisLabel: { color: CHART_THEME.text, fontSize: 10, formatter: tickFormatter(unit) },
    },
    dataZoom: [{ type: 'inside', xAxisIndex: 0, zoomOnMouseWheel: 'ctrl', moveOnMouseWheel: false, moveOnMouseMove: true }],
    series,
  } as ChartOption;
}
