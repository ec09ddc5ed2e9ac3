/**
 * One run's dashboard: its detail, the metric keys it logged and their series, live while it
 * trains. Series are fetched downsampled by the server (min/max by default, so a gradient-norm
 * spike survives at any zoom) and refetched when the run reports progress, at most once per
 * `LIVE_REFRESH_MS`, or twice the time the last refresh took, so neither a fast trainer nor a
 * long run (every refresh reads every point of every series) can keep the server busy.
 *
 * Read top to bottom: pacing the live refresh, then the store.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef } from 'vue';
import type { DownsampleMethod, RunDetail, SeriesXAxis, StudioEvent } from '#shared/contract';
import { studioClient } from '../api/client';
import { metricSections } from '../charts/metricPanels';
import type { Points } from '../charts/lineOption';
import { eventFollower } from './common/events';
import { newestWins, type Request } from './common/requests';

export const LIVE_REFRESH_MS = 1000;
/** Points per series: about one per horizontal pixel of a dashboard panel. */
export const SERIES_POINTS = 600;
/** Events that change what the run page says (a stop asked for, a resume's report, a checkpoint): the detail is read again. */
const DETAIL_EVENTS = ['stop_requested', 'resumed', 'checkpoint_unusable', 'checkpoint', 'interrupted', 'worker_exit'];

/** The API takes at most this many keys per call. */
const KEYS_PER_CALL = 64;

/**
 * `refresh` paced for a run that trains: at most once per `minMs`, or twice the time the last
 * refresh took, and one at a time; a request made meanwhile waits for the next slot.
 */
function pacedRefresh(refresh: () => Promise<void>, minMs: number): { schedule(): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastStart = 0;
  let lastDuration = 0;
  let refreshing = false;
  function schedule(): void {
    if (timer) return;
    const interval = Math.max(minMs, 2 * lastDuration);
    const wait = Math.max(0, lastStart + interval - Date.now());
    timer = setTimeout(() => {
      timer = null;
      // One refresh at a time; progress that arrives meanwhile is picked up by the next one.
      if (refreshing) {
        schedule();
        return;
      }
      refreshing = true;
      lastStart = Date.now();
      void refresh().finally(() => {
        refreshing = false;
        lastDuration = Date.now() - lastStart;
      });
    }, wait);
  }
  function cancel(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }
  return { schedule, cancel };
}

export const useDashboardStore = defineStore('dashboard', () => {
  const runId = ref<number | null>(null);
  const detail = shallowRef<RunDetail | null>(null);
  const keys = shallowRef<readonly string[]>([]);
  // Replaced wholesale on every refresh; markRaw keeps Vue out of thousands of points.
  const series = shallowRef<ReadonlyMap<string, Points>>(new Map());
  const totals = shallowRef<ReadonlyMap<string, number>>(new Map());
  const smoothing = ref(0.6);
  /** Held-out evaluations are few and their value is the result: drawn unsmoothed unless asked (as issue 18 asks). */
  const smoothEvaluation = ref(false);
  const xAxis = ref<SeriesXAxis>('step');
  const downsample = ref<Exclude<DownsampleMethod, 'none'>>('minmax');
  const loading = ref(false);
  const error = ref<string | null>(null);
  const progress = ref<{ step: number; totalSteps: number } | null>(null);
  const lastUpdate = ref<number | null>(null);

  const sections = computed(() => metricSections(keys.value));
  const totalSteps = computed(() => {
    const steps = (detail.value?.config.optimization as { steps?: number } | undefined)?.steps;
    return progress.value?.totalSteps ?? (typeof steps === 'number' ? steps : null);
  });
  const currentStep = computed(() => progress.value?.step ?? detail.value?.lastStep ?? null);

  const requests = newestWins(error);

  /** The series of `list`, KEYS_PER_CALL at a time; nothing shown once `request` is stale. */
  async function fetchSeries(id: number, list: readonly string[], request: Request): Promise<void> {
    const next = new Map<string, Points>();
    const counts = new Map<string, number>();
    for (let i = 0; i < list.length; i += KEYS_PER_CALL) {
      const chunk = list.slice(i, i + KEYS_PER_CALL);
      const result = await studioClient().getSeries({ runId: id, keys: [...chunk], maxPoints: SERIES_POINTS, xAxis: xAxis.value, downsample: downsample.value });
      if (request.stale()) return;
      for (const s of result) {
        next.set(s.key, markRaw(s.points));
        counts.set(s.key, s.totalPoints);
      }
    }
    series.value = markRaw(next);
    totals.value = markRaw(counts);
    lastUpdate.value = Date.now();
  }

  async function refresh(): Promise<void> {
    const id = runId.value;
    if (id === null) return;
    const request = requests.begin();
    try {
      const [run, list] = await Promise.all([studioClient().getRun(id), studioClient().listMetricKeys(id)]);
      if (request.stale()) return;
      detail.value = markRaw(run);
      keys.value = markRaw(list);
      await fetchSeries(id, list, request);
      if (!request.stale()) error.value = null;
    } catch (caught) {
      request.fail(caught);
    }
  }

  async function open(id: number): Promise<void> {
    if (runId.value !== id) {
      runId.value = id;
      detail.value = null;
      keys.value = [];
      series.value = new Map();
      totals.value = new Map();
      progress.value = null;
    }
    loading.value = true;
    try {
      await refresh();
    } finally {
      loading.value = false;
    }
  }

  /** The view options changed: the same keys, fetched again. */
  async function refetchSeries(): Promise<void> {
    const id = runId.value;
    if (id === null) return;
    const request = requests.begin();
    try {
      await fetchSeries(id, keys.value, request);
    } catch (caught) {
      request.fail(caught);
    }
  }

  const live = pacedRefresh(refresh, LIVE_REFRESH_MS);

  function applyEvent(event: StudioEvent): void {
    if (runId.value === null || !('runId' in event) || event.runId !== runId.value) return;
    if (event.type === 'run-progress') {
      // A resumed run reports step 0 while it sets up, then the steps after its checkpoint: keep
      // the last known step until a later one arrives, so the counter never flashes "0 / N" (issue 18).
      const known = progress.value?.step ?? detail.value?.lastStep ?? null;
      progress.value = { step: known === null ? event.step : Math.max(known, event.step), totalSteps: event.totalSteps };
      live.schedule();
    } else if (event.type === 'run-status' || event.type === 'run-updated' || (event.type === 'event' && DETAIL_EVENTS.includes(event.event.kind))) {
      live.schedule();
    }
  }

  const { follow, unfollow } = eventFollower(applyEvent, live.cancel);

  return {
    runId,
    detail,
    keys,
    series,
    totals,
    smoothing,
    smoothEvaluation,
    xAxis,
    downsample,
    loading,
    error,
    progress,
    lastUpdate,
    sections,
    totalSteps,
    currentStep,
    open,
    refresh,
    refetchSeries,
    applyEvent,
    follow,
    unfollow,
  };
});
