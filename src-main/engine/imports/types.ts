/**
 * What one import format is to the importer (issue 39): a reader of a folder or file another tool
 * wrote (MarsRL's inference outputs, veRL/DrMAS run folders, TensorBoard, trackio, MLflow). Each
 * format is one folder under imports/ and one entry of registry.ts.
 *
 * A reader never writes the store. It scans (counts, for the preview) and reads: batches of
 * normalized records, each batch with the cursor that moves past it, so the importer commits a
 * batch and its cursor in one transaction — a re-import continues from the last cursor (nothing
 * added twice), a grown source yields only what is new. A record it cannot use is an issue naming
 * the file and the position; the rest is read.
 */
import type { Role } from '#shared/agents';
import type { ImportFormatId, ImportIssue, ImportSourceRun } from '#shared/contract';

/** A run found in a source, with what the preview shows (the importer adds `existingRunId`). */
export interface ScannedRun extends Omit<ImportSourceRun, 'existingRunId'> {
  /** The source's own configuration (Hydra config, trackio config, MLflow params), stored on the run. */
  config: Record<string, unknown>;
  tags: string[];
  /** When the source run started (ms since the epoch), if it says. */
  startedAt: number | null;
  endedAt: number | null;
}

export interface ScanResult {
  runs: ScannedRun[];
  issues: ImportIssue[];
  files: number;
  bytes: number;
}

export interface ImportMetric {
  step: number;
  /** The Studio's key where the source's metric means the same (engine/metrics catalog), else the source's key. */
  key: string;
  value: number;
  /** Seconds since the epoch when the source recorded it; null when it did not. */
  wallTime: number | null;
}

export interface ImportTurn {
  /** Studio agent name: `solver`, `verifier1`, `corrector1`…; `unknown` when the source does not say (never guessed). */
  agent: string;
  role: Role | null;
  /** Round within the chain (0 for the Solver). */
  round: number;
  prompt: string;
  text: string;
  finishReason: string | null;
  /** Completion tokens the source reported. */
  tokens: number | null;
  reward: number | null;
  advantage: number | null;
  /** A Verifier's verdict where the source has one (true = approved). */
  verdict: boolean | null;
  /** A Solver's or Corrector's own answer and its judgement, where the format can tell (else the episode's final answer marks its last answering turn). */
  answer?: string | null;
  correct?: boolean | null;
  /** Everything else the source wrote for the call (status_code, call_reason, stop_reason, …). */
  meta: Record<string, unknown>;
}

export interface ImportProblem {
  /** Stable id within the source (MarsRL's qid, a prompt's digest). */
  key: string;
  question: string;
  /** Reference answer (MarsRL's ans_box, veRL's gts); '' when none. */
  answer: string;
  meta: Record<string, unknown> | null;
}

export interface ImportEpisode {
  split: 'train' | 'test';
  step: number;
  problem: ImportProblem | null;
  turns: ImportTurn[];
  finalAnswer: string | null;
  /** Judged by the Studio's checker against the problem's answer where the format has one; null when not judged. */
  correct: boolean | null;
  /** GRPO group id where the source has one. */
  group: string | null;
  meta: Record<string, unknown> | null;
}

export interface ImportCheckpoint {
  step: number;
  policyId: string;
  path: string;
}

export interface ImportBatch {
  metrics: ImportMetric[];
  episodes: ImportEpisode[];
  checkpoints: ImportCheckpoint[];
  issues: ImportIssue[];
  /** Where the next read starts (JSON-serializable); saved with the batch. */
  cursor: unknown;
  /** Bytes of the source consumed so far (progress), and the bytes hashed into the run's digest in this batch, in file order. */
  bytesDone: number;
}

export interface ReadOptions {
  signal?: AbortSignal;
  /** Records per batch the importer wants (about 5,000). */
  batchSize: number;
}

export interface ImportFormat {
  id: ImportFormatId;
  label: string;
  /** Cheap check: does this path look like this format (file names, a first line)? Never reads a whole file. */
  detect(path: string): boolean;
  /** Counts for the preview; streams, never holds the source in memory. */
  scan(path: string, options: { signal?: AbortSignal }): Promise<ScanResult>;
  /**
   * The source logs no metrics of its episodes (MarsRL's outputs): the importer derives the
   * accuracy curves the Studio's own runs log (eval/system/accuracy, eval/solver/accuracy) from the
   * judged episodes, so the dashboard and compare show them beside a Studio run.
   */
  derivesAccuracy?: boolean;
  /** Records of one source run after `cursor` (null: from the start), in order. */
  read(path: string, runKey: string, cursor: unknown | null, options: ReadOptions): AsyncIterable<ImportBatch>;
}

/** A request the importer refuses before reading anything; `field` is the request's key it is about. */
export class ImportRequestError extends Error {
  constructor(
    message: string,
    readonly field: 'path' | 'format' | 'runs',
  ) {
    super(message);
    this.name = 'ImportRequestError';
  }
}

/** A bad source as a whole (empty folder, not a format the Studio reads): the message names the file and the fix. */
export class ImportSourceError extends Error {
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
    this.name = 'ImportSourceError';
  }
}
