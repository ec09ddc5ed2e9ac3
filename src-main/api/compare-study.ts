/**
 * The StudioApi methods for comparing runs and running studies, implemented on the compare
 * and study engines. service.ts spreads these into the one service every surface uses.
 */
import type {
  CompareRequest,
  CompareResult,
  CompareSeriesRequest,
  CompareSeriesResult,
  StudioApi,
  StudyDetail,
  StudySummary,
} from '#shared/contract';
import fs from 'node:fs';
import path from 'node:path';
import { StudioError } from '#shared/errors';
import type { EventHub } from './hub';
import { collapseFlags, compareRuns, compareWarnings, groupBand, groupLabel, loadRuns, runLine, UnknownRunError } from '../engine/compare';
import { exportsDir } from '../engine/paths';
import type { Store, StudyRow } from '../engine/store';
import { expandMatrix, MatrixError, parseMatrix } from '../engine/study/matrix';
import { createStudy, runStudy, studyProgress, type StudyLauncher } from '../engine/study/runner';

type CompareStudyApi = Pick<StudioApi, 'compareRuns' | 'compareSeries' | 'listStudies' | 'getStudy' | 'startStudy' | 'exportStudyReport'>;

/** What launching a study needs of the run controller; `waitForExit` is used when the controller has it. */
export interface StudyRunController {
  start(request: { preset?: string; config?: Record<string, unknown> }): Promise<{ runId: number }>;
  isActive(runId: number): boolean;
  waitForExit?(runId: number): Promise<void>;
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

export function createCompareStudyApi(options: { store: Store; runs?: StudyRunController; hub?: EventHub }): CompareStudyApi {
  const { store, hub } = options;
  const load = (runIds: readonly number[], extraKeys: readonly string[] = [], summary = true) => {
    try {
      return loadRuns(store, runIds, extraKeys, summary);
    } catch (error) {
      if (error instanceof UnknownRunError) throw new StudioError('not_found', `run ${error.ref} does not exist`);
      throw error;
    }
  };

  return {
    async compareRuns(request: CompareRequest): Promise<CompareResult> {
      const runs = load(request.runIds);
      try {
        const comparison = compareRuns(runs, request);
        // Agents collapsed to one output, and one seed per side (issue 35): said beside the table.
        const collapse = new Map(runs.map((r) => [r.runId, collapseFlags(store, r.runId)]));
        return {
          ...comparison,
          runs: comparison.runs.map((r) => ({ ...r, collapse: collapse.get(r.runId) ?? [] })),
          warnings: compareWarnings(comparison, collapse),
        } as CompareResult;
      } catch (error) {
        // An unknown baseline names the choices; it is the caller's request that is wrong.
        if (error instanceof RangeError) {
          const path = error.message.startsWith('group-by') ? 'groupBy' : request.baselineGroup !== undefined ? 'baselineGroup' : 'baselineRunId';
          throw new StudioError('invalid_request', error.message, [{ path, message: error.message }]);
        }
        throw error;
      }
    },

    async compareSeries(request: CompareSeriesRequest): Promise<CompareSeriesResult> {
      const xAxis = request.xAxis ?? 'step';
      const runs = load(request.runIds, [request.key], false);
      const groupBy = request.groupBy ?? [];
      const labelOf = (config: Record<string, unknown>) => (groupBy.length ? groupLabel(config, groupBy) : null);
      const lines = runs.map((run) => runLine(run, request.key, xAxis, request.maxPoints ?? 2000, labelOf(run.config)));
      const groups = new Map<string, typeof runs>();
      if (groupBy.length) for (const run of runs) groups.set(labelOf(run.config)!, [...(groups.get(labelOf(run.config)!) ?? []), run]);
      const bands = [...groups].map(([label, members]) => groupBand(members, request.key, xAxis, request.band ?? 'minmax', label, request.maxPoints ?? 2000));
      return { key: request.key, xAxis, lines, bands };
    },

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
      if (!options.runs) throw new StudioError('conflict', 'this surface cannot launch runs (no run manager); use `marsrl study --matrix FILE` or the desktop app');
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
        launcher: toLauncher(options.runs),
        studyId,
        onProgress: (p) => hub?.publish({ type: 'study-progress', studyId, status: p.status, total: p.total, pending: p.pending, running: p.running, done: p.done, failed: p.failed }),
      }).catch((error: unknown) => store.studies.setStatus(studyId, 'failed', error instanceof Error ? error.message : String(error)));
      return { studyId };
    },

    async exportStudyReport(studyId, out) {
      if (!store.studies.get(studyId)) throw new StudioError('not_found', `study ${studyId} does not exist`);
      // Loaded on first use: ECharts and the rasterizer are only needed to write a report.
      const { writeStudyReport, ReportPathError } = await import('../engine/study/report');
      // A relative folder means the per-user exports folder, as for dataset exports.
      const folder = path.isAbsolute(out) ? out : path.join(exportsDir(), out);
      if (folder !== out) fs.mkdirSync(exportsDir(), { recursive: true });
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
