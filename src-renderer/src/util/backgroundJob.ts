/** What the background-job dialogs (export, import) share of a job's life in the renderer. */

/**
 * A background job's pushed events (an export's, an import's) that arrive before the start call's
 * answer names the job: kept while starting, a few jobs at most, for the replay once the id is known.
 */
export interface EarlyEvents<E> {
  /**
   * Whether an event of job `id` is of the job now followed; one that is not, arriving while
   * starting, is perhaps ours before the start call's answer, and is kept for the replay.
   */
  claims(id: string, event: E): boolean;
  /** Forgets every kept event (a new start). */
  clear(): void;
  /** The kept events of job `id`, in arrival order; forgets all the rest. */
  take(id: string): E[];
}

/** `current`: the id of the job followed (null while starting); `starting`: whether its start call is unanswered. */
export function earlyEvents<E>(current: () => string | null, starting: () => boolean, limit = 20): EarlyEvents<E> {
  const kept = new Map<string, E[]>();
  function keep(id: string, event: E): void {
    kept.set(id, [...(kept.get(id) ?? []), event]);
    if (kept.size > limit) kept.delete(kept.keys().next().value as string);
  }
  return {
    claims(id, event) {
      if (id === current()) return true;
      if (starting()) keep(id, event);
      return false;
    },
    clear() {
      kept.clear();
    },
    take(id) {
      const events = kept.get(id) ?? [];
      kept.clear();
      return events;
    },
  };
}

/** How far a background job is, in its own unit (rows, bytes…). */
export interface JobProgress {
  done: number;
  total: number;
}

/** Whole percent done, or null while the total is unknown. */
export function percentDone(progress: JobProgress | null): number | null {
  return !progress || progress.total <= 0 ? null : Math.min(100, Math.floor((progress.done / progress.total) * 100));
}

/** The part of a job dialog's state that cancelling touches. */
export interface CancellableJob {
  id: { value: string | null };
  cancelling: { value: boolean };
  notice: { value: { kind: 'cancelled' | 'failed'; message: string } | null };
}

/**
 * Asks the server to cancel the job followed, once. A job that finished meanwhile answers "not
 * found" (`gone`); its finished event says how it ended, so that is not a failure to show.
 */
export async function cancelJob(job: CancellableJob, cancel: (id: string) => Promise<void>, gone: (caught: unknown) => boolean, describe: (caught: unknown) => string): Promise<void> {
  const id = job.id.value;
  if (id === null || job.cancelling.value) return;
  job.cancelling.value = true;
  try {
    await cancel(id);
  } catch (caught) {
    if (!gone(caught)) {
      job.cancelling.value = false;
      job.notice.value = { kind: 'failed', message: `Could not cancel: ${describe(caught)}` };
    }
  }
}
