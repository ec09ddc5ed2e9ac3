/** Plain-text output for the terminal: aligned tables and human times. */
import { inertJson, inertLine } from '../engine/util/inert';


export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  // A cell is one line: a newline or a control sequence in a run's name would break the table or
  // drive the terminal (issue #36).
  const cells = rows.map((row) => row.map((c) => (c === null || c === undefined ? '' : inertLine(String(c)))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (row: string[]) => row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export function age(timestamp: number | null, now = Date.now()): string {
  if (timestamp === null) return '';
  const seconds = Math.max(0, Math.round((now - timestamp) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function number(value: number | undefined, digits = 3): string {
  if (value === undefined) return '';
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(digits);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${inertJson(JSON.stringify(value, null, 2))}\n`);
}
