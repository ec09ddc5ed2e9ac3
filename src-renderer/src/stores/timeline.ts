/** A run's pipeline timeline (segments, updates, evaluations), refreshed as the run advances. */
import { defineStore } from 'pinia';
import { markRaw, ref, shallowRef } from 'vue';
import type { TimelineSpan } from '#shared/contract';
import { studioClient } from '../api/client';
import { liveRefresh } from '../api/liveRefresh';
import { newestWins } from './common/requests';

const LIVE_REFRESH_MS = 2000;

export const useTimelineStore = defineStore('timeline', () => {
  const runId = ref<number | null>(null);
  const spans = shallowRef<readonly TimelineSpan[]>([]);
  const loading = ref(false);
  const error = ref<string | null>(null);
  const requests = newestWins(error);

  function open(id: number): Promise<void> {
    const request = requests.begin();
    if (runId.value !== id) {
      runId.value = id;
      spans.value = [];
    }
    return request.run(
      loading,
      () => studioClient().getTimeline(id),
      (result) => {
        spans.value = markRaw(result);
        error.value = null;
      },
    );
  }

  const { follow, unfollow } = liveRefresh({
    delayMs: LIVE_REFRESH_MS,
    wants: (event) => event.type === 'run-progress' && event.runId === runId.value,
    refresh: () => {
      if (runId.value !== null) void open(runId.value);
    },
  });

  return { runId, spans, loading, error, open, follow, unfollow };
});
