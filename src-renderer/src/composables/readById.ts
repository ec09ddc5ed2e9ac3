/**
 * What a panel reads for one id (a turn, a run), read again whenever the id changes: the value
 * and the error shown in its place. The newest id wins: an answer or a failure for an id the
 * panel no longer shows is dropped (the advantage explanation, the counterfactual credit and the
 * credit-divergence chart read this way; issue 40).
 */
import { ref, watch, type Ref } from 'vue';
import { newestWins } from '../stores/common/requests';

export interface ReadById<T> {
  value: Ref<T | null>;
  error: Ref<string | null>;
}

/** `onRead` runs with each fresh answer (a panel's defaults that depend on it). */
export function useReadById<T>(id: () => number, read: (id: number) => Promise<T>, onRead?: (value: T) => void): ReadById<T> {
  const value = ref(null) as Ref<T | null>;
  const error = ref<string | null>(null);
  const requests = newestWins(error);
  watch(
    id,
    (current) => {
      const request = requests.begin();
      value.value = null;
      error.value = null;
      return request.run(null, () => read(current), (answer) => {
        value.value = answer;
        onRead?.(answer);
      });
    },
    { immediate: true },
  );
  return { value, error };
}
