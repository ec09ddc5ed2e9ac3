/**
 * veRL and DrMAS run folders as import formats (issue 39). One folder is one source run (key
 * `.`): the trainer's metrics, its generation dumps and its checkpoints, read by the follower that
 * follows a Studio-launched attempt (engines/follow/follower.ts) over a finished job. The cursor is
 * the follower's own state, so a re-import reads nothing again and a grown folder (a resumed run
 * that went on) yields only its new lines, dumps and checkpoints.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ImportFormatId, ImportIssue } from '#shared/contract';
import { followAttempt, initialFollowState, type FollowState } from '../../engines/follow/follower';
import type { FollowSpec } from '../../engines/follow/spec';
import { ImportSourceError, type ImportBatch, type ImportFormat, type ReadOptions, type ScanResult, type ScannedRun } from '../types';
import { convertRecords } from './convert';
import { entries, holdsRun, inspectRunFolder, type EngineKind, type RunFolder } from './folder';
import { configString } from './hydra-config';
import { followSpecOf } from './spec';

export const RUN_KEY = '.';

/**
 * Bytes of the metrics file per batch: a veRL step line is 2 to 20 KB (one to a few hundred keys),
 * so about 50 to 500 steps a batch, tens of thousands of points at most — memory stays flat on a
 * long run. A single line longer than this is refused by the line reader with its byte offset.
 */
const METRIC_BYTES_PER_BATCH = 1 << 20;

interface VerlCursor {
  format: 'verl-import/1';
  follow: FollowState;
  /** Bytes of the dump files taken so far (progress). */
  dumpBytes: number;
  /** Issues already reported that a re-read would report again (an unfinished last line). */
  noted: string[];
}

function isCursor(value: unknown): value is VerlCursor {
  return value !== null && typeof value === 'object' && (value as VerlCursor).format === 'verl-import/1';
}

/** The folder, checked to hold a run of `engine`; a clear error naming the path otherwise. */
function openFolder(input: string, engine: EngineKind): RunFolder {
  let folder: RunFolder;
  try {
    folder = inspectRunFolder(input);
  } catch (error) {
    throw new ImportSourceError((error as Error).message, input);
  }
  if (!holdsRun(folder)) {
    throw new ImportSourceError(`${input}: no veRL or DrMAS run here (no .hydra/config.yaml of a PPO trainer, no {"step", "data"} metrics JSONL, no {step}.jsonl dumps, no global_step_N checkpoints)`, input);
  }
  if (folder.engine !== engine) throw new ImportSourceError(`${input}: a ${folder.engine === 'drmas' ? 'DrMAS' : 'veRL'} run folder, not ${engine === 'drmas' ? 'DrMAS' : 'veRL'}`, input);
  return folder;
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** Issues of the folder as a whole, reported once (on a read from the start). */
function folderIssues(folder: RunFolder, spec: FollowSpec): ImportIssue[] {
  const issues = [...folder.issues];
  if (spec.files.metricsFile === null && folder.consoleLog === null) {
    const where = folder.tensorboardDir !== null ? `; its metrics are TensorBoard event files in ${folder.tensorboardDir}: import that folder as TensorBoard to see its curves beside this run` : '';
    issues.push({ file: '', position: '', message: `no metrics found (no file logger JSONL, no saved console output with step:N lines)${where}` });
  }
  return issues;
}

/** The metrics file's last line when it has no newline yet (cut off, or still being written): left for a later read, reported once. */
function unfinishedTail(spec: FollowSpec, cursor: VerlCursor): ImportIssue | null {
  const file = spec.files.metricsFile;
  if (file === null || cursor.follow.metricsRewritten) return null;
  const pending = fileSize(file) - cursor.follow.metrics.offset;
  const rel = path.relative(spec.files.attemptDir, file);
  const id = `tail:${rel}:${cursor.follow.metrics.offset}`;
  if (pending <= 0 || cursor.noted.includes(id)) return null;
  cursor.noted.push(id);
  const line = cursor.follow.metrics.line + 1;
  return { file: rel, position: `line ${line}`, message: `${rel}:${line}: the last line has no newline (${pending} bytes cut off, or still being written); left out, read again once it is complete` };
}

function consoleText(folder: RunFolder, spec: FollowSpec): string | null {
  if (spec.metricSource !== 'console' || folder.consoleLog === null) return null;
  return fs.readFileSync(path.join(folder.root, folder.consoleLog), 'utf8');
}

function newDumpBytes(spec: FollowSpec, before: readonly string[], after: readonly string[]): number {
  let bytes = 0;
  for (const taken of after) {
    if (before.includes(taken)) continue;
    const [split, step] = taken.split('/');
    const dir = split === 'train' ? spec.files.rolloutDir : spec.files.validationDir;
    if (dir !== null) bytes += fileSize(path.join(dir, `${step}.jsonl`));
  }
  return bytes;
}

async function* readFolder(input: string, engine: EngineKind, runKey: string, cursor: unknown, options: ReadOptions): AsyncIterable<ImportBatch> {
  if (runKey !== RUN_KEY) throw new ImportSourceError(`${input}: a ${engine} folder holds one run, "${RUN_KEY}" (not "${runKey}")`, input);
  const folder = openFolder(input, engine);
  const spec = followSpecOf(folder);
  const log = consoleText(folder, spec);
  let state: VerlCursor = isCursor(cursor) ? structuredClone(cursor) : { format: 'verl-import/1', follow: initialFollowState(), dumpBytes: 0, noted: [] };
  let pendingIssues = isCursor(cursor) ? [] : folderIssues(folder, spec);
  const bytesDone = () => state.follow.metrics.offset + state.follow.log.chars + state.dumpBytes;
  for (;;) {
    if (options.signal?.aborted) return;
    const step = followAttempt(spec, state.follow, { job: null, log, finished: true, now: Date.now() }, { maxTurns: options.batchSize, maxMetricBytes: METRIC_BYTES_PER_BATCH });
    const converted = convertRecords(step.records, spec.engine);
    if (folder.consoleLog !== null) for (const issue of converted.issues) if (issue.file === 'job.log') issue.file = folder.consoleLog;
    const next: VerlCursor = { ...state, follow: step.state, dumpBytes: state.dumpBytes + newDumpBytes(spec, state.follow.dumps, step.state.dumps) };
    const moved = JSON.stringify(next.follow) !== JSON.stringify(state.follow);
    state = next;
    const tail = moved ? null : unfinishedTail(spec, state);
    const issues = [...pendingIssues, ...converted.issues, ...(tail ? [tail] : [])];
    pendingIssues = [];
    if (step.records.length > 0 || issues.length > 0 || moved) {
      yield { metrics: converted.metrics, episodes: converted.episodes, checkpoints: converted.checkpoints, issues, cursor: structuredClone(state), bytesDone: bytesDone() };
    }
    if (!moved) return;
  }
}

/**
 * When the run was launched: Hydra names its run folder `outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}`
 * (hydra/conf/hydra/output/default.yaml), in the training machine's local time, read here as this
 * machine's. Null when the config is not in such a folder (`hydra.run.dir=.`).
 */
export function launchedAt(folder: RunFolder): number | null {
  const m = /^outputs\/(\d{4})-(\d{2})-(\d{2})\/(\d{2})-(\d{2})-(\d{2})\//.exec(folder.hydra?.file.split(path.sep).join('/') ?? '');
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number);
  return new Date(year, month - 1, day, hour, minute, second).getTime();
}

