/**
 * The runs list: newest first, fetched a page at a time with the keyset cursor the store
 * returns (`beforeId`), so paging stays fast however many runs the database holds.
 *
 * Read top to bottom: sorting, the pages, the table's view of them, the changes that patch
 * single rows (edits and pushed events), and the store composing the three.
 */
import { defineStore } from 'pinia';
import { computed, ref, shallowRef, type Ref, type ShallowRef } from 'vue';
import type { ListRunsQuery, RunDetail, RunStatus, RunSummary, RunUpdate, StudioEvent } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { eventFollower } from './common/events';
import { newestWins } from './common/requests';

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

function runsQuery(filters: RunFilters, configColumns: string[], beforeId?: number): ListRunsQuery {
  const search = filters.search.trim();
  return {
    limit: RUNS_PAGE_SIZE,
    ...(beforeId !== undefined ? { beforeId } : {}),
    ...(filters.status ? { status: filters.status } : {}),
    ...(search ? { search } : {}),
    ...(configColumns.length > 0 ? { configPaths: configColumns } : {}),
  };
}

/** The loaded rows, newest first, a page at a time for the filters and config columns asked. */
function runPages(error: Ref<string | null>) {
  // Replaced, never mutated in place: a shallowRef keeps Vue from deep-proxying thousands of rows.
  const runs = shallowRef<readonly RunSummary[]>([]);
  const nextCursor = ref<number | null>(null);
  const filters = ref<RunFilters>({ status: null, search: '' });
  const loading = ref(false);
  const loadingMore = ref(false);
  const loaded = ref(false);
  /** Config paths shown as extra columns, in the order they were added. */
  const configColumns = ref<string[]>(savedConfigColumns());
  // A refresh started while an older request is still out wins: the older answer is dropped.
  const requests = newestWins(error);

  const hasMore = computed(() => nextCursor.value !== null);
  const isFiltered = computed(() => filters.value.status !== null || filters.value.search.trim() !== '');
  const query = (beforeId?: number) => runsQuery(filters.value, configColumns.value, beforeId);

  function refresh(): Promise<void> {
    const request = requests.begin();
    error.value = null;
    return request.run(
      loading,
      () => studioClient().listRuns(query()),
      (page) => {
        runs.value = page.items;
        nextCursor.value = page.nextCursor;
        loaded.value = true;
      },
    );
  }

  async function loadMore(): Promise<void> {
    const cursor = nextCursor.value;
    if (cursor === null || loadingMore.value || loading.value) return;
    const request = requests.join();
    loadingMore.value = true;
    try {
      const page = await studioClient().listRuns(query(cursor));
      if (request.stale()) return;
      runs.value = [...runs.value, ...page.items];
      nextCursor.value = page.nextCursor;
    } catch (caught) {
      request.fail(caught);
    } finally {
      // Unlike `loading`, cleared even when a refresh overtook this page: no other request clears it.
      loadingMore.value = false;
    }
  }

  /** Every remaining page (up to SORT_LOAD_LIMIT runs), so a sort covers all runs. */
  async function loadAll(): Promise<void> {
    while (nextCursor.value !== null && runs.value.length < SORT_LOAD_LIMIT) {
      const before = runs.value.length;
      await loadMore();
      if (runs.value.length === before) break;
    }
  }

  /**
   * New runs go on top without reloading: the user may have paged far down, and a reload would
   * throw those pages away. Only runs newer than the newest shown are added.
   */
  async function addNewerRuns(): Promise<void> {
    const request = requests.join();
    const page = await studioClient().listRuns(query());
    if (request.stale()) return;
    const newestShown = runs.value[0]?.id ?? 0;
    const newer = page.items.filter((run) => run.id > newestShown);
    if (newer.length > 0) runs.value = [...newer, ...runs.value];
    // A list that was empty had no cursor yet; this page is now its first.
    if (runs.value.length === newer.length) nextCursor.value = page.nextCursor;
  }

  function setFilters(next: Partial<RunFilters>): Promise<void> {
    filters.value = { ...filters.value, ...next };
    return refresh();
  }

  /** Shows these config paths as columns, remembers the choice, and reloads the rows with their values. */
  async function setConfigColumns(paths: string[]): Promise<void> {
    configColumns.value = [...new Set(paths)].slice(0, 32);
    globalThis.localStorage?.setItem(CONFIG_COLUMNS_STORAGE_KEY, JSON.stringify(configColumns.value));
    await refresh();
  }

  return { runs, nextCursor, filters, loading, loadingMore, loaded, configColumns, hasMore, isFiltered, refresh, loadMore, loadAll, addNewerRuns, setFilters, setConfigColumns };
}

