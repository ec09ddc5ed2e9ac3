/**
 * What the parts of the export dialog share over the exports store: the engine's messages by the
 * field they name (each shown beside that field), and the export's progress as a percentage.
 */
import { storeToRefs } from 'pinia';
import { computed, type ComputedRef } from 'vue';
import { useExportsStore } from '../stores/exports';
import { percentDone } from '../util/backgroundJob';

export function useExportIssues(): { messagesFor: (path: string) => string[]; invalid: (...paths: string[]) => boolean } {
  const { issuesByPath } = storeToRefs(useExportsStore());
  const messagesFor = (path: string): string[] => issuesByPath.value.get(path) ?? [];
  const invalid = (...paths: string[]): boolean => paths.some((p) => messagesFor(p).length > 0);
  return { messagesFor, invalid };
}

/** Whole percent done, or null while the total is unknown. */
export function useExportPercent(): ComputedRef<number | null> {
  const { progress } = storeToRefs(useExportsStore());
  return computed(() => percentDone(progress.value));
}

export const CONTAINER_LABELS = { parquet: 'Parquet', jsonl: 'JSONL' } as const;
