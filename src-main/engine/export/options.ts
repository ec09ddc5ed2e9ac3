/**
 * What an export is asked to do, and the checks that turn a loosely typed request (CLI flags, an
 * IPC payload) into one the engine can run. Every error names the field and says how to fix it,
 * because the same message reaches a terminal user and the export dialog.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Split } from '../store/types';

export const EXPORT_FORMATS = ['trajectories', 'verl', 'sft', 'pairs'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Not a dataset: the runs' metrics as TensorBoard event files in a folder (export/tensorboard.ts, issue 39). */
export const METRICS_EXPORT_FORMAT = 'tensorboard';

export const EXPORT_CONTAINERS = ['jsonl', 'parquet'] as const;
export type ExportContainer = (typeof EXPORT_CONTAINERS)[number];

const SPLITS: readonly Split[] = ['train', 'test'];

/**
 * Which source rows an export reads. Turn-level filters select turns; a veRL export keeps a problem
 * when at least one of its turns passes them (so `agents: ['solver'], correct: false` exports the
 * problems the Solver got wrong at least once).
 */
export interface ExportFilters {
  /** Agent names as stored (`solver`, `verifier1`, `corrector2`, …); all agents when absent. */
  agents?: string[];
  /** First RL step included (inclusive). */
  stepFrom?: number;
  /** Last RL step included (inclusive). */
  stepTo?: number;
  /** Only turns of episodes in this split. */
  split?: Split;
  /**
   * Correctness of the turn (answer right for Solver/Corrector, verdict right for a Verifier).
   * `'any'` includes every turn, also those whose correctness is unknown (null). When absent, SFT
   * keeps correct turns only and every other format keeps all.
   */
  correct?: boolean | 'any';
  /** Whether the output parsed (`A:<answer>`, `V:ok|no`); same default rule as `correct`. */
  formatValid?: boolean | 'any';
  /** Lowest reward included (inclusive); turns without a reward are then left out. */
  minReward?: number;
  /** Highest reward included (inclusive); turns without a reward are then left out. */
  maxReward?: number;
  /**
   * Also turns of killed attempts whose steps a resume redid (issue #17). Off by default: those
   * turns came from weights that were thrown away. Each row names its `attempt` either way.
   */
  includeSuperseded?: boolean;
}

export interface ExportOptions {
  /** Runs by numeric id or name (a name means its latest run), at least one. */
  runs: (number | string)[];
  format: ExportFormat;
  /**
   * File container. When absent it follows the extension of `out` (`.parquet`, `.jsonl`/`.json`),
   * else the format's usual one: Parquet for trajectories and veRL, JSONL for SFT and pairs.
   */
  container?: ExportContainer;
  /** Output file. Its folder must exist; the dataset card is written beside it as `<out>.card.md`. */
  out: string;
  /** Replace an existing output file (and card). Without it an existing file is an error. */
  force?: boolean;
  filters?: ExportFilters;
  /**
   * Drop rows whose content repeats one already written: trajectories and SFT by (agent, prompt,
   * text), pairs by (agent, prompt, chosen text, rejected text), veRL by (split, question, answer)
   * across runs. The first occurrence (run order as given, then id order) is kept.
   */
  dedupe?: boolean;
  /**
   * Start SFT, pairs and veRL prompts with a system message describing the agent's role and output
   * format (default true). A larger model cannot tell a Verifier prompt `question|solution` from a
   * Solver prompt without it; the tiny policies that wrote the data never needed one.
   */
  systemPrompt?: boolean;
  /**
   * Parquet tuning: most rows in one row group (default 10 000). Memory while encoding grows with
   * it (peak RSS on the 1M-turn bench: ~180 MB at 10k, ~290 MB at 50k) while read speed in DuckDB
   * and pyarrow barely changes.
   */
  rowGroupRows?: number;
  /** Parquet tuning: most text bytes buffered for one row group (default 16 MB); bounds memory when texts are long. */
  rowGroupBytes?: number;
  /**
   * Trajectories only (issue 40): add `reward_<scheme>` and `advantage_<mode>` columns, each turn's
   * counterfactual credit under every reward scheme and normalization mode (export/counterfactual.ts).
   */
  counterfactual?: boolean;
}

/** Filters with each format's defaults applied, as recorded in the dataset card. */
export interface ResolvedFilters {
  agents: string[] | null;
  stepFrom: number | null;
  stepTo: number | null;
  split: Split | null;
  correct: boolean | 'any';
  formatValid: boolean | 'any';
  minReward: number | null;
  maxReward: number | null;
  includeSuperseded: boolean;
}

export interface ValidatedOptions {
  runs: (number | string)[];
  format: ExportFormat;
  container: ExportContainer;
  out: string;
  card: string;
  force: boolean;
  filters: ResolvedFilters;
  dedupe: boolean;
  systemPrompt: boolean;
  rowGroupRows: number;
  rowGroupBytes: number;
  counterfactual: boolean;
}

export type ExportErrorCode =
  | 'invalid_option'
  | 'unknown_format'
  | 'unknown_container'
  | 'unknown_run'
  | 'unknown_agent'
  | 'output_exists'
  | 'output_unwritable'
  | 'empty_result'
  | 'disk_full'
  | 'aborted';