/** How the table shows the loaded rows: sorted by a column, narrowed on columns the API does not filter on. */
function runTable(runs: ShallowRef<readonly RunSummary[]>, loadAll: () => Promise<void>) {
  const sort = ref<RunSort>({ key: 'id', descending: true });
  /** Narrowing on columns the API does not filter on, applied to the loaded rows. */
  const columnFilters = ref<{ rewardScheme: string | null; advantageMode: string | null }>({ rewardScheme: null, advantageMode: null });

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

  function setSort(key: RunSortKey): Promise<void> {
    const current = sort.value;
    // A first click sorts text A→Z and numbers and dates high→low, the useful direction.
    const textual = key === 'name' || key === 'status' || key === 'task' || key === 'rewardScheme' || key === 'advantageMode';
    sort.value = current.key === key ? { key, descending: !current.descending } : { key, descending: !textual };
    return sort.value.key === 'id' ? Promise.resolve() : loadAll();
  }

  return { sort, columnFilters, visibleRuns, columnValues, setSort };
}

/** Edits and pushed events change single rows in place: the list stays current while runs train, without polling. */
function runChanges(pages: ReturnType<typeof runPages>, error: Ref<string | null>) {
  const { runs } = pages;

  function patchRun(runId: number, change: (run: RunSummary) => RunSummary): void {
    const index = runs.value.findIndex((run) => run.id === runId);
    if (index === -1) return;
    const next = runs.value.slice();
    next[index] = change(next[index]);
    runs.value = next;
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

  async function reloadRun(runId: number): Promise<void> {
    if (!runs.value.some((run) => run.id === runId)) return;
    const detail = await studioClient().getRun(runId);
    // The detail carries no config columns; keep the ones the list asked for.
    patchRun(runId, (run) => ({ ...run, ...summaryOf(detail), configValues: run.configValues }));
  }

  /** Applies a pushed event. */
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
        return pages.addNewerRuns().catch((caught) => void (error.value = errorMessage(caught)));
      case 'run-updated':
        return reloadRun(event.runId).catch((caught) => void (error.value = errorMessage(caught)));
      case 'event':
        break;
    }
    return Promise.resolve();
  }

  return { update, remove, applyEvent };
}

export const useRunsStore = defineStore('runs', () => {
  const error = ref<string | null>(null);
  const pages = runPages(error);
  const table = runTable(pages.runs, pages.loadAll);
  const changes = runChanges(pages, error);
  const events = eventFollower((event) => void changes.applyEvent(event));

  return {
    runs: pages.runs,
    nextCursor: pages.nextCursor,
    filters: pages.filters,
    loading: pages.loading,
    loadingMore: pages.loadingMore,
    loaded: pages.loaded,
    error,
    hasMore: pages.hasMore,
    isFiltered: pages.isFiltered,
    sort: table.sort,
    columnFilters: table.columnFilters,
    visibleRuns: table.visibleRuns,
    columnValues: table.columnValues,
    configColumns: pages.configColumns,
    setConfigColumns: pages.setConfigColumns,
    refresh: pages.refresh,
    loadMore: pages.loadMore,
    loadAll: pages.loadAll,
    setSort: table.setSort,
    update: changes.update,
    remove: changes.remove,
    setFilters: pages.setFilters,
    applyEvent: changes.applyEvent,
    followEvents: events.follow,
    unfollowEvents: events.unfollow,
  };
});
