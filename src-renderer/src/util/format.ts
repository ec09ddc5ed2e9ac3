/** Display formatting shared by the views. Pure, so the tests can pin the wording. */

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
  return step === null ? '—' : step.toLocaleString('en-US');
}

/** A fraction in [0, 1] as a percentage with one decimal; a missing metric shows a dash. */
export function formatPercent(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '—';
  return `${(fraction * 100).toFixed(1)}%`;
}

/** Milliseconds as a short duration: 45s, 12m 05s, 3h 07m. */
export function formatElapsed(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