export class ExportError extends Error {
  constructor(
    readonly code: ExportErrorCode,
    /** The option at fault (`format`, `filters.agents`, `out`, …), when there is one. */
    readonly field: string | null,
    message: string,
  ) {
    super(message);
    this.name = 'ExportError';
  }

  /** Errors in what was asked, as opposed to what happened while writing. */
  get isUsage(): boolean {
    return this.code === 'invalid_option' || this.code === 'unknown_format' || this.code === 'unknown_container';
  }
}

export const CARD_SUFFIX = '.card.md';

export function cardPath(out: string): string {
  return `${out}${CARD_SUFFIX}`;
}

const DEFAULT_CONTAINER: Record<ExportFormat, ExportContainer> = {
  trajectories: 'parquet',
  verl: 'parquet',
  sft: 'jsonl',
  pairs: 'jsonl',
};

function invalid(field: string, message: string): ExportError {
  return new ExportError('invalid_option', field, `${field}: ${message}`);
}

function optionalInt(field: string, value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw invalid(field, `must be a whole number ≥ 0 (got ${JSON.stringify(value)})`);
  }
  return value;
}

function optionalFinite(field: string, value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw invalid(field, `must be a finite number (got ${JSON.stringify(value)})`);
  }
  return value;
}

function triState(field: string, value: unknown, fallback: boolean | 'any'): boolean | 'any' {
  if (value === undefined || value === null) return fallback;
  if (value === true || value === false || value === 'any') return value;
  throw invalid(field, `must be true, false or "any" (got ${JSON.stringify(value)})`);
}

function containerFromExtension(out: string): ExportContainer | null {
  const ext = path.extname(out).toLowerCase();
  if (ext === '.parquet' || ext === '.pq') return 'parquet';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  return null;
}

/**
 * Checks everything that does not need the store: shape of every field, the format and container
 * names, filter ranges, and whether the output path can be written. Runs and agents are checked
 * against the store afterwards (see `resolveSources`).
 */
export function validateOptions(raw: ExportOptions): ValidatedOptions {
  if (raw === null || typeof raw !== 'object') throw invalid('options', 'must be an object');
  const format = validateFormat(raw.format);
  validateRunRefs(raw.runs);
  if (typeof raw.out !== 'string' || raw.out.trim() === '') {
    throw invalid('out', 'give the output file path (e.g. --out data/run3.parquet)');
  }
  const out = path.resolve(raw.out);
  const container = chooseContainer(raw.container, out, format);
  const filters = validateFilters(raw.filters ?? {}, format);

  const rowGroupRows = raw.rowGroupRows ?? 10_000;
  if (!Number.isInteger(rowGroupRows) || rowGroupRows < 1) throw invalid('rowGroupRows', `must be a whole number ≥ 1 (got ${rowGroupRows})`);
  const rowGroupBytes = raw.rowGroupBytes ?? 16 * 1024 * 1024;
  if (!Number.isFinite(rowGroupBytes) || rowGroupBytes < 1) throw invalid('rowGroupBytes', `must be a positive number of bytes (got ${rowGroupBytes})`);

  if (raw.counterfactual !== undefined && raw.counterfactual !== null && typeof raw.counterfactual !== 'boolean') {
    throw invalid('counterfactual', `must be true or false (got ${JSON.stringify(raw.counterfactual)})`);
  }
  const counterfactual = raw.counterfactual === true;
  if (counterfactual && format !== 'trajectories') {
    throw invalid('counterfactual', `the counterfactual columns are added to the trajectories format only (one row per turn); choose format trajectories or leave counterfactual out (format is ${format})`);
  }

  const force = raw.force === true;
  const card = cardPath(out);
  checkOutputPath(out, card, force);

  return {
    runs: raw.runs,
    format,
    container,
    out,
    card,
    force,
    filters,
    dedupe: raw.dedupe === true,
    systemPrompt: raw.systemPrompt !== false,
    rowGroupRows,
    rowGroupBytes,
    counterfactual,
  };
}

