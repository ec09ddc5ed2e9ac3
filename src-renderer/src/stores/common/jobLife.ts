/**
 * A background job's life in its dialog's store (an export's, an import's): the dialog shown
 * again on the job still running or ended unseen, the job started in the engine and followed by
 * its pushed progress and end (those arriving before the start call's answer are kept and
 * replayed), cancelled on request, and the form back for another.
 */
import { computed, markRaw, ref, shallowRef, type Ref, type ShallowRef } from 'vue';
import type { StudioEvent } from '#shared/contract';
import { errorMessage } from '../../api/client';
import { cancelJob, earlyEvents, type JobProgress } from '../../util/backgroundJob';
import { eventFollower } from './events';

/** The phases of every job dialog; a store may add its own (the import's preview). */
export type JobPhase = 'editing' | 'starting' | 'running' | 'done';

/** How a job ended, as its finished event says. */
export interface JobEnd<R> {
  status: 'done' | 'failed' | 'cancelled';
  result: R | null;
  error: string | null;
}

/** One of the job's pushed events, read: how far it is, or how it ended. */
export type JobUpdate<R, P> = { id: string; progress: P; end?: undefined } | { id: string; end: JobEnd<R> };

/** The dialog's state of its job; `Extra`: the store's own phases. */
export interface JobState<R, P extends JobProgress, Extra extends string = never> {
  isOpen: Ref<boolean>;
  phase: Ref<JobPhase | Extra>;
  /** The job followed (null before the start call's answer, and after its end). */
  id: Ref<string | null>;
  progress: Ref<P | null>;
  cancelling: Ref<boolean>;
  result: ShallowRef<R | null>;
  /** How the last job ended when it did not succeed. */
  notice: Ref<{ kind: 'cancelled' | 'failed'; message: string } | null>;
  /** The job ended while the dialog was hidden: the next open shows how, not a fresh form. */
  endedUnseen: Ref<boolean>;
}

export function jobState<R, P extends JobProgress, Extra extends string = never>(): JobState<R, P, Extra> {
  return {
    isOpen: ref(false),
    phase: ref('editing') as Ref<JobPhase | Extra>,
    id: ref(null),
    progress: ref(null) as Ref<P | null>,
    cancelling: ref(false),
    result: shallowRef(null),
    notice: ref(null),
    endedUnseen: ref(false),
  };
}

/** What differs between the jobs: their events, what the dialog says of their end, how they are cancelled. */
export interface JobKind<R, P> {
  /** A Studio event read as this kind's, or null for any other event. */
  read(event: StudioEvent): JobUpdate<R, P> | null;
  /** The notice of a cancelled job. */
  cancelled: string;
  /** Places a failed job's error (at the field it names) and gives the notice's message. */
  failed(error: string | null): string;
  cancel(id: string): Promise<void>;
  /** Whether a refused cancel is of a job that finished meanwhile (its end event says how). */
  gone(caught: unknown): boolean;
}

export function jobLife<R extends object, P extends JobProgress, Extra extends string>(s: JobState<R, P, Extra>, kind: JobKind<R, P>) {
  const busy = computed(() => s.phase.value === 'starting' || s.phase.value === 'running');
  const unclaimed = earlyEvents<JobUpdate<R, P>>(() => s.id.value, () => s.phase.value === 'starting');
  const { follow } = eventFollower(applyEvent);

  function applyEvent(event: StudioEvent): void {
    const update = kind.read(event);
    if (update) apply(update);
  }

  function apply(update: JobUpdate<R, P>): void {
    if (!unclaimed.claims(update.id, update)) return;
    if (update.end) finish(update.end);
    else if (s.phase.value === 'running') s.progress.value = update.progress;
  }

  function finish(end: JobEnd<R>): void {
    s.id.value = null;
    s.cancelling.value = false;
    if (!s.isOpen.value) s.endedUnseen.value = true;
    if (end.status === 'done' && end.result) {
      s.result.value = markRaw(end.result);
      const p = s.progress.value;
      if (p) s.progress.value = { ...p, done: p.total };
      s.phase.value = 'done';
      return;
    }
    s.phase.value = 'editing';
    s.progress.value = null;
    s.notice.value = end.status === 'cancelled' ? { kind: 'cancelled', message: kind.cancelled } : { kind: 'failed', message: kind.failed(end.error) };
  }

  /** Starts the job: `begin` asks the engine and answers the job's id; `refused` places a refused start's messages. */
  async function start(begin: () => Promise<string>, refused: (caught: unknown) => void): Promise<void> {
    follow();
    s.notice.value = null;
    s.result.value = null;
    s.progress.value = null;
    s.phase.value = 'starting';
    unclaimed.clear();
    try {
      const id = await begin();
      s.id.value = id;
      s.phase.value = 'running';
      for (const update of unclaimed.take(id)) apply(update);
    } catch (caught) {
      s.phase.value = 'editing';
      refused(caught);
    }
  }

  const cancel = () => cancelJob(s, (id) => kind.cancel(id), kind.gone, errorMessage);

  /** Shows the dialog; true when it shows the job still running or ended unseen rather than a fresh form. */
  function show(): boolean {
    s.isOpen.value = true;
    if (!busy.value && !s.endedUnseen.value) return false;
    s.endedUnseen.value = false;
    return true;
  }

  function close(): void {
    s.isOpen.value = false;
  }

  /** Back to the form: no result, progress or notice left of the last job. */
  function reset(): void {
    s.phase.value = 'editing';
    s.result.value = null;
    s.progress.value = null;
    s.notice.value = null;
  }

  return { busy, follow, applyEvent, start, cancel, show, close, reset };
}
