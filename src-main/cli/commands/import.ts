/**
 * `marsrl import PATH` (issue 39): runs another tool made, as read-only Studio runs. It shows what
 * the path holds first (the preview), asks before writing on a terminal, then imports with its
 * progress on stderr; a source imported before gets only what is new.
 */
import readline from 'node:readline/promises';
import { IMPORT_FORMATS, type ImportFormatId, type ImportPreview, type ImportSourceRun } from '#shared/contract';
import { formatDuration } from '#shared/format';
import { chooseFormat, previewImport, runImport, sourcePath, type ImportOutcome, type ImportProgress } from '../../engine/imports/importer';
import { issueText } from '../../engine/imports/store-batch';
import { ImportRequestError, ImportSourceError } from '../../engine/imports/types';
import { resolveDatabasePath } from '../../engine/paths';
import { openStore } from '../../engine/store';
import { choiceFlag, UsageError } from '../args';
import { defineCommand, type CommandContext } from '../context';

const usage = `Usage: marsrl import PATH [--format FORMAT] [--run KEY]... [--name NAME] [--tag TAG]... [--yes] [--dry-run] [--db PATH] [--json]

Imports runs another tool made as read-only Studio runs: their metrics, generations (as episodes
and turns), checkpoints and configuration. PATH is a folder or file; its format is detected
(${IMPORT_FORMATS.join(', ')}) unless --format names it. Shows what PATH holds first, then asks
(on a terminal; elsewhere pass --yes). Importing the same source again adds only what is new.

  --format FORMAT  read PATH as this format instead of detecting it
  --run KEY        import only this source run (repeat for several); all by default
  --name NAME      the Studio run's name (one source run) or its prefix (several)
  --tag TAG        add a tag to the imported runs (repeat for several)
  --yes            import without asking
  --dry-run        show what would be imported and stop`;

const OPTIONS = {
  format: { type: 'string' },
  run: { type: 'string', multiple: true },
  name: { type: 'string' },
  tag: { type: 'string', multiple: true },
  yes: { type: 'boolean', short: 'y', default: false },
  'dry-run': { type: 'boolean', default: false },
} as const;

const fmt = (n: number) => n.toLocaleString('en-US');
const plural = (n: number, word: string) => `${fmt(n)} ${word}${n === 1 ? '' : 's'}`;

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

function runLines(run: ImportSourceRun): string[] {
  const steps = run.firstStep === null ? 'no steps' : `steps ${run.firstStep}–${run.lastStep} (${plural(run.steps, 'step')})`;
  const shown = run.metricKeys.slice(0, 4).join(', ');
  const keys = run.metricKeys.length === 0 ? 'no metrics' : `metrics ${shown}${run.metricKeys.length > 4 ? ', …' : ''} (${plural(run.metricKeys.length, 'key')})`;
  return [
    `  ${run.key} → "${run.name}"`,
    `    ${steps}; ${keys}, ${plural(run.metricPoints, 'metric point')}`,
    `    ${plural(run.generations, 'generation')}, ${plural(run.episodes, 'episode')}${run.agents.length ? `; agents ${run.agents.join(', ')}` : ''}`,
    ...(run.existingRunId !== null ? [`    already imported as run ${run.existingRunId}: adds only what is new`] : []),
  ];
}

export function previewText(preview: ImportPreview): string {
  const lines = [`${preview.path}: ${preview.format}, ${plural(preview.files, 'file')}, ${bytes(preview.bytes)}, ${plural(preview.runs.length, 'run')}`, ...preview.runs.flatMap(runLines)];
  if (preview.issues.length) lines.push(`Issues (${preview.issues.length}; these records are skipped, the rest is imported):`, ...preview.issues.slice(0, 20).map((i) => `  ${issueText(i)}`));
  if (preview.issues.length > 20) lines.push(`  … and ${preview.issues.length - 20} more`);
  return lines.join('\n');
}

function summaryText(outcome: ImportOutcome): string {
  const head = `${outcome.cancelled ? 'Cancelled after importing' : 'Imported'} ${plural(outcome.runs.length, 'run')} from ${outcome.format} ${outcome.path} in ${formatDuration(outcome.seconds)}`;
  const runs = outcome.runs.map((r) => `  run ${r.runId} (${r.key}, ${r.created ? 'new' : 'existing: what is new added'}): ${plural(r.metricPoints, 'metric point')}, ${plural(r.turns, 'turn')}, ${plural(r.episodes, 'episode')}`);
  const tail = outcome.cancelled ? ['Whole batches were kept; import again to continue.'] : [];
  const issues = outcome.issues.length ? [`${plural(outcome.issues.length, 'record')} skipped (see the runs' events, or marsrl show RUN).`] : [];
  return [head, ...runs, ...issues, ...tail].join('\n');
}

