/**
 * Requests of one kind whose newest wins. A view asks again when its run or filters change
 * while an older answer is still out; that older answer, its failure and its end are dropped,
 * otherwise a slow page for stale filters could overwrite the fresh one. A follow-up of the same
 * request (the next page of the same list) joins it instead of superseding it.
 *
 * `run` and `readInto` are each the one async function that awaits the Studio's answer, and a
 * store returns their promise as its action's: an action settles in the same microtask as when
 * it was written out, which views that chain navigation on an action's end rely on.
 */
import type { Ref } from 'vue';
import { errorMessage } from '../../api/client';

export interface Request {
  /** Whether a newer request of the same kind has begun since this one. */
  stale(): boolean;
  /** A failure of this request becomes the store's error, unless a newer request began. */
  fail(caught: unknown): void;
  /**
   * Awaits `fetch()` and gives its answer to `apply`, while the request is still the newest;
   * `loading` (when given) is on meanwhile, and cleared by the newest request only.
   */
  run<T>(loading: Ref<boolean> | null, fetch: () => Promise<T>, apply: (answer: T) => void): Promise<void>;
}

export interface NewestWins {
  /** A new request: every one still out is stale from now on. */
  begin(): Request;
  /** The current request, continued (a next page): stale once a newer one begins. */
  join(): Request;
}

/** Requests whose failures become `error`, the message the store's view shows. */
export function newestWins(error: Ref<string | null>): NewestWins {
  let generation = 0;
  function request(mine: number): Request {
    const stale = (): boolean => mine !== generation;
    const fail = (caught: unknown): void => {
      if (!stale()) error.value = errorMessage(caught);
    };
    return {
      stale,
      fail,
      async run(loading, fetch, apply) {
        if (loading) loading.value = true;
        try {
          const answer = await fetch();
          if (stale()) return;
          apply(answer);
        } catch (caught) {
          fail(caught);
        } finally {
          if (loading && !stale()) loading.value = false;
        }
      },
    };
  }
  return { begin: () => request(++generation), join: () => request(generation) };
}

/**
 * Reads what a view shows in one call: a success clears the store's error, a failure sets it
 * (the view shows the message in place of the data).
 */
export async function readInto<T>(error: Ref<string | null>, read: () => Promise<T>, apply: (value: T) => void): Promise<void> {
  try {
    apply(await read());
    error.value = null;
  } catch (caught) {
    error.value = errorMessage(caught);
  }
}
