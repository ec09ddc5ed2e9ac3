/**
 * The StudioApi's runs area: the runs table (list, detail, rename, notes, tags, delete), launching
 * and stopping runs through the run manager, and what a run recorded over time (metric series,
 * events, the timeline).
 */
import type { ListRunsQuery, SeriesQuery, StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { lttb, minMax, type Point } from '../engine/metrics/downsample';
import { runAgainRequest } from '../engine/training/advice';
import { rayEngineOf } from '../engine/engines/run-config';
import { importedRunRefusal, type ReadOnlyAction } from '../engine/imports/read-only';
import type { RunRow } from '../engine/store';
import type { RunConfig } from '../engine/config/schema';
import type { ServiceContext } from './context';
import { toRunDetail, toRunSummary } from './views';

type RunsApi = Pick<
  StudioApi,
  'listRuns' | 'getRun' | 'updateRun' | 'deleteRun' | 'startRun' | 'stopRun' | 'resumeRun' | 'runAgain' | 'listMetricKeys' | 'getSeries' | 'listEvents' | 'getTimeline'
>;

const MAX_SERIES_POINTS = 20_000;

export function createRunsApi({ store, runs, hub, transport, requireRun, controller }: ServiceContext): RunsApi {
  return {
    async listRuns(query: ListRunsQuery = {}) {
      const page = store.runs.list(query);
      const items = page.items.map((run) => toRunSummary(store, run, query.configPaths));
      // A stale run is stored `running` but reads as interrupted (issue #17): a status filter keeps
      // only the runs that read as the status asked for (the page may then be short).
      return { items: query.status === undefined ? items : items.filter((r) => r.status === query.status), nextCursor: page.nextCursor };
    },

    async getRun(runId) {
      return toRunDetail(store, requireRun(runId));
    },

    async updateRun(runId, update) {
      requireRun(runId);
      store.db.transaction(() => {
        if (update.name !== undefined) store.db.prepare('UPDATE runs SET name = ? WHERE id = ?').run(update.name, runId);
        if (update.notes !== undefined) store.runs.setNotes(runId, update.notes);
        if (update.tags !== undefined) store.runs.setTags(runId, [...new Set(update.tags.map((t) => t.trim()).filter(Boolean))]);
      })();
      hub?.publish({ type: 'run-updated', runId });
      return toRunSummary(store, requireRun(runId));
    },

    async deleteRun(runId) {
      const run = requireRun(runId);
      if (run.status === 'running' || runs?.isActive(runId)) {
        throw new StudioError('conflict', `run ${runId} is still running; stop it before deleting it`);
      }
      store.runs.delete(runId);
      hub?.publish({ type: 'run-deleted', runId });
    },

    async startRun(request) {
      return controller().start(request, transport === 'http' ? refuseUnapprovedInterpreter : undefined);
    },

    async stopRun(runId) {
      refuseImported(requireRun(runId), 'stop');
      return controller().stop(runId);
    },

    async resumeRun(runId) {
      refuseImported(requireRun(runId), 'resume');
      return controller().resume(runId);
    },

    async runAgain(runId) {
      const request = runAgainRequest(refuseImported(requireRun(runId), 'run-again'));
      return controller().start(request);
    },

    async listMetricKeys(runId) {
      requireRun(runId);
      return store.metrics.keys(runId);
    },

    async getSeries(query: SeriesQuery) {
      requireRun(query.runId);
      const maxPoints = Math.min(query.maxPoints ?? 1000, MAX_SERIES_POINTS);
      const method = query.downsample ?? 'lttb';
      return query.keys.map((key) => {
        const page = store.metrics.series(query.runId, key, -Infinity, 1_000_000);
        const full: Point[] = page.items.map((p) => [query.xAxis === 'wall' ? p.wallTime : p.step, p.value]);
        const points = method === 'none' || full.length <= maxPoints ? full : method === 'minmax' ? minMax(full, maxPoints) : lttb(full, maxPoints);
        return { key, points, totalPoints: full.length };
      });
    },

    async listEvents(runId, afterId = 0) {
      requireRun(runId);
      return store.events.events(runId, afterId, 500);
    },

    async getTimeline(runId) {
      requireRun(runId);
      return store.events.timeline(runId).map(({ id: _id, runId: _run, ...span }) => span);
    },
  };
}

/** An imported run is read-only (issue 39): stop, resume and run-again are refused, naming its source. */
function refuseImported(run: RunRow, action: ReadOnlyAction): RunRow {
  const refusal = importedRunRefusal(run, action);
  if (refusal !== null) throw new StudioError('conflict', refusal);
  return run;
}

/** Interpreters `marsrl serve`'s operator lets HTTP clients run for engine runs on this machine. */
export const ENGINE_PYTHONS_VARIABLE = 'MARSRL_ENGINE_PYTHONS';

/**
 * An engine run on a local Ray head runs `engine.python` on this machine (the probe, `ray start`,
 * the job): over HTTP, where anyone holding the token may call, only an interpreter the person
 * running `marsrl serve` listed is run (issue 38; issue #36: input from the network never runs
 * what the operator did not allow). A cluster's interpreter runs there, as that cluster's job.
 */
function refuseUnapprovedInterpreter(config: RunConfig, env: NodeJS.ProcessEnv = process.env): void {
  const engine = rayEngineOf(config);
  if (!engine || engine.address !== 'local') return;
  const allowed = (env[ENGINE_PYTHONS_VARIABLE] ?? '').split(':').filter(Boolean);
  if (allowed.includes(engine.python)) return;
  const message = `engine.python: over the HTTP API an engine run on this machine runs only an interpreter the person running marsrl serve allowed; ${engine.python} is not one (start marsrl serve with ${ENGINE_PYTHONS_VARIABLE}=${engine.python}, colon-separated for several), or launch it from the app or the CLI`;
  throw new StudioError('invalid_request', message, [{ path: 'engine.python', message }]);
}
