/** Row shapes of the experiment store, as the rest of the engine sees them (camelCase). */

export type RunStatus = 'queued' | 'running' | 'done' | 'failed' | 'interrupted';
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

export interface ProblemRow {
  id: number;
  runId: number;
  split: Split;
  family: string;
  problemKey: string;
  question: string;
  answer: string;
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

export interface TurnRow {
  id: number;
  runId: number;
  episodeId: number | null;
  step: number;
  agent: string;
  policyId: string;
  round: number;
  groupId: number;
  parentTurnId: number | null;
  sampleIndex: number;
  prompt: string;
  text: string;
  tokenCount: number;
  parsed: string | null;
  correct: boolean | null;
  formatValid: boolean;
  policyVersionMin: number;
  policyVersionMax: number;
  createdAt: number;
}

export interface SegmentRow {
  id: number;
  turnId: number;
  runId: number;
  segIndex: number;
  tokenStart: number;
  tokenEnd: number;
  text: string;
  finished: boolean;
  policyVersion: number;
  startedAt: number;
  endedAt: number;
  worker: string;
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

export type EventLevel = 'info' | 'warning' | 'error';

export interface EventRow {
  id: number;
  runId: number;
  step: number | null;
  time: number;
  level: EventLevel;
  kind: string;
  message: string;
  data: Record<string, unknown> | null;
}

export interface CheckpointRow {
  id: number;
  runId: number;
  step: number;
  policyId: string;
  path: string;
  createdAt: number;
  metrics: Record<string, number> | null;
}

export interface TimelineRow {
  id: number;
  runId: number;
  kind: 'segment' | 'update' | 'eval' | 'wait';
  agent: string;
  worker: string;
  step: number;
  policyVersion: number;
  startedAt: number;
  endedAt: number;
  tokens: number;
}

/** A page of rows and the cursor that fetches the next one (null at the end). */
export interface KeysetPage<T> {
  items: T[];
  nextCursor: number | null;
}
