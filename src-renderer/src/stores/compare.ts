/**
 * The compare view's state: which runs, which metric on which x-axis, how they are grouped and
 * against which baseline. Results are large and replaced whole, so they sit in shallowRefs.
 * Requests are numbered: an answer to an older request (the user changed the metric meanwhile)
 * is dropped.
 */
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';
import type { CompareBand, CompareResult, CompareSeriesResult, CompareXAxis } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { liveRefresh } from '../api/liveRefresh';

/** Keys offered first in the group-by picker (the studies the product is for). */
export const COMMON_GROUP_KEYS = ['reward.scheme', 'advantage.mode', 'sharing', 'rollout.selection', 'pipeline.mode'];

export const useCompareStore = defineStore('compare', () => {
  const runIds = ref<number[]>([]);
  const studyId = ref<number | null>(null);
  const metricKey = ref('eval/system/accuracy');
  /** More metrics drawn as small multiples next to the first (issue 18): one chart each, same runs and colours. */
  const extraMetrics = ref<string[]>([]);
  const extraSeries = shallowRef<ReadonlyMap<string, CompareSeriesResult>>(new Map());
  const xAxis = ref<CompareXAxis>('step');
  const groupBy = ref<string[]>([]);
  const band = ref<CompareBand>('minmax');
  const smoothing = ref(0);
  const baselineRunId = ref<number | null>(null);
  const baselineGroup = ref<string | null>(null);
  const result = shallowRef<CompareResult | null>(null);
  const series = shallowRef<CompareSeriesResult | null>(null);
  const keys = shallowRef<string[]>([]);
  const loading = ref(false);
  const error = ref<string | null>(null);
  let generation = 0;

  /** Opens a set of runs, or a study's runs grouped by its axes with its baseline group. */
  async function open(runs: readonly number[], study: number | null): Promise<void> {
    error.value = null;
    if (study !== null && study !== studyId.value) {
      try {
        const detail = await studioClient().getStudy(study);
        runIds.value = detail.cells.flatMap((c) => (c.runId === null ? [] : [c.runId]));
        groupBy.value = [...detail.axes];
        baselineGroup.value = detail.baselineGroup;
      } catch (caught) {
        error.value = errorMessage(caught);
        return;
      }
    } else if (study === null) {
      runIds.value = [...runs];
    }
    studyId.value = study;
    if (baselineRunId.value !== null && !runIds.value.includes(baselineRunId.value)) baselineRunId.value = null;
    await Promise.all([refresh(), loadKeys()]);
  }

  async function loadKeys(): Promise<void> {
    const ids = runIds.value;
    if (!ids.length) {
      keys.value = [];
      return;
    }
    try {
      const lists = await Promise.all(ids.map((id) => studioClient().listMetricKeys(id)));
      keys.value = [...new Set(lists.flat())].filter((k) => !k.startsWith('pretrain/')).sort();
    } catch (caught) {
      error.value = errorMessage(caught);
    }
  }

  /** Summary tables and the chart. */
  async function refresh(): Promise<void> {
    const mine = ++generation;
    if (!runIds.value.length) {
      result.value = null;
      series.value = null;
      return;
    }
    loading.value = true;
    try {
      const client = studioClient();
      const groups = groupBy.value.length ? [...groupBy.value] : undefined;
      const seriesOf = (key: string) => client.compareSeries({ runIds: [...runIds.value], key, xAxis: xAxis.value, groupBy: groups, band: band.value, maxPoints: 1500 });
      const extras = extraMetrics.value.filter((k) => k !== metricKey.value);
      const [summary, chart, ...more] = await Promise.all([
        client.compareRuns({
          runIds: [...runIds.value],
          groupBy: groups,
          baselineRunId: baselineRunId.value ?? undefined,
          baselineGroup: groups ? (baselineGroup.value ?? undefined) : undefined,
        }),
        seriesOf(metricKey.value),
        ...extras.map(seriesOf),
      ]);
      if (mine !== generation) return;
      result.value = summary;
      series.value = chart;
      extraSeries.value = new Map(extras.map((key, i) => [key, more[i] as CompareSeriesResult]));
      error.value = null;
    } catch (caught) {
      if (mine !== generation) return;
      // A baseline group that no longer exists (the grouping changed) falls back to the first group.
      if (baselineGroup.value !== null && /baseline group/.test(errorMessage(caught))) {
        baselineGroup.value = null;
        await refresh();
        return;
      }
      error.value = errorMessage(caught);
    } finally {
      if (mine === generation) loading.value = false;
    }
  }

  // Live runs: a step or a status change of a compared run refreshes the view, at most every 2 s.
  const { follow, unfollow } = liveRefresh({
    delayMs: 2000,
    wants: (event) => (event.type === 'run-progress' || event.type === 'run-status') && runIds.value.includes(event.runId),
    refresh: () => void refresh(),
  });

  return { follow, unfollow, runIds, studyId, metricKey, extraMetrics, extraSeries, xAxis, groupBy, band, smoothing, baselineRunId, baselineGroup, result, series, keys, loading, error, open, refresh, loadKeys };
});
