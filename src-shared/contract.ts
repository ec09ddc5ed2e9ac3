/**
 * The StudioApi contract: the one typed surface between the UI and the engine.
 *
 * Three transports implement it by calling the same service functions (src-main/api):
 * Electron IPC (exposed on `window.studio` by the preload), HTTP + WebSocket (`marsrl serve`),
 * and direct calls in tests. It lives in src-shared, the pure layer under main, the preload and
 * the renderer alike (issue 37): types, the method list and the IPC channel names, which are the
 * only runtime values, shared by the preload and the HTTP client so that a method added here is
 * wired everywhere at once. Every payload is validated in main (src-main/api/dispatch.ts) before
 * use, because the renderer is not trusted.
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
  /** Where exports given a relative path are written (the per-user exports folder). */
  exportsDir: string;
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
  /** The study cell this run was launched for (its matrix axis values, without the seed); null outside a study. */
  study: RunStudyCell | null;
  /** The config values at the paths asked for in `ListRunsQuery.configPaths` (as text; '' when unset). */
  configValues: Record<string, string>;
  /** Someone asked the run to stop (from any process); it stops at its next safe point (issue 35). */
  stopRequest: { at: number; reason: string } | null;
  /**
   * What can really be done with the run next, first the one to offer (issue 35): stop a live run,
   * resume from the checkpoint of a step, or (no checkpoint) run again with the same config.
   */
  actions: RunAction[];
  /** Where the run came from when it was imported (issue 39), null for a run the Studio made. An imported run is read-only: no stop, resume or run again. */
  imported: ImportOrigin | null;
}

export type RunAction =
  | { kind: 'stop'; command: string; text: string }
  /** `checkpointStep` null: a reasoning-system run, resumed from its stored turns. */
  | { kind: 'resume'; checkpointStep: number | null; command: string; text: string }
  | { kind: 'run-again'; command: string; text: string };

/** What the run's last resume did (its `resumed` event), as the run page reports it (issue 35). */
export interface ResumeReport {
  /** When it resumed (ms since the epoch). */
  at: number;
  attempt: number;
  /** The checkpoint loaded: its step and folder. */
  checkpointStep: number;
  checkpointDir: string;
  /** Newer checkpoints that could not be loaded, newest first, with why (a checksum failure …). */
  skipped: { step: number | null; dir: string; error: string }[];
  /** Rows of the steps it redoes, kept as superseded by this attempt. */
  superseded: { turns: number; episodes: number; metrics: number };
}

/**
 * An agent that has collapsed to one output (issue 35): a Verifier approving or rejecting nearly
 * everything whatever it judges, a Corrector returning its input unchanged. With the numbers.
 */
export interface CollapseFlag {
  agent: string;
  kind: 'approves-everything' | 'rejects-everything' | 'returns-input';
  /** One sentence with the counts: "rejected 312 of 320 verdicts (97.5%), 151 of 155 right solutions among them". */
  message: string;
  /** The share of outputs that were the one output, and over how many. */
  share: number;
  count: number;
  /** The training steps the flag was read over (inclusive). */
  steps: [number, number];
}

/** A run's place in a study: what tells it apart from the study's other runs (issue 18). */
export interface RunStudyCell {
  studyId: number;
  studyName: string;
  /** The cell's label (axis values joined by " / "). */
  label: string;
  /** Matrix axis key (a config path) → this cell's value. */
  values: Record<string, string | number | boolean>;
}

export interface RunDetail extends RunSummary {
  /** The fully resolved configuration snapshot stored with the run. */
  config: Record<string, unknown>;
  codeVersion: string;
  /** Backend chosen and why the others were skipped. */
  backendInfo: Record<string, unknown> | null;
  /** Episodes and turns of the live attempt; `supersededTurns` counts the killed attempts' redone ones. */
  counts: { problems: number; episodes: number; turns: number; supersededTurns: number; segments: number; metrics: number; events: number; checkpoints: number };
  /** The step of the last checkpoint (a resume continues after it); null before the first. */
  lastCheckpointStep: number | null;
  /** The last resume: which checkpoint it used, which newer ones it skipped and why, what it superseded. */
  lastResume: ResumeReport | null;
  /** Agents that have collapsed to one output over the run's last training steps (empty when none). */
  collapse: CollapseFlag[];
  /**
   * The spans the run was running (first start, each resume), from its events; `end` is null for
   * the span still running. "Ran for" sums them, so time stopped does not count (issue 18).
   */
  runningSpans: { start: number; end: number | null }[];
  /**
   * The answer checker that judged the run's turns (math runs, issue #34); null for families whose
   * checkers have no versions.
   */
  checker: RunChecker | null;
}

export interface RunChecker {
  /** The version each attempt judged with, in order; null where unknown (runs made before versions were stored). */
  versions: (string | null)[];
  /** Today's checker (what `marsrl rejudge` would judge with). */
  today: string;
  /** The newest re-judgement (`marsrl rejudge`), if any. */
  latestRejudge: { id: number; checkerVersion: string; createdAt: number; turnsChecked: number; changed: number } | null;
}

