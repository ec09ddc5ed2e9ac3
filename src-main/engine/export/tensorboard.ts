/**
 * A Studio run's metrics as TensorBoard event files (issue 39, "the other way"): for each run,
 * `OUT/<run name>-<id>/events.out.tfevents.<time>.<host>.<pid>.0`, one folder per run as
 * TensorBoard names runs, so `tensorboard --logdir OUT` shows the runs side by side.
 *
 * Every metric point is written, in step order (all keys of a step, then the next step), as a
 * TF2-style scalar event (tfevents/writer.ts); its wall time is the run's start plus the point's
 * seconds since the start. Values become float32, as every TensorBoard scalar is.
 *
 * Like the dataset export: read in keyset pages (one page per key in memory), progress per page,
 * an abort stops at the next page, and each run's folder is written under a temporary name and
 * renamed into place only when every run is complete; an error or an abort removes them all.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../store';
import type { RunRow } from '../store/types';
import type { SeriesPoint } from '../store/metrics';
import { EventFileWriter, eventFileName } from '../tfevents/writer';
import { ExportError } from './options';
import { resolveRuns } from './queries';

export interface TensorboardExportOptions {
  /** Runs by id or name (a name means its latest run), at least one. */
  runs: (number | string)[];
  format: 'tensorboard';
  /** A folder (made when only its parent exists): each run is written to its own subfolder of it. */
  out: string;
  /** Replace a run's subfolder an earlier export wrote. */
  force?: boolean;
  /** Dataset options; refused for this format (every metric point is written). */
  container?: unknown;
  filters?: Record<string, unknown>;
  dedupe?: boolean;
}

export interface TensorboardExportResult {
  format: 'tensorboard';
  /** The folder the runs' subfolders are in. */
  out: string;
  /** No dataset card: the event files describe themselves. Empty. */
  card: string;
  runs: { id: number; name: string; dir: string; file: string; points: number }[];
  /** Metric points written. */
  rows: number;
  bytes: number;
  seconds: number;
  duplicatesDropped: 0;
}

interface Handlers {
  onProgress?(done: number, total: number): void;
  signal?: AbortSignal;
}

/** Points between progress reports (and abort checks), and the most read of one key at a time. */
const PAGE_POINTS = 5_000;
/** Points held across all keys' pages. */
const BUFFERED_POINTS = 200_000;

function invalid(field: string, message: string): ExportError {
  return new ExportError('invalid_option', field, `${field}: ${message}`);
}

/**
 * The shape checks. `out` is a folder: an existing, writable one, or a new one whose parent
 * exists (`create`: made when the export starts, removed again if it fails).
 */
export function validateTensorboardOptions(raw: TensorboardExportOptions): { runs: (number | string)[]; out: string; force: boolean; create: boolean } {
  if (!Array.isArray(raw.runs) || raw.runs.length === 0) throw invalid('runs', 'name at least one run (id or name); list runs with `marsrl runs` or in the runs table');
  if (raw.container !== undefined && raw.container !== null) throw invalid('container', 'the tensorboard format writes event files; leave the container (--jsonl/--parquet) out');
  const filters = Object.entries(raw.filters ?? {}).filter(([, v]) => v !== undefined && v !== null && v !== false);
  if (filters.length > 0 || raw.dedupe === true) {
    throw invalid(`filters.${filters[0]?.[0] ?? 'dedupe'}`, 'the tensorboard format writes every metric point of the runs; filters and --dedupe apply to dataset formats only');
  }
  if (typeof raw.out !== 'string' || raw.out.trim() === '') throw invalid('out', 'give the output folder (e.g. --out tb-logs); each run is written to a subfolder of it');
  const out = path.resolve(raw.out);
  const stat = fs.statSync(out, { throwIfNoEntry: false });
  const folder = stat ? out : path.dirname(out);
  if (!stat && !fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ExportError('output_unwritable', 'out', `out: neither the folder ${out} nor its parent ${folder} exists; for the tensorboard format out is a folder (each run gets a subfolder): create its parent first`);
  }
  if (stat && !stat.isDirectory()) throw new ExportError('output_unwritable', 'out', `out: ${out} is a file; for the tensorboard format out is a folder (each run gets a subfolder), e.g. ${path.join(path.dirname(out), 'tb-logs')}`);
  try {
    fs.accessSync(folder, fs.constants.W_OK);
  } catch {
    throw new ExportError('output_unwritable', 'out', `out: the folder ${folder} is not writable; choose another folder`);
  }
  return { runs: raw.runs, out, force: raw.force === true, create: !stat };
}

