/**
 * The export dialog's form, without Vue: what each format is, which container an export gets,
 * the request a filled-in form becomes (checked the way the engine checks it, with the engine's
 * field names), where a server error belongs in the form, and the default output path. Pure, so
 * the renderer-logic tests pin the rules.
 */
import type { ExportFormatName, ExportRequest } from '#shared/contract';
import { scaleBytes } from '#shared/format';

export type ExportContainerName = 'jsonl' | 'parquet';
export type Correctness = 'any' | 'correct' | 'incorrect';
export type SplitChoice = 'train' | 'test' | null;

export interface FormatInfo {
  value: ExportFormatName;
  label: string;
  /** One line: what a row is and what the file is for. */
  description: string;
  /** What the progress counts for this format (source rows read). */
  unit: 'turns' | 'problems' | 'metric points';
}

export const FORMATS: readonly FormatInfo[] = [
  { value: 'trajectories', label: 'Trajectories', description: 'One row per turn: prompt, output, reward, advantage and episode-tree ids. For analysis.', unit: 'turns' },
  { value: 'verl', label: 'veRL', description: "One row per problem in veRL's RL dataset layout (prompt, ground truth), to train with veRL.", unit: 'problems' },
  { value: 'sft', label: 'SFT', description: 'Chat messages per turn (prompt → what the agent wrote) for fine-tuning; correct turns by default.', unit: 'turns' },
  { value: 'pairs', label: 'Preference pairs', description: 'Chosen and rejected outputs of one sampling group, for DPO-style preference training.', unit: 'turns' },
  { value: 'tensorboard', label: 'TensorBoard', description: "The runs' metrics as TensorBoard event files, one subfolder per run of the output folder (no filters).", unit: 'metric points' },
];

export const CONTAINERS: readonly ExportContainerName[] = ['parquet', 'jsonl'];

/** The engine's usual container per format (src-main/engine/export/options.ts). */
export const DEFAULT_CONTAINER: Record<ExportFormatName, ExportContainerName> = {
  trajectories: 'parquet',
  verl: 'parquet',
  sft: 'jsonl',
  pairs: 'jsonl',
  // Never sent: a TensorBoard export writes event files and its request carries no container.
  tensorboard: 'jsonl',
};

export const EXTENSION: Record<ExportContainerName, string> = { parquet: '.parquet', jsonl: '.jsonl' };

export function formatInfo(format: ExportFormatName): FormatInfo {
  return FORMATS.find((f) => f.value === format) ?? FORMATS[0];
}

export interface ExportForm {
  runs: number[];
  format: ExportFormatName;
  /** Chosen by the user; null follows the path's extension, else the format's usual container. */
  container: ExportContainerName | null;
  out: string;
  force: boolean;
  dedupe: boolean;
  /** Empty means every agent. */
  agents: string[];
  /** Text fields hold what was typed; the request builder parses and checks them. */
  stepFrom: string;
  stepTo: string;
  split: SplitChoice;
  /** Null follows the format: SFT keeps correct turns, every other format keeps all. */
  correctness: Correctness | null;
  minReward: string;
  maxReward: string;
  /** Also turns of killed attempts whose steps a resume redid (issue #17). */
  includeSuperseded: boolean;
  /** Trajectories only (issue 40): add every turn's reward under each scheme and advantage under each mode. */
  counterfactual: boolean;
}

export function emptyForm(): ExportForm {
  return {
    runs: [],
    format: 'trajectories',
    container: null,
    out: '',
    force: false,
    dedupe: false,
    agents: [],
    stepFrom: '',
    stepTo: '',
    split: null,
    correctness: null,
    minReward: '',
    maxReward: '',
    includeSuperseded: false,
    counterfactual: false,
  };
}

