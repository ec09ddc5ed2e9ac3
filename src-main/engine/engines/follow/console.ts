/**
 * The job's log as Ray writes it. Output of a Ray actor reaches the driver's log as
 * `{DIM}{CYAN}({actor} pid={pid}[, ip={ip}]){RESET} {line}` (ray/_private/worker.py
 * `print_worker_logs`; DIM `\x1b[2m`, CYAN `\x1b[36m`, observed logs show only the cyan), repeated
 * lines folded into ` [repeated 7x across cluster]`, driver lines without a prefix. veRL's and
 * DrMAS's trainer runs in the actor `TaskRunner` (veRL 0.9: `TaskRunnerV1`), whose console logger
 * prints one line per step:
 *
 *   veRL   `step:{step} - {k}:{pprint.pformat(v)} - …`  (verl/utils/logger/aggregate_logger.py;
 *          numpy ≥ 2 prints `np.float64(0.5)`)
 *   DrMAS  `step:{step} - {k}:{v:.3f} - …`               (its aggregate_logger.py:23-29)
 *
 * A tqdm bar can be glued in front of a step line without a newline, so the step is searched for
 * anywhere in the line. Items split on " - ", each at its last ":" (a DrMAS worker group key such
 * as `actor/Qwen3-4B_Solver Agent/pg_loss` keeps its space).
 */

// Ray colours the prefix with ANSI SGR codes (ESC [ … m).
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const PREFIX = /^\(([^()]*)\)\s?/;
const REPEATED = / \[repeated \d+x across cluster\]\s*$/;

export interface LogLine {
  /** The Ray actor or task name (`TaskRunner`), `raylet`, or null for the driver's own lines. */
  actor: string | null;
  pid: number | null;
  text: string;
}

export function splitRayPrefix(raw: string): LogLine {
  const clean = raw.replace(ANSI, '').replace(/\r$/, '');
  const m = PREFIX.exec(clean);
  if (!m) return { actor: null, pid: null, text: clean.replace(REPEATED, '') };
  const inner = m[1];
  const pidMatch = /(?:^|\s|,)pid=(\d+)/.exec(inner);
  const name = inner.split(/\s+pid=|,/)[0].trim();
  return {
    actor: name.startsWith('pid=') || name === '' ? null : name,
    pid: pidMatch ? Number(pidMatch[1]) : null,
    text: clean.slice(m[0].length).replace(REPEATED, ''),
  };
}

/** A console value as Python printed it: repr, `{:.3f}`, `np.float64(x)`, `tensor(x)`, booleans, nan/inf. Null when not a number. */
export function parseConsoleValue(raw: string): number | null {
  let s = raw.trim();
  const wrapped = /^(?:np\.(?:float|int|uint|bool_?)\d*|numpy\.\w+|tensor)\((.*)\)$/.exec(s);
  if (wrapped) s = wrapped[1].split(',')[0].trim();
  if (s === 'True' || s === 'np.True_') return 1;
  if (s === 'False' || s === 'np.False_') return 0;
  if (/^[-+]?nan$/i.test(s)) return Number.NaN;
  if (/^\+?inf(inity)?$/i.test(s)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/i.test(s)) return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  return Number(s);
}

const STEP = /(?:^|[^A-Za-z0-9_/])step:(\d+)(?= - |$)/;

/** The metrics of a console step line, or null when the line is not one. */
export function parseStepLine(text: string): { step: number; values: [string, number][] } | null {
  const m = STEP.exec(text);
  if (!m) return null;
  const body = text.slice(m.index + m[0].length);
  const values: [string, number][] = [];
  for (const item of body.split(' - ')) {
    if (item === '') continue;
    const colon = item.lastIndexOf(':');
    if (colon <= 0) continue;
    const value = parseConsoleValue(item.slice(colon + 1));
    if (value !== null) values.push([item.slice(0, colon), value]);
  }
  return { step: Number(m[1]), values };
}

/** `Dumped generations to {filename}` (printed after a dump file is closed, every veRL and DrMAS). */
export function dumpedPath(text: string): string | null {
  const m = /^Dumped generations to (.+\.jsonl)\s*$/.exec(text);
  return m ? m[1] : null;
}

/** The last line of a Python traceback: `ValueError: …`, `ray.exceptions.RayTaskError(ValueError): …`, `KeyboardInterrupt`. */
const EXCEPTION_LINE = /^[A-Za-z_][\w.]*(\([\w.]+\))?(: .*)?$/;

export interface TracebackState {
  lines: string[];
  actor: string | null;
  startLine: number;
  startOffset: number;
  /** Seen an indented frame line, so an unindented exception line may end it. */
  framed: boolean;
  /** The last line was an exception line: the traceback ends unless the next line is indented (a remote traceback, `RayTaskError(…)` then its frames). */
  ending: boolean;
}

function isFrameLine(text: string): boolean {
  return /^\s/.test(text) && text.trim() !== '';
}

/**
 * Feeds one log line to the traceback scanner; returns a traceback when this line shows the one
 * before it ended. A traceback starts at `Traceback (most recent call last):` and ends after its
 * exception line (unindented, `Name: message`) — unless frames follow, as after Ray's
 * `ray.exceptions.RayTaskError(RuntimeError): ray::TaskRunner.run() (…)`, whose remote frames and
 * real exception come next. `finishTraceback` ends a pending one when the log ends.
 */
export function scanTraceback(state: TracebackState | null, line: LogLine, lineNo: number, offset: number): { state: TracebackState | null; done: TracebackState | null } {
  const text = line.text;
  let done: TracebackState | null = null;
  if (state?.ending) {
    if (isFrameLine(text)) {
      state.ending = false;
      state.lines.push(text);
      return { state, done: null };
    }
    done = state;
    state = null;
  }
  if (text.startsWith('Traceback (most recent call last):')) {
    return { state: { lines: [text], actor: line.actor, startLine: lineNo, startOffset: offset, framed: false, ending: false }, done };
  }
  if (state === null) return { state: null, done };
  state.lines.push(text);
  if (isFrameLine(text)) state.framed = true;
  else if (state.framed && EXCEPTION_LINE.test(text) && !/^(During handling of the above exception|The above exception was the direct cause)/.test(text)) state.ending = true;
  return { state, done };
}

/** A traceback still open when the log ended: complete if it reached its exception line. */
export function finishTraceback(state: TracebackState | null): TracebackState | null {
  return state?.ending ? state : null;
}
