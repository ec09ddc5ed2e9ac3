/**
 * Following one attempt of an engine run (issue 38), or reading a finished one (issue 39): the
 * job's status and log, the metrics file, the dumps and the checkpoints, as normalized records.
 *
 * `followAttempt` is a pure step over a JSON cursor: the same cursor and the same bytes give the
 * same records, and a record is produced only together with the cursor that moves past it. The
 * store commits both in one transaction (integration phase), so a Studio killed mid-poll and
 * restarted continues from the last committed cursor: no turn duplicated, none lost.
 */
import path from 'node:path';
import { localPath } from '../attempt';
import type { JobStatus } from '../ray/types';
import { isTerminal } from '../ray/types';
import { checkpointPolicies, listStepFolders, readTracker } from './checkpoints';
import { dumpedPath, finishTraceback, parseStepLine, scanTraceback, splitRayPrefix, type TracebackState } from './console';
import { listDumps, provenByLaterFile, turnOfLine, type Split } from './dumps';
import { EMPTY_CURSOR, readNewLines, type LineCursor } from './lines';
import { derivedStepMetrics, mapMetricKey } from './mapping';
import { parsePythonJson } from './pyjson';
import type { FollowRecord, MetricRecord, SourcePos, TurnRecord, WarningRecord } from './records';
import type { FollowSpec, MetricSource } from './spec';
import type { TensorBoardReader } from './tensorboard-slot';

export interface FollowState {
  format: 'marsrl-follow/1';
  metrics: LineCursor;
  /** The metrics file was rewritten under us (another writer, a restart into the same attempt): no longer read. */
  metricsRewritten: boolean;
  /** How much of the Ray job log was consumed: characters, lines, and a hash of its start. */
  log: { chars: number; line: number; head: string };
  traceback: TracebackState | null;
  /** `Dumped generations to …` paths not yet taken. */
  notices: string[];
  /** Dumps taken: `train/12`, `test/0`. */
  dumps: string[];
  checkpoints: number[];
  status: JobStatus | null;
  /** Decided at the first poll and kept, so one metric is never read from two sources. */
  metricsVia: MetricSource | null;
  tensorboard: unknown | null;
  warned: string[];
}

export function initialFollowState(): FollowState {
  return {
    format: 'marsrl-follow/1',
    metrics: { ...EMPTY_CURSOR },
    metricsRewritten: false,
    log: { chars: 0, line: 0, head: '' },
    traceback: null,
    notices: [],
    dumps: [],
    checkpoints: [],
    status: null,
    metricsVia: null,
    tensorboard: null,
    warned: [],
  };
}

export interface JobView {
  status: JobStatus;
  message: string | null;
  error_type: string | null;
  driver_exit_code: number | null;
}

export interface FollowInput {
  /** The job as Ray reports it now; null when not known (cluster unreachable, or an import). */
  job: JobView | null;
  /** The whole job log as Ray returns it; null when not available. */
  log: string | null;
  /** An imported folder is final: every file is read, incomplete last lines reported. */
  finished?: boolean;
  now: number;
}

export interface FollowOptions {
  tensorboard?: TensorBoardReader;
  /** Most turns taken in one call (whole step files are taken, so one file may exceed it). */
  maxTurns?: number;
  /** Most bytes of the metrics file read in one call (readNewLines' 8 MiB when left out); an import asks for less, so its batches stay small. */
  maxMetricBytes?: number;
}

interface Ctx {
  spec: FollowSpec;
  state: FollowState;
  input: FollowInput;
  options: FollowOptions;
  out: FollowRecord[];
  /** Dump files seen but not taken in this call (incomplete, or over the turn budget). */
  pending: number;
}

const HEAD_CHARS = 1024;

function hashText(text: string): string {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return `${text.length}:${h.toString(16)}`;
}

function warnOnce(ctx: Ctx, code: WarningRecord['code'], key: string, message: string, source: SourcePos | null = null): void {
  const id = `${code}:${key}`;
  if (ctx.state.warned.includes(id)) return;
  ctx.state.warned.push(id);
  ctx.out.push({ kind: 'warning', code, message, source });
}

