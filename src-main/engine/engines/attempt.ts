/**
 * One absolute folder per attempt (issue 38): veRL's file logger truncates its file on every
 * start (`open(path, "wb")`, verl/utils/tracking.py FileLogger) and a resumed job validates again
 * at its resumed step (`validation/N.jsonl` again), so what an attempt writes goes under its own
 * `attempt-N/` and nothing of an earlier attempt is ever opened for writing. The dataset and the
 * checkpoints are the run's: `trainer.resume_mode=auto` reads `latest_checkpointed_iteration.txt`
 * in `default_local_dir`, and a resumed dataloader state refers to the dataset's row order.
 *
 *   <run_root>/run-<id>-<tag>/
 *     data/{train,test}.parquet
 *     checkpoints/global_step_N/…, latest_checkpointed_iteration.txt
 *     attempt-1/ submission.json job.log metrics.jsonl rollout/ validation/ tensorboard/ hydra/ code/
 *     attempt-2/ …
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { numberedEntries } from '../util/numbered-entries';
import path from 'node:path';

/** Where one run's engine attempts live. Every path is absolute (veRL trains inside a Ray actor whose cwd is not the driver's). */
export interface AttemptLayout {
  /** The run's folder as the cluster sees it. */
  runDir: string;
  /** The same folder as this machine sees it (equal for a local head; a mount of a shared filesystem otherwise). */
  localRunDir: string;
  attempt: number;
  /** `attempt-N`: metrics, dumps, TensorBoard, Hydra's folder and the submitted command of this attempt only. */
  attemptDir: string;
  /** The dataset, shared by every attempt (a resumed dataloader state refers to its row order). */
  dataDir: string;
  /** Checkpoints, shared by every attempt so `trainer.resume_mode=auto` finds the last one. */
  checkpointsDir: string;
  /** The Studio's code the job loads (reward function, DrMAS hook), per attempt. */
  codeDir: string;
  /** `VERL_FILE_LOGGER_PATH`: veRL's file logger truncates it on every start, so it is per attempt. */
  metricsFile: string;
  rolloutDir: string;
  validationDir: string;
  tensorboardDir: string;
  hydraDir: string;
  /** The submission as sent (entrypoint, argv, runtime env, metadata, the Studio config). */
  submissionFile: string;
  /** The Studio's copy of the Ray job log, appended as it is followed. */
  jobLogFile: string;
}

/** `run-42-1a2b3c4d`: the run id and the store tag, so two Studios sharing a cluster never share a folder. */
export function runFolderName(runId: number, storeTag: string): string {
  return `run-${runId}-${storeTag}`;
}

/** A short stable tag of a store (its absolute database path): tells two Studios' run 42 apart. */
export function storeTagOf(storePath: string): string {
  return crypto.createHash('sha256').update(path.resolve(storePath)).digest('hex').slice(0, 8);
}

/**
 * The Ray submission id of one attempt: the same for every submission of that attempt (a
 * restarted Studio attaches), distinct across runs, attempts and stores. Ray uses it in file names
 * (`job-driver-{submission_id}.log`), so it keeps to letters, digits, `-` and `_`.
 */
export function submissionIdOf(runId: number, storeTag: string, attempt: number): string {
  return `marsrl-${runId}-${storeTag}-a${attempt}`;
}

/**
 * The layout of one attempt. `runDir` is the cluster's path, `localRunDir` the same folder here
 * (they differ when the cluster's filesystem is mounted elsewhere on this machine).
 */
export function attemptLayout(runDir: string, localRunDir: string, attempt: number): AttemptLayout {
  if (!path.isAbsolute(runDir) || !path.isAbsolute(localRunDir)) throw new Error(`run folders must be absolute (got ${runDir}, ${localRunDir})`);
  if (!Number.isInteger(attempt) || attempt < 1) throw new Error(`attempt must be a positive integer (got ${attempt})`);
  const attemptDir = path.posix.join(runDir, `attempt-${attempt}`);
  return {
    runDir,
    localRunDir,
    attempt,
    attemptDir,
    dataDir: path.posix.join(runDir, 'data'),
    checkpointsDir: path.posix.join(runDir, 'checkpoints'),
    codeDir: path.posix.join(attemptDir, 'code'),
    metricsFile: path.posix.join(attemptDir, 'metrics.jsonl'),
    rolloutDir: path.posix.join(attemptDir, 'rollout'),
    validationDir: path.posix.join(attemptDir, 'validation'),
    tensorboardDir: path.posix.join(attemptDir, 'tensorboard'),
    hydraDir: path.posix.join(attemptDir, 'hydra'),
    submissionFile: path.posix.join(attemptDir, 'submission.json'),
    jobLogFile: path.posix.join(attemptDir, 'job.log'),
  };
}

/** A cluster path of this layout as this machine sees it. */
export function localPath(layout: Pick<AttemptLayout, 'runDir' | 'localRunDir'>, clusterPath: string): string {
  const rel = path.posix.relative(layout.runDir, clusterPath);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${clusterPath} is outside the run folder ${layout.runDir}`);
  return path.join(layout.localRunDir, ...rel.split('/').filter(Boolean));
}

/** The attempts already made in a run folder (seen here), by number. */
export function existingAttempts(localRunDir: string): number[] {
  return numberedEntries(localRunDir, /^attempt-(\d+)$/);
}

/**
 * Creates the attempt's folder exclusively: an attempt folder that already exists belongs to an
 * earlier submission and is never written into again (`attempt_exists`), unless it holds this
 * very submission (the same id: a restarted Studio re-submitting, which Ray answers by attaching).
 */
export function createAttemptFolder(layout: AttemptLayout, submissionId: string): { created: boolean } {
  const local = (p: string) => localPath(layout, p);
  fs.mkdirSync(layout.localRunDir, { recursive: true });
  try {
    fs.mkdirSync(local(layout.attemptDir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const recorded = readSubmission(local(layout.submissionFile));
    if (recorded?.submission_id === submissionId) return { created: false };
    throw new Error(
      `${local(layout.attemptDir)} already holds ${recorded ? `submission ${recorded.submission_id}` : 'files of an earlier attempt'}; an attempt's files are never overwritten. Resume the run (a new attempt) instead.`,
      { cause: error },
    );
  }
  for (const dir of [layout.dataDir, layout.checkpointsDir, layout.codeDir, layout.rolloutDir, layout.validationDir, layout.tensorboardDir, layout.hydraDir]) {
    fs.mkdirSync(local(dir), { recursive: true });
  }
  return { created: true };
}

function readSubmission(file: string): { submission_id?: string } | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as { submission_id?: string };
  } catch {
    return null;
  }
}

/** Writes a file that must not exist yet (an attempt's record), through a temporary name. */
export function writeNewFile(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text, { flag: 'wx' });
  try {
    fs.linkSync(tmp, file);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}
