/**
 * The pipeline timeline as a Gantt chart: one lane per agent and activity (its rollout
 * segments, its updates), time on x. Under MarsRL's pipeline an agent's update overlaps the next
 * agent's rollout; under sync mode the lanes take turns. Pure, so it is tested without a browser.
 */
import type { TimelineSpan } from '#shared/contract';
import { chartTooltip, echarts, type ChartOption } from './echarts';
import { formatDuration } from '#shared/format';
import { compareAgents } from '#shared/agents';
import { agentColor, CHART_BASE, CHART_THEME } from './palette';

export interface GanttModel {
  lanes: string[];
  /** [lane, start s, end s, span index] per span. */
  items: [number, number, number, number][];
  origin: number;
}

function laneOf(span: TimelineSpan): string {
  if (span.kind === 'eval') return 'evaluation';
  return `${span.agent} · ${span.kind === 'update' ? 'update' : 'rollout'}`;
}

export function ganttModel(spans: readonly TimelineSpan[]): GanttModel {
  const origin = spans.reduce((min, s) => Math.min(min, s.startedAt), Infinity);
  const agents = [...new Set(spans.filter((s) => s.kind !== 'eval').map((s) => s.agent))].sort(compareAgents);
  const lanes: string[] = [];
  for (const agent of agents) {
    if (spans.some((s) => s.agent === agent && s.kind !== 'update' && s.kind !== 'eval')) lanes.push(`${agent} · rollout`);
    if (spans.some((s) => s.agent === agent && s.kind === 'update')) lanes.push(`${agent} · update`);
  }
  if (spans.some((s) => s.kind === 'eval')) lanes.push('evaluation');
  const laneIndex = new Map(lanes.map((lane, i) => [lane, i]));
  const items = spans.map((s, i): [number, number, number, number] => [laneIndex.get(laneOf(s)) ?? 0, (s.startedAt - origin) / 1000, (s.endedAt - origin) / 1000, i]);
  return { lanes, items, origin: Number.isFinite(origin) ? origin : 0 };
}

interface RenderApi {
  value(dim: number): number;
  coord(point: [number, number]): [number, number];
  size(size: [number, number]): [number, number];
}
interface RenderParams {
  coordSys: { x: number; y: number; width: number; height: number };
}

/** Steps shown when the chart opens: enough to see the overlap, few enough to see the bars. */
export const GANTT_INITIAL_STEPS = 6;

/** The time window (seconds from the origin) covering the last `steps` steps. */
export function initialWindow(spans: readonly TimelineSpan[], origin: number, steps = GANTT_INITIAL_STEPS): [number, number] | null {
  if (spans.length === 0) return null;
  const lastStep = spans.reduce((max, s) => Math.max(max, s.step), -Infinity);
  const recent = spans.filter((s) => s.step > lastStep - steps);
  const start = recent.reduce((min, s) => Math.min(min, s.startedAt), Infinity);
  const end = spans.reduce((max, s) => Math.max(max, s.endedAt), -Infinity);
  return [(start - origin) / 1000, (end - origin) / 1000];
}

export function ganttOption(spans: readonly TimelineSpan[]): ChartOption {
  const model = ganttModel(spans);
  const window = initialWindow(spans, model.origin);
  const fillOf = (span: TimelineSpan): { fill: string; opacity: number; stroke?: string } => {
    if (span.kind === 'eval') return { fill: '#8d96a1', opacity: 0.7 };
    if (span.kind === 'wait') return { fill: 'transparent', opacity: 1, stroke: '#626b76' };
    return { fill: agentColor(span.agent), opacity: span.kind === 'update' ? 0.55 : 0.9 };
  };
  return {
    ...CHART_BASE,
    grid: { left: 8, right: 16, top: 8, bottom: 44, containLabel: true },
    tooltip: {
      ...chartTooltip('item', { fontSize: 12 }),
      formatter: (raw: unknown) => {
        const value = (raw as { value?: number[] }).value;
        const span = value ? spans[value[3]] : undefined;
        if (!span) return '';
        return [
          `${span.agent} · ${span.kind}`,
          `step ${span.step} · policy v${span.policyVersion}`,
          `${formatDuration((span.endedAt - span.startedAt) / 1000)}${span.tokens ? ` · ${span.tokens.toLocaleString('en-US')} tokens` : ''} · ${span.worker}`,
          `at ${formatDuration((span.startedAt - model.origin) / 1000)}`,
        ].join('\n');
      },
    },
    xAxis: {
      type: 'value',
      min: 0,
      axisLine: { lineStyle: { color: CHART_THEME.axis } },
      splitLine: { lineStyle: { color: CHART_THEME.grid } },
      axisLabel: { color: CHART_THEME.text, fontSize: 10, hideOverlap: true, showMinLabel: false, formatter: (v: number) => formatDuration(v) },
    },
    yAxis: {
      type: 'category',
      data: model.lanes,
      inverse: true,
      axisTick: { show: false },
      axisLine: { lineStyle: { color: CHART_THEME.axis } },
      axisLabel: { color: CHART_THEME.textStrong, fontSize: 11, fontFamily: CHART_THEME.mono },
    },
    dataZoom: [
      { type: 'slider', xAxisIndex: 0, ...(window ? { startValue: window[0], endValue: window[1] } : {}), height: 18, bottom: 8, borderColor: CHART_THEME.axis, fillerColor: 'rgba(110,168,254,0.12)', textStyle: { color: CHART_THEME.text }, filterMode: 'weakFilter', showDataShadow: false },
      { type: 'inside', xAxisIndex: 0, ...(window ? { startValue: window[0], endValue: window[1] } : {}), filterMode: 'weakFilter' },
    ],
    series: [
      {
        type: 'custom',
        encode: { x: [1, 2], y: 0 },
        data: model.items,
        progressive: 4000,
        renderItem: (params: RenderParams, api: RenderApi) => {
          const lane = api.value(0);
          const start = api.coord([api.value(1), lane]);
          const end = api.coord([api.value(2), lane]);
          const height = api.size([0, 1])[1] * 0.62;
          const shape = echarts.graphic.clipRectByRect(
            { x: start[0], y: start[1] - height / 2, width: Math.max(1, end[0] - start[0]), height },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height },
          );
          if (!shape) return null;
          const span = spans[api.value(3)];
          const { fill, opacity, stroke } = fillOf(span);
          return { type: 'rect', shape: { ...shape, r: 2 }, style: { fill, opacity, stroke, lineWidth: stroke ? 1 : 0 } };
        },
      },
    ],
  } as ChartOption;
}
