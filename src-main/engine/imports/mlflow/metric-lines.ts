/**
 * MLflow file-store metric files, line by line (mlflow/mlflow, mlflow/store/tracking/file_store.py):
 * `_log_run_metric` appends `f"{metric.timestamp} {metric.value} {metric.step}\n"` to
 * `<run>/metrics/<key>` — timestamp in ms since the epoch, value as Python's `str(float)`
 * (`nan`, `inf`, `-inf` included), step an int. `_get_metric_from_line` reads it back with
 * `line.strip().split(" ")`, accepts 2 or 3 fields (2: step 0, a file from before steps existed)
 * and raises on any other count. This reader does the same, except that it reports each 2-field
 * line (read as step 0) and each unreadable line as an issue instead of failing the whole run.
 */
import { open } from 'node:fs/promises';

export interface Line {
  text: string;
  /** 1-based line number within the file. */
  number: number;
  /** Byte offset just past the line's newline. */
  end: number;
}

const CHUNK = 1 << 16;

/**
 * The newline-terminated lines of a file from a byte offset. A last line without its newline is
 * not yielded: MLflow writes each point as one line ending in `\n`, so an unterminated tail is a
 * write in progress, left for the next import (see `unterminatedTail`).
 */
export async function* linesFrom(path: string, offset: number, firstLine: number): AsyncGenerator<Line> {
  const handle = await open(path, 'r');
  try {
    let position = offset;
    let number = firstLine;
    let pending = Buffer.alloc(0);
    for (;;) {
      const chunk = Buffer.alloc(CHUNK);
      const { bytesRead } = await handle.read(chunk, 0, CHUNK, position + pending.length);
      if (bytesRead === 0) return;
      pending = Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
      let start = 0;
      for (let newline = pending.indexOf(10, start); newline >= 0; newline = pending.indexOf(10, start)) {
        yield { text: pending.toString('utf8', start, newline), number, end: position + newline + 1 };
        number += 1;
        start = newline + 1;
      }
      position += start;
      pending = pending.subarray(start);
    }
  } finally {
    await handle.close();
  }
}

export type ParsedLine = { ok: true; timestamp: number; value: number; step: number; twoFields: boolean } | { ok: false; reason: string };

const INTEGER = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const SPECIAL: Record<string, number> = { nan: NaN, inf: Infinity, infinity: Infinity };

/** Python's `float()` on what `str(float)` writes: decimals, exponents, nan, inf (case-insensitive, signed). */
function pythonFloat(text: string): number | null {
  if (FLOAT.test(text)) return Number(text);
  const special = SPECIAL[text.replace(/^[+-]/, '').toLowerCase()];
  if (special === undefined) return null;
  return text.startsWith('-') ? -special : special;
}

/** One line as `_get_metric_from_line` reads it, or why it cannot be read. */
export function parseMetricLine(text: string): ParsedLine {
  const fields = text.trim().split(' ');
  if (fields.length !== 2 && fields.length !== 3) {
    return { ok: false, reason: `${fields.length} field${fields.length === 1 ? '' : 's'} where MLflow writes 3 (timestamp value step) and reads 2 or 3` };
  }
  if (!INTEGER.test(fields[0])) return { ok: false, reason: `timestamp "${fields[0]}" is not an integer` };
  const value = pythonFloat(fields[1]);
  if (value === null) return { ok: false, reason: `value "${fields[1]}" is not a number` };
  if (fields.length === 3 && !INTEGER.test(fields[2])) return { ok: false, reason: `step "${fields[2]}" is not an integer` };
  return { ok: true, timestamp: Number(fields[0]), value, step: fields.length === 3 ? Number(fields[2]) : 0, twoFields: fields.length === 2 };
}

/** The issue text of a line: MLflow's 2-field reading, or why it was skipped. */
export function lineIssue(parsed: ParsedLine, text: string): string | null {
  if (parsed.ok) return parsed.twoFields ? 'a line of 2 fields (timestamp value) read as step 0, as MLflow does (FileStore._get_metric_from_line)' : null;
  const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return `skipped: ${parsed.reason}: ${JSON.stringify(shown)}`;
}
