/**
 * Plain-text output for the terminal: aligned tables and fixed-precision numbers. Durations, ages
 * and bytes read as in the UI (src-shared/format.ts).
 */
import { inertJson, inertLine } from '../engine/util/inert';

export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  // A cell is one line: a newline or a control sequence in a run's name would break the table or
  // drive the terminal (issue #36).
  const cells = rows.map((row) => row.map((c) => (c === null || c === undefined ? '' : inertLine(String(c)))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (row: string[]) => row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export function number(value: number | undefined, digits = 3): string {
  if (value === undefined) return '';
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(digits);
}

/** `value` as indented JSON on `out` (the command's stdout), made inert without leaving JSON. */
export function printJson(out: (text: string) => void, value: unknown): void {
  out(inertJson(JSON.stringify(value, null, 2)));
}
