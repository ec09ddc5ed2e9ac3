/**
 * The StudioApi's study area: a matrix of configs run as one study in the background (progress as
 * pushed events), the studies table, and a study's report written to a folder.
 */
import type { StudioApi, StudyDetail, StudySummary } from '#shared/contract';
import { StudioError } from '#shared/errors';
import fs from 'node:fs';
import path from 'node:path';
import { exportsDir } from '../engine/paths';
import type { Store, StudyRow } from '../engine/store';
import { expandMatrix, MatrixError, parseMatrix } from '../engine/study/matrix';
import { createStudy, runStudy, studyProgress, type StudyLauncher } from '../engine/study/runner';
import type { ServiceContext } from './context';

type StudiesApi = Pick<StudioApi, 'listStudies' | 'getStudy' | 'startStudy' | 'exportStudyReport'>;

/** What launching a study needs of the run controller; `waitForExit` is used when the controller has it. */
export interface StudyRunController {
  start(request: { preset?: string; config?: Record<string, unknown> }): Promise<{ runId: number }>;
  isActive(runId: number): boolean;
  waitForExit?(runId: number): Promise<void>;
}

export function createStudiesApi({ store, runs, hub, outputPath }: ServiceContext): StudiesApi {
  return {
    async listStudies() {
      return store.studies.list().map((s) => toStudySummary(store, s));
    },

    async getStudy(studyId): Promise<StudyDetail> {
      const study = store.studies.get(studyId);
      if (!study) throw new StudioError('not_found', `study ${studyId} does not exist`);
      return {
        ...toStudySummary(store, study),
        matrix: study.matrix,
        baselineGroup: baselineGroupOf(study),
        cells: store.studies.cells(studyId).map((c) => ({
          cellIndex: c.cellIndex,
          label: c.label,
          values: c.values,
          seed: c.seed,
          runId: c.runId,
          runStatus: c.runId === null ? null : (store.runs.get(c.runId)?.status ?? null),
        })),
      };
    },

    async startStudy(request) {
      if (!runs) throw new StudioError('conflict', 'this surface cannot launch runs (no run manager); use `marsrl study --matrix FILE` or the desktop app');
      let cells;
      let matrix;
      try {
        matrix = parseMatrix(request.matrix, 'matrix');
        if (request.concurrency !== undefined) matrix = { ...matrix, concurrency: request.concurrency };
        cells = expandMatrix(matrix);
      } catch (error) {
        if (error instanceof MatrixError) throw new StudioError('invalid_request', error.message, error.issues.map((i) => ({ path: `matrix.${i.path}`, message: i.message })));
        throw error;
      }
      const studyId = createStudy(store, matrix, cells);
      // The study runs in the background; the caller follows `study-progress` events.
      void runStudy({
        store,
        launcher: toLauncher(runs),
        studyId,
        onProgress: (p) => hub?.publish({ type: 'study-progress', studyId, status: p.status, total: p.total, pending: p.pending, running: p.running, done: p.done, failed: p.failed }),
      }).catch((error: unknown) => store.studies.setStatus(studyId, 'failed', error instanceof Error ? error.message : String(error)));
      return { studyId };
    },

    async exportStudyReport(studyId, out) {
      // The same rule as the other exports: a relative folder is under the exports folder, and
      // over HTTP the folder must be inside the Studio's folders.
      const given = outputPath(out, 'out');
      if (!store.studies.get(studyId)) throw new StudioError('not_found', `study ${studyId} does not exist`);
      // Loaded on first use: ECharts and the rasterizer are only needed to write a report.
      const { writeStudyReport, ReportPathError } = await import('../engine/study/report');
      // Still relative only when the data folder is (a relative MARSRL_HOME): then it is taken
      // under the exports folder once more, as it always was.
      const folder = path.isAbsolute(given) ? given : path.join(exportsDir(), given);
      if (folder !== given) fs.mkdirSync(exportsDir(), { recursive: true });
      try {
        const result = await writeStudyReport(store, studyId, folder);
        return { out: folder, files: result.files };
      } catch (error) {
        if (error instanceof ReportPathError) throw new StudioError('invalid_request', error.message, [{ path: 'out', message: error.message }]);
        throw error;
      }
    },
  };
}

function toLauncher(runs: StudyRunController): StudyLauncher {
  return {
    start: (request) => runs.start(request),
    // The run manager resolves this when the worker exits; a controller without it is polled.
    waitForExit: (runId) =>
      runs.waitForExit
        ? runs.waitForExit(runId)
        : new Promise<void>((resolve) => {
            const timer = setInterval(() => {
              if (!runs.isActive(runId)) {
                clearInterval(timer);
                resolve();
              }
            }, 1000);
          }),
  };
}

function baselineGroupOf(study: StudyRow): string | null {
  const axes = Object.keys((study.matrix.axes ?? {}) as Record<string, unknown>);
  const baseline = (study.matrix.baseline ?? {}) as Record<string, unknown>;
  return axes.length && axes.every((k) => k in baseline) ? axes.map((k) => String(baseline[k])).join(' / ') : null;
}

function toStudySummary(store: Store, study: StudyRow): StudySummary {
  const p = studyProgress(store, study.id)!;
  return {
    id: study.id,
    name: study.name,
    status: study.status,
    statusReason: study.statusReason,
    createdAt: study.createdAt,
    startedAt: study.startedAt,
    endedAt: study.endedAt,
    concurrency: study.concurrency,
    axes: Object.keys((study.matrix.axes ?? {}) as Record<string, unknown>),
    progress: { total: p.total, pending: p.pending, running: p.running, done: p.done, failed: p.failed },
  };
}