export interface ListRunsQuery {
  /** Keyset cursor: return runs with id below this (newest first). */
  beforeId?: number;
  limit?: number;
  status?: RunStatus;
  /** Case-insensitive substring of name, preset, task or tags. */
  search?: string;
  /** Dotted config paths whose values each summary carries in `configValues` (the table's config columns). */
  configPaths?: string[];
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

export interface RunUpdate {
  name?: string;
  notes?: string;
  tags?: string[];
}

/** One field of the run configuration, for the form generated from the schema. */
export interface ConfigField {
  /** Dotted path, e.g. `rollout.solver_group`; `policies.*.model.d_model` for per-policy fields. */
  path: string;
  /** The form section it belongs to (task, agents and policies, rollouts, …). */
  group: string;
  kind: 'integer' | 'number' | 'string' | 'boolean' | 'enum' | 'record';
  description: string;
  default?: unknown;
  options?: string[];
  min?: number;
  max?: number;
  /** True when the bound is exclusive (e.g. a learning rate must be > 0). */
  minExclusive?: boolean;
  maxExclusive?: boolean;
  optional?: boolean;
  /**
   * Shown only when the sibling field `kind` has this value (a policy's model: the gpt sizes, or
   * the hf folder); absent, the field always applies.
   */
  whenKind?: string;
}

export interface ConfigSchemaInfo {
  fields: ConfigField[];
  groups: { id: string; title: string }[];
}

/** What the new-run form is generated from: the schema's fields, and what templates may name. */
export interface ConfigFormInfo extends ConfigSchemaInfo {
  /** The variables each role's prompt templates may name (`{question}` …), issue #14. */
  promptVariables: Record<string, string[]>;
  /** One served endpoint's fields, under `endpoints.*.` (issue #16); the generic fields leave `endpoints` out. */
  endpointFields: ConfigField[];
}

export type SeriesXAxis = 'step' | 'wall';
export type DownsampleMethod = 'lttb' | 'minmax' | 'none';

export interface SeriesQuery {
  runId: number;
  keys: string[];
  /** Most points returned per series; longer series are downsampled server-side. */
  maxPoints?: number;
  xAxis?: SeriesXAxis;
  downsample?: DownsampleMethod;
}

export interface Series {
  key: string;
  /** [x, y] pairs, x being the step or seconds since the run started. */
  points: [number, number][];
  /** Points in the full series before downsampling. */
  totalPoints: number;
}

export interface TurnQuery {
  runId: number;
  afterId?: number;
  limit?: number;
  agent?: string;
  step?: number;
  episodeId?: number;
  correct?: boolean;
  minReward?: number;
  maxReward?: number;
  /** Also turns of killed attempts whose steps a resume redid (left out by default). */
  includeSuperseded?: boolean;
}

export interface Turn {
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
  reward: number | null;
  rewardComponents: Record<string, number> | null;
  advantage: number | null;
  advantageMode: string | null;
  /** What the advantage was multiplied by (advantage.verifier_class_balance); 1 when unweighted, null with no advantage. */
  advantageWeight: number | null;
  /** The run attempt that wrote this turn (1, then one more per resume). */
  attempt: number;
  /** The attempt that redid this turn's step after a resume; null for the live attempt's rows. */
  supersededBy: number | null;
}

export interface Segment {
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

export interface EpisodeSummary {
  id: number;
  runId: number;
  step: number;
  split: 'train' | 'test';
  problemId: number | null;
  question: string | null;
  reference: string | null;
  finalAnswer: string | null;
  correct: boolean | null;
  rounds: number;
  turnCount: number;
  /** The run attempt that wrote this episode (1, then one more per resume). */
  attempt: number;
  /** The attempt that redid this episode's step after a resume; null for live rows. */
  supersededBy: number | null;
}

export interface EpisodeQuery {
  runId: number;
  step?: number;
  split?: 'train' | 'test';
  afterId?: number;
  limit?: number;
  /** Also episodes of killed attempts whose steps a resume redid (left out by default). */
  includeSuperseded?: boolean;
  /** Inclusive step range (with `step`, both apply). */
  stepFrom?: number;
  stepTo?: number;
  /** Whether the episode's final answer was right. */
  outcome?: 'solved' | 'unsolved';
  /** Episodes where a Verifier approved a wrong solution or rejected a right one. */
  verifier?: 'false_approve' | 'false_reject';
  /** Episodes where a Corrector fixed a wrong input, broke a right one, or kept its correctness. */
  corrector?: 'fixed' | 'broke' | 'unchanged';
  /** Text in the question or in any turn's prompt or output (case-insensitive for ASCII). */
  search?: string;
  /** Only the last step with episodes (of `split`, when given): where a browser opens. */
  latestStep?: boolean;
}

export interface EpisodeDetail {
  episode: EpisodeSummary;
  /** Every turn, parents before children; `parentTurnId` rebuilds the tree. */
  turns: (Turn & { segments: Segment[] })[];
  /** What the task family's notation in these texts means, from the family's own description. */
  notation: { roles: string[]; marker: string; meaning: string }[];
  /** The turns the episode filters asked for matched (the browser highlights them, issue 35); empty without filters. */
  matchedTurnIds: number[];
}

/** The episode filters whose matching turns `getEpisode` names (the turn-level ones). */
export interface EpisodeMatch {
  verifier?: EpisodeQuery['verifier'];
  corrector?: EpisodeQuery['corrector'];
}

/** One statistic of an advantage's normalisation, with the turns it is over and its working. */
export interface AdvantageStatistic {
  /** 'group': every member; 'agent': the members of the turn's agent. */
  scope: 'group' | 'agent';
  symbol: string;
  /** The turns the statistic is over, by id. */
  turnIds: number[];
  count: number;
  value: number;
  /** How it was computed, with the numbers: "(1 + 0 + 1 + 1) / 4 = 0.75". */
  working: string;
  /** Set when the one-sample rule replaced the statistic. */
  singleSample: string | null;
}

/** A turn's advantage as a reader recomputes it (issue 35): group, statistics, formula, numbers. */
export interface AdvantageExplanation {
  turnId: number;
  agent: string;
  mode: string;
  groupKey: string;
  /** Every member of the group: the turn's own and the other agents' turns of the same prompt. */
  members: { turnId: number; agent: string; reward: number; advantage: number }[];
  reward: number;
  baseline: AdvantageStatistic;
  /** Null when the mode does not divide (no-std). */
  scale: AdvantageStatistic | null;
  std: 'unbiased' | 'population';
  eps: number;
  /** The mode's formula in symbols: "A = (R − μ_k) / (σ_k + ε)". */
  formula: string;
  /** The formula with this turn's numbers, ending in the value they give. */
  substituted: string;
  /** The class-balance weight the normalised value was multiplied by (1 when none). */
  weight: number;
  /** The value the numbers give (normalised × weight) and the stored one; they agree to rounding. */
  recomputed: number;
  stored: number;
  /** The μ and σ the trainer stored with the advantage, for comparison. */
  storedMu: number;
  storedSigma: number;
}

export interface RunEvent {
  id: number;
  runId: number;
  step: number | null;
  time: number;
  level: 'info' | 'warning' | 'error';
  kind: string;
  message: string;
  data: Record<string, unknown> | null;
}

export interface TimelineSpan {
  kind: 'segment' | 'update' | 'eval' | 'wait';
  agent: string;
  worker: string;
  step: number;
  policyVersion: number;
  /** Milliseconds since the epoch. */
  startedAt: number;
  endedAt: number;
  tokens: number;
}

export interface StartRunRequest {
  /** A configuration document (validated against the run-config schema). */
  config?: Record<string, unknown>;
  /** Preset the document is layered over. */
  preset?: string;
  name?: string;
}

/** Dataset formats, and `tensorboard`: the runs' metrics as TensorBoard event files, one subfolder of `out` per run (issue 39). */
export type ExportFormatName = 'trajectories' | 'verl' | 'sft' | 'pairs' | 'tensorboard';

/**
 * Runs made elsewhere (issue 39): the formats the Studio reads. `verl` and `drmas` are run folders
 * of those engines; `marsrl` is MarsRL's inference output folder (one JSON line per model call).
 */
export type ImportFormatId = 'marsrl' | 'verl' | 'drmas' | 'tensorboard' | 'trackio' | 'mlflow';
export const IMPORT_FORMATS: readonly ImportFormatId[] = ['marsrl', 'verl', 'drmas', 'tensorboard', 'trackio', 'mlflow'];

/** Where an imported run came from: kept on the run, shown in its header and by `marsrl show`. */
export interface ImportOrigin {
  format: ImportFormatId;
  /** The source as given (absolute path of the folder or file imported). */
  path: string;
  /** The source run within it (a trackio run name, an MLflow run id, a TensorBoard subfolder, '.' for the whole source). */
  sourceKey: string;
  /** SHA-256 (hex) of the source bytes imported so far, in file order. */
  digest: string;
  importedAt: number;
  /** When records were last added (a grown source re-imported). */
  updatedAt: number;
}

/** A record the reader could not use: the rest of the source is imported. */
export interface ImportIssue {
  /** The file, relative to the imported path ('' for the path itself). */
  file: string;
  /** Where in it: `line 12`, `byte 4096`, `row 3`, `record 7`; '' when the whole file. */
  position: string;
  message: string;
}

/** One run found in a source, before anything is written. */
export interface ImportSourceRun {
  key: string;
  /** The name it will get (the source's own name, else the folder's). */
  name: string;
  /** Distinct steps with a metric or a generation; the first and last. */
  steps: number;
  firstStep: number | null;
  lastStep: number | null;
  metricKeys: string[];
  metricPoints: number;
  /** Model calls / dumped samples (turns once imported). */
  generations: number;
  /** Episodes they form (a MarsRL problem is one episode of several turns). */
  episodes: number;
  /** Agents seen (Studio names: solver, verifier, corrector…). */
  agents: string[];
  /** The Studio run this source run was imported as before (a re-import adds only what is new), else null. */
  existingRunId: number | null;
}

export interface ImportPreview {
  path: string;
  format: ImportFormatId;
  files: number;
  bytes: number;
  runs: ImportSourceRun[];
  issues: ImportIssue[];
}

export interface ImportPreviewRequest {
  path: string;
  /** Detected from the files when left out. */
  format?: ImportFormatId;
}

export interface ImportRequest extends ImportPreviewRequest {
  /** Source run keys to import; all when left out. */
  runs?: string[];
  /** The Studio run's name (one source run), or its prefix (several). */
  name?: string;
  tags?: string[];
}

export interface ImportRunResult {
  key: string;
  runId: number;
  /** False when the run existed and only new records were added. */
  created: boolean;
  metricPoints: number;
  turns: number;
  episodes: number;
}

export interface ImportSummary {
  path: string;
  format: ImportFormatId;
  runs: ImportRunResult[];
  issues: ImportIssue[];
  seconds: number;
}

export interface ExportRequest {
  runs: number[];
  format: ExportFormatName;
  /** File container; by default from the extension of `out`, else the format's usual one. */
  container?: 'jsonl' | 'parquet';
  /** Output file on the machine that runs the engine; its folder must exist. For `tensorboard`, an existing folder. */
  out: string;
  force?: boolean;
  dedupe?: boolean;
  filters?: {
    agents?: string[];
    stepFrom?: number;
    stepTo?: number;
    split?: 'train' | 'test';
    correct?: boolean | 'any';
    formatValid?: boolean | 'any';
    minReward?: number;
    maxReward?: number;
    /** Also turns of killed attempts whose steps a resume redid (left out by default). */
    includeSuperseded?: boolean;
  };  /** Trajectories only (issue 40): add reward_<scheme> and advantage_<mode> columns, every turn's counterfactual credit. */
  counterfactual?: boolean;
}

export interface ExportSummary {
  out: string;
  card: string;
  rows: number;
  bytes: number;
  seconds: number;
  duplicatesDropped: number;
}

/** Pushed to subscribers (IPC `studio:event`, WebSocket) as runs change. */
/** x-axis of a comparison chart: RL step, seconds since the run started, or samples seen. */
export type CompareXAxis = 'step' | 'wall' | 'samples';
/** Band around a group mean: min–max, ± std, or ± 95% CI over the group's runs. */
export type CompareBand = 'minmax' | 'std' | 'ci95';

export interface CompareRequest {
  runIds: number[];
  /** Config paths (`reward.scheme`) or derived keys (`sharing`) to group runs by. */
  groupBy?: string[];
  baselineRunId?: number;
  baselineGroup?: string;
  /** Spike = a step above this multiple of the run's median gradient norm (default 3). */
  spikeThreshold?: number;
}

export interface CompareMetric {
  id: string;
  label: string;
  better: 'higher' | 'lower' | null;
  unit: 'fraction' | 'ratio' | 'count' | 'per_s' | 'seconds';
}

/** A metric over a group's runs (one value per seed). */
export interface CompareStats {
  n: number;
  mean: number;
  /** Unbiased sample std (N − 1); 0 for n = 1. */
  std: number;
  min: number;
  max: number;
  median: number;
  /** Half-width of the two-sided 95% t interval of the mean; null for n < 2. */
  ci95: number | null;
}

export interface CompareRunRow {
  runId: number;
  name: string;
  status: string;
  seed: number;
  /** The run's group label (values of the group-by keys joined by " / "), or null when ungrouped. */
  group: string | null;
  values: Record<string, number | null>;
  /** Metric id → the store key the value came from, where it can vary (precision, fix rate). */
  sources: Record<string, string>;
  /** Value − baseline run's value; null where either is missing. */
  delta: Record<string, number | null>;
  /** Agents of this run that collapsed to one output (empty when none). */
  collapse: CollapseFlag[];
}

export interface CompareGroupRow {
  label: string;
  /** group-by key → value. */
  values: Record<string, string>;
  runIds: number[];
  seeds: number[];
  stats: Record<string, CompareStats | null>;
  /** Mean − baseline group's mean. */
  delta: Record<string, number | null>;
  /** exceeds: seed ranges do not overlap (null for the baseline or < 2 seeds); chance: 2 / C(nA + nB, nA). */
  spread: Record<string, { exceeds: boolean | null; chance: number | null }>;
}

/**
 * What a comparison cannot claim (issue 35): one seed behind a side (a difference is then not
 * evidence; `command` is the study that would make it so), or an agent that collapsed.
 */
export interface CompareWarning {
  kind: 'one-seed' | 'collapse';
  message: string;
  /** The command that answers it (a study over seeds), when there is one. */
  command: string | null;
  runIds: number[];
}

export interface CompareResult {
  /** Seeds behind each side, and what can and cannot be read from the table. */
  warnings: CompareWarning[];
  metrics: CompareMetric[];
  runs: CompareRunRow[];
  groups: CompareGroupRow[];
  groupBy: string[];
  baselineRunId: number | null;
  baselineGroup: string | null;
  spikeThreshold: number;
  /** Only the config paths whose value differs between the runs (a missing value is absent). */
  configDiff: { keys: string[]; rows: { runId: number; values: Record<string, string | number | boolean | null> }[]; totalKeys: number };
}

export interface CompareSeriesRequest {
  runIds: number[];
  key: string;
  xAxis?: CompareXAxis;
  groupBy?: string[];
  band?: CompareBand;
  /** Most points per run line (min/max downsampling keeps spikes). */
  maxPoints?: number;
}

export interface CompareSeriesResult {
  key: string;
  xAxis: CompareXAxis;
  lines: { runId: number; name: string; group: string | null; points: [number, number][]; totalPoints: number }[];
  /** One per group when groupBy is given: mean and band per step (x = mean x of its runs). */
  bands: {
    group: string;
    runIds: number[];
    points: { x: number; step: number; mean: number; lo: number; hi: number; n: number }[];
    /** The metric's range the band edges were clipped to (a share: [0, 1]); null when unbounded. */
    clippedTo: [number, number] | null;
  }[];
}

/**
 * One problem, many episodes (issue 40): a problem is matched across the chosen runs by its stable
 * id (split, task family and problem key) and, where a run has no problem with that id, by its
 * question text (whitespace-normalized). `key` names the match: `id:…` or `text:…`.
 */
export interface ProblemIdentity {
  key: string;
  matchedBy: 'id' | 'text';
  /** `test` is the held-out set (listed first). */
  split: 'train' | 'test';
  family: string;
  problemKey: string;
  question: string;
  answer: string;
}

/** A problem's episodes in one run: how many, how many ended right, and the outcome at its last step. */
export interface ProblemRunOutcome {
  runId: number;
  /** The problem's row in this run (problems.id): pass it as `problemId` to open the problem. */
  problemId: number;
  episodes: number;
  solved: number;
  /** The latest step with an episode of this problem; null when the run has none yet. */
  lastStep: number | null;
  /** Whether the final answer was right at that step (the episode written last, where a step has several). */
  lastCorrect: boolean | null;
}

export interface ProblemOutcomeRow extends ProblemIdentity {
  /** One entry per requested run, in `runIds` order; null where the run has no such problem. */
  runs: (ProblemRunOutcome | null)[];
  /** The last outcomes differ between the runs that have the problem (at least two of them with an outcome). */
  differs: boolean;
}

export interface ProblemOutcomeQuery {
  runIds: number[];
  /** Only problems whose last outcome differs between the chosen runs. */
  differs?: boolean;
  split?: 'train' | 'test';
  /** Text in the question or the problem key (case-insensitive). */
  search?: string;
  /** Offset into the matched list (from `nextCursor`). */
  cursor?: number;
  limit?: number;
}

export interface ProblemOutcomePage extends Page<ProblemOutcomeRow> {
  runs: { runId: number; name: string; label: string }[];
  /** Problems matching the filters, and over every matched problem: held-out ones and those whose outcome differs. */
  total: number;
  counts: { problems: number; heldOut: number; differing: number };
}

export interface ProblemEpisodesQuery {
  runIds: number[];
  /** A problems.id of one of the runs (the anchor the others are matched to); or give `turnId`. */
  problemId?: number;
  /** Any turn: its episode's problem, in its run. */
  turnId?: number;
  /** The steps to show (rows); default: up to 8 spread over every step with an episode, first and last included. */
  steps?: number[];
}

export interface ProblemEpisode {
  runId: number;
  step: number;
  episode: EpisodeSummary;
  /** Every turn, parents before children; `parentTurnId` rebuilds the tree. */
  turns: Turn[];
}

export interface ProblemEpisodes {
  problem: ProblemIdentity;
  /** The chosen runs in order (columns): the problem's row in each (null where unmatched) and every step it has episodes at. */
  runs: { runId: number; name: string; label: string; problemId: number | null; matchedBy: 'id' | 'text' | null; steps: number[] }[];
  /** Every step any run has an episode of this problem at, ascending. */
  allSteps: number[];
  /** The steps shown (rows), ascending. */
  steps: number[];
  /** The episodes at the shown steps, run by run (a step may hold several, and a run none). */
  episodes: ProblemEpisode[];
}

export interface StudyProgressInfo {
  total: number;
  pending: number;
  running: number;
  done: number;
  failed: number;
}

export interface StudySummary {
  id: number;
  name: string;
  status: RunStatus;
  statusReason: string | null;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  concurrency: number;
  /** The matrix's axis keys (what the study's runs are grouped by). */
  axes: string[];
  progress: StudyProgressInfo;
}

export interface StudyDetail extends StudySummary {
  matrix: Record<string, unknown>;
  /** The baseline group label (axis values joined by " / "). */
  baselineGroup: string | null;
  cells: { cellIndex: number; label: string; values: Record<string, string | number | boolean>; seed: number; runId: number | null; runStatus: RunStatus | null }[];
}

export interface StartStudyRequest {
  /** A study matrix document (the YAML file's content as an object; see resources/studies/quick-2x2.yaml). */
  matrix: Record<string, unknown>;
  /** Overrides the matrix's concurrency. */
  concurrency?: number;
}

export interface StudyReportResult {
  out: string;
  files: string[];
}

/**
 * What the Studio can tell about a Hugging Face model folder before a run starts (issue #13):
 * `marsrl model inspect`'s report, as plain data for the new-run form.
 */
export interface ModelInspection {
  /** The folder, resolved to an absolute path. */
  path: string;
  /** True when the Studio can load and run the folder as a policy. */
  supported: boolean;
  /** Why not (each names the file and the key). */
  problems: string[];
  architecture: string | null;
  modelType: string | null;
  parameters: number | null;
  /** Longest sequence in tokens (max_position_embeddings). */
  context: number | null;
  shape: null | { layers: number; hidden: number; heads: number; kvHeads: number; headDim: number; vocabSize: number; tiedEmbeddings: boolean };
  weights: null | { files: string[]; tensors: number; bytes: number; dtypes: Record<string, number> };
  tokenizer: null | { vocabSize: number; stopTokens: string[]; chatTemplate: null | { source: string; renders: boolean } };
  /**
   * The linear modules LoRA may target in every layer (issue #14), with their shapes: the largest
   * rank a target allows is min(in, out). Empty when config.json could not be read.
   */
  linearModules: { name: string; inDim: number; outDim: number; parent: string }[];
}

/**
 * A run's policy model out (issue #14, "Adapters out"): its LoRA adapters as PEFT writes them,
 * or a merged Hugging Face folder (base + adapters, or a full fine-tune's own weights).
 */
export interface ModelExportRequest {
  runId: number;
  /** The policy id; needed when the run checkpointed several. */
  policy?: string;
  format: 'peft' | 'hf';
  /** The folder to write; a relative path is under the per-user exports folder (as dataset exports are). */
  out: string;
  /** The RL step whose checkpoint to export; default the newest on disk. */
  step?: number;
  /** hf only: the tensors' type; default the base's torch_dtype, else f32. */
  dtype?: 'f32' | 'f16' | 'bf16';
  /** Replace an existing folder. */
  force?: boolean;
}

export interface ModelExportResult {
  format: 'peft' | 'hf';
  /** The folder written, absolute. */
  out: string;
  /** Every file written, under `out`. */
  written: string[];
  /** The checkpoint folder exported, its policy and RL step. */
  checkpoint: string;
  policy: string;
  step: number;
  /** Whether the checkpoint held LoRA adapters (false: full fine-tuned weights). */
  lora: boolean;
  seconds: number;
}

/** What one endpoint's capability probe found (issue #16), as `marsrl config validate --probe` reports it. */
export interface EndpointCheck {
  endpoint: string;
  reachable: boolean;
  /** Models the server lists at /models. */
  models: string[];
  modelServed: boolean;
  /** Request features the server lacks (left out of its requests). */
  missing: string[];
  notes: string[];
  error: string | null;
}

/**
 * The checks `marsrl config validate --probe` runs, for the new-run form: the config's own
 * validation, API key variables that are not set, then each endpoint probed. Every problem is an
 * issue on the field to fix (`endpoints.NAME.base_url`, `.model`, `.api_key_env`).
 */
export interface EndpointCheckResult {
  ok: boolean;
  issues: ConfigIssue[];
  /** One per endpoint probed (none when the config itself is invalid). */
  endpoints: EndpointCheck[];
}

/** One attempt's Ray job of a run that veRL or DrMAS trains (issue 38). */
export interface EngineJobInfo {
  attempt: number;
  engine: string;
  submissionId: string;
  /** The Ray dashboard's URL (a token is never part of it). */
  address: string;
  /** Ray's last status as the Studio saw it (PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED), null before the first answer. */
  status: string | null;
  message: string | null;
  /** The shell line Ray runs. */
  entrypoint: string;
  /** The run's engine folder on this machine (dataset, checkpoints, one folder per attempt). */
  runDir: string;
  submittedAt: number;
  updatedAt: number;
  /** The end of the job's log as the Studio copied it (at most `logLines` lines). */
  logTail: string;
  /** The whole traceback of a failed job, when its log had one. */
  traceback: string | null;
}

/** What would be submitted for an engine run config, or why the engine would refuse it (issue 38). */
export type EnginePreview =
  | {
      ok: true;
      engine: string;
      /** The engine version the command was planned for, and where that came from. */
      engineVersion: string;
      versionFrom: 'engine.version' | 'probe' | 'assumed';
      /** The exact shell line Ray will run. */
      entrypoint: string;
      overrides: string[];
      env: Record<string, string>;
      warnings: string[];
    }
  | { ok: false; issues: ConfigIssue[] };

/**
 * Replay (issue 40): a stored episode's problem, a problem of the run's task or a prompt typed by
 * hand, run through the chain again with a checkpoint of any run or a served endpoint. Exactly one
 * of `episodeId`, `problemId`, `prompt`; at most one of `checkpoint`, `endpoint` (neither: the
 * model the episode was sampled with — the run's endpoints or init policies, or for an RL run's
 * evaluation episode the checkpoint its step was evaluated with).
 */
export interface ReplayRequest {
  runId: number;
  episodeId?: number;
  problemId?: number;
  prompt?: string;
  /** A run's checkpoint: `step` of run `runId` (default the replayed run), `'init'` for its starting policies, or a step folder's `path`. */
  checkpoint?: { runId?: number; step?: number | 'init'; path?: string };
  /** An endpoint of the run's config that plays every role. */
  endpoint?: string;
  /** Default: as the episode was sampled (greedy for a greedy chain). */
  decoding?: 'greedy' | 'sampled';
  /** The seed every call's seed derives from; default the run's evaluation seed. */
  seed?: number;
}

export interface ReplaySummary {
  id: number;
  runId: number;
  episodeId: number | null;
  problemId: number | null;
  question: string;
  /** What played the roles, in words ("checkpoint of step 3 of run 2", "endpoint judge"). */
  model: string;
  decoding: 'greedy' | 'sampled';
  seed: number;
  status: 'running' | 'done' | 'failed';
  error: string | null;
  /** Whether the run's sampling of this episode can be reproduced; null for a problem or prompt with no stored episode. */
  reproducible: boolean | null;
  reproducibleReason: string | null;
  /** Whether every replayed text equals the stored one (null: nothing stored to compare). */
  matchesStored: boolean | null;
  finalAnswer: string | null;
  correct: boolean | null;
  turnCount: number;
  /** The replay's wall time, and the run's for the stored episode's rollout (s). */
  seconds: number | null;
  storedSeconds: number | null;
  createdAt: number;
}

/** A replayed turn: a stored turn's texts and judgement, without the training bookkeeping. */
export interface ReplayTurn extends Pick<Turn, 'agent' | 'round' | 'prompt' | 'text' | 'tokenCount' | 'parsed' | 'correct' | 'formatValid'> {
  index: number;
  /** Equal to the stored turn at the same place (null: none stored there). */
  sameAsStored: boolean | null;
}

export interface ReplayDetail {
  replay: ReplaySummary;
  reference: string | null;
  turns: ReplayTurn[];
}

/** What a replay of a run can be played with: checkpoints on disk (this run's and others'), the run's endpoints. */
export interface ReplayModels {
  checkpoints: { runId: number; runName: string; step: number; path: string; family: 'gpt' | 'hf'; lora: boolean }[];
  endpoints: string[];
}

export type StudioEvent =
  | { type: 'run-status'; runId: number; status: RunStatus; reason: string | null }
  | { type: 'run-progress'; runId: number; step: number; totalSteps: number; metrics: Record<string, number> }
  | { type: 'run-created' | 'run-deleted' | 'run-updated'; runId: number }
  | { type: 'event'; runId: number; event: RunEvent }
  | { type: 'export-progress'; exportId: string; done: number; total: number }
  | { type: 'export-finished'; exportId: string; status: 'done' | 'failed' | 'cancelled'; result: ExportSummary | null; error: string | null }
  | ({ type: 'study-progress'; studyId: number; status: RunStatus } & StudyProgressInfo)
  /** `done`/`total`: bytes of the source read; `records` written so far. */
  | { type: 'import-progress'; importId: string; done: number; total: number; records: number }
  | { type: 'import-finished'; importId: string; status: 'done' | 'failed' | 'cancelled'; result: ImportSummary | null; error: string | null }
  /** A replay's turns as they finish, and its end (issue 40). */
  | { type: 'replay-progress'; replayId: number; runId: number; turns: number; status: ReplaySummary['status'] };

export interface StudioApi {
  appInfo(): Promise<AppInfo>;
  listRuns(query?: ListRunsQuery): Promise<Page<RunSummary>>;
  getRun(runId: number): Promise<RunDetail>;
  updateRun(runId: number, update: RunUpdate): Promise<RunSummary>;
  /** Deletes the run and every row it owns; refuses a run that is still running. */
  deleteRun(runId: number): Promise<void>;
  listPresets(): Promise<PresetInfo[]>;
  /** A preset's fully resolved configuration. */
  getPreset(name: string): Promise<Record<string, unknown>>;
  /** Validate a configuration against the same schema the CLI uses. */
  validateConfig(config: unknown): Promise<ConfigValidation>;
  /** The run-config schema as form fields (descriptions, defaults, bounds, options). */
  configSchema(): Promise<ConfigFormInfo>;
  /** What a Hugging Face model folder holds and whether it can be a policy (never throws for a bad folder). */
  inspectModel(path: string): Promise<ModelInspection>;
  /** Write a run's policy model out as PEFT adapters or a merged Hugging Face folder (issue #14). */
  exportModel(request: ModelExportRequest): Promise<ModelExportResult>;
  /** Validate a config, then probe its endpoints as `marsrl config validate --probe` does (issue #16). */
  checkEndpoints(config: unknown): Promise<EndpointCheckResult>;
  /** Validate and launch a run through the run manager; resolves once it is queued. */
  startRun(request: StartRunRequest): Promise<{ runId: number }>;
  /** Ask a running run to stop; it is marked interrupted and can be resumed. */
  stopRun(runId: number): Promise<void>;
  /** Continue an interrupted run from its last checkpoint (an engine run re-attaches to a Ray job that still runs). */
  resumeRun(runId: number): Promise<void>;
  /** The Ray jobs of an engine run, latest attempt last, with the end of each job's log (issue 38). */
  getEngineJobs(runId: number, logLines?: number): Promise<EngineJobInfo[]>;
  /** The command an engine run config would submit, or every field the engine would refuse. */
  previewEngineRun(config: unknown): Promise<EnginePreview>;
  /** Start a new run with run `runId`'s config (a run that cannot be resumed: `marsrl run --like`). */
  runAgain(runId: number): Promise<{ runId: number }>;
  /** The group a turn's advantage was normalised in, its statistics and formula, to recompute it by hand. */
  explainAdvantage(turnId: number): Promise<AdvantageExplanation>;
  listMetricKeys(runId: number): Promise<string[]>;
  getSeries(query: SeriesQuery): Promise<Series[]>;
  listTurns(query: TurnQuery): Promise<Page<Turn>>;
  listEpisodes(query: EpisodeQuery): Promise<Page<EpisodeSummary>>;
  /** One episode's turns; with `match`, the ids of the turns those filters matched. */
  getEpisode(episodeId: number, match?: EpisodeMatch): Promise<EpisodeDetail>;
  listEvents(runId: number, afterId?: number): Promise<Page<RunEvent>>;
  getTimeline(runId: number): Promise<TimelineSpan[]>;
  /** Start exporting runs as a dataset; progress and the end arrive as pushed events. */
  /** `out` is the absolute path written: a relative request path is resolved against AppInfo.exportsDir. */
  startExport(request: ExportRequest): Promise<{ exportId: string; out: string }>;
  /** Cancel an export; nothing it wrote is left behind. */
  cancelExport(exportId: string): Promise<void>;
  /** What a path holds (format, runs, steps, metric keys, generations, agents, bad records) before anything is written (issue 39). */
  previewImport(request: ImportPreviewRequest): Promise<ImportPreview>;
  /** Import a source's runs as read-only Studio runs in the background; progress and the end arrive as pushed events. */
  startImport(request: ImportRequest): Promise<{ importId: string }>;
  /** Cancel an import: the records of whole batches already written stay, and a re-import continues after them. */
  cancelImport(importId: string): Promise<void>;
  /** Summary table per run and per group, deltas against a baseline, diff-only config. */
  compareRuns(request: CompareRequest): Promise<CompareResult>;
  /** One metric of several runs on one x-axis, with group means and bands. */
  compareSeries(request: CompareSeriesRequest): Promise<CompareSeriesResult>;
  listStudies(): Promise<StudySummary[]>;
  getStudy(studyId: number): Promise<StudyDetail>;
  /** Validate a matrix and launch its runs through the run manager; progress arrives as `study-progress` events. */
  startStudy(request: StartStudyRequest): Promise<{ studyId: number }>;
  /** Write the study report (report.md, runs.csv, groups.csv, charts/*.png) into the folder `out`. */
  exportStudyReport(studyId: number, out: string): Promise<StudyReportResult>;
  /** Issue 40: a turn's reward under every scheme and advantage under every mode, recomputed from its group's stored rows. */
  getCounterfactualCredit(turnId: number): Promise<CounterfactualCredit>;
  /** Issue 40: per step and agent, how far the run's advantages are from each alternative scheme and mode. */
  getCreditDivergence(runId: number): Promise<CreditDivergence>;
  /** Problems of the chosen runs matched by id (else text), held-out first, with each run's outcome (issue 40). */
  listProblemOutcomes(query: ProblemOutcomeQuery): Promise<ProblemOutcomePage>;
  /** Every episode of one problem across the steps of the chosen runs, with turns, rewards and advantages (issue 40). */
  getProblemEpisodes(query: ProblemEpisodesQuery): Promise<ProblemEpisodes>;
  /** Replay a stored episode, a problem or a prompt (issue 40); resolves once the replay is stored as running, its turns arrive as `replay-progress` events. */
  startReplay(request: ReplayRequest): Promise<{ replayId: number }>;
  /** A run's replays, newest first (kept apart from its episodes and metrics). */
  listReplays(runId: number): Promise<ReplaySummary[]>;
  getReplay(replayId: number): Promise<ReplayDetail>;
  /** The checkpoints and endpoints a replay of the run can use. */
  replayModels(runId: number): Promise<ReplayModels>;
}

export type StudioMethod = keyof StudioApi;

/** Every method name, for transports that forward calls generically. */
export const STUDIO_METHODS = [
  'appInfo',
  'listRuns',
  'getRun',
  'updateRun',
  'deleteRun',
  'listPresets',
  'getPreset',
  'validateConfig',
  'configSchema',
  'inspectModel',
  'checkEndpoints',
  'startRun',
  'stopRun',
  'resumeRun',
  'runAgain',
  'getEngineJobs',
  'previewEngineRun',
  'explainAdvantage',
  'listMetricKeys',
  'getSeries',
  'listTurns',
  'listEpisodes',
  'getEpisode',
  'listEvents',
  'getTimeline',
  'startExport',
  'cancelExport',
  'exportModel',
  'previewImport',
  'startImport',
  'cancelImport',
  'compareRuns',
  'compareSeries',
  'listStudies',
  'getStudy',
  'startStudy',
  'exportStudyReport',
  'getCounterfactualCredit',
  'getCreditDivergence',
  'listProblemOutcomes',
  'getProblemEpisodes',
  'startReplay',
  'listReplays',
  'getReplay',
  'replayModels',
] as const satisfies readonly StudioMethod[];

/** The IPC channel of the desktop app's folder picker (not a StudioApi method: a browser has none). */
export const PICK_FOLDER_CHANNEL = 'studio:pick-folder';

/** The IPC channel carrying StudioApi calls. */
export const STUDIO_IPC_CHANNEL = 'studio:call';
/** The IPC channel main pushes StudioEvents on. */
export const STUDIO_EVENT_CHANNEL = 'studio:event';

/**
 * What main answers a call on STUDIO_IPC_CHANNEL with: the value, or the error's shape (an
 * exception escaping ipcMain.handle would lose its code; src-preload/bridge.ts rethrows it).
 */
export type StudioIpcReply = { ok: true; value: unknown } | { ok: false; error: StudioErrorShape };

/** What the preload exposes: the API plus a subscription to pushed events. */
export interface StudioBridge extends StudioApi {
  /** Calls `listener` for every pushed event; returns the unsubscribe function. */
  onEvent(listener: (event: StudioEvent) => void): () => void;
  /**
   * The desktop app only: the system's folder picker; resolves to the chosen folder, or null
   * when the user cancels. Absent in a browser, where the form offers a typed path instead.
   */
  pickFolder?(title: string): Promise<string | null>;
}

// Compile-time guard: a method added to StudioApi but not to STUDIO_METHODS fails typecheck.
type UnlistedMethods = Exclude<StudioMethod, (typeof STUDIO_METHODS)[number]>;
export const STUDIO_METHODS_COMPLETE: [UnlistedMethods] extends [never] ? true : UnlistedMethods = true;

// ── Counterfactual credit (issue 40) ───────────────────────────────────────────────────────────

/** One stored turn's reward and advantage under every reward scheme and normalization mode (issue 40). */
export interface CounterfactualCredit {
  turnId: number;
  runId: number;
  step: number;
  episodeId: number;
  agent: string;
  /** The run's own scheme and mode: what training used. */
  scheme: string;
  mode: string;
  /** Every scheme and mode of the registries, in the order shown (first the run's own scheme when the registry lacks it: an imported run's). */
  schemes: string[];
  modes: string[];
  /** The run's scheme and mode are ones the Studio computes, so [scheme][mode] reproduces the stored advantage. */
  reproducible: boolean;
  /** What the store holds for the turn. */
  stored: { reward: number; advantage: number; weight: number };
  /** scheme → the reward under it (the run's scheme: the stored reward); null where it cannot be recomputed. */
  rewards: Record<string, number | null>;
  /** scheme → mode → the advantage under both; [scheme][mode] of the run's own equals `stored.advantage`. */
  advantages: Record<string, Record<string, number | null>>;
  /** The run's scheme recomputed from the stored outcomes gives the stored reward (null: correctness not stored). */
  rewardMatches: boolean | null;
  /** The turns of the group the advantages were normalised over, by id. */
  group: { turnId: number; agent: string; reward: number; advantage: number }[];
  /** Why some values are null, or null. */
  note: string | null;
}

/** One (scheme, mode, agent) line of a run's credit divergence: values per step of CreditDivergence.steps. */
export interface CreditDivergenceSeries {
  scheme: string;
  mode: string;
  agent: string;
  /** Mean |run's advantage − this alternative's| over the agent's turns of the step; null where the agent had none. */
  meanAbsDiff: (number | null)[];
  /** Population std of this alternative's advantages over the agent's turns of the step (Dr. MAS's variance inflation). */
  std: (number | null)[];
}

/** How far a run's actual advantages are from every alternative, per step and agent (issue 40). */
export interface CreditDivergence {
  runId: number;
  scheme: string;
  mode: string;
  schemes: string[];
  modes: string[];
  agents: string[];
  steps: number[];
  series: CreditDivergenceSeries[];
  turns: number;
  groups: number;
  /** The run's scheme and mode are ones the Studio computes (false for a run made elsewhere: maxStoredDifference then means nothing). */
  reproducible: boolean;
  /** Largest |stored − recomputed| advantage under the run's own scheme and mode: 0 up to rounding when training is reproduced. */
  maxStoredDifference: number;
  /** Turns whose reward under the run's scheme, recomputed from stored outcomes, differs from the stored one. */
  rewardMismatches: number;
  seconds: number;
}
