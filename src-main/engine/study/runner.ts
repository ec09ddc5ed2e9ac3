/**
 * The study runner: launches a study's cells through the run manager with at most
 * `concurrency` runs alive at once. It only uses the manager's public `start` and
 * `waitForExit`, so runs launched by a study are ordinary runs (same worker, same store rows,
 * resumable one by one) and the queue lives here, not in the runner the trainer owns.
 */
import type { Store } from '../store';
import type { RunStatus } from '../store/types';
import type { StudyRow } from '../store/studies';
import type { StudyCell, StudyMatrix } from './matrix';
import { matrixToDocument } from './matrix';

/** The part of the run manager a study needs. */
export interface StudyLauncher {
  start(request: { preset?: string; config?: Record<string, unknown> }): Promise<{ runId: number }>;
  waitForExit(runId: number): Promise<void>;
}

export interface StudyProgress {
  studyId: number;
  status: StudyRow['status'];
  total: number;
  /** Cells not launched yet. */
  pending: number;
  running: number;
  done: number;
  /** Runs that ended failed or interrupted, and cells whose launch was refused. */
  failed: number;
  runIds: number[];
}

/** Record a new study and its cells (status queued). */
export function createStudy(store: Store, matrix: StudyMatrix, cells: readonly StudyCell[]): number {
  return store.studies.create({
    name: matrix.name,
    matrix: matrixToDocument(matrix),
    concurrency: matrix.concurrency,
    cells: cells.map((c) => ({ cellIndex: c.cellIndex, label: c.label, values: c.values, seed: c.seed, overrides: c.overrides })),
  });
}

/** Progress from the store alone, so any process (the CLI, `marsrl serve`, the app) can show it. */
export function studyProgress(store: Store, studyId: number): StudyProgress | null {
  const study = store.studies.get(studyId);
  if (!study) return null;
  const cells = store.studies.cells(studyId);
  const counts = { pending: 0, running: 0, done: 0, failed: 0 };
  const runIds: number[] = [];
  for (const cell of cells) {
    const status: RunStatus | null = cell.runId === null ? null : (store.runs.get(cell.runId)?.status ?? 'failed');
    if (cell.runId !== null) runIds.push(cell.runId);
    if (status === null) {
      // A cell never launched in a study that has ended was refused or skipped: it counts as failed.
      if (study.status === 'running' || study.status === 'queued') counts.pending++;
      else counts.failed++;
    } else if (status === 'queued' || status === 'running') counts.running++;
    else if (status === 'done') counts.done++;
    else counts.failed++;
  }
  return { studyId, status: study.status, total: cells.length, ...counts, runIds };
}

export interface RunStudyOptions {
  store: Store;
  launcher: StudyLauncher;
  studyId: number;
  /** Overrides the study's stored concurrency. */
  concurrency?: number;
  /** Called after every launch and every exit. */
  onProgress?: (progress: StudyProgress) => void;
  /** Called when a cell's launch is refused (the study continues with the other cells). */
  onLaunchError?: (cellLabel: string, error: Error) => void;
  /** Aborting stops launching new cells; runs already started are the caller's to stop. */
  signal?: AbortSignal;
  /**
   * Also relaunch cells whose run ended failed or interrupted (a resumed study): each gets a
   * fresh run from the cell's config, and the cell points at the new run.
   */
  retryUnfinished?: boolean;
}

/**
 * Run every not-yet-launched cell of a study, `concurrency` at a time, in cell order.
 * Resolves when every launched run has exited, with the study marked done (every run done),
 * failed (some run failed or was refused) or interrupted (aborted before the end).
 */
export async function runStudy(options: RunStudyOptions): Promise<StudyRow> {
  const { store, launcher, studyId, signal } = options;
  const study = store.studies.get(studyId);
  if (!study) throw new Error(`study ${studyId} does not exist`);
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? study.concurrency));
  const unfinished = (runId: number) => {
    const status = store.runs.get(runId)?.status;
    return status === undefined || status === 'failed' || status === 'interrupted';
  };
  const queue = store.studies.cells(studyId).filter((c) => c.runId === null || (options.retryUnfinished === true && unfinished(c.runId)));
  const refused: string[] = [];
  store.studies.setStatus(studyId, 'running', null);
  const report = () => {
    const progress = studyProgress(store, studyId);
    if (progress) options.onProgress?.(progress);
  };
  report();

  const preset = typeof study.matrix.preset === 'string' ? study.matrix.preset : undefined;
  // Each lane takes the next cell when its run exits: at most `concurrency` runs are alive.
  const lane = async () => {
    for (let cell = queue.shift(); cell !== undefined; cell = queue.shift()) {
      if (signal?.aborted) return;
      let runId: number;
      try {
        ({ runId } = await launcher.start({ preset, config: cell.overrides }));
      } catch (error) {
        refused.push(cell.label);
        options.onLaunchError?.(cell.label, error as Error);
        continue;
      }
      store.studies.setCellRun(studyId, cell.cellIndex, runId);
      report();
      await launcher.waitForExit(runId);
      report();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));

  const cells = store.studies.cells(studyId);
  const statuses = cells.map((c) => (c.runId === null ? null : (store.runs.get(c.runId)?.status ?? null)));
  const notDone = statuses.filter((s) => s !== 'done').length;
  if (signal?.aborted && (queue.length > 0 || statuses.some((s) => s === 'interrupted' || s === null))) {
    store.studies.setStatus(studyId, 'interrupted', `stopped with ${notDone} of ${cells.length} runs not done`);
  } else if (notDone === 0) {
    store.studies.setStatus(studyId, 'done', null);
  } else {
    const why = refused.length ? `; launch refused for ${refused.join(' | ')}` : '';
    store.studies.setStatus(studyId, 'failed', `${notDone} of ${cells.length} runs did not finish${why}`);
  }
  report();
  return store.studies.get(studyId)!;
}
