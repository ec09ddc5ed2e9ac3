/**
 * A veRL or DrMAS run's Ray jobs (issue 38): one per attempt, with Ray's status, the submitted
 * command and the end of the job's log as the Studio copied it. Read again every few seconds
 * while the run is live (a job's log grows without a progress event for every line), by a timer
 * the run page starts and stops with itself.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef } from 'vue';
import type { EngineJobInfo } from '#shared/contract';
import { studioClient } from '../api/client';
import { latestFailure, latestFirst } from '../util/engineJobs';
import { newestWins } from './common/requests';

/** How often a live run's jobs are read again. */
export const ENGINE_POLL_MS = 3000;
/** Lines of each job's log the page shows. */
export const ENGINE_LOG_LINES = 200;

export const useEngineJobsStore = defineStore('engineJobs', () => {
  const runId = ref<number | null>(null);
  const jobs = shallowRef<readonly EngineJobInfo[]>([]);
  const loading = ref(false);
  /** When the jobs were last read (for "updated … ago"). */
  const readAt = ref<number | null>(null);
  const error = ref<string | null>(null);
  const requests = newestWins(error);
  let timer: ReturnType<typeof setInterval> | null = null;

  const attempts = computed(() => latestFirst(jobs.value));
  const failure = computed(() => latestFailure(jobs.value));

  function open(id: number): Promise<void> {
    const request = requests.begin();
    if (runId.value !== id) {
      runId.value = id;
      jobs.value = [];
      readAt.value = null;
    }
    return request.run(
      loading,
      () => studioClient().getEngineJobs(id, ENGINE_LOG_LINES),
      (result) => {
        jobs.value = markRaw(result);
        readAt.value = Date.now();
        error.value = null;
      },
    );
  }

  function refresh(): Promise<void> {
    return runId.value === null ? Promise.resolve() : open(runId.value);
  }

  /** Reads the jobs again every `everyMs` until `stopFollowing` (a second call keeps the one timer). */
  function follow(everyMs = ENGINE_POLL_MS): void {
    timer ??= setInterval(() => {
      if (!loading.value) void refresh();
    }, everyMs);
  }

  function stopFollowing(): void {
    if (timer) clearInterval(timer);
    timer = null;
  }

  return { runId, jobs, attempts, failure, loading, readAt, error, open, refresh, follow, stopFollowing };
});
