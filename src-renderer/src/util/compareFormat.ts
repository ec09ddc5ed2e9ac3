/** Text for the compare tables (mirrors the CLI and report: accuracies 3 decimals, ratios 2). */
import type { CompareMetric, CompareStats } from '#shared/contract';

export function formatMetric(value: number | null | undefined, unit: CompareMetric['unit']): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  switch (unit) {
    case 'fraction':
      return value.toFixed(3);
    case 'ratio':
      return value.toFixed(2);
    case 'count':
      return Number.isInteger(value) ? String(value) : value.toFixed(1);
    case 'per_s':
      return value.toFixed(0);
    case 'seconds':
      return value >= 120 ? `${Math.floor(value / 60)}m${String(Math.round(value % 60)).padStart(2, '0')}s` : `${value.toFixed(0)}s`;
  }
}

export function formatDeltaValue(delta: number | null | undefined, unit: CompareMetric['unit']): string {
  if (delta === null || delta === undefined || !Number.isFinite(delta)) return '';
  const sign = delta > 0 ? '+' : delta < 0 ? '−' : '±';
  return `${sign}${formatMetric(Math.abs(delta), unit)}`;
}

export function formatGroupStats(s: CompareStats | null, unit: CompareMetric['unit']): string {
  if (!s) return '—';
  return s.n > 1 ? `${formatMetric(s.mean, unit)} ± ${unit === 'count' ? s.std.toFixed(1) : formatMetric(s.std, unit)}` : formatMetric(s.mean, unit);
}

/** good / bad / neutral for colouring a delta by the metric's better direction. */
export function deltaTone(delta: number | null | undefined, metric: CompareMetric): 'good' | 'bad' | '' {
  if (delta === null || delta === undefined || delta === 0 || metric.better === null) return '';
  return (delta > 0) === (metric.better === 'higher') ? 'good' : 'bad';
}
