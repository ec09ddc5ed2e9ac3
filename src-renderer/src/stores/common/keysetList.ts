/**
 * A list read a keyset page at a time (`afterId`, the store's cursor), so a run with millions of
 * rows opens as fast as a small one: the first page replaces the list, "more" appends the next.
 * A reload supersedes a page still out (newest wins, ./requests.ts); "more" joins the current load.
 */
import { markRaw, ref, shallowRef, type Ref, type ShallowRef } from 'vue';
import type { Page } from '#shared/contract';
import { newestWins } from './requests';

export interface KeysetList<T extends { id: number }, K> {
  // Replaced, never mutated in place: a shallowRef keeps Vue from deep-proxying thousands of rows.
  items: ShallowRef<readonly T[]>;
  /** Where the next page starts; null at the end. */
  cursor: Ref<number | null>;
  loading: Ref<boolean>;
  /** Whether the first page for the current query has arrived. */
  loaded: Ref<boolean>;
  /** Loads the first page for `key`, or with `more` the next one (none while one is loading). */
  load(key: K, more: boolean): Promise<void>;
  /**
   * A list that grows at its end (a run that is writing): once fully loaded, only the rows after
   * its last one are read, since new rows have larger ids. `keep()` says whether the answer still
   * belongs to what is shown (a newer load also drops it).
   */
  loadTail(fetchAfter: (afterId: number) => Promise<Page<T>>, keep: () => boolean): Promise<void>;
}

export function keysetList<T extends { id: number }, K>(error: Ref<string | null>, fetchPage: (key: K, afterId: number | null) => Promise<Page<T>>): KeysetList<T, K> {
  const items = shallowRef<readonly T[]>([]);
  const cursor = ref<number | null>(null);
  const loading = ref(false);
  const loaded = ref(false);
  const requests = newestWins(error);

  function load(key: K, more: boolean): Promise<void> {
    if (more && (cursor.value === null || loading.value)) return Promise.resolve();
    const request = more ? requests.join() : requests.begin();
    return request.run(
      loading,
      () => fetchPage(key, more ? cursor.value : null),
      (page) => {
        items.value = markRaw(more ? [...items.value, ...page.items] : page.items);
        cursor.value = page.nextCursor;
        loaded.value = true;
      },
    );
  }

  async function loadTail(fetchAfter: (afterId: number) => Promise<Page<T>>, keep: () => boolean): Promise<void> {
    if (!loaded.value || cursor.value !== null || loading.value) return;
    const request = requests.join();
    const page = await fetchAfter(items.value[items.value.length - 1]?.id ?? 0);
    if (request.stale() || !keep() || page.items.length === 0) return;
    items.value = markRaw([...items.value, ...page.items]);
    cursor.value = page.nextCursor;
  }

  return { items, cursor, loading, loaded, load, loadTail };
}
