/**
 * Dataset export (issue 7): trajectory tables, veRL RL Parquet, per-agent SFT and preference pairs,
 * in JSONL or Parquet, from one or more runs. Plain Node: the CLI, the tests, the bench and the
 * Electron main process all call `runExport`.
 *
 * Guarantees:
 * - Streamed: rows are read in keyset pages and written as they come, so memory is bounded by one
 *   page plus one Parquet row group, not by the size of the run.
 * - Complete: every source row read is written, or counted in the card as a duplicate or (pairs)
 *   as unrewarded/unpaired; an export that would be empty is an error instead of an empty file.
 * - All or nothing: the data and its card are written to temporary files beside the target and
 *   renamed into place only when complete; an error or an abort removes them.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../store';
import { codeVersion } from '../version';
import { renderCard, type CardCounts } from './card';
import { Deduper } from './dedupe';
import {
  COLUMNS,
  emptyPairStats,
  pairRow,
  pairsOfGroup,
  sftRow,
  trajectoryRow,
  verlRow,
  type Row,
} from './formats';
import { CounterfactualColumns, counterfactualColumns } from './counterfactual';
import { ExportError, validateOptions, type ExportOptions, type ValidatedOptions } from './options';
import { checkAgents, EpisodeTurnPages, ProblemPages, resolveRuns, TurnPages, type SourceRun, type TurnRecord } from './queries';
import type { ColumnSpec } from './schema';
import { JsonlSink, ParquetSink, publish, removeQuietly, sweepStaleTemps, tempPathFor, type RowSink } from './sinks';
import { runTensorboardExport, type TensorboardExportOptions, type TensorboardExportResult } from './tensorboard';

export interface ExportHandlers {
  /**
   * Called after each page with source rows processed so far and the total (turns, or problems for
   * veRL) that passed the filters. `done` reaches `total` when the export completes.
   */
  onProgress?(done: number, total: number): void;
  /** Aborting stops the export at the next page and removes everything written. */
  signal?: AbortSignal;
}

export interface ExportResult extends CardCounts {
  format: ValidatedOptions['format'];
  container: ValidatedOptions['container'];
  /** Absolute path of the dataset file. */
  out: string;
  /** Absolute path of the dataset card beside it. */
  card: string;
  runs: { id: number; name: string }[];
  filters: ValidatedOptions['filters'];
  bytes: number;
  seconds: number;
}

export { EXPORT_CONTAINERS, EXPORT_FORMATS, ExportError, cardPath, type ExportContainer, type ExportErrorCode, type ExportFilters, type ExportFormat, type ExportOptions } from './options';
export { COLUMNS, pairsOfGroup, systemMessage } from './formats';
export { runFolderName, runTensorboardExport, type TensorboardExportOptions, type TensorboardExportResult } from './tensorboard';

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ExportError('aborted', null, 'export cancelled; nothing was written');
}

/** Let timers, IPC and signal handlers run between pages (an abort arrives this way). */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

function bump(counts: Record<string, number>, key: string | null): void {
  const k = key ?? '(none)';
  counts[k] = (counts[k] ?? 0) + 1;
}

function describeFilters(opts: ValidatedOptions): string {
  const f = opts.filters;
  const parts: string[] = [];
  if (f.agents) parts.push(`agents ${f.agents.join(', ')}`);
  if (f.stepFrom !== null || f.stepTo !== null) parts.push(`steps ${f.stepFrom ?? 'first'}..${f.stepTo ?? 'last'}`);
  if (f.split) parts.push(`split ${f.split}`);
  if (f.correct !== 'any') parts.push(`correct=${f.correct}${opts.format === 'sft' ? ' (the SFT default; --correct any includes every turn)' : ''}`);
  if (f.formatValid !== 'any') parts.push(`format-valid=${f.formatValid}${opts.format === 'sft' ? ' (the SFT default; --format-valid any)' : ''}`);
  if (f.minReward !== null || f.maxReward !== null) parts.push(`reward ${f.minReward ?? '-inf'}..${f.maxReward ?? '+inf'}`);
  return parts.length ? parts.join('; ') : 'no filters';
}

function runList(sources: SourceRun[]): string {
  return sources.map((s) => `${s.run.id} (${s.run.name})`).join(', ');
}

/**
 * Export `options.runs`: a dataset file plus its card, or (format `tensorboard`, issue 39) the
 * runs' metrics as TensorBoard event files in a folder (export/tensorboard.ts).
 */
