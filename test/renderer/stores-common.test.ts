/**
 * The renderer stores' shared helpers (src-renderer/src/stores/common, issue 37): a request
 * overtaken by a newer one changes nothing, and a keyset list pages, appends and grows its tail.
 */
import { describe, expect, it } from 'vitest';
import { ref } from 'vue';
import type { Page } from '#shared/contract';
import { keysetList } from '../../src-renderer/src/stores/common/keysetList';
import { newestWins } from '../../src-renderer/src/stores/common/requests';

/** A promise the test settles by hand, so two requests can finish in either order. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('newestWins', () => {
  it('drops an older answer and its failure, and leaves loading to the newest request', async () => {
    const error = ref<string | null>(null);
    const loading = ref(false);
    const shown: string[] = [];
    const requests = newestWins(error);
    const older = deferred<string>();
    const newer = deferred<string>();
    const first = requests.begin().run(loading, () => older.promise, (v) => shown.push(v));
    const second = requests.begin().run(loading, () => newer.promise, (v) => shown.push(v));
    newer.resolve('new');
    await second;
    expect([shown, loading.value]).toEqual([['new'], false]);
    loading.value = true; // as a third request would have it: the stale one must not clear it
    older.reject(new Error('too late'));
    await first;
    expect([shown, error.value, loading.value]).toEqual([['new'], null, true]);
  });

  it('puts the newest failure in the error; a joined request is stale once a new one begins', async () => {
    const error = ref<string | null>(null);
    const requests = newestWins(error);
    await requests.begin().run(null, () => Promise.reject(new Error('run 3 does not exist')), () => undefined);
    expect(error.value).toBe('run 3 does not exist');
    const joined = requests.join();
    expect(joined.stale()).toBe(false);
    requests.begin();
    expect(joined.stale()).toBe(true);
  });
});

describe('keysetList', () => {
  const rows = [1, 2, 3, 4, 5].map((id) => ({ id }));
  /** Pages of two rows after `afterId`, as the store's keyset queries return them. */
  const pageAfter = (all: { id: number }[], afterId: number | null): Page<{ id: number }> => {
    const rest = all.filter((r) => afterId === null || r.id > afterId);
    return { items: rest.slice(0, 2), nextCursor: rest.length > 2 ? rest[1].id : null };
  };

  it('replaces the list with the first page, appends the next ones, and stops at the end', async () => {
    const asked: (number | null)[] = [];
    const list = keysetList<{ id: number }, string>(ref(null), async (_key, afterId) => (asked.push(afterId), pageAfter(rows, afterId)));
    await list.load('run', false);
    await list.load('run', true);
    await list.load('run', true);
    await list.load('run', true); // at the end: no request
    expect([list.items.value.map((r) => r.id), asked, list.loaded.value]).toEqual([[1, 2, 3, 4, 5], [null, 2, 4], true]);
    await list.load('run', false);
    expect(list.items.value.map((r) => r.id)).toEqual([1, 2]);
  });

  it('grows a fully loaded list by its tail only, and not while a reload is out', async () => {
    const all = rows.slice(0, 2);
    const list = keysetList<{ id: number }, string>(ref(null), async (_key, afterId) => pageAfter(all, afterId));
    await list.load('run', false);
    all.push({ id: 6 });
    await list.loadTail(async (afterId) => pageAfter(all, afterId), () => true);
    expect(list.items.value.map((r) => r.id)).toEqual([1, 2, 6]);
    const held = deferred<Page<{ id: number }>>();
    const tail = list.loadTail(() => held.promise, () => true);
    await list.load('run', false); // a reload begins meanwhile: the tail's answer is stale
    held.resolve({ items: [{ id: 7 }], nextCursor: null });
    await tail;
    expect(list.items.value.map((r) => r.id)).toEqual([1, 2]);
  });
});
