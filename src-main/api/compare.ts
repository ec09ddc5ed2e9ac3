/**
 * The StudioApi's compare area: runs side by side (summary statistics against a baseline, issue
 * 35's collapse flags and warnings) and one metric's curves, per run or as group bands.
 */
import type { CompareRequest, CompareResult, CompareSeriesRequest, CompareSeriesResult, StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { collapseFlags, compareRuns, compareWarnings, groupBand, groupLabel, loadRuns, runLine, UnknownRunError } from '../engine/compare';
import type { Store } from '../engine/store';
import type { ServiceContext } from './context';

type CompareApi = Pick<StudioApi, 'compareRuns' | 'compareSeries'>;

export function createCompareApi({ store }: ServiceContext): CompareApi {
  return {
    async compareRuns(request: CompareRequest): Promise<CompareResult> {
      const runs = load(store, request.runIds);
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
      const runs = load(store, request.runIds, [request.key], false);
      const groupBy = request.groupBy ?? [];
      const labelOf = (config: Record<string, unknown>) => (groupBy.length ? groupLabel(config, groupBy) : null);
      const lines = runs.map((run) => runLine(run, request.key, xAxis, request.maxPoints ?? 2000, labelOf(run.config)));
      const groups = new Map<string, typeof runs>();
      if (groupBy.length) for (const run of runs) groups.set(labelOf(run.config)!, [...(groups.get(labelOf(run.config)!) ?? []), run]);
      const bands = [...groups].map(([label, members]) => groupBand(members, request.key, xAxis, request.band ?? 'minmax', label, request.maxPoints ?? 2000));
      return { key: request.key, xAxis, lines, bands };
    },
  };
}

/** The runs to compare, or `not_found` naming the first that does not exist. */
function load(store: Store, runIds: readonly number[], extraKeys: readonly string[] = [], summary = true) {
  try {
    return loadRuns(store, runIds, extraKeys, summary);
  } catch (error) {
    if (error instanceof UnknownRunError) throw new StudioError('not_found', `run ${error.ref} does not exist`);
    throw error;
  }
}
