/**
 * The runs list: newest first, fetched a page at a time with the keyset cursor the store
 * returns (`beforeId`), so paging stays fast however many runs the database holds.
 */
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';
import type { RunDetail, RunStatus, RunSummary, RunUpdate, StudioEvent } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';

export const RUNS_PAGE_SIZE = 100;
/** Where the table's chosen config columns are kept between sessions (as W&B keeps its column set). */
export const CONFIG_COLUMNS_STORAGE_KEY = 'marsrl.runs.configColumns';

function savedConfigColumns(): string[] {
  try {
    const parsed: unknown = JSON.parse(globalThis.localStorage?.getItem(CONFIG_COLUMNS_STORAGE_KEY) ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((p): p is string => typeof p === 'string').slice(0, 32) : [];
  } catch {
    // A value written by hand or by an older build: start without config columns.
    return [];
  }
}

export interface RunFilters {
  status: RunStatus | null;
  search: string;
}

/** Columns the table sorts by. `id` (newest first) is the order the store pages in. */
export type RunSortKey = 'id' | 'name' | 'status' | 'task' | 'rewardScheme' | 'advantageMode' | 'seed' | 'evalAccuracy' | 'systemAccuracy' | 'lastStep' | 'createdAt';
export interface RunSort {
  key: RunSortKey;
  descending: boolean;
}
/** Sorting by anything but id needs every run loaded; beyond this many, it sorts what is loaded. */
export const SORT_LOAD_LIMIT = 5000;

function sortValue(run: RunSummary, key: RunSortKey): string | number | null {
  switch (key) {
    case 'evalAccuracy':
      return run.keyMetrics['eval/system/accuracy'] ?? null;
    case 'systemAccuracy':
      return run.keyMetrics['system/accuracy'] ?? null;
    case 'name':
    case 'status':
    case 'task':
    case 'rewardScheme':
    case 'advantageMode':
      return run[key].toLowerCase();
    default:
      return run[key];
  }
}

/** Sorted copy; runs without a value go last in either direction, ties newest first. */
export function sortRuns(runs: readonly RunSummary[], sort: RunSort): RunSummary[] {
  const sign = sort.descending ? -1 : 1;
  return runs.slice().sort((a, b) => {
    const va = sortValue(a, sort.key);
    const vb = sortValue(b, sort.key);
    if (va === null || vb === null) return va === vb ? b.id - a.id : va === null ? 1 : -1;
    if (va < vb) return -sign;
    if (va > vb) return sign;
    return b.id - a.id;
  });
}

/** The list row of a run detail: the detail's heavy parts (config snapshot, counts) stay out of the list. */
function summaryOf(detail: RunDetail): RunSummary {
  const { config: _config, codeVersion: _codeVersion, backendInfo: _backendInfo, counts: _counts, lastCheckpointStep: _checkpoint, runningSpans: _spans, lastResume: _resume, collapse: _collapse, checker: _checker, ...summary } = detail;
  return summary;
}

export const useRunsStore = defineStore('runs', () => {
  // Replaced, never mutated in place: a shallowRef keeps Vue from deep-proxying thousands of rows.
  const runs = shallowRef<readonly RunSummary[]>([]);
  const nextCursor = ref<number | null>(null);
  const filters = ref<RunFilters>({ status: null, search: '' });
  const loading = ref(false);
  const loadingMore = ref(false);
  const loaded = ref(false);
  const error = ref<string | null>(null);

  const sort = ref<RunSort>({ key: 'id', descending: true });
  /** Narrowing on columns the API does not filter on, applied to the loaded rows. */
  const columnFilters = ref<{ rewardScheme: string | null; advantageMode: string | null }>({ rewardScheme: null, advantageMode: null });

  /** Config paths shown as extra columns, in the order they were added. */
  const configColumns = ref<string[]>(savedConfigColumns());

  const hasMore = computed(() => nextCursor.value !== null);
  const visibleRuns = computed(() => {
    const { rewardScheme, advantageMode } = columnFilters.value;
    const narrowed = rewardScheme || advantageMode
      ? runs.value.filter((r) => (!rewardScheme || r.rewardScheme === rewardScheme) && (!advantageMode || r.advantageMode === advantageMode))
      : runs.value;
    return sort.value.key === 'id' && sort.value.descending ? narrowed : sortRuns(narrowed, sort.value);
  });
  const columnValues = computed(() => ({
    rewardScheme: [...new Set(runs.value.map((r) => r.rewardScheme).filter(Boolean))].sort(),
    advantageMode: [...new Set(runs.value.map((r) => r.advantageMode).filter(Boolean))].sort(),
  }));
  const isFiltered = computed(() => filters.value.status !== null || filters.value.search.trim() !== '');

  // A refresh started while an older request is still out wins: the older answer is dropped,
  // otherwise a slow page for stale filters could overwrite the fresh one.
  let generation = 0;

  function query(beforeId?: number) {
    const search = filters.value.search.trim();
    return {
      limit: RUNS_PAGE_SIZE,
      ...(beforeId !== undefined ? { beforeId } : {}),
      ...(filters.value.status ? { status: filters.value.status } : {}),
      ...(search ? { search } : {}),
      ...(configColumns.value.length > 0 ? { configPaths: configColumns.value } : {}),
    };
  }

  /** Shows these config paths as columns, remembers the choice, and reloads the rows with their values. */
  async function setConfigColumns(paths: string[]): Promise<void> {
    configColumns.value = [...new Set(paths)].slice(0, 32);
    globalThis.localStorage?.setItem(CONFIG_COLUMNS_STORAGE_KEY, JSON.stringify(configColumns.value));
    await refresh();
  }

  async function refresh(): Promise<void> {
    const mine = ++generation;
    loading.value = true;
    error.value = null;
    try {
      const page = await studioClient().listRuns(query());
      if (mine !== generation) return;
      runs.value = page.items;
      nextCursor.value = page.nextCursor;
      loaded.value = true;
    } catch (caught) {
      if (mine === generation) error.value = errorMessage(caught);
    } finally {
      if (mine === generation) loading.value = false;
    }
  }

  async function loadMore(): Promise<void> {
    const cursor = nextCursor.value;
    if (cursor === null || loadingMore.value || loading.value) return;
    const mine = generation;
    loadingMore.value = true;
    try {
      const page = await studioClient().listRuns(query(cursor));
      if (mine !== generation) return;
      runs.value = [...runs.value, ...page.items];
      nextCursor.value = page.nextCursor;
    } catch (caught) {
      if (mine === generation) error.value = errorMessage(caught);
    } finally {
      loadingMore.value = false;
    }
  }

  function setFilters(next: Partial<RunFilters>): Promise<void> {
    filters.value = { ...filters.value, ...next };
    return refresh();
  }

  /** Every remaining page (up to SORT_LOAD_LIMIT runs), so a sort covers all runs. */
  async function loadAll(): Promise<void> {
    while (nextCursor.value !== null && runs.value.length < SORT_LOAD_LIMIT) {
      const before = runs.value.length;
      await loadMore();
      if (runs.value.length === before) break;
    }
  }

  function setSort(key: RunSortKey): Promise<void> {
    const current = sort.value;
    // A first click sorts text A→Z and numbers and dates high→low, the useful direction.
    const textual = key === 'name' || key === 'status' || key === 'task' || key === 'rewardScheme' || key === 'advantageMode';
    sort.value = current.key === key ? { key, descending: !current.descending } : { key, descending: !textual };
    return sort.value.key === 'id' ? Promise.resolve() : loadAll();
  }

  async function update(runId: number, change: RunUpdate): Promise<RunSummary> {
    const updated = await studioClient().updateRun(runId, change);
    patchRun(runId, () => updated);
    return updated;
  }

  async function remove(runId: number): Promise<void> {
    await studioClient().deleteRun(runId);
    runs.value = runs.value.filter((run) => run.id !== runId);
  }

  function patchRun(runId: number, change: (run: RunSummary) => RunSummary): void {
    const index = runs.value.findIndex((run) => run.id === runId);
    if (index === -1) return;
    const next = runs.value.slice();
    next[index] = change(next[index]);
    runs.value = next;
  }

  /**
   * New runs go on top without reloading: the user may have paged far down, and a reload would
   * throw those pages away. Only runs newer than the newest shown are added.
   */
  async function addNewerRuns(): Promise<void> {
    const mine = generation;
    const page = await studioClient().listRuns(query());
    if (mine !== generation) return;
    const newestShown = runs.value[0]?.id ?? 0;
    const newer = page.items.filter((run) => run.id > newestShown);
    if (newer.length > 0) runs.value = [...newer, ...runs.value];
    // A list that was empty had no cursor yet; this page is now its first.
    if (runs.value.length === newer.length) nextCursor.value = page.nextCursor;
  }

  async function reloadRun(runId: number): Promise<void> {
    if (!runs.value.some((run) => run.id === runId)) return;
    const detail = await studioClient().getRun(runId);
    // The detail carries no config columns; keep the ones the list asked for.
    patchRun(runId, (run) => ({ ...run, ...summaryOf(detail), configValues: run.configValues }));
  }

  /** Applies a pushed event; the list stays current while runs train, without polling. */
  function applyEvent(event: StudioEvent): Promise<void> {
    switch (event.type) {
      case 'run-status':
        patchRun(event.runId, (run) => ({ ...run, status: event.status, statusReason: event.reason }));
        break;
      case 'run-progress':
        patchRun(event.runId, (run) => ({ ...run, lastStep: event.step, keyMetrics: { ...run.keyMetrics, ...event.metrics } }));
        break;
      case 'run-deleted':
        runs.value = runs.value.filter((run) => run.id !== event.runId);
        break;
      case 'run-created':
        return addNewerRuns().catch((caught) => void (error.value = errorMessage(caught)));
      case 'run-updated':
        return reloadRun(event.runId).catch((caught) => void (error.value = errorMessage(caught)));
      case 'event':
        break;
    }
    return Promise.resolve();
  }

  let stopFollowing: (() => void) | null = null;
  function followEvents(): void {
    stopFollowing ??= studioClient().onEvent((event) => void applyEvent(event));
  }
  function unfollowEvents(): void {
    stopFollowing?.();
    stopFollowing = null;
  }

  return {
    runs,
    nextCursor,
    filters,
    loading,
    loadingMore,
    loaded,
    error,
    hasMore,
    isFiltered,
    sort,
    columnFilters,
    visibleRuns,
    columnValues,
    configColumns,
    setConfigColumns,
    refresh,
    loadMore,
    loadAll,
    setSort,
    update,
    remove,
    setFilters,
    applyEvent,
    followEvents,
    unfollowEvents,
  };
});
