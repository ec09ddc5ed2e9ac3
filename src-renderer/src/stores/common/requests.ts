/**
 * Requests of one kind whose newest wins. A view asks again when its run or filters change
 * while an older answer is still out; that older answer, its failure and its end are dropped,
 * otherwise a slow page for stale filters could overwrite the fresh one. A follow-up of the same
 * request (the next page of the same list) joins it instead of superseding it.
 */
import type { Ref } from 'vue';
import { errorMessage } from '../../api/client';

export interface Request {
  /** Whether a newer request of the same kind has begun since this one. */
  stale(): boolean;
  /**
   * Runs `body`, this request's work: `loading` (when given) is on while it runs; a failure
   * becomes the store's error. Both only while the request is still the newest: a stale one
   * leaves them to the request that superseded it.
   */
  run(loading: Ref<boolean> | null, body: () => Promise<void>): Promise<void>;
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
    return {
      stale,
      async run(loading, body) {
        if (loading) loading.value = true;
        try {
          await body();
        } catch (caught) {
          if (!stale()) error.value = errorMessage(caught);
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

/**
 * An action the view shows as busy (loading, checking, launching): `busy` is on while it runs,
 * the store's error is cleared when it starts and set from its failure, and `failed(caught)` is
 * what the action returns then.
 */
export async function busyWhile<T>(busy: Ref<boolean>, error: Ref<string | null>, action: () => Promise<T>, failed: (caught: unknown) => T): Promise<T> {
  busy.value = true;
  error.value = null;
  try {
    return await action();
  } catch (caught) {
    error.value = errorMessage(caught);
    return failed(caught);
  } finally {
    busy.value = false;
  }
}
