/**
 * The run page's credit-divergence chart (issue 40): for one alternative (reward scheme ·
 * normalization mode), one line per agent over the steps, of either the mean |run's advantage −
 * alternative's| or the std of the alternative's advantages beside the run's own (dashed). Under
 * global normalization an agent whose rewards sit far from the pooled mean gets a larger spread
 * than under agent-wise (Dr. MAS, Lemma 4.2): the std view shows it on the run's data.
 */
import type { CreditDivergence } from '#shared/contract';
import type { ChartOption } from './echarts';
import { agentColor, CHART_BASE, CHART_THEME } from './palette';

export type CreditMetric = 'diff' | 'std';

export interface CreditAlternative {
  scheme: string;
  mode: string;
  label: string;
  /** The run's own scheme and mode. */
  own: boolean;
}

/** Every (scheme, mode) the divergence has lines for, the run's scheme first and its own mode marked. */
export function creditAlternatives(d: CreditDivergence): CreditAlternative[] {
  const schemes = [d.scheme, ...d.schemes.filter((s) => s !== d.scheme)];
  return schemes.flatMap((scheme) =>
    d.modes
      .filter((mode) => d.series.some((s) => s.scheme === scheme && s.mode === mode))
      .map((mode) => ({ scheme, mode, own: scheme === d.scheme && mode === d.mode, label: `${scheme === d.scheme ? '' : `${scheme} · `}${mode}${scheme === d.scheme && mode === d.mode ? ' (run)' : ''}` })),
  );
}

/** The alternative shown first: agent-wise under the run's scheme when the run used another mode (Dr. MAS's fix), else global. */
export function defaultAlternative(d: CreditDivergence): CreditAlternative | null {
  const all = creditAlternatives(d);
  const want = d.mode === 'agentwise' ? 'global' : 'agentwise';
  return all.find((a) => a.scheme === d.scheme && a.mode === want) ?? all.find((a) => !a.own) ?? all[0] ?? null;
}

const fmt = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Number(v.toPrecision(3)).toString());

export function creditChartOption(d: CreditDivergence, alternative: CreditAlternative, metric: CreditMetric): ChartOption {
  const lines = d.series.filter((s) => s.scheme === alternative.scheme && s.mode === alternative.mode);
  const own = d.series.filter((s) => s.scheme === d.scheme && s.mode === d.mode);
  const series = lines.map((s) => ({
    name: s.agent,
    type: 'line',
    showSymbol: d.steps.length < 40,
    connectNulls: true,
    lineStyle: { width: 1.6, color: agentColor(s.agent) },
    itemStyle: { color: agentColor(s.agent) },
    data: d.steps.map((step, k) => [step, metric === 'diff' ? s.meanAbsDiff[k] : s.std[k]]),
  }));
  // Beside an alternative's spread, the run's own (dashed) is what it is compared with.
  if (metric === 'std' && !alternative.own) {
    for (const s of own) {
      series.push({
        name: `${s.agent} (run)`,
        type: 'line',
        showSymbol: false,
        connectNulls: true,
        lineStyle: { width: 1.2, color: agentColor(s.agent), type: 'dashed' } as never,
        itemStyle: { color: agentColor(s.agent) },
        data: d.steps.map((step, k) => [step, s.std[k]]),
      });
    }
  }
  return {
    ...CHART_BASE,
    grid: { left: 52, right: 16, top: 34, bottom: 34 },
    legend: { top: 0, textStyle: { color: CHART_THEME.text, fontSize: 11 }, itemWidth: 14, itemHeight: 6 },
    tooltip: {
      trigger: 'axis',
      backgroundColor: CHART_THEME.tooltipBg,
      borderColor: CHART_THEME.tooltipBorder,
      textStyle: { color: CHART_THEME.textStrong, fontSize: 11 },
      valueFormatter: (v: unknown) => (typeof v === 'number' ? fmt(v) : '—'),
    },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 22, minInterval: 1, axisLine: { lineStyle: { color: CHART_THEME.axis } }, splitLine: { show: false } },
    yAxis: {
      type: 'value',
      name: metric === 'diff' ? 'mean |A_run − A_alt|' : 'std of A',
      nameTextStyle: { align: 'left' },
      axisLine: { lineStyle: { color: CHART_THEME.axis } },
      splitLine: { lineStyle: { color: CHART_THEME.grid } },
    },
    series,
  } as ChartOption;
}
