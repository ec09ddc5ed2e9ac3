/**
 * The problem view's state (issue 40): the chosen runs' matched problems (held-out first, with
 * the "outcome differs" and split filters) and the open problem's episodes across steps and runs.
 * Answers are replaced whole (shallowRefs); requests are numbered, so an answer to an older one
 * (the user picked another problem meanwhile) is dropped.
 */
import { defineStore } from 'pinia';
import { ref, shallowRef } from 'vue';
import type { ProblemEpisodes, ProblemOutcomePage, ProblemOutcomeRow } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';

const PAGE = 200;

export interface ProblemListFilters {
  differs: boolean;
  split: 'train' | 'test' | null;
}

export const useProblemsStore = defineStore('problems', () => {
  const runIds = ref<number[]>([]);
  const filters = ref<ProblemListFilters>({ differs: false, split: null });
  const list = shallowRef<ProblemOutcomePage | null>(null);
  const items = shallowRef<ProblemOutcomeRow[]>([]);
  const view = shallowRef<ProblemEpisodes | null>(null);
  const listLoading = ref(false);
  const viewLoading = ref(false);
  const error = ref<string | null>(null);
  let listGeneration = 0;
  let viewGeneration = 0;

  /** The first page of the list (or the next one, with `more`). */
  async function loadList(more = false): Promise<void> {
    if (!runIds.value.length) {
      list.value = null;
      items.value = [];
      return;
    }
    if (more && list.value?.nextCursor == null) return;
    const mine = ++listGeneration;
    listLoading.value = true;
    try {
      const page = await studioClient().listProblemOutcomes({
        runIds: runIds.value,
        limit: PAGE,
        ...(filters.value.differs ? { differs: true } : {}),
        ...(filters.value.split ? { split: filters.value.split } : {}),
        ...(more && list.value?.nextCursor != null ? { cursor: list.value.nextCursor } : {}),
      });
      if (mine !== listGeneration) return;
      list.value = page;
      items.value = more ? [...items.value, ...page.items] : page.items;
    } catch (caught) {
      if (mine === listGeneration) error.value = errorMessage(caught);
    } finally {
      if (mine === listGeneration) listLoading.value = false;
    }
  }

  /** One problem's episodes: by a problem of the runs, or by a turn; `steps` empty for the default spread. */
  async function openProblem(target: { problem: number | null; turn: number | null }, steps: readonly number[]): Promise<void> {
    const mine = ++viewGeneration;
    if (!runIds.value.length || (target.problem === null && target.turn === null)) {
      view.value = null;
      return;
    }
    viewLoading.value = true;
    try {
      const answer = await studioClient().getProblemEpisodes({
        runIds: runIds.value,
        ...(target.problem !== null ? { problemId: target.problem } : { turnId: target.turn! }),
        ...(steps.length ? { steps: [...steps] } : {}),
      });
      if (mine !== viewGeneration) return;
      view.value = answer;
      error.value = null;
    } catch (caught) {
      if (mine === viewGeneration) {
        view.value = null;
        error.value = errorMessage(caught);
      }
    } finally {
      if (mine === viewGeneration) viewLoading.value = false;
    }
  }

  /** Opens the runs and list filters of a route; the list is reloaded only when they changed. */
  async function open(runs: readonly number[], next: ProblemListFilters): Promise<void> {
    const same = runs.join(',') === runIds.value.join(',') && next.differs === filters.value.differs && next.split === filters.value.split && list.value !== null;
    runIds.value = [...runs];
    filters.value = { ...next };
    error.value = null;
    if (!same) await loadList();
  }

  return { runIds, filters, list, items, view, listLoading, viewLoading, error, open, loadList, openProblem };
});