function runName(folder: RunFolder): string {
  const experiment = folder.hydra ? configString(folder.hydra.config, 'trainer.experiment_name') : null;
  return experiment ?? path.basename(folder.root);
}

/** The files a read takes (config, metrics, console output, dumps), for the preview's counts. */
function sourceFiles(folder: RunFolder): string[] {
  const files = [folder.hydra?.file, folder.metricsFile, folder.consoleLog].filter((f): f is string => typeof f === 'string');
  for (const dir of [folder.rolloutDir, folder.validationDir]) {
    if (dir === null) continue;
    for (const e of entries(path.join(folder.root, dir))) if (e.isFile() && /^\d+\.jsonl$/.test(e.name)) files.push(path.join(dir, e.name));
  }
  return files;
}

/** Counts by reading the run as an import would (streamed, batch by batch), so the preview says exactly what will be imported. */
async function scanFolder(input: string, engine: EngineKind, options: { signal?: AbortSignal }): Promise<ScanResult> {
  const folder = openFolder(input, engine);
  const steps = new Set<number>();
  const keys = new Set<string>();
  const agents = new Set<string>();
  const issues: ImportIssue[] = [];
  let metricPoints = 0;
  let generations = 0;
  let episodes = 0;
  for await (const batch of readFolder(input, engine, RUN_KEY, null, { batchSize: 5000, signal: options.signal })) {
    for (const m of batch.metrics) {
      steps.add(m.step);
      keys.add(m.key);
    }
    metricPoints += batch.metrics.length;
    for (const e of batch.episodes) {
      steps.add(e.step);
      generations += e.turns.length;
      for (const t of e.turns) agents.add(t.agent);
    }
    episodes += batch.episodes.length;
    issues.push(...batch.issues);
  }
  const sorted = [...steps].sort((a, b) => a - b);
  const files = sourceFiles(folder);
  const project = folder.hydra ? configString(folder.hydra.config, 'trainer.project_name') : null;
  const run: ScannedRun = {
    key: RUN_KEY,
    name: runName(folder),
    steps: sorted.length,
    firstStep: sorted[0] ?? null,
    lastStep: sorted[sorted.length - 1] ?? null,
    metricKeys: [...keys].sort(),
    metricPoints,
    generations,
    episodes,
    agents: [...agents].sort(),
    config: folder.hydra?.config ?? {},
    tags: [engine, ...(project !== null ? [project] : [])],
    startedAt: launchedAt(folder),
    endedAt: null,
  };
  return { runs: [run], issues, files: files.length, bytes: files.reduce((n, f) => n + fileSize(path.join(folder.root, f)), 0) };
}

function detectFolder(input: string, engine: EngineKind): boolean {
  try {
    const folder = inspectRunFolder(input);
    return holdsRun(folder) && folder.engine === engine;
  } catch {
    return false;
  }
}

export function runFolderFormat(id: Extract<ImportFormatId, 'verl' | 'drmas'>, label: string): ImportFormat {
  return {
    id,
    label,
    detect: (input) => detectFolder(input, id),
    scan: (input, options) => scanFolder(input, id, options),
    read: (input, runKey, cursor, options) => readFolder(input, id, runKey, cursor, options),
  };
}