function validateFormat(format: unknown): ExportFormat {
  if (format === METRICS_EXPORT_FORMAT) {
    throw invalid('format', 'tensorboard writes the runs\' metrics as event files into a folder: runExport and `marsrl export --format tensorboard --out DIR` take it, dataset validation does not');
  }
  if (typeof format !== 'string' || !(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw new ExportError(
      'unknown_format',
      'format',
      `format: unknown export format ${JSON.stringify(format)}; use one of ${[...EXPORT_FORMATS, METRICS_EXPORT_FORMAT].join(', ')}`,
    );
  }
  return format as ExportFormat;
}

function validateRunRefs(runs: unknown): void {
  if (!Array.isArray(runs) || runs.length === 0) {
    throw invalid('runs', 'name at least one run (id or name); list runs with `marsrl runs` or in the runs table');
  }
  for (const ref of runs) {
    if (!(typeof ref === 'string' && ref.trim() !== '') && !(typeof ref === 'number' && Number.isInteger(ref) && ref > 0)) {
      throw invalid('runs', `each run is an id or a name (got ${JSON.stringify(ref)})`);
    }
  }
}

/** The container asked for, which must agree with the output's extension; else the extension's, else the format's default. */
function chooseContainer(asked: ExportOptions['container'], out: string, format: ExportFormat): ExportContainer {
  if (asked === undefined || asked === null) return containerFromExtension(out) ?? DEFAULT_CONTAINER[format];
  if (!(EXPORT_CONTAINERS as readonly string[]).includes(asked as string)) {
    throw new ExportError(
      'unknown_container',
      'container',
      `container: unknown container ${JSON.stringify(asked)}; use one of ${EXPORT_CONTAINERS.join(', ')}`,
    );
  }
  // JSON written into a .parquet name (or the reverse) would fool every reader that trusts
  // the extension (issue 18: `--jsonl --out e.parquet`).
  const named = containerFromExtension(out);
  if (named !== null && named !== asked) {
    const fixed = out.replace(/\.[^.\\/]+$/, asked === 'parquet' ? '.parquet' : '.jsonl');
    throw invalid('out', `${path.basename(out)} names a ${named} file but the container is ${asked}; write to ${path.basename(fixed)} or choose ${named}`);
  }
  return asked;
}

function validateFilters(f: NonNullable<ExportOptions['filters']>, format: ExportFormat): ValidatedOptions['filters'] {
  if (typeof f !== 'object') throw invalid('filters', 'must be an object');
  let agents: string[] | null = null;
  if (f.agents !== undefined && f.agents !== null) {
    if (!Array.isArray(f.agents) || f.agents.some((a) => typeof a !== 'string' || a.trim() === '')) {
      throw invalid('filters.agents', `must be a list of agent names such as ["solver", "verifier1"] (got ${JSON.stringify(f.agents)})`);
    }
    agents = [...new Set(f.agents.map((a) => a.trim()))];
    if (agents.length === 0) agents = null;
  }
  const stepFrom = optionalInt('filters.stepFrom', f.stepFrom);
  const stepTo = optionalInt('filters.stepTo', f.stepTo);
  if (stepFrom !== null && stepTo !== null && stepFrom > stepTo) {
    throw invalid('filters.stepTo', `the step range is empty: stepFrom ${stepFrom} is after stepTo ${stepTo}`);
  }
  let split: Split | null = null;
  if (f.split !== undefined && f.split !== null) {
    if (!SPLITS.includes(f.split)) throw invalid('filters.split', `must be one of ${SPLITS.join(', ')} (got ${JSON.stringify(f.split)})`);
    split = f.split;
  }
  const minReward = optionalFinite('filters.minReward', f.minReward);
  const maxReward = optionalFinite('filters.maxReward', f.maxReward);
  if (minReward !== null && maxReward !== null && minReward > maxReward) {
    throw invalid('filters.maxReward', `the reward range is empty: minReward ${minReward} is above maxReward ${maxReward}`);
  }
  // SFT teaches what a model should write, so by default only turns that were right and parsed.
  const sftDefault = format === 'sft';
  const correct = triState('filters.correct', f.correct, sftDefault ? true : 'any');
  const formatValid = triState('filters.formatValid', f.formatValid, sftDefault ? true : 'any');
  if (f.includeSuperseded !== undefined && f.includeSuperseded !== null && typeof f.includeSuperseded !== 'boolean') {
    throw invalid('filters.includeSuperseded', `must be true or false (got ${JSON.stringify(f.includeSuperseded)})`);
  }
  return { agents, stepFrom, stepTo, split, correct, formatValid, minReward, maxReward, includeSuperseded: f.includeSuperseded === true };
}

/**
 * Fails early on a path that cannot be written, so a long export does not end in an error. The
 * final publish re-checks (another process may create the file meanwhile).
 */
function checkOutputPath(out: string, card: string, force: boolean): void {
  const dir = path.dirname(out);
  let dirStat: fs.Stats;
  try {
    dirStat = fs.statSync(dir);
  } catch {
    throw new ExportError('output_unwritable', 'out', `out: cannot write ${out}: the folder ${dir} does not exist; create it first or choose another path`);
  }
  if (!dirStat.isDirectory()) {
    throw new ExportError('output_unwritable', 'out', `out: cannot write ${out}: ${dir} is not a folder`);
  }
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw new ExportError('output_unwritable', 'out', `out: cannot write ${out}: the folder ${dir} is not writable; choose another path`);
  }
  for (const [target, what] of [
    [out, 'output file'],
    [card, 'dataset card'],
  ] as const) {
    const stat = fs.statSync(target, { throwIfNoEntry: false });
    if (stat === undefined) continue;
    if (stat.isDirectory()) {
      throw new ExportError('output_unwritable', 'out', `out: ${target} is a folder; give a file path such as ${path.join(target, 'export.parquet')} (only the tensorboard format writes into a folder)`);
    }
    if (!force) {
      throw new ExportError('output_exists', 'out', `out: the ${what} ${target} already exists; pass --force (force: true) to replace it, or choose another path`);
    }
  }
}
