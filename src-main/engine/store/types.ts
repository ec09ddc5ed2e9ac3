/**
 * Row shapes of the experiment store, as the rest of the engine sees them (camelCase). Where a row
 * is what the StudioApi sends (a turn, a segment, an event, a timeline span), its shape is the
 * contract's, with the keys the API leaves out added here (issue 37: a turn was typed by hand four
 * times): the API's JSON and the rows cannot drift apart.
 */
import type { ImportOrigin, RunEvent, RunStatus, Segment, TimelineSpan, Turn } from '#shared/contract';

export type { RunStatus };
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'done', 'failed', 'interrupted'];
export type Split = 'train' | 'test';

export interface RunRow {
  id: number;
  name: string;
  status: RunStatus;
  statusReason: string | null;
  preset: string | null;
  config: Record<string, unknown>;
  codeVersion: string;
  backend: string | null;
  backendInfo: Record<string, unknown> | null;
  seed: number;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  notes: string;
  tags: string[];
  /** Process that owns the run while it is running. */
  workerPid: number | null;
  /** Last time that process reported (ms since the epoch). */
  heartbeatAt: number | null;
  /** The run's current attempt: 1, then one more per `marsrl resume` (schema v5). */
  attempt: number;
  /** Someone asked the run to stop (issue 35); its owner stops at the next safe point. Null when nobody has. */
  stopRequest: { at: number; reason: string } | null;
  /** The version of the answer checker that judged its turns (math runs; schema v7); null when unknown. */
  checkerVersion: string | null;
  /** Where an imported run came from (issue 39, schema v10; store/imports.ts); null for a run made here. Imported runs are read-only. */
  imported: ImportOrigin | null;
}

/** One attempt of a run: its first, or a resume that redid the steps from `resumedFromStep`. */
export interface RunAttemptRow {
  runId: number;
  attempt: number;
  startedAt: number;
  resumedFromStep: number | null;
  /** The answer checker this attempt judged with (schema v7); null when unknown. */
  checkerVersion: string | null;
}

export interface NewRun {
  name: string;
  preset?: string | null;
  config: Record<string, unknown>;
  codeVersion: string;
  seed: number;
  status?: RunStatus;
  notes?: string;
  tags?: string[];
  /** The version of the answer checker that will judge its turns (`answerCheckerVersion`); null when it has none. */
  checkerVersion?: string | null;
}

/** A problems row without its meta (what matching problems across runs reads, issue 40). */
export interface ProblemRecord {
  id: number;
  runId: number;
  split: Split;
  family: string;
  problemKey: string;
  question: string;
  answer: string;
}

export interface ProblemRow extends ProblemRecord {
  meta: Record<string, unknown> | null;
}

export interface EpisodeRow {
  id: number;
  runId: number;
  step: number;
  problemId: number | null;
  split: Split;
  finalAnswer: string | null;
  correct: boolean | null;
  rounds: number;
  meta: Record<string, unknown> | null;
}

/** A turn's own columns: the API's Turn without its reward and advantage (joined from their tables) and its attempt columns. */
export type TurnRow = Omit<Turn, 'reward' | 'rewardComponents' | 'advantage' | 'advantageMode' | 'advantageWeight' | 'attempt' | 'supersededBy'>;

/** A segment row: the API's Segment with the keys it leaves out. */
export interface SegmentRow extends Segment {
  id: number;
  turnId: number;
  runId: number;
}

export interface RewardRow {
  turnId: number;
  runId: number;
  value: number;
  components: Record<string, number>;
  scheme: string;
}

export interface AdvantageRow {
  turnId: number;
  runId: number;
  value: number;
  mode: string;
  groupKey: string;
  mu: number;
  sigma: number;
  /** The factor `value` was multiplied by after normalization (advantage.verifier_class_balance); 1 when none. */
  weight?: number;
}

export interface MetricPoint {
  runId: number;
  step: number;
  /** Seconds since the run started (the x-axis of wall-time charts). */
  wallTime: number;
  key: string;
  value: number;
}

export type EventLevel = RunEvent['level'];

/** An event row is what the API sends. */
export type EventRow = RunEvent;

export interface CheckpointRow {
  id: number;
  runId: number;
  step: number;
  policyId: string;
  path: string;
  createdAt: number;
  metrics: Record<string, number> | null;
}

/** A timeline row: the API's TimelineSpan with the keys it leaves out. */
export interface TimelineRow extends TimelineSpan {
  id: number;
  runId: number;
}

/** A page of rows and the cursor that fetches the next one (null at the end). */
export interface KeysetPage<T> {
  items: T[];
  nextCursor: number | null;
}
