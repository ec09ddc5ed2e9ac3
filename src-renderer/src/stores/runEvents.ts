/** A run's events log: keyset pages from the store, then pushed events appended as they come. */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef } from 'vue';
import type { RunEvent, StudioEvent } from '#shared/contract';
import { studioClient } from '../api/client';
import { eventFollower } from './common/events';
import { newestWins } from './common/requests';

export type LevelFilter = 'all' | 'warning' | 'error';

export const useRunEventsStore = defineStore('runEvents', () => {
  const runId = ref<number | null>(null);
  const events = shallowRef<readonly RunEvent[]>([]);
  const level = ref<LevelFilter>('all');
  const loading = ref(false);
  const error = ref<string | null>(null);
  let cursor: number | null = null;
  const requests = newestWins(error);

  const visible = computed(() =>
    level.value === 'all' ? events.value : events.value.filter((e) => (level.value === 'error' ? e.level === 'error' : e.level !== 'info')),
  );
  const counts = computed(() => ({
    warning: events.value.filter((e) => e.level === 'warning').length,
    error: events.value.filter((e) => e.level === 'error').length,
  }));

  /** Adds rows, keeping id order and dropping ones already shown (a push and a page can overlap). */
  function merge(rows: readonly RunEvent[]): void {
    if (rows.length === 0) return;
    const seen = new Set(events.value.map((e) => e.id));
    const fresh = rows.filter((e) => !seen.has(e.id));
    if (fresh.length === 0) return;
    events.value = markRaw([...events.value, ...fresh].sort((a, b) => a.id - b.id));
  }

  async function open(id: number): Promise<void> {
    const request = requests.begin();
    if (runId.value !== id) {
      runId.value = id;
      events.value = [];
    }
    cursor = 0;
    loading.value = true;
    try {
      // Pages until the end: logs are short (errors, warnings, checkpoints), and the list is
      // virtualised, so even tens of thousands of rows stay cheap.
      while (cursor !== null) {
        const page = await studioClient().listEvents(id, cursor);
        if (request.stale()) return;
        merge(page.items);
        cursor = page.nextCursor;
      }
      error.value = null;
    } catch (caught) {
      request.fail(caught);
    } finally {
      if (!request.stale()) loading.value = false;
    }
  }

  function applyEvent(event: StudioEvent): void {
    if (event.type === 'event' && event.runId === runId.value) merge([event.event]);
  }

  const { follow, unfollow } = eventFollower(applyEvent);

  return { runId, events, visible, counts, level, loading, error, open, applyEvent, follow, unfollow };
});