function emitMetric(ctx: Ctx, step: number, engineKey: string, value: number, source: SourcePos): void {
  for (const { key, via } of mapMetricKey(ctx.spec, engineKey)) {
    ctx.out.push({ kind: 'metric', step, key, engineKey, value, via, observedAt: ctx.input.now, source });
  }
}

function chooseMetricSource(ctx: Ctx): MetricSource {
  const { spec, options } = ctx;
  if (spec.metricSource === 'tensorboard' && !options.tensorboard) {
    warnOnce(ctx, 'tensorboard_unread', 'reader', 'no TensorBoard reader is plugged in yet (issue 39); metrics are read from the console lines of the job log instead, rounded as the engine prints them');
    return 'console';
  }
  return spec.metricSource;
}

// ── Status and log ──────────────────────────────────────────────────────────────────────────────

function followStatus(ctx: Ctx): void {
  const job = ctx.input.job;
  if (job === null || job.status === ctx.state.status) return;
  ctx.state.status = job.status;
  ctx.out.push({ kind: 'status', status: job.status, message: job.message, errorType: job.error_type, exitCode: job.driver_exit_code });
}

function followLog(ctx: Ctx): void {
  const log = ctx.input.log;
  if (log === null) return;
  const { state } = ctx;
  if (state.log.chars > 0 && (log.length < state.log.chars || hashText(log.slice(0, Math.min(HEAD_CHARS, state.log.chars))) !== state.log.head)) {
    warnOnce(ctx, 'file_rewritten', 'job.log', 'the job log Ray returns no longer starts with what was read before; the rest of it is not followed', { file: 'job.log', line: null, offset: null });
    return;
  }
  const terminal = ctx.input.job !== null && isTerminal(ctx.input.job.status);
  const end = terminal ? log.length : log.lastIndexOf('\n') + 1;
  if (end > state.log.chars) {
    const text = log.slice(state.log.chars, end);
    ctx.out.push({ kind: 'log', text });
    let offset = state.log.chars;
    let lineNo = state.log.line;
    for (const raw of text.split('\n')) {
      if (offset >= end) break;
      lineNo++;
      consumeLogLine(ctx, raw, lineNo, offset);
      offset += raw.length + 1;
    }
    state.log = { chars: end, line: lineNo, head: hashText(log.slice(0, Math.min(HEAD_CHARS, end))) };
  }
  if (terminal) {
    // Nothing more will be printed: a traceback that reached its exception line is complete.
    const last = finishTraceback(state.traceback);
    if (last) emitTraceback(ctx, last);
    state.traceback = null;
  }
}

function emitTraceback(ctx: Ctx, tb: TracebackState): void {
  const exception = [...tb.lines].reverse().find((l) => l.trim() !== '' && !/^\s/.test(l)) ?? tb.lines[tb.lines.length - 1];
  ctx.out.push({ kind: 'traceback', text: tb.lines.join('\n'), error: exception, actor: tb.actor, source: { file: 'job.log', line: tb.startLine, offset: tb.startOffset } });
}

function consumeLogLine(ctx: Ctx, raw: string, lineNo: number, offset: number): void {
  const line = splitRayPrefix(raw);
  const source: SourcePos = { file: 'job.log', line: lineNo, offset };
  const dumped = dumpedPath(line.text);
  if (dumped !== null && !ctx.state.notices.includes(dumped)) ctx.state.notices.push(dumped);
  const tb = scanTraceback(ctx.state.traceback, line, lineNo, offset);
  ctx.state.traceback = tb.state;
  if (tb.done) emitTraceback(ctx, tb.done);
  if (ctx.state.metricsVia !== 'console') return;
  if (line.actor !== null && line.actor !== ctx.spec.consoleActor) return;
  const parsed = parseStepLine(line.text);
  if (parsed) for (const [key, value] of parsed.values) emitMetric(ctx, parsed.step, key, value, source);
}

// ── Metrics file ────────────────────────────────────────────────────────────────────────────────

