/** Number and time labels for charts and tables: compact, and the same everywhere. */

export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞';
  const abs = Math.abs(value);
  if (Number.isInteger(value) && abs < 1e6) return String(value);
  if (abs >= 10_000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(3);
  if (abs >= 0.001) return value.toFixed(4);
  return value.toExponential(2);
}

/** Seconds since the run started, as 45s, 12m05s, 3h07m. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

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
