/**
 * ECharts, imported piecewise (line and custom series, canvas renderer) to keep the bundle
 * small. Instances are created by the chart components and kept in plain variables: a Vue proxy
 * around an ECharts instance breaks its internals and costs a deep watch on every redraw.
 */
import { CustomChart, LineChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, MarkLineComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { CHART_THEME } from './palette';

echarts.use([LineChart, CustomChart, GridComponent, TooltipComponent, LegendComponent, DataZoomComponent, MarkLineComponent, CanvasRenderer]);

export { echarts };
export type ECharts = ReturnType<typeof echarts.init>;
export type ChartOption = Parameters<ECharts['setOption']>[0];

/**
 * Tooltips are drawn into the canvas (`richText`): the HTML tooltip writes `style="…"`
 * attributes into its markup, which the app's CSP (style-src 'self') refuses.
 */
const CSP_SAFE_TOOLTIP = { renderMode: 'richText', confine: true } as const;

/** Every chart's tooltip: CSP-safe, in the theme's box, its text bright; `textStyle` adds to that. */
export function chartTooltip(trigger: 'axis' | 'item', textStyle: Record<string, string | number> = {}) {
  return {
    ...CSP_SAFE_TOOLTIP,
    trigger,
    backgroundColor: CHART_THEME.tooltipBg,
    borderColor: CHART_THEME.tooltipBorder,
    textStyle: { color: CHART_THEME.textStrong, ...textStyle },
  };
}