function followMetricsFile(ctx: Ctx): void {
  const { spec, state } = ctx;
  if (state.metricsVia !== 'file' || spec.files.metricsFile === null || state.metricsRewritten) return;
  const file = localPath(spec, spec.files.metricsFile);
  const rel = path.posix.relative(spec.files.attemptDir, spec.files.metricsFile);
  const result = readNewLines(file, state.metrics, ctx.options.maxMetricBytes);
  if (result.state === 'missing') return;
  if (result.state === 'rewritten') {
    state.metricsRewritten = true;
    warnOnce(ctx, 'file_rewritten', rel, `${rel} was rewritten while being followed (veRL's file logger truncates it when a trainer starts again in the same attempt); what was read is kept, the rest is not merged`, { file: rel, line: null, offset: null });
    return;
  }
  for (const line of result.lines) {
    const source: SourcePos = { file: rel, line: line.line, offset: line.offset };
    let record: { step?: unknown; data?: unknown };
    try {
      record = parsePythonJson(line.text) as typeof record;
    } catch (error) {
      ctx.out.push({ kind: 'warning', code: 'bad_line', message: `${rel}:${line.line}: not a JSON line (${(error as Error).message}); skipped`, source });
      continue;
    }
    if (typeof record?.step !== 'number' || record.data === null || typeof record.data !== 'object') {
      ctx.out.push({ kind: 'warning', code: 'bad_line', message: `${rel}:${line.line}: not a {"step", "data"} line; skipped`, source });
      continue;
    }
    for (const [key, raw] of Object.entries(record.data as Record<string, unknown>)) {
      // orjson writes NaN and ±Inf as null (the file logger since veRL 0.7.1).
      const value = typeof raw === 'number' ? raw : typeof raw === 'boolean' ? Number(raw) : raw === null ? Number.NaN : null;
      if (value !== null) emitMetric(ctx, record.step, key, value, source);
    }
  }
  state.metrics = result.cursor;
}

function followTensorBoard(ctx: Ctx): void {
  const { spec, state, options } = ctx;
  if (state.metricsVia !== 'tensorboard' || !options.tensorboard || spec.files.tensorboardDir === null) return;
  const dir = localPath(spec, spec.files.tensorboardDir);
  const result = options.tensorboard.readScalars(dir, state.tensorboard);
  for (const w of result.warnings) ctx.out.push({ kind: 'warning', code: 'bad_line', message: w, source: null });
  const rel = path.posix.relative(spec.files.attemptDir, spec.files.tensorboardDir);
  for (const s of result.scalars) emitMetric(ctx, s.step, s.tag, s.value, { file: `${rel}/${s.file}`, line: null, offset: s.offset });
  state.tensorboard = result.cursor;
}

// ── Dumps ───────────────────────────────────────────────────────────────────────────────────────

function followDumps(ctx: Ctx): void {
  const { spec, state, input } = ctx;
  const dirs: Record<Split, string | null> = { train: spec.files.rolloutDir, test: spec.files.validationDir };
  const local = (p: string | null) => (p === null ? null : localPath(spec, p));
  const steps: Record<Split, number[]> = { train: listDumps(local(dirs.train)), test: listDumps(local(dirs.test)) };
  const succeeded = input.job?.status === 'SUCCEEDED';
  const ended = input.finished === true || (input.job !== null && isTerminal(input.job.status));
  const pending: { split: Split; step: number }[] = [];
  const taken = new Set(state.dumps);
  for (const split of ['train', 'test'] as const) for (const step of steps[split]) if (!taken.has(`${split}/${step}`)) pending.push({ split, step });
  pending.sort((a, b) => a.step - b.step || (a.split === b.split ? 0 : a.split === 'test' ? -1 : 1));
  let budget = ctx.options.maxTurns ?? 100_000;
  for (const { split, step } of pending) {
    const clusterFile = path.posix.join(dirs[split]!, `${step}.jsonl`);
    const proven = succeeded || state.notices.includes(clusterFile) || provenByLaterFile(spec.dumpOrder, split, step, steps.train, steps.test);
    if (budget <= 0 || (!proven && !ended)) {
      ctx.pending++;
      continue;
    }
    const turns = readDump(ctx, split, step, clusterFile, proven && !input.finished);
    budget -= turns;
    state.dumps.push(`${split}/${step}`);
    state.notices = state.notices.filter((n) => n !== clusterFile);
  }
}

