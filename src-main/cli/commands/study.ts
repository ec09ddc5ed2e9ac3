import path from 'node:path';
import { resolveDatabasePath } from '../../engine/paths';
import { openStore, type Store } from '../../engine/store';
import { SUGGESTED_SEEDS } from '../../engine/compare/warnings';
import { likeRunsMatrix } from '../../engine/study/like';
import { expandMatrix, MatrixError, parseMatrix, parseMatrixText } from '../../engine/study/matrix';
import { createStudy, runStudy, studyProgress, type StudyProgress } from '../../engine/study/runner';
import { createRunManager } from '../../runner/manager';
import { intFlag, runRef, UsageError } from '../args';
import { assertDatabaseExists, defineCommand, type CommandContext } from '../context';
import { printJson, table } from '../format';
import { FileRefusedError, LIMITS, readTextFile } from '../../engine/util/bounded-read';

const studyUsage = `Usage: marsrl study --matrix FILE [--concurrency N] [--out DIR] [--dry-run] [--db PATH] [--json]
       marsrl study --like RUN,RUN[,…] [--seeds N] [--concurrency N] [--out DIR] [--dry-run] [--db PATH] [--json]
       marsrl study --resume STUDY [--concurrency N] [--out DIR] [--db PATH] [--json]
       marsrl study --report STUDY [--out DIR] [--db PATH] [--json]
       marsrl study --list [--db PATH] [--json]

Launches every cell of a study matrix (config values × seeds) through the run manager, at most
--concurrency runs at a time (default: the matrix's \`concurrency\`, else 1), follows them to the
end and writes the study report (Markdown, CSV, PNG charts) to --out (default: a folder beside
the database, studies/ID-NAME). --dry-run validates and lists the cells without launching.
--like runs the configs of existing runs (ids or names) over seeds 1..N (--seeds, default 3),
one group per run, so a difference Compare showed between single runs can be told from
seed-to-seed spread. --resume relaunches the cells of a stopped study that never ran or whose run failed or was
interrupted (fresh runs from the cells' configs). --report regenerates a study's report. Ctrl-C stops launching, stops the runs in
progress (they stay resumable) and marks the study interrupted.

Matrix file (YAML): see resources/studies/quick-2x2.yaml —
  name: quick-2x2
  preset: quick
  axes: { reward.scheme: [decoupled, shared], advantage.mode: [agentwise, global] }
  seeds: [1, 2]
  concurrency: 2
  baseline: { reward.scheme: decoupled, advantage.mode: agentwise }`;

/** The matrix of `--like RUNS`: each run's config over seeds 1..N (engine/study/like.ts). */
function likeMatrix(refs: string, seeds: number, databasePath: string) {
  assertDatabaseExists(databasePath, true);
  const store = openStore(databasePath);
  try {
    const runs = refs.split(',').map((raw) => {
      const ref = runRef(raw.trim(), '--like', studyUsage);
      const run = store.runs.find(ref);
      if (!run) throw new UsageError(`--like: no run ${JSON.stringify(ref)} in ${databasePath} (list runs with: marsrl runs)`, studyUsage);
      return run;
    });
    try {
      return parseMatrix(likeRunsMatrix(runs, seeds), `--like ${refs}`);
    } catch (error) {
      if (error instanceof RangeError) throw new UsageError(`--like: ${error.message}`, studyUsage);
      throw error;
    }
  } finally {
    store.close();
  }
}

function readMatrixFile(file: string) {
  let text: string;
  try {
    text = readTextFile(file, { maxBytes: LIMITS.settings, what: 'study matrix' });
  } catch (error) {
    const refused = error instanceof FileRefusedError ? error : null;
    throw new UsageError(`--matrix ${file}: ${refused?.code === 'ENOENT' ? 'no such file' : (error as Error).message.replace(`${file}: `, '')}`, studyUsage);
  }
  return parseMatrixText(text, file);
}

export function defaultReportDir(databasePath: string, studyId: number, name: string): string {
  return path.join(path.dirname(databasePath), 'studies', `${studyId}-${name.replace(/[^\w.-]+/g, '_')}`);
}

