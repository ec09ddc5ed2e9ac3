/**
 * The runs list: newest first, fetched a page at a time with the keyset cursor the store
 * returns (`beforeId`), so paging stays fast however many runs the database holds.
 */
import { defineStore } from 'pinia';
import { computed, ref, shallowRef } from 'vue';
import type { RunStatus, RunSummary } from '../../../src-preload/api';
import { errorMessage, studioClient } from '../api/client';

export const RUNS_PAGE_SIZE = 100;

export interface RunFilters {
  status: RunStatus | null;
  search: string;
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

  const hasMore = computed(() => nextCursor.value !== null);
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
    };
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

  return { runs, nextCursor, filters, loading, loadingMore, loaded, error, hasMore, isFiltered, refresh, loadMore, setFilters };
});
