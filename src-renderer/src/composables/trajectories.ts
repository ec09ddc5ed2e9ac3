/**
 * What the trajectory browser's list and its episode tree both show: a turn's correctness as a
 * mark, its text on one line, and which turns of the open episode the turn search matches.
 */
import { storeToRefs } from 'pinia';
import { computed } from 'vue';
import { useTrajectoriesStore } from '../stores/trajectories';
import type { TreeRow } from '../util/episodeTree';

export function correctMark(correct: boolean | null): string {
  return correct === null ? '·' : correct ? '✓' : '✗';
}

export function preview(text: string): string {
  return text.replace(/\s+/g, ' ');
}

/** Turns that match the search filters are highlighted in the tree; the rest are dimmed. */
export function useTurnSearchMatch(): { matches: (row: TreeRow) => boolean } {
  const { mode, turnFilters } = storeToRefs(useTrajectoriesStore());
  const filtering = computed(() => mode.value === 'turns' && (turnFilters.value.agent !== null || turnFilters.value.correct !== null || turnFilters.value.minReward !== null || turnFilters.value.maxReward !== null));
  function matches(row: TreeRow): boolean {
    if (row.kind !== 'turn' || !filtering.value) return true;
    const f = turnFilters.value;
    const t = row.turn;
    return (
      (f.agent === null || t.agent === f.agent) &&
      (f.correct === null || t.correct === f.correct) &&
      (f.minReward === null || (t.reward !== null && t.reward >= f.minReward)) &&
      (f.maxReward === null || (t.reward !== null && t.reward <= f.maxReward))
    );
  }
  return { matches };
}