function progressLine(p: StudyProgress): string {
  return `[study ${p.studyId}] ${p.done + p.failed}/${p.total} finished (${p.done} done, ${p.failed} failed), ${p.running} running, ${p.pending} queued`;
}

async function writeReport(store: Store, studyId: number, outDir: string, ctx: CommandContext, json: boolean) {
  // The report pulls in ECharts and the rasterizer: loaded only when a report is written.
  const { writeStudyReport } = await import('../../engine/study/report');
  const result = await writeStudyReport(store, studyId, outDir);
  if (!json) {
    ctx.out(result.markdownTable);
    ctx.out(`\nReport written to ${outDir}: report.md, runs.csv, groups.csv and ${result.charts.length} charts (charts/*.png, *.svg).`);
  }
  return result;
}

/** A study by id or name, or null. */
function findStudy(store: Store, ref: string) {
  return /^\d+$/.test(ref) ? store.studies.get(Number(ref)) : (store.studies.list(10_000).find((s) => s.name === ref) ?? null);
}

/** The matrix of --matrix or --like and its cells, every cell validated before anything is written; null for --resume. */
function plannedStudy(values: { matrix?: string; like?: string }, seeds: number, databasePath: string) {
  try {
    const matrix = values.matrix !== undefined ? readMatrixFile(values.matrix) : values.like !== undefined ? likeMatrix(values.like, seeds, databasePath) : null;
    return matrix ? { matrix, cells: expandMatrix(matrix) } : null;
  } catch (error) {
    if (error instanceof MatrixError) throw new UsageError(error.message);
    throw error;
  }
}

interface LaunchOptions {
  planned: ReturnType<typeof plannedStudy>;
  resume: string | undefined;
  concurrency: number | undefined;
  out: string | undefined;
  json: boolean;
  databasePath: string;
}

/**
 * Launch a planned study (or relaunch a stopped one's unfinished cells), follow it to the end and
 * write its report. Ctrl-C stops launching and stops the runs in progress, which stay resumable.
 */
async function launchStudy({ planned, resume, concurrency, out, json, databasePath }: LaunchOptions, ctx: CommandContext): Promise<number> {
  const store = openStore(databasePath);
  const manager = createRunManager({ store, databasePath });
  manager.recoverStaleRuns();
  const abort = new AbortController();
  const onSigint = () => {
    if (!abort.signal.aborted) {
      ctx.err('Stopping the study: no new runs; the runs in progress stop at their next safe point (resumable).');
      abort.abort();
      void manager.stopAll('study stopped by the user');
    }
  };
  process.on('SIGINT', onSigint);
  try {
    let studyId: number;
    let name: string;
    if (planned) {
      studyId = createStudy(store, planned.matrix, planned.cells);
      name = planned.matrix.name;
      ctx.err(`Study ${studyId} "${name}": ${planned.cells.length} runs, ${concurrency ?? planned.matrix.concurrency} at a time (database ${databasePath}).`);
    } else {
      const existing = findStudy(store, resume!);
      if (!existing) {
        ctx.err(`No study ${JSON.stringify(resume)} in ${databasePath}. List studies with: marsrl study --list`);
        return 1;
      }
      studyId = existing.id;
      name = existing.name;
      ctx.err(`Resuming study ${studyId} "${name}" (database ${databasePath}).`);
    }
    let last = '';
    const study = await runStudy({
      store,
      launcher: manager,
      studyId,
      concurrency,
      signal: abort.signal,
      retryUnfinished: !planned,
      onProgress: (p) => {
        const line = progressLine(p);
        if (line !== last) ctx.err((last = line));
      },
      onLaunchError: (label, error) => ctx.err(`[study ${studyId}] could not launch ${label}: ${error.message}`),
    });
    const outDir = path.resolve(out ?? defaultReportDir(databasePath, studyId, name));
    let report = null;
    try {
      report = await writeReport(store, studyId, outDir, ctx, json);
    } catch (error) {
      ctx.err(`The study ended but its report failed: ${(error as Error).message}. Retry with: marsrl study --report ${studyId} --db ${databasePath}`);
    }
    if (json) printJson(ctx.out, { study, progress: studyProgress(store, studyId), report: report && { files: report.files, summary: report.summary } });
    else ctx.out(`Study ${studyId} ${study.status}${study.statusReason ? ` (${study.statusReason})` : ''}.`);
    return study.status === 'done' ? 0 : study.status === 'interrupted' ? 130 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    store.close();
  }
}

