/**
 * What a follower hands the store (issue 38 live, issue 39 import): normalized records, each with
 * where it came from, so a record can be traced to its file and line and a re-read of the same
 * bytes recognised. Nothing is invented: an agent the engine did not write is null ("agent
 * unknown"), a value it did not dump is null.
 */
import type { Role } from '#shared/agents';
import type { JobStatus } from '../ray/types';

/** A position in an attempt's files: a path relative to the attempt folder (or the run folder for checkpoints), a 1-based line, a byte offset. */
export interface SourcePos {
  file: string;
  line: number | null;
  offset: number | null;
}

export interface MetricRecord {
  kind: 'metric';
  step: number;
  /** The Studio's key where the engine's metric means the same (catalog.ts), else `<engine>/<engine key>`. */
  key: string;
  /** The engine's own key, verbatim (a DrMAS worker group id may contain a space). */
  engineKey: string;
  value: number;
  /** Whether the value came from the Studio's mapping, the engine as is, or was derived from the dumps. */
  via: 'mapped' | 'engine' | 'derived';
  /** When the follower read it (ms since the epoch); the engine writes no time per metric. */
  observedAt: number;
  source: SourcePos;
}

export interface TurnRecord {
  kind: 'turn';
  split: 'train' | 'test';
  step: number;
  /** 0-based line of the step's dump. */
  index: number;
  prompt: string;
  text: string;
  /** The score the engine trained on (`score`: the reward function's, DrMAS's episode reward minus penalties). */
  reward: number | null;
  /** The reward function's correctness (`acc`), when it wrote one. */
  correct: boolean | null;
  /** The reference answer (`gts`, veRL ≥ 0.6), as text. */
  groundTruth: string | null;
  /** The GRPO group: veRL's uid prompt part, DrMAS's `uid` (with the hook). Null when not dumped. */
  group: string | null;
  /** The sample's place in its group (veRL's uid session part). */
  sampleIndex: number | null;
  /** DrMAS's trajectory id (with the hook). */
  trajectory: string | null;
  /** The Studio agent: `solver`, `verifier1`, `corrector2`…; null = agent unknown (never guessed). */
  agent: string | null;
  role: Role | null;
  /** Round within the chain (0 for the Solver); null when unknown. */
  round: number | null;
  engineAgentId: string | null;
  wgId: string | null;
  advantage: number | null;
  /** DrMAS pads each worker group's batch with copies; true for a copy (hook's dup flag), null when unknown. */
  duplicate: boolean | null;
  formatValid: boolean | null;
  /** Every other dumped field (pred, reward, acc, format_valid, …). */
  extras: Record<string, unknown>;
  source: SourcePos;
}

export interface CheckpointPolicy {
  /** Studio roles trained in it. */
  roles: Role[];
  /** DrMAS worker group; `actor` for veRL's single policy. */
  wgId: string;
  /** The folder as this machine sees it. */
  dir: string;
  /** A Hugging Face folder with weights (config.json + safetensors) the model tools can open; null when only FSDP shards were saved. */
  hfDir: string | null;
}

export interface CheckpointRecord {
  kind: 'checkpoint';
  step: number;
  dir: string;
  policies: CheckpointPolicy[];
  source: SourcePos;
}

export interface CheckpointRemovedRecord {
  kind: 'checkpoint_removed';
  step: number;
  dir: string;
}

export interface StatusRecord {
  kind: 'status';
  status: JobStatus;
  message: string | null;
  errorType: string | null;
  exitCode: number | null;
}

/** New text of the job's log, in order (the Studio appends it to the attempt's job.log). */
export interface LogRecord {
  kind: 'log';
  text: string;
}

/** A Python traceback found in the job's log (the reason a FAILED job failed). */
export interface TracebackRecord {
  kind: 'traceback';
  text: string;
  /** The last line: `ValueError: …`. */
  error: string;
  /** The Ray actor that printed it (`TaskRunner`), null for the driver. */
  actor: string | null;
  source: SourcePos;
}

export interface WarningRecord {
  kind: 'warning';
  code: 'agent_unknown' | 'file_rewritten' | 'bad_line' | 'partial_dump' | 'tensorboard_unread' | 'cluster_unreachable' | 'log_unavailable';
  message: string;
  source: SourcePos | null;
}

export type FollowRecord = MetricRecord | TurnRecord | CheckpointRecord | CheckpointRemovedRecord | StatusRecord | LogRecord | TracebackRecord | WarningRecord;