/** A one-line bar on stderr, redrawn at most ten times a second. */
function progressLine(): { update(p: ImportProgress): void; clear(): void } {
  let last = 0;
  let drawn = false;
  return {
    update(p) {
      if (performance.now() - last < 100) return;
      last = performance.now();
      const percent = p.total > 0 ? Math.min(100, (100 * p.done) / p.total) : 100;
      process.stderr.write(`\r\x1b[K${percent.toFixed(0).padStart(3)}% ${bytes(p.done)}/${bytes(p.total)}  ${fmt(p.records)} records`);
      drawn = true;
    },
    clear() {
      if (drawn) process.stderr.write('\r\x1b[K');
    },
  };
}

async function confirmed(question: string): Promise<boolean> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

/** A refusal of the request (path, format, run) in the CLI's words: the flag it is about. */
function requestFailure(error: unknown, ctx: CommandContext): number {
  if (error instanceof ImportRequestError || error instanceof ImportSourceError) {
    const flag = error instanceof ImportRequestError && error.field !== 'path' ? ` (--${error.field === 'runs' ? 'run' : error.field})` : '';
    ctx.err(`marsrl import: ${error.message}${flag}`);
    return error instanceof ImportRequestError && error.field !== 'path' ? 2 : 1;
  }
  throw error;
}

export const importCommand = defineCommand({
  name: 'import',
  summary: 'import runs made elsewhere (MarsRL, veRL, DrMAS, TensorBoard, trackio, MLflow) as read-only runs',
  usage,
  options: OPTIONS,
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    if (!positionals[0]) throw new UsageError('import needs a PATH (the folder or file to import)', usage);
    const format = choiceFlag('format', values.format, IMPORT_FORMATS, usage) as ImportFormatId | undefined;
    if (values.name !== undefined && values.name.trim() === '') throw new UsageError("--name cannot be empty; leave it out to keep the source's names", usage);
    const tags = (values.tag ?? []).map((t) => t.trim());
    if (tags.some((t) => t === '')) throw new UsageError('--tag cannot be empty', usage);
    const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
    if (!values.yes && !values['dry-run'] && !interactive) throw new UsageError('import asks before it writes, and there is no terminal to ask on: pass --yes to import (or --dry-run to only look)', usage);
    // A bad path or format is refused before the database is opened (or created).
    try {
      chooseFormat(sourcePath(positionals[0]), format);
    } catch (error) {
      return requestFailure(error, ctx);
    }
    const databasePath = resolveDatabasePath(values.db, ctx.env);
    const store = openStore(databasePath);
    try {
      const request = { path: positionals[0], format, runs: values.run, name: values.name, tags };
      const preview = await previewImport(store, request);
      if (!values.json) ctx.out(previewText(preview));
      else if (values['dry-run']) ctx.out(JSON.stringify(preview, null, 2));
      if (values['dry-run']) return 0;
      if (!values.yes && !(await confirmed(`Import ${plural(request.runs?.length ?? preview.runs.length, 'run')} into ${databasePath}?`))) {
        ctx.err('Nothing was imported.');
        return 1;
      }
      return await importWithProgress(store, request, values.json, ctx);
    } catch (error) {
      return requestFailure(error, ctx);
    } finally {
      store.close();
    }
  },
});

async function importWithProgress(store: ReturnType<typeof openStore>, request: Parameters<typeof runImport>[1], json: boolean, ctx: CommandContext): Promise<number> {
  // Ctrl-C cancels between batches: what was stored stays, and the next import continues after it.
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of signals) process.once(s, onSignal);
  const bar = process.stderr.isTTY && !json ? progressLine() : null;
  try {
    const outcome = await runImport(store, request, {
      signal: controller.signal,
      onProgress: bar ? (p) => bar.update(p) : undefined,
      onRun: (runId, created) => {
        bar?.clear();
        ctx.err(`${created ? 'Creating' : 'Adding what is new to'} run ${runId}…`);
      },
    });
    bar?.clear();
    if (json) ctx.out(JSON.stringify(outcome, null, 2));
    else ctx.out(summaryText(outcome));
    return outcome.cancelled ? 130 : 0;
  } finally {
    bar?.clear();
    for (const s of signals) process.off(s, onSignal);
  }
}