export async function runExport(store: Store, options: ExportOptions, handlers?: ExportHandlers): Promise<ExportResult>;
export async function runExport(store: Store, options: TensorboardExportOptions, handlers?: ExportHandlers): Promise<TensorboardExportResult>;
export async function runExport(store: Store, options: ExportOptions | TensorboardExportOptions, handlers?: ExportHandlers): Promise<ExportResult | TensorboardExportResult>;
export async function runExport(store: Store, options: ExportOptions | TensorboardExportOptions, handlers: ExportHandlers = {}): Promise<ExportResult | TensorboardExportResult> {
  if (options.format === 'tensorboard') return runTensorboardExport(store, options, handlers);
  return runDatasetExport(store, options, handlers);
}

/**
 * Export `options.runs` as one dataset file plus its card. Validation errors, unknown runs or
 * agents, an existing or unwritable output and an empty result are `ExportError`s naming the
 * field; nothing is left on disk after any error or an abort.
 */
async function runDatasetExport(store: Store, options: ExportOptions, handlers: ExportHandlers): Promise<ExportResult> {
  const started = performance.now();
  const { onProgress, signal } = handlers;
  const opts = validateOptions(options);
  refuseTheDatabase(store, opts);
  throwIfAborted(signal);
  const sources = resolveRuns(store, opts.runs);
  checkAgents(store.db, sources, opts.filters.agents);
  const plan = planReads(store, opts, sources);

  sweepStaleTemps(opts.out);
  sweepStaleTemps(opts.card);
  const tempData = tempPathFor(opts.out);
  const tempCard = tempPathFor(opts.card);
  let sink: RowSink | null = null;
  const deduper = opts.dedupe ? new Deduper() : null;
  try {
    sink = openSink(opts, tempData, sources);
    const tally = new Tally(sink, deduper);
    const progressed = async (read: number) => {
      tally.done += read;
      onProgress?.(tally.done, plan.total);
      await yieldToEventLoop();
      throwIfAborted(signal);
    };
    onProgress?.(0, plan.total);
    const runName = new Map(sources.map((s) => [s.run.id, s.run.name]));
    const credit = opts.counterfactual ? new CounterfactualColumns(store) : null;
    for (const reader of plan.readers) await writeRows(reader, opts, tally, runName, progressed, credit);
    if (tally.rows === 0) throw emptyAfterReading(opts, sources, plan.sourceUnit, tally);

    const bytes = sink.finish();
    const counts = countsOf(opts, plan, tally, deduper);
    const card = renderCard({
      format: opts.format,
      container: opts.container,
      out: opts.out,
      createdAt: new Date(),
      codeVersion: codeVersion(),
      runs: sources.map((s) => s.run),
      filters: opts.filters,
      dedupe: opts.dedupe,
      systemPrompt: opts.systemPrompt,
      counts,
      bytes,
      seconds: (performance.now() - started) / 1000,
      columns: columnsOf(opts),
      rowGroupRows: opts.rowGroupRows,
    });
    fs.writeFileSync(tempCard, card, { flag: 'wx' });
    throwIfAborted(signal);
    publishDataAndCard(tempData, tempCard, opts);
    onProgress?.(tally.done, plan.total);
    return {
      format: opts.format,
      container: opts.container,
      out: opts.out,
      card: opts.card,
      runs: sources.map((s) => ({ id: s.run.id, name: s.run.name })),
      ...counts,
      filters: opts.filters,
      bytes,
      seconds: (performance.now() - started) / 1000,
    };
  } catch (error) {
    sink?.abandon();
    removeQuietly(tempData);
    removeQuietly(tempCard);
    throw asExportFailure(error, opts);
  } finally {
    deduper?.close();
  }
}

/** --force would otherwise replace the experiment store with its own export. */
function refuseTheDatabase(store: Store, opts: ValidatedOptions): void {
  const database = path.resolve(store.path);
  if ([database, `${database}-wal`, `${database}-shm`].includes(opts.out)) {
    throw new ExportError('output_unwritable', 'out', `out: ${opts.out} is the experiment database (or its journal); choose another path`);
  }
}

type Reader = TurnPages | EpisodeTurnPages | ProblemPages;

/** Readers per run, and the totals that drive progress and the empty-result check. */
interface ReadPlan {
  readers: Reader[];
  total: number;
  sourceUnit: 'turns' | 'problems';
  /** Pairs only: filtered turns outside any episode. */
  turnsWithoutEpisode: number | undefined;
}

