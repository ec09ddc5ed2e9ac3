/**
 * Static report charts: pure ECharts option builders (no DOM, no instance), rendered by
 * render.ts with ECharts' server-side SVG renderer. Animation is off (a static frame) and every
 * colour is explicit so a PNG looks the same on any machine.
 */
import type { GroupBand } from '../compare/series';

// Okabe–Ito: distinguishable with the common colour-vision deficiencies.
export const GROUP_COLORS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#F0E442', '#000000'];

export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
}

type Option = Record<string, unknown>;

const base = (spec: ChartSpec): Option => ({
  animation: false,
  backgroundColor: '#ffffff',
  textStyle: { fontFamily: 'sans-serif' },
  title: { text: spec.title, left: 'center', top: 6, textStyle: { fontSize: 15 } },
  grid: { left: 64, right: 24, top: 72, bottom: 52 },
  legend: { top: 32, type: 'plain' },
});

/** Each group's mean as a line with its band (lo–hi) as a shaded area. */
export function bandChartOption(bands: readonly GroupBand[], spec: ChartSpec & { bandLabel: string }): Option {
  const series: Option[] = [];
  bands.forEach((band, i) => {
    const color = GROUP_COLORS[i % GROUP_COLORS.length];
    const stack = `band-${i}`;
    // The band is two stacked series: an invisible lower edge, then (hi − lo) filled on top of it.
    series.push({ type: 'line', name: band.group, data: band.points.map((p) => [p.x, p.lo]), stack, symbol: 'none', lineStyle: { opacity: 0 }, silent: true, legendHoverLink: false, tooltip: { show: false } });
    series.push({ type: 'line', name: band.group, data: band.points.map((p) => [p.x, p.hi - p.lo]), stack, symbol: 'none', lineStyle: { opacity: 0 }, areaStyle: { color, opacity: 0.18 }, silent: true });
    series.push({ type: 'line', name: band.group, data: band.points.map((p) => [p.x, p.mean]), symbol: band.points.length <= 12 ? 'circle' : 'none', symbolSize: 5, lineStyle: { color, width: 2 }, itemStyle: { color } });
  });
  return {
    ...base(spec),
    color: bands.map((_, i) => GROUP_COLORS[i % GROUP_COLORS.length]),
    legend: { top: 32, data: bands.map((b) => b.group) },
    graphic: [{ type: 'text', right: 24, bottom: 8, style: { text: `mean over seeds; band: ${spec.bandLabel}`, fill: '#666', fontSize: 11 } }],
    xAxis: { type: 'value', name: spec.xLabel, nameLocation: 'middle', nameGap: 28, scale: true },
    yAxis: { type: 'value', name: spec.yLabel, nameLocation: 'middle', nameGap: 48, scale: true },
    series,
  };
}

/** One column per group: every seed as a dot, the mean as a bar, the range as a line. */
export function seedDotsOption(groups: readonly { label: string; values: readonly { seed: number; value: number }[] }[], spec: ChartSpec): Option {
  const labels = groups.map((g) => g.label);
  const means = groups.map((g) => (g.values.length ? g.values.reduce((a, v) => a + v.value, 0) / g.values.length : null));
  return {
    ...base(spec),
    legend: { show: false },
    graphic: [{ type: 'text', right: 24, bottom: 8, style: { text: 'line: mean; dots: seeds', fill: '#666', fontSize: 11 } }],
    xAxis: { type: 'category', data: labels, name: spec.xLabel, nameLocation: 'middle', nameGap: 32, axisLabel: { interval: 0 } },
    yAxis: { type: 'value', name: spec.yLabel, nameLocation: 'middle', nameGap: 48, scale: true },
    series: [
      // The mean is a short horizontal mark, not a bar: a bar on a zoomed axis exaggerates differences.
      { type: 'scatter', symbol: 'rect', symbolSize: [56, 3], data: means.map((m, i) => ({ value: [i, m], itemStyle: { color: GROUP_COLORS[i % GROUP_COLORS.length] } })), z: 1 },
      {
        type: 'scatter',
        symbolSize: 9,
        data: groups.flatMap((g, i) => g.values.map((v) => ({ value: [i, v.value], itemStyle: { color: GROUP_COLORS[i % GROUP_COLORS.length] } }))),
        label: { show: true, position: 'right', formatter: (p: { value: [number, number] }) => p.value[1].toFixed(3), fontSize: 10, color: '#333' },
      },
    ],
  };
}