/** `.parquet`/`.pq` or `.jsonl`/`.ndjson`/`.json`, as the engine reads an extension. */
export function containerFromPath(out: string): ExportContainerName | null {
  const name = out.trim().split(/[\\/]/).pop() ?? '';
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return null;
  const ext = name.slice(dot).toLowerCase();
  if (ext === '.parquet' || ext === '.pq') return 'parquet';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  return null;
}

/** The container the engine will write: the explicit choice, the extension, the format's usual. */
export function effectiveContainer(form: Pick<ExportForm, 'container' | 'out' | 'format'>): ExportContainerName {
  return form.container ?? containerFromPath(form.out) ?? DEFAULT_CONTAINER[form.format];
}

/** Why the container is what it is, for the hint beside it. */
export function containerReason(form: Pick<ExportForm, 'container' | 'out' | 'format'>): string {
  if (form.container !== null) return 'chosen';
  if (containerFromPath(form.out) !== null) return 'from the file extension';
  return `usual for ${formatInfo(form.format).label}`;
}

/** The path with its dataset extension swapped for `container`'s; other names are left alone. */
export function withContainerExtension(out: string, container: ExportContainerName): string {
  const current = containerFromPath(out);
  if (current === null || current === container) return out;
  return out.replace(/\.[^.\\/]+$/, EXTENSION[container]);
}

export function effectiveCorrectness(form: Pick<ExportForm, 'correctness' | 'format'>): Correctness {
  return form.correctness ?? (form.format === 'sft' ? 'correct' : 'any');
}

export interface FieldIssue {
  /** The request field, as the engine names it: `out`, `filters.agents`, `filters`, … */
  path: string;
  message: string;
}

function parseWhole(path: string, text: string, issues: FieldIssue[]): number | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const value = Number(t);
  if (!/^\d+$/.test(t) || !Number.isSafeInteger(value)) {
    issues.push({ path, message: `${path}: must be a whole number ≥ 0 (got ${JSON.stringify(t)})` });
    return undefined;
  }
  return value;
}

function parseFinite(path: string, text: string, issues: FieldIssue[]): number | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const value = Number(t);
  if (!Number.isFinite(value)) {
    issues.push({ path, message: `${path}: must be a finite number (got ${JSON.stringify(t)})` });
    return undefined;
  }
  return value;
}

/**
 * The request a form becomes, or the problems that keep it from being sent. The checks and their
 * wording follow the engine's, so a message reads the same whichever side found it.
 */
export function buildExportRequest(form: ExportForm): { request: ExportRequest | null; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
  if (form.runs.length === 0) issues.push({ path: 'runs', message: 'runs: choose at least one run to export' });
  const out = form.out.trim();
  const tensorboard = form.format === 'tensorboard';
  if (out === '') issues.push({ path: 'out', message: tensorboard ? 'out: give the output folder (e.g. /data/tb-logs)' : 'out: give the output file path (e.g. /data/run3.parquet)' });
  const stepFrom = parseWhole('filters.stepFrom', form.stepFrom, issues);
  const stepTo = parseWhole('filters.stepTo', form.stepTo, issues);
  if (stepFrom !== undefined && stepTo !== undefined && stepFrom > stepTo) {
    issues.push({ path: 'filters.stepTo', message: `filters.stepTo: the step range is empty: stepFrom ${stepFrom} is after stepTo ${stepTo}` });
  }
  const minReward = parseFinite('filters.minReward', form.minReward, issues);
  const maxReward = parseFinite('filters.maxReward', form.maxReward, issues);
  if (minReward !== undefined && maxReward !== undefined && minReward > maxReward) {
    issues.push({ path: 'filters.maxReward', message: `filters.maxReward: the reward range is empty: minReward ${minReward} is above maxReward ${maxReward}` });
  }
  if (issues.length > 0) return { request: null, issues };
  // Every metric point of the runs, into a folder: no container, filters or dedupe apply.
  if (tensorboard) return { request: { runs: [...form.runs], format: 'tensorboard', out, ...(form.force ? { force: true } : {}) }, issues: [] };

  const correctness = effectiveCorrectness(form);
  const filters: NonNullable<ExportRequest['filters']> = {
    ...(form.agents.length > 0 ? { agents: [...form.agents] } : {}),
    ...(stepFrom !== undefined ? { stepFrom } : {}),
    ...(stepTo !== undefined ? { stepTo } : {}),
    ...(form.split !== null ? { split: form.split } : {}),
    correct: correctness === 'any' ? 'any' : correctness === 'correct',
    ...(minReward !== undefined ? { minReward } : {}),
    ...(maxReward !== undefined ? { maxReward } : {}),
    ...(form.includeSuperseded ? { includeSuperseded: true } : {}),
  };
  return {
    request: {
      runs: [...form.runs],
      format: form.format,
      container: effectiveContainer(form),
      out,
      ...(form.force ? { force: true } : {}),
      ...(form.dedupe ? { dedupe: true } : {}),
      ...(form.counterfactual && form.format === 'trajectories' ? { counterfactual: true } : {}),
      filters,
    },
    issues: [],
  };
}

