/**
 * The import dialog's and the imported run's pure parts (issue 39): the formats' names, what the
 * preview table says of a source run, the request the form gives, which field an engine message
 * is about, and the origin an imported run shows in its header. No Vue here, so the renderer
 * tests check each rule without a browser.
 */
import type { ImportFormatId, ImportOrigin, ImportRequest, ImportSourceRun, RunSummary } from '#shared/contract';
import { IMPORT_FORMATS } from '#shared/contract';
import { formatTimestamp } from '#shared/format';

/** How each format is written in the projects' own documentation. */
export const FORMAT_LABELS: Record<ImportFormatId, string> = {
  marsrl: 'MarsRL',
  verl: 'veRL',
  drmas: 'DrMAS',
  tensorboard: 'TensorBoard',
  trackio: 'trackio',
  mlflow: 'MLflow',
};

/** What each format is, for the select's options (the folder or file a user points at). */
export const FORMAT_HINTS: Record<ImportFormatId, string> = {
  marsrl: 'inference output folder ({idx}.json.{worker} lines)',
  verl: 'run folder (file logger, generation dumps, checkpoints)',
  drmas: 'run folder (file logger, generation dumps, checkpoints)',
  tensorboard: 'events.out.tfevents.* files',
  trackio: 'project SQLite file',
  mlflow: 'mlruns folder or mlflow.db',
};

export const FORMAT_OPTIONS: readonly { value: ImportFormatId | ''; label: string }[] = [
  { value: '', label: 'Detect automatically' },
  ...IMPORT_FORMATS.map((value) => ({ value, label: `${FORMAT_LABELS[value]} — ${FORMAT_HINTS[value]}` })),
];

export function formatLabel(format: ImportFormatId | string): string {
  return (FORMAT_LABELS as Record<string, string>)[format] ?? format;
}

/** The badge an imported run wears in the runs list and its page header. */
export function importedBadge(origin: ImportOrigin): string {
  return `imported · ${formatLabel(origin.format)}`;
}

/** A run the Studio did not make: nothing can launch it again (no stop, resume, run again or clone). */
export function isImported(run: Pick<RunSummary, 'imported'> | null | undefined): boolean {
  return run?.imported != null;
}

/** The digest as a commit hash is shown: its first 12 hex digits. */
export function shortDigest(digest: string): string {
  return digest.slice(0, 12);
}

const GROWN_AFTER_MS = 60_000;

/** The origin's facts for the run page header, in reading order. */
export function originFacts(origin: ImportOrigin): { label: string; value: string; title?: string; testid: string }[] {
  const facts = [
    { label: 'from', value: origin.path, testid: 'origin-path' },
    { label: 'source run', value: origin.sourceKey, testid: 'origin-key' },
    { label: 'digest', value: shortDigest(origin.digest), title: `SHA-256 of the source bytes imported: ${origin.digest}`, testid: 'origin-digest' },
    { label: 'imported', value: formatTimestamp(origin.importedAt), testid: 'origin-imported-at' },
  ];
  // One import writes batch after batch, each moving updatedAt a little; a later import that grew the run is minutes away.
  if (origin.updatedAt - origin.importedAt > GROWN_AFTER_MS) facts.push({ label: 'grown', value: formatTimestamp(origin.updatedAt), testid: 'origin-updated-at' });
  return facts;
}

/** "12 steps · 0–110", "1 step · 5", or "no steps". */
export function stepsText(run: Pick<ImportSourceRun, 'steps' | 'firstStep' | 'lastStep'>): string {
  if (run.steps === 0 || run.firstStep === null) return 'no steps';
  const range = run.lastStep === null || run.lastStep === run.firstStep ? `${run.firstStep}` : `${run.firstStep}–${run.lastStep}`;
  return `${run.steps.toLocaleString('en-US')} ${run.steps === 1 ? 'step' : 'steps'} · ${range}`;
}

/** A few metric keys to show, and how many are left unshown. */
export function metricKeysShown(keys: readonly string[], few = 3): { shown: string[]; more: number } {
  return { shown: keys.slice(0, few), more: Math.max(0, keys.length - few) };
}

/** What importing this source run again does, when it was imported before. */
export function existingNote(run: Pick<ImportSourceRun, 'existingRunId'>): string | null {
  return run.existingRunId === null ? null : `already imported as run ${run.existingRunId} — adds only what is new`;
}

export function countText(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** Tags typed as a comma-separated list: trimmed, empty ones and repeats dropped. */
export function parseTags(text: string): string[] {
  return [...new Set(text.split(',').map((t) => t.trim()).filter((t) => t !== ''))];
}

export interface ImportForm {
  path: string;
  /** '' for detect automatically. */
  format: ImportFormatId | '';
  name: string;
  tags: string;
}

export function emptyImportForm(): ImportForm {
  return { path: '', format: '', name: '', tags: '' };
}

/**
 * The request Import sends: the source runs ticked (left out when all are, so a source that grew
 * a run since the preview imports it too), the name and tags when given.
 */
export function buildImportRequest(form: ImportForm, allKeys: readonly string[], picked: ReadonlySet<string>): ImportRequest {
  const request: ImportRequest = { path: form.path.trim() };
  if (form.format !== '') request.format = form.format;
  if (picked.size !== allKeys.length || allKeys.some((k) => !picked.has(k))) request.runs = allKeys.filter((k) => picked.has(k));
  const name = form.name.trim();
  if (name !== '') request.name = name;
  const tags = parseTags(form.tags);
  if (tags.length > 0) request.tags = tags;
  return request;
}

export type ImportField = 'path' | 'format' | 'runs' | 'name' | 'tags';
const FIELDS: readonly ImportField[] = ['path', 'format', 'runs', 'name', 'tags'];
export const FIELD_LABELS: Record<ImportField, string> = { path: 'Path', format: 'Format', runs: 'Runs', name: 'Name', tags: 'Tags' };

/**
 * The field an engine message is about: its field issues' first path (over HTTP), else the field
 * the message starts with (`path: no such file …`), as the engine's request checks word them.
 */
export function fieldOfImportError(message: string, issuePaths: readonly string[] = []): ImportField | null {
  for (const path of issuePaths) {
    const head = path.split('.')[0] as ImportField;
    if (FIELDS.includes(head)) return head;
  }
  const match = /^\s*(path|format|runs|name|tags)\b\s*[:=]/i.exec(message);
  return match ? (match[1].toLowerCase() as ImportField) : null;
}

/** The banner's text: the message, led by the field it is about when it does not already say it. */
export function bannerText(field: ImportField | null, message: string): string {
  if (field === null || new RegExp(`^\\s*${field}\\b`, 'i').test(message)) return message;
  return `${FIELD_LABELS[field]}: ${message}`;
}
