/**
 * The StudioApi contract: the one typed surface between the UI and the engine.
 *
 * Three transports implement it by calling the same service functions (src-main/api):
 * Electron IPC (exposed on `window.studio` by the preload), HTTP + WebSocket (`marsrl serve`),
 * and direct calls in tests. The renderer imports this file with `import type` only; the
 * method list below is the one runtime value, shared by the preload and the HTTP client so that
 * a method added here is wired everywhere at once. Every payload is validated in main
 * (src-main/api/validate.ts) before use, because the renderer is not trusted.
 */

export type RunStatus = 'queued' | 'running' | 'done' | 'failed' | 'interrupted';

export interface AppInfo {
  version: string;
  /** Where the SQLite store lives. */
  databasePath: string;
  /** Schema version of the open store (SQLite `user_version`). */
  schemaVersion: number;
  /** 'electron' inside the desktop app, 'http' through `marsrl serve`. */
  transport: 'electron' | 'http' | 'direct';
}

export interface RunSummary {
  id: number;
  name: string;
  status: RunStatus;
  /** Why a run failed or was interrupted (worker killed, NaN limit, Ctrl-C …). */
  statusReason: string | null;
  preset: string | null;
  task: string;
  rewardScheme: string;
  advantageMode: string;
  pipelineMode: string;
  seed: number;
  backend: string | null;
  tags: string[];
  notes: string;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  /** Last step with a logged metric, or null before the first. */
  lastStep: number | null;
  /** Latest value of a few headline metrics (e.g. `eval/system/accuracy`). */
  keyMetrics: Record<string, number>;
}

export interface RunDetail extends RunSummary {
  /** The fully resolved configuration snapshot stored with the run. */
  config: Record<string, unknown>;
  codeVersion: string;
  /** Backend chosen and why the others were skipped. */
  backendInfo: Record<string, unknown> | null;
  counts: { problems: number; episodes: number; turns: number; segments: number; metrics: number; events: number; checkpoints: number };
}

export interface ListRunsQuery {
  /** Keyset cursor: return runs with id below this (newest first). */
  beforeId?: number;
  limit?: number;
  status?: RunStatus;
  /** Case-insensitive substring of name, preset, task or tags. */
  search?: string;
}

export interface Page<T> {
  items: T[];
  /** Pass back to get the next page; null when there is none. */
  nextCursor: number | null;
}

export interface PresetInfo {
  name: string;
  description: string;
}

export interface ConfigIssue {
  /** Dotted field path, e.g. `rollout.solver_group`. */
  path: string;
  message: string;
  /** The offending value, when there was one. */
  value?: unknown;
}

export type ConfigValidation =
  | { ok: true; config: Record<string, unknown> }
  | { ok: false; issues: ConfigIssue[] };

/** An error that crossed a process or network boundary. */
export interface StudioErrorShape {
  code: 'invalid_request' | 'not_found' | 'conflict' | 'internal';
  message: string;
  issues?: ConfigIssue[];
}

export interface StudioApi {
  appInfo(): Promise<AppInfo>;
  listRuns(query?: ListRunsQuery): Promise<Page<RunSummary>>;
  getRun(runId: number): Promise<RunDetail>;
  listPresets(): Promise<PresetInfo[]>;
  /** A preset's fully resolved configuration. */
  getPreset(name: string): Promise<Record<string, unknown>>;
  /** Validate a configuration against the same schema the CLI uses. */
  validateConfig(config: unknown): Promise<ConfigValidation>;
}

export type StudioMethod = keyof StudioApi;

/** Every method name, for transports that forward calls generically. */
export const STUDIO_METHODS = [
  'appInfo',
  'listRuns',
  'getRun',
  'listPresets',
  'getPreset',
  'validateConfig',
] as const satisfies readonly StudioMethod[];

/** The IPC channel carrying StudioApi calls. */
export const STUDIO_IPC_CHANNEL = 'studio:call';

// Compile-time guard: a method added to StudioApi but not to STUDIO_METHODS fails typecheck.
type UnlistedMethods = Exclude<StudioMethod, (typeof STUDIO_METHODS)[number]>;
export const STUDIO_METHODS_COMPLETE: [UnlistedMethods] extends [never] ? true : UnlistedMethods = true;