function listStudies(store: Store, databasePath: string, json: boolean, ctx: CommandContext): number {
  const studies = store.studies.list().map((s) => ({ ...s, progress: studyProgress(store, s.id) }));
  if (json) printJson(ctx.out, studies);
  else if (studies.length === 0) ctx.out(`No studies in ${databasePath}.`);
  else ctx.out(table(['id', 'name', 'status', 'runs', 'done', 'failed'], studies.map((s) => [s.id, s.name, s.status, s.progress?.total, s.progress?.done, s.progress?.failed])));
  return 0;
}

async function reportStudy(store: Store, ref: string, out: string | undefined, json: boolean, databasePath: string, ctx: CommandContext): Promise<number> {
  const study = findStudy(store, ref);
  if (!study) {
    ctx.err(`No study ${JSON.stringify(ref)} in ${databasePath}. List studies with: marsrl study --list`);
    return 1;
  }
  const outDir = path.resolve(out ?? defaultReportDir(databasePath, study.id, study.name));
  const report = await writeReport(store, study.id, outDir, ctx, json);
  if (json) printJson(ctx.out, { study, files: report.files, summary: report.summary });
  return 0;
}

export const studyCommand = defineCommand({
  name: 'study',
  summary: 'run a study matrix (config values × seeds) and report it',
  usage: studyUsage,
  options: { matrix: { type: 'string' }, like: { type: 'string' }, seeds: { type: 'string' }, resume: { type: 'string' }, report: { type: 'string' }, list: { type: 'boolean', default: false }, concurrency: { type: 'string' }, out: { type: 'string' }, 'dry-run': { type: 'boolean', default: false } },
  maxPositionals: 0,
  async run({ values }, ctx) {
    const modes = [values.matrix !== undefined, values.like !== undefined, values.resume !== undefined, values.report !== undefined, values.list].filter(Boolean).length;
    if (modes !== 1) throw new UsageError('study needs exactly one of --matrix FILE, --like RUNS, --resume STUDY, --report STUDY or --list', studyUsage);
    if (values.seeds !== undefined && values.like === undefined) throw new UsageError('--seeds goes with --like (a matrix file names its own seeds)', studyUsage);
    const seeds = intFlag('seeds', values.seeds, 1, 100, studyUsage) ?? SUGGESTED_SEEDS;
    const concurrency = intFlag('concurrency', values.concurrency, 1, 32, studyUsage);
    const databasePath = resolveDatabasePath(values.db, ctx.env);

    if (values.matrix !== undefined || values.like !== undefined || values.resume !== undefined) {
      // Validate every cell before touching the database: a bad matrix writes nothing.
      const planned = plannedStudy(values, seeds, databasePath);
      if (values['dry-run'] && planned) {
        if (values.json) printJson(ctx.out, { name: planned.matrix.name, preset: planned.matrix.preset, cells: planned.cells.map(({ config: _config, ...c }) => c) });
        else ctx.out(table(['#', 'cell', 'seed'], planned.cells.map((c) => [c.cellIndex, c.label, c.seed])));
        return 0;
      }
      return launchStudy({ planned, resume: values.resume, concurrency, out: values.out, json: values.json, databasePath }, ctx);
    }
    const store = openStore(databasePath);
    try {
      return values.list ? listStudies(store, databasePath, values.json, ctx) : await reportStudy(store, values.report!, values.out, values.json, databasePath, ctx);
    } finally {
      store.close();
    }
  },
});
