/** The ECharts option of one metric panel: pure, so it is tested without a browser. */
import type { SeriesXAxis } from '../../../src-preload/api';
import { CSP_SAFE_TOOLTIP, type ChartOption } from './echarts';
import { formatAxisX, formatTick, formatValue } from './format';
import type { PanelLine } from './metricPanels';
import { CHART_THEME } from './palette';
import { debiasedEma } from './smoothing';

export type Points = readonly (readonly [number, number])[];

export interface LineChartInput {
  lines: readonly PanelLine[];
  /** Points by metric key. */
  data: ReadonlyMap<string, Points>;
  smoothing: number;
  xAxis: SeriesXAxis;
}

const RAW_PREFIX = 'raw:';

interface TooltipParam {
  seriesId?: string;
  seriesName?: string;
  marker?: string;
  value?: unknown;
  axisValue?: unknown;
}

export function lineChartOption({ lines, data, smoothing, xAxis }: LineChartInput): ChartOption {
  const smoothed = smoothing > 0;
  const series: Record<string, unknown>[] = [];
  for (const line of lines) {
    const points = data.get(line.key) ?? [];
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
      series.push({ ...common, id: line.key, data: debiasedEma(points, smoothing), lineStyle: { width: 1.6, type: line.dashed ? 'dashed' : 'solid' }, z: 2 });
    } else {
      series.push({ ...common, id: line.key, data: points, lineStyle: { width: 1.4, type: line.dashed ? 'dashed' : 'solid' }, z: 2 });
    }
  }
  return {
    animation: false,
    textStyle: { fontFamily: CHART_THEME.font, color: CHART_THEME.text },
    // The legend is HTML above the canvas (it wraps, and toggles lines by leaving them out).
    grid: { left: 8, right: 14, top: 10, bottom: 6, containLabel: true },
    tooltip: {
      ...CSP_SAFE_TOOLTIP,
      trigger: 'axis',
      backgroundColor: CHART_THEME.tooltipBg,
      borderColor: CHART_THEME.tooltipBorder,
      textStyle: { color: CHART_THEME.textStrong, fontSize: 12, fontFamily: CHART_THEME.font },
      axisPointer: { type: 'line', lineStyle: { color: '#4a525d', width: 1 } },
      formatter: (raw: unknown) => {
        const params = (Array.isArray(raw) ? raw : [raw]) as TooltipParam[];
        const shown = params.filter((p) => !String(p.seriesId ?? '').startsWith(RAW_PREFIX));
        if (shown.length === 0) return '';
        const x = Number(Array.isArray(shown[0].value) ? shown[0].value[0] : shown[0].axisValue);
        const header = xAxis === 'wall' ? `t = ${formatAxisX(x, 'wall')}` : `step ${formatAxisX(x, 'step')}`;
        const rows = shown.map((p) => `${p.marker ?? ''}${p.seriesName ?? ''}   ${formatValue(Array.isArray(p.value) ? Number(p.value[1]) : Number(p.value))}`);
        return [header, ...rows].join('\n');
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
    },
    yAxis: {
      type: 'value',
      scale: true,
      splitNumber: 4,
      axisLine: { show: false },
      axisTick: { show: false },
      splitLine: { lineStyle: { color: CHART_THEME.grid } },
      axisLabel: { color: CHART_THEME.text, fontSize: 10, formatter: (v: number) => formatTick(v) },
    },
    dataZoom: [{ type: 'inside', xAxisIndex: 0, zoomOnMouseWheel: 'ctrl', moveOnMouseWheel: false, moveOnMouseMove: true }],
    series,
  } as ChartOption;
}
