import { createPinia, setActivePinia } from 'pinia';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ListRunsQuery, Page, RunDetail, RunSummary, StudioBridge, StudioEvent } from '#shared/contract';
import { provideStudioClient } from '../../src-renderer/src/api/client';
// The renderer's global types (window.studio), which the test tsconfig does not include itself.
import type {} from '../../src-renderer/src/env';
import { RUNS_PAGE_SIZE, useRunsStore } from '../../src-renderer/src/stores/runs';
import { formatAge, formatStep } from '#shared/format';

function run(id: number, extra: Partial<RunSummary> = {}): RunSummary {
  return {
    id,
    name: `run-${id}`,
    status: 'done',
    statusReason: null,
    preset: 'quick',
    task: 'sort8',
    rewardScheme: 'decoupled',
    advantageMode: 'agentwise',
    pipelineMode: 'pipelined',
    seed: id,
    backend: 'cpu',
    tags: [],
    notes: '',
    createdAt: 0,
    startedAt: null,
    endedAt: null,
    lastStep: null,
    keyMetrics: {},
    study: null,
    configValues: {},
    stopRequest: null,
    actions: [],
    imported: null,
    ...extra,
  };
}

/** An in-memory StudioBridge over `rows` (newest first), paging like the real store. */
function fakeStudio(rows: RunSummary[]) {
  const queries: ListRunsQuery[] = [];
  let listener: ((event: StudioEvent) => void) | null = null;
  let gate: Promise<void> | null = null;
  const client = {
    async listRuns(query: ListRunsQuery = {}): Promise<Page<RunSummary>> {
      queries.push(query);
      // Only the call made while held waits, so a later call can overtake it.
      const wait = gate;
      gate = null;
      if (wait) await wait;
      const matching = rows.filter(
        (r) => (query.beforeId === undefined || r.id < query.beforeId) && (!query.status || r.status === query.status),
      );
      const items = matching.slice(0, query.limit ?? 50);
      return { items, nextCursor: matching.length > items.length ? items[items.length - 1].id : null };
    },
    async getRun(runId: number): Promise<RunDetail> {
      const found = rows.find((r) => r.id === runId);
      if (!found) throw new Error(`run ${runId} does not exist`);
      return { ...found, config: { big: true }, codeVersion: 'abc', backendInfo: null, counts: {} as RunDetail['counts'], lastCheckpointStep: null, runningSpans: [], lastResume: null, collapse: [], checker: null };
    },
    onEvent(next: (event: StudioEvent) => void) {
      listener = next;
      return () => {
        listener = null;
      };
    },
  };
  return {
    client: client as unknown as StudioBridge,
    queries,
    push: (event: StudioEvent) => listener?.(event),
    isListening: () => listener !== null,
    /** Holds back the answer to the next listRuns call until the returned function is called. */
    hold: () => {
      let release = (): void => {};
      gate = new Promise((resolve) => (release = resolve));
      return () => release();
    },
  };
}

const newestFirst = (count: number): RunSummary[] => Array.from({ length: count }, (_, i) => run(count - i));

beforeEach(() => setActivePinia(createPinia()));
afterEach(() => provideStudioClient(null));

describe('runs store', () => {
  it('pages with the keyset cursor until there is no more', async () => {
    const studio = fakeStudio(newestFirst(RUNS_PAGE_SIZE + 30));
    provideStudioClient(studio.client);
    const store = useRunsStore();

    await store.refresh();
    expect(store.runs).toHaveLength(RUNS_PAGE_SIZE);
    expect(store.hasMore).toBe(true);

    await store.loadMore();
    expect(store.runs).toHaveLength(RUNS_PAGE_SIZE + 30);
    expect(store.runs.map((r) => r.id)).toEqual(newestFirst(RUNS_PAGE_SIZE + 30).map((r) => r.id));
    expect(store.hasMore).toBe(false);
    expect(studio.queries[1]).toEqual({ limit: RUNS_PAGE_SIZE, beforeId: 31 });

    await store.loadMore();
    expect(studio.queries).toHaveLength(2);
  });

  it('drops an answer that arrives after the filters changed', async () => {
    const studio = fakeStudio([run(3, { status: 'failed' }), run(2), run(1, { status: 'failed' })]);
    provideStudioClient(studio.client);
    const store = useRunsStore();

    const release = studio.hold();
    const stale = store.refresh();
    await store.setFilters({ status: 'failed' });
    release();
    await stale;
    expect(store.runs.map((r) => r.id)).toEqual([3, 1]);
    expect(studio.queries.at(-1)).toEqual({ limit: RUNS_PAGE_SIZE, status: 'failed' });
  });

  it('reports a failed load as a message', async () => {
    provideStudioClient({ listRuns: async () => Promise.reject(new Error('database is locked')) } as unknown as StudioBridge);
    const store = useRunsStore();
    await store.refresh();
    expect(store.error).toBe('database is locked');
    expect(store.loading).toBe(false);
  });

  it('follows pushed events without reloading pages', async () => {
    const rows = newestFirst(3);
    const studio = fakeStudio(rows);
    provideStudioClient(studio.client);
    const store = useRunsStore();
    await store.refresh();
    store.followEvents();
    expect(studio.isListening()).toBe(true);

    await store.applyEvent({ type: 'run-status', runId: 2, status: 'failed', reason: 'NaN in loss' });
    await store.applyEvent({ type: 'run-progress', runId: 3, step: 120, totalSteps: 500, metrics: { 'system/accuracy': 0.5 } });
    expect(store.runs.find((r) => r.id === 2)).toMatchObject({ status: 'failed', statusReason: 'NaN in loss' });
    expect(store.runs.find((r) => r.id === 3)).toMatchObject({ lastStep: 120, keyMetrics: { 'system/accuracy': 0.5 } });

    rows.unshift(run(4));
    await store.applyEvent({ type: 'run-created', runId: 4 });
    expect(store.runs.map((r) => r.id)).toEqual([4, 3, 2, 1]);

    rows[0] = run(4, { name: 'renamed' });
    await store.applyEvent({ type: 'run-updated', runId: 4 });
    expect(store.runs[0]).toEqual(run(4, { name: 'renamed' }));

    await store.applyEvent({ type: 'run-deleted', runId: 1 });
    expect(store.runs.map((r) => r.id)).toEqual([4, 3, 2]);

    store.unfollowEvents();
    expect(studio.isListening()).toBe(false);
  });
});

describe('format', () => {
  const now = Date.UTC(2026, 0, 31, 12);
  it('words ages the way the list shows them', () => {
    expect(formatAge(now - 20_000, now)).toBe('just now');
    expect(formatAge(now - 12 * 60_000, now)).toBe('12 min ago');
    expect(formatAge(now - 5 * 3_600_000, now)).toBe('5 h ago');
    expect(formatAge(now - 3 * 86_400_000, now)).toBe('3 d ago');
    expect(formatAge(Date.UTC(2025, 10, 2), now)).toBe('2025-11-02');
  });

  it('shows a dash for a run without steps', () => {
    expect(formatStep(null)).toBe('—');
    expect(formatStep(12345)).toBe('12,345');
  });
});