/** Fields the dialog shows messages beside; anything else goes to the dialog's general notice. */
export const PLACED_FIELDS = [
  'runs',
  'format',
  'container',
  'out',
  'filters',
  'filters.agents',
  'filters.stepFrom',
  'filters.stepTo',
  'filters.split',
  'filters.correct',
  'filters.minReward',
  'filters.maxReward',
] as const;

/** `startExport.0.filters.stepTo` (the request validator's path) → `filters.stepTo`. */
export function fieldOfIssuePath(path: string): string {
  return path.replace(/^startExport\.0\.?/, '');
}

/**
 * The field a message is about, from the prefix the engine starts it with (`out: …`,
 * `filters.agents: …`; `empty result: …` is about the filters), or null.
 */
export function fieldOfMessage(message: string): string | null {
  if (/^empty result:/.test(message)) return 'filters';
  const match = /^((?:runs|format|container|out|force|dedupe)|filters(?:\.[A-Za-z]+)?):\s/.exec(message);
  return match ? match[1] : null;
}

/** Bytes as B, kB, MB or GB (powers of 1024, one decimal from kB up). */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  if (bytes < 1024) return `${bytes} B`;
  return scaleBytes(bytes, ['kB', 'MB', 'GB', 'TB']);
}

/** A file-name-safe form of a run name: `sort8 decoupled/agentwise` → `sort8-decoupled-agentwise`. */
export function slug(name: string): string {
  const s = name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '');
  return s.slice(0, 60) || 'run';
}

/** The folder of a path, in the path's own separator style (POSIX or Windows). */
export function folderOf(file: string): string {
  const cut = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
  if (cut < 0) return '';
  return cut === 0 ? file.slice(0, 1) : file.slice(0, cut);
}

/** `folder` + `name` with the separator the folder already uses. */
export function joinPath(folder: string, name: string): string {
  if (folder === '') return name;
  const sep = folder.includes('\\') && !folder.includes('/') ? '\\' : '/';
  return folder.endsWith(sep) ? `${folder}${name}` : `${folder}${sep}${name}`;
}

/**
 * The output file a new export suggests: `<folder>/<run>-run<id>-<format>.<ext>`, more runs
 * counted. The id makes it unique per run: names of two seeds often differ only at the end,
 * past where the name is cut, and the dialog offered to replace the other seed's file (issue 18).
 */
export function suggestedOutPath(folder: string, runs: readonly { id: number; name: string }[], format: ExportFormatName, container: ExportContainerName): string {
  const first = runs.length > 0 ? `${slug(runs[0].name).slice(0, 48).replace(/[-.]+$/, '')}-run${runs[0].id}` : 'runs';
  const more = runs.length > 1 ? `-and-${runs.length - 1}-more` : '';
  return joinPath(folder, `${first}${more}-${format}${format === 'tensorboard' ? '' : EXTENSION[container]}`);
}