/** The readers of the export's runs; nothing to read is an error before any file is opened. */
function planReads(store: Store, opts: ValidatedOptions, sources: SourceRun[]): ReadPlan {
  const sourceUnit = opts.format === 'verl' ? 'problems' : 'turns';
  const readers = sources.map((source): Reader => {
    if (opts.format === 'verl') return new ProblemPages(store.db, source, opts.filters);
    if (opts.format === 'pairs') return new EpisodeTurnPages(store.db, source, opts.filters);
    return new TurnPages(store.db, source, opts.filters);
  });
  const total = readers.map((r) => r.count()).reduce((a, b) => a + b, 0);
  const turnsWithoutEpisode =
    opts.format === 'pairs' ? readers.reduce((n, r) => n + (r as EpisodeTurnPages).countWithoutEpisode(), 0) : undefined;
  if (total === 0) {
    const extra = turnsWithoutEpisode ? ` (${turnsWithoutEpisode} matching turns have no episode, so no group to pair in)` : '';
    throw new ExportError(
      'empty_result',
      'filters',
      `empty result: no ${sourceUnit} of run${sources.length > 1 ? 's' : ''} ${runList(sources)} match (${describeFilters(opts)})${extra}; widen the filters or choose other runs`,
    );
  }
  return { readers, total, sourceUnit, turnsWithoutEpisode };
}

/** The format's columns, and the counterfactual ones when asked for (issue 40). */
function columnsOf(opts: ValidatedOptions): ColumnSpec[] {
  return opts.counterfactual ? [...COLUMNS[opts.format], ...counterfactualColumns()] : COLUMNS[opts.format];
}

function openSink(opts: ValidatedOptions, tempData: string, sources: SourceRun[]): RowSink {
  if (opts.container !== 'parquet') return new JsonlSink(tempData);
  return new ParquetSink(tempData, columnsOf(opts), opts.rowGroupRows, opts.rowGroupBytes, [
    { key: 'marsrl.format', value: opts.format },
    { key: 'marsrl.runs', value: JSON.stringify(sources.map((s) => s.run.id)) },
  ]);
}

/** The rows written so far and how they spread over runs, agents and splits. */
class Tally {
  rows = 0;
  /** Source rows read (turns, or problems for veRL). */
  done = 0;
  readonly byRun: Record<string, number> = {};
  readonly byAgent: Record<string, number> = {};
  readonly bySplit: Record<string, number> = {};
  readonly pairStats = emptyPairStats();

  constructor(
    private readonly sink: RowSink,
    private readonly deduper: Deduper | null,
  ) {}

  /** False for a row whose key an earlier row had (it is counted as dropped) when deduplicating. */
  isNew(key: readonly (string | null)[]): boolean {
    return this.deduper === null || this.deduper.firstTime(key);
  }

  emit(row: Row, bytes: number, runId: number, agent: string | null, split: string | null): void {
    this.sink.write(row, bytes);
    this.rows++;
    bump(this.byRun, String(runId));
    if (agent !== null) bump(this.byAgent, agent);
    bump(this.bySplit, split);
  }
}

/** Writes every row of one run's reader, page by page. */
async function writeRows(reader: Reader, opts: ValidatedOptions, tally: Tally, runName: Map<number, string>, progressed: (read: number) => Promise<void>, credit: CounterfactualColumns | null): Promise<void> {
  if (reader instanceof TurnPages) {
    await forEachPage(idPages(reader), progressed, (page) => {
      for (const t of page) {
        if (!tally.isNew([t.agent, t.prompt, t.text])) continue;
        const row = opts.format === 'sft' ? sftRow(t, opts.systemPrompt) : trajectoryRow(t, runName.get(t.run_id) ?? '');
        if (credit) Object.assign(row, credit.of(t.id, t.run_id));
        tally.emit(row, t.prompt.length + t.text.length, t.run_id, t.agent, t.split);
      }
    });
  } else if (reader instanceof EpisodeTurnPages) {
    const episodes = (after: number) => {
      const { lastEpisode, turns } = reader.next(after);
      return { last: lastEpisode, items: turns };
    };
    await forEachPage(episodes, progressed, (turns) =>
      forEachGroup(turns, (group) => {
        for (const [chosen, rejected] of pairsOfGroup(group, tally.pairStats)) {
          if (!tally.isNew([chosen.agent, chosen.prompt, chosen.text, rejected.text])) continue;
          tally.emit(pairRow(chosen, rejected, opts.systemPrompt), chosen.prompt.length + chosen.text.length + rejected.text.length, chosen.run_id, chosen.agent, chosen.split);
        }
      }),
    );
  } else {
    await forEachPage(idPages(reader), progressed, (page) => {
      for (const p of page) {
        if (!tally.isNew([p.split, p.question, p.answer])) continue;
        tally.emit(verlRow(p, tally.rows, opts.systemPrompt), p.question.length * 2 + p.answer.length, p.run_id, null, p.split);
      }
    });
  }
}