/** Takes one step's dump: its turns, and for DrMAS with the hook the per-agent metrics derived from them. */
function readDump(ctx: Ctx, split: Split, step: number, clusterFile: string, proven: boolean): number {
  const { spec } = ctx;
  const rel = path.posix.relative(spec.files.attemptDir, clusterFile);
  const result = readNewLines(localPath(spec, clusterFile), EMPTY_CURSOR, Number.MAX_SAFE_INTEGER);
  if (result.state !== 'ok') return 0;
  if (result.pendingBytes > 0) {
    const why = proven ? 'its last line has no newline' : 'the job ended before it was complete';
    ctx.out.push({ kind: 'warning', code: 'partial_dump', message: `${rel}: ${why}; ${result.lines.length} complete lines taken, ${result.pendingBytes} bytes of an unfinished line left out`, source: { file: rel, line: result.lines.length + 1, offset: result.cursor.offset } });
  }
  const turns: TurnRecord[] = [];
  result.lines.forEach((line, index) => {
    const source: SourcePos = { file: rel, line: line.line, offset: line.offset };
    try {
      turns.push(turnOfLine(line.text, index, source, { split, file: rel, agents: spec.agents, engine: spec.engine }));
    } catch (error) {
      ctx.out.push({ kind: 'warning', code: 'bad_line', message: `${rel}:${line.line}: ${(error as Error).message}; skipped`, source });
    }
  });
  ctx.out.push(...turns);
  if (spec.engine === 'drmas' && turns.some((t) => t.agent === null)) {
    warnOnce(
      ctx,
      'agent_unknown',
      'dumps',
      spec.hook
        ? `${rel}: lines without the Studio hook's agent ids (the hook did not load in the trainer: its warning is in the job log); those turns are marked agent unknown`
        : 'DrMAS dumps carry no agent ids without the Studio\'s hook (engine.drmas.hook); every turn is marked agent unknown, never guessed from its text',
      { file: rel, line: null, offset: null },
    );
  }
  if (spec.engine === 'drmas' && split === 'train') {
    const source: SourcePos = { file: rel, line: null, offset: null };
    for (const [key, value] of Object.entries(derivedStepMetrics(turns))) {
      ctx.out.push({ kind: 'metric', step, key, engineKey: key, value, via: 'derived', observedAt: ctx.input.now, source } satisfies MetricRecord);
    }
  }
  return turns.length;
}

// ── Checkpoints ─────────────────────────────────────────────────────────────────────────────────

function followCheckpoints(ctx: Ctx): void {
  const { spec, state } = ctx;
  const dir = localPath(spec, spec.files.checkpointsDir);
  const tracker = readTracker(dir);
  const folders = listStepFolders(dir);
  for (const step of folders) {
    if (state.checkpoints.includes(step) || tracker === null || step > tracker) continue;
    const stepDir = path.join(dir, `global_step_${step}`);
    const policies = checkpointPolicies(stepDir, spec.engine, spec.agents);
    ctx.out.push({ kind: 'checkpoint', step, dir: stepDir, policies, source: { file: `checkpoints/global_step_${step}`, line: null, offset: null } });
    state.checkpoints.push(step);
  }
  for (const step of state.checkpoints.filter((s) => !folders.includes(s))) {
    ctx.out.push({ kind: 'checkpoint_removed', step, dir: path.join(dir, `global_step_${step}`) });
  }
  state.checkpoints = state.checkpoints.filter((s) => folders.includes(s));
}

/** One poll: everything new since `state`. */
export function followAttempt(spec: FollowSpec, previous: FollowState, input: FollowInput, options: FollowOptions = {}): { records: FollowRecord[]; state: FollowState; pendingDumps: number } {
  const state: FollowState = structuredClone(previous);
  const ctx: Ctx = { spec, state, input, options, out: [], pending: 0 };
  if (state.metricsVia === null) state.metricsVia = chooseMetricSource(ctx);
  followStatus(ctx);
  followLog(ctx);
  followMetricsFile(ctx);
  followTensorBoard(ctx);
  followDumps(ctx);
  followCheckpoints(ctx);
  return { records: ctx.out, state, pendingDumps: ctx.pending };
}
