/** Axis labels for charts; values and durations read as everywhere else (src-shared/format.ts). */
import { formatDuration } from '#shared/format';

export function formatAxisX(value: number, xAxis: 'step' | 'wall'): string {
  return xAxis === 'wall' ? formatDuration(value) : Math.round(value).toLocaleString('en-US');
}

/** Axis ticks: as few digits as tell the ticks apart (0.85, not 0.8500). */
export function formatTick(value: number): string {
  if (!Number.isFinite(value)) return '';
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${Number((value / 1e6).toPrecision(3))}M`;
  if (abs >= 1e4) return `${Number((value / 1e3).toPrecision(3))}k`;
  return String(Number(value.toPrecision(4)));
}