/** One keyset page: its items, and the key to read after (null: the end). */
type Page<T> = (after: number) => { last: number | null; items: T[] };

/** Pages keyed by row id: an empty page is the end. */
function idPages<T extends { id: number }>(reader: { next(after: number): T[] }): Page<T> {
  return (after) => {
    const items = reader.next(after);
    return { last: items.length === 0 ? null : items[items.length - 1].id, items };
  };
}

/** Reads pages from the start, writing each and reporting progress (an abort arrives there). */
async function forEachPage<T>(page: Page<T>, progressed: (read: number) => Promise<void>, write: (items: T[]) => void): Promise<void> {
  let after = 0;
  for (;;) {
    const { last, items } = page(after);
    if (last === null) break;
    write(items);
    after = last;
    await progressed(items.length);
  }
}

/** Rows were read but none written (all deduplicated, or no pair in any group). */
function emptyAfterReading(opts: ValidatedOptions, sources: SourceRun[], sourceUnit: ReadPlan['sourceUnit'], tally: Tally): ExportError {
  const { done, pairStats } = tally;
  const why =
    opts.format === 'pairs'
      ? `no preference pairs: the ${done} matching turns form ${pairStats.groups} rewarded groups, ${pairStats.singletonGroups} of a single turn and ${pairStats.tiedGroups} where every reward ties (${pairStats.unrewardedTurns} turns have no reward)`
      : `no rows from ${done} matching ${sourceUnit}`;
  return new ExportError('empty_result', 'filters', `empty result: ${why}, in run${sources.length > 1 ? 's' : ''} ${runList(sources)} (${describeFilters(opts)}); widen the filters or choose other runs`);
}

function countsOf(opts: ValidatedOptions, plan: ReadPlan, tally: Tally, deduper: Deduper | null): CardCounts {
  const { rows, done, byRun, byAgent, bySplit, pairStats } = tally;
  return {
    rows,
    sourceRows: done,
    sourceUnit: plan.sourceUnit,
    duplicatesDropped: deduper?.dropped ?? 0,
    byRun,
    byAgent,
    bySplit,
    ...(opts.format === 'pairs' ? { pairs: { pairs: rows + (deduper?.dropped ?? 0), ...pairStats }, turnsWithoutEpisode: plan.turnsWithoutEpisode } : {}),
  };
}

/** The dataset, then its card; a dataset without its card is not a complete export. */
function publishDataAndCard(tempData: string, tempCard: string, opts: ValidatedOptions): void {
  publish(tempData, opts.out, opts.force);
  try {
    publish(tempCard, opts.card, opts.force);
  } catch (error) {
    removeQuietly(opts.out);
    throw error;
  }
}

/**
 * A full disk is not a store failure to `resume` from: an export is written to a temporary file
 * and published whole, so it is redone from the start (issue #36).
 */
function asExportFailure(error: unknown, opts: ValidatedOptions): unknown {
  if ((error as NodeJS.ErrnoException | null)?.code === 'ENOSPC' || (error as { code?: unknown } | null)?.code === 'SQLITE_FULL') {
    return new ExportError('disk_full', 'out', `out: the disk filled up while ${opts.out} was being written (${(error as Error).message}); the partial file was removed and nothing else changed: free some space, then run the export again (an export is redone from the start, not resumed)`);
  }
  return error;
}

/**
 * Calls `fn` with each run of consecutive turns sharing (episode, group, agent, prompt); the
 * page query orders by (episode, group, agent, id), so a group whose turns read different prompts
 * (which the rollout never writes) splits into one group per prompt instead of pairing unlike turns.
 */
function forEachGroup(turns: TurnRecord[], fn: (group: TurnRecord[]) => void): void {
  let start = 0;
  while (start < turns.length) {
    const head = turns[start];
    let end = start + 1;
    while (end < turns.length && turns[end].episode_id === head.episode_id && turns[end].group_id === head.group_id && turns[end].agent === head.agent) end++;
    const group = turns.slice(start, end);
    const byPrompt = new Map<string, TurnRecord[]>();
    for (const t of group) {
      const list = byPrompt.get(t.prompt);
      if (list) list.push(t);
      else byPrompt.set(t.prompt, [t]);
    }
    for (const g of byPrompt.values()) fn(g);
    start = end;
  }
}