/** A run's folder name: its name made safe for every filesystem, then its id (names repeat, ids do not). */
export function runFolderName(run: Pick<RunRow, 'id' | 'name'>): string {
  const safe = run.name
    .replace(/[\\/:*?"<>|\p{Cc}]/gu, '_')
    .replace(/^[.\s]+|[.\s]+$/g, '')
    .slice(0, 100);
  return `${safe || 'run'}-${run.id}`;
}

interface Planned {
  run: RunRow;
  target: string;
  temp: string;
  points: number;
}

export async function runTensorboardExport(store: Store, options: TensorboardExportOptions, handlers: Handlers = {}): Promise<TensorboardExportResult> {
  const started = performance.now();
  const opts = validateTensorboardOptions(options);
  const plans = resolveRuns(store, opts.runs).map(({ run }) => planRun(store, run, opts.out, opts.force));
  const total = plans.reduce((n, p) => n + p.points, 0);
  if (total === 0) throw new ExportError('empty_result', 'runs', `empty result: run${plans.length > 1 ? 's' : ''} ${plans.map((p) => `${p.run.id} (${p.run.name})`).join(', ')} have no metric points to write`);
  const written: { plan: Planned; file: string; bytes: number }[] = [];
  if (opts.create) fs.mkdirSync(opts.out);
  try {
    let done = 0;
    handlers.onProgress?.(0, total);
    for (const plan of plans) {
      const file = await writeRun(store, plan, async (n) => {
        done += n;
        handlers.onProgress?.(done, total);
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (handlers.signal?.aborted) throw new ExportError('aborted', null, 'export cancelled; nothing was written');
      });
      written.push({ plan, ...file });
    }
    publishAll(plans, opts.force);
  } catch (error) {
    for (const plan of plans) fs.rmSync(plan.temp, { recursive: true, force: true });
    if (opts.create) fs.rmSync(opts.out, { recursive: true, force: true });
    throw error;
  }
  return {
    format: 'tensorboard',
    out: opts.out,
    card: '',
    runs: written.map(({ plan, file }) => ({ id: plan.run.id, name: plan.run.name, dir: plan.target, file: path.join(plan.target, file), points: plan.points })),
    rows: total,
    bytes: written.reduce((n, w) => n + w.bytes, 0),
    seconds: (performance.now() - started) / 1000,
    duplicatesDropped: 0,
  };
}

function planRun(store: Store, run: RunRow, out: string, force: boolean): Planned {
  const target = path.join(out, runFolderName(run));
  if (fs.existsSync(target) && !force) {
    throw new ExportError('output_exists', 'out', `out: ${target} already exists (an earlier export of run ${run.id}); pass --force (force: true) to replace it, or choose another folder`);
  }
  const points = (store.db.prepare('SELECT COUNT(*) AS n FROM metrics WHERE run_id = ?').get(run.id) as { n: number }).n;
  const temp = path.join(out, `.${path.basename(target)}.${process.pid}-${crypto.randomBytes(4).toString('hex')}.tmp`);
  return { run, target, temp, points };
}

/** Writes one run's event file into its temporary folder; returns the file's name and size. */
async function writeRun(store: Store, plan: Planned, progressed: (n: number) => Promise<void>): Promise<{ file: string; bytes: number }> {
  fs.mkdirSync(plan.temp);
  const start = (plan.run.startedAt ?? plan.run.createdAt) / 1000;
  const name = eventFileName(Date.now() / 1000);
  const writer = new EventFileWriter(path.join(plan.temp, name), start);
  try {
    const keys = store.metrics.keys(plan.run.id);
    // One page per key is held: with many keys each page is smaller, so memory stays near BUFFERED_POINTS.
    const pageSize = Math.min(PAGE_POINTS, Math.max(100, Math.floor(BUFFERED_POINTS / Math.max(1, keys.length))));
    const series = keys.map((key) => new SeriesReader(store, plan.run.id, key, pageSize));
    let sincePage = 0;
    for (let step = nextStep(series); step !== null; step = nextStep(series)) {
      for (const s of series) {
        const point = s.peek();
        if (point === null || point.step !== step) continue;
        writer.scalar(s.key, point.step, point.value, start + point.wallTime);
        s.advance();
        if (++sincePage === PAGE_POINTS) {
          await progressed(sincePage);
          sincePage = 0;
        }
      }
    }
    writer.close();
    await progressed(sincePage);
    return { file: name, bytes: writer.bytes };
  } catch (error) {
    writer.abandon();
    throw error;
  }
}

/** The smallest step any series has next; null when every series is read. */
function nextStep(series: SeriesReader[]): number | null {
  let step: number | null = null;
  for (const s of series) {
    const point = s.peek();
    if (point !== null && (step === null || point.step < step)) step = point.step;
  }
  return step;
}

/** One metric key of a run, read a keyset page at a time in step order. */
class SeriesReader {
  private page: SeriesPoint[] = [];
  private index = 0;
  private after: number | null = -Infinity;

  constructor(
    private readonly store: Store,
    private readonly runId: number,
    readonly key: string,
    private readonly pageSize: number,
  ) {}

  peek(): SeriesPoint | null {
    if (this.index >= this.page.length) this.load();
    return this.page[this.index] ?? null;
  }

  advance(): void {
    this.index++;
  }

  private load(): void {
    if (this.after === null) return;
    const { items, nextCursor } = this.store.metrics.series(this.runId, this.key, this.after, this.pageSize);
    this.page = items;
    this.index = 0;
    this.after = nextCursor;
  }
}

/** Every run's folder into place; a folder replaced under --force is removed only once all are in. */
function publishAll(plans: Planned[], force: boolean): void {
  const replaced: { target: string; aside: string }[] = [];
  const published: string[] = [];
  try {
    for (const plan of plans) {
      if (fs.existsSync(plan.target)) {
        if (!force) throw new ExportError('output_exists', 'out', `out: ${plan.target} was created during the export; pass --force (force: true) to replace it, or choose another folder`);
        const aside = `${plan.temp}.old`;
        fs.renameSync(plan.target, aside);
        replaced.push({ target: plan.target, aside });
      }
      fs.renameSync(plan.temp, plan.target);
      published.push(plan.target);
    }
  } catch (error) {
    for (const target of published) fs.rmSync(target, { recursive: true, force: true });
    for (const { target, aside } of replaced) fs.renameSync(aside, target);
    throw error;
  }
  for (const { aside } of replaced) fs.rmSync(aside, { recursive: true, force: true });
}
