/**
 * How values read, in the terminal and in the UI alike (issue 37: the CLI printed `125 s` where the
 * UI printed `2m05s`). One convention per kind of value:
 *
 * - durations (a run's time, an operation's, an axis of wall time): `0.42s`, `45s`, `2m05s`,
 *   `3h07m` — `formatDuration`. Limits a person configured keep their own unit (`timeout_ms`).
 * - ages: `just now`, `12 min ago`, `5 h ago`, `3 d ago`, then the date — `formatAge`.
 * - metric values: compact, as many digits as the value carries — `formatValue`; shares as
 *   percentages — `formatPercent`; a comparison's cells by the metric's unit — `formatMetric`.
 * - bytes: binary units, one decimal — `formatBytes`.
 *
 * A missing value reads `—` everywhere. Pure: no Node, no DOM.
 */
import type { CompareMetric, CompareStats } from './contract';

const MISSING = '—';

/**
 * Seconds as a duration: below 10 s with up to two decimals (`0.42s`, `4.2s`), then whole seconds
 * (`45s`), minutes and seconds (`2m05s`), hours and minutes (`3h07m`). Negative reads as 0.
 */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return MISSING;
  const exact = Math.max(0, seconds);
  if (exact < 9.995) return `${Number(exact.toFixed(2))}s`;
  const s = Math.round(exact);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "just now", "12 min ago", "5 h ago", "3 d ago", then the date for anything older than a month. */
export function formatAge(timestampMs: number, nowMs: number = Date.now()): string {
  const elapsed = nowMs - timestampMs;
  if (elapsed < MINUTE) return 'just now';
  if (elapsed < HOUR) return `${Math.floor(elapsed / MINUTE)} min ago`;
  if (elapsed < DAY) return `${Math.floor(elapsed / HOUR)} h ago`;
  if (elapsed < 30 * DAY) return `${Math.floor(elapsed / DAY)} d ago`;
  return new Date(timestampMs).toISOString().slice(0, 10);
}

/** Full local date and time, for tooltips behind a relative age. */
export function formatTimestamp(timestampMs: number): string {
  return new Date(timestampMs).toLocaleString();
}

/** Step counts get thousands separators; a run without metrics yet shows a dash. */
export function formatStep(step: number | null): string {
  return step === null ? MISSING : step.toLocaleString('en-US');
}

/** A fraction in [0, 1] as a percentage with one decimal; a missing metric shows a dash. */
export function formatPercent(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return MISSING;
  return `${(fraction * 100).toFixed(1)}%`;
}

/** A metric value, compact: integers as they are, then as many decimals as the magnitude needs. */
export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return MISSING;
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞';
  const abs = Math.abs(value);
  if (Number.isInteger(value) && abs < 1e6) return String(value);
  if (abs >= 10_000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(3);
  if (abs >= 0.001) return value.toFixed(4);
  return value.toExponential(2);
}

export type CompareUnit = CompareMetric['unit'];

/**
 * A cell of a comparison (the compare view, `marsrl compare`, the study report). Values keep the
 * precision the measurement has: accuracies over 100 held-out problems move in steps of 0.01, so
 * three decimals; ratios two; throughput whole tokens; times as durations.
 */
export function formatMetric(value: number | null | undefined, unit: CompareUnit): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return MISSING;
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
      return formatDuration(value);
  }
}

/** A difference against the baseline, signed: `+0.050`, `−1m05s`, `±0.000`. */
export function formatDeltaValue(delta: number | null | undefined, unit: CompareUnit): string {
  if (delta === null || delta === undefined || !Number.isFinite(delta)) return MISSING;
  const sign = delta > 0 ? '+' : delta < 0 ? '−' : '±';
  return `${sign}${formatMetric(Math.abs(delta), unit)}`;
}

/** A group's mean, with its std over seeds when there are several: `0.500 ± 0.100`. */
export function formatGroupStats(s: CompareStats | null, unit: CompareUnit): string {
  if (!s) return MISSING;
  return s.n > 1 ? `${formatMetric(s.mean, unit)} ± ${unit === 'count' ? s.std.toFixed(1) : formatMetric(s.std, unit)}` : formatMetric(s.mean, unit);
}

/** Bytes in binary units with one decimal: `512 B`, `25.8 KiB`, `600.0 MiB`, `1.5 GiB`. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return 'more bytes than can be counted';
  if (bytes < 1024) return `${Math.max(0, bytes)} B`;
  return scaleBytes(bytes, ['KiB', 'MiB', 'GiB', 'TiB']);
}

/**
 * 1024 bytes or more in the largest of `units` (1024¹, 1024², … bytes) that keeps the value at
 * least 1, one decimal: the scaling behind `formatBytes` and the export dialog's sizes, which name
 * the same powers of 1024 `kB`, `MB` (its tests and files keep those labels).
 */
export function scaleBytes(bytes: number, units: readonly string[]): string {
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
