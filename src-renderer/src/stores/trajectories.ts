/**
 * The trajectory browser: episodes of a run (optionally one step), one episode's tree, and a
 * turn search by agent, correctness and reward. Every list is a keyset page from the store, so a
 * run with millions of turns opens as fast as a small one.
 *
 * Read top to bottom: the two queries, one episode's tree, then the store composing them with
 * the filters (set from the page's URL) and the live tail of a run that is writing.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef, type Ref } from 'vue';
import { agentChain } from '#shared/agents';
import type { EpisodeDetail, EpisodeMatch, EpisodeQuery, EpisodeSummary, RunDetail, Turn, TurnQuery } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { liveRefresh } from '../api/liveRefresh';
import { episodeTreeRows } from '../util/episodeTree';
import { NO_EPISODE_FILTERS, type EpisodeFilters, type TurnFilters } from '../util/trajectoryUrl';
import { keysetList } from './common/keysetList';
import { newestWins, readInto } from './common/requests';

export const EPISODE_PAGE = 100;
export const TURN_PAGE = 100;

/** How often a browser open on a run that is writing refreshes its counts and list, at most. */
export const LIVE_REFRESH_MS = 1000;

type BrowserMode = 'episodes' | 'turns';

function episodeQuery(runId: number, step: number | null, f: EpisodeFilters): EpisodeQuery {
  return {
    runId,
    limit: EPISODE_PAGE,
    ...(step !== null ? { step } : {}),
    ...(f.outcome ? { outcome: f.outcome } : {}),
    ...(f.verifier ? { verifier: f.verifier } : {}),
    ...(f.corrector ? { corrector: f.corrector } : {}),
    ...(f.split ? { split: f.split } : {}),
    ...(f.stepFrom !== null ? { stepFrom: f.stepFrom } : {}),
    ...(f.stepTo !== null ? { stepTo: f.stepTo } : {}),
    ...(f.search.trim() ? { search: f.search.trim() } : {}),
  };
}

function turnQuery(runId: number, afterId: number | null, step: number | null, f: TurnFilters, includeSuperseded: boolean): TurnQuery {
  return {
    runId,
    limit: TURN_PAGE,
    ...(afterId !== null ? { afterId } : {}),
    ...(step !== null ? { step } : {}),
    ...(f.agent ? { agent: f.agent } : {}),
    ...(f.correct !== null ? { correct: f.correct } : {}),
    ...(f.minReward !== null ? { minReward: f.minReward } : {}),
    ...(f.maxReward !== null ? { maxReward: f.maxReward } : {}),
    ...(includeSuperseded ? { includeSuperseded: true } : {}),
  };
}

/** The turn-level episode filters in force (their matching turns are highlighted, issue 35). */
function episodeMatch(mode: BrowserMode, f: EpisodeFilters): EpisodeMatch | undefined {
  if (mode !== 'episodes' || (!f.verifier && !f.corrector)) return undefined;
  return { ...(f.verifier ? { verifier: f.verifier } : {}), ...(f.corrector ? { corrector: f.corrector } : {}) };
}

/** The turn an episode opens on: the first one its filters matched, else its first. */
function defaultTurn(detail: EpisodeDetail): number | null {
  return detail.matchedTurnIds[0] ?? detail.turns[0]?.id ?? null;
}

/** One episode's tree and the turn selected in it, with the turns `match()` asks to highlight. */
function episodeTree(error: Ref<string | null>, match: () => EpisodeMatch | undefined) {
  const episode = shallowRef<EpisodeDetail | null>(null);
  /** The episode filters the open episode's matched turns were asked for (a change asks again). */
  let episodeMatchKey = '';
  const loading = ref(false);
  const selectedTurnId = ref<number | null>(null);
  const requests = newestWins(error);

  const treeRows = computed(() => (episode.value ? episodeTreeRows(episode.value.turns) : []));
  const selectedTurn = computed(() => episode.value?.turns.find((t) => t.id === selectedTurnId.value) ?? null);

  function select(episodeId: number | null, turnId: number | null = null): Promise<void> {
    const request = requests.begin();
    selectedTurnId.value = turnId;
    if (episodeId === null) {
      episode.value = null;
      return Promise.resolve();
    }
    const asked = match();
    const matchKey = JSON.stringify(asked ?? {});
    if (episode.value?.episode.id === episodeId && episodeMatchKey === matchKey) {
      if (turnId === null) selectedTurnId.value = defaultTurn(episode.value);
      return Promise.resolve();
    }
    return request.run(
      loading,
      () => studioClient().getEpisode(episodeId, asked),
      (detail) => {
        episode.value = markRaw(detail);
        episodeMatchKey = matchKey;
        if (selectedTurnId.value === null) selectedTurnId.value = defaultTurn(detail);
      },
    );
  }

  function clear(): void {
    episode.value = null;
    selectedTurnId.value = null;
  }

  return { episode, loading, selectedTurnId, treeRows, selectedTurn, select, clear };
}

/**
 * The two lists the browser shows (a run's episodes, or a turn search) and the filters they
 * follow; a filter change reloads the list it concerns, the other on its next show.
 */
function browserLists(runId: Ref<number | null>, error: Ref<string | null>) {
  const step = ref<number | null>(null);
  const mode = ref<BrowserMode>('episodes');
  const episodeFilters = ref<EpisodeFilters>({ ...NO_EPISODE_FILTERS });
  const turnFilters = ref<TurnFilters>({ agent: null, correct: null, minReward: null, maxReward: null });
  /** Also rows of killed attempts whose steps a resume redid (issue #17); both lists follow it. */
  const includeSuperseded = ref(false);

  const episodes = keysetList<EpisodeSummary, number>(error, (id, afterId) =>
    studioClient().listEpisodes({
      ...episodeQuery(id, step.value, episodeFilters.value),
      ...(afterId !== null ? { afterId } : {}),
      ...(includeSuperseded.value ? { includeSuperseded: true } : {}),
    }),
  );
  const turns = keysetList<Turn, number>(error, (id, afterId) => studioClient().listTurns(turnQuery(id, afterId, step.value, turnFilters.value, includeSuperseded.value)));

  /** Another run opened: its rows and episode filters start afresh. */
  function forget(): void {
    episodes.items.value = [];
    turns.items.value = [];
    episodes.loaded.value = false;
    turns.loaded.value = false;
    episodeFilters.value = { ...NO_EPISODE_FILTERS };
  }

  function loadEpisodes(more = false): Promise<void> {
    return runId.value === null ? Promise.resolve() : episodes.load(runId.value, more);
  }

  function loadTurns(more = false): Promise<void> {
    return runId.value === null ? Promise.resolve() : turns.load(runId.value, more);
  }

  function loadShown(): Promise<void> {
    return mode.value === 'episodes' ? loadEpisodes() : loadTurns();
  }

  /**
   * Every filter at once, from the page's URL (issue 35: the URL is the source of truth, so a link
   * and Back restore them); the list of the mode shown is loaded again, the other on its next show.
   */
  async function applyFilters(next: { mode: BrowserMode; episode: EpisodeFilters; turn: TurnFilters; includeSuperseded: boolean; step: number | null }): Promise<void> {
    mode.value = next.mode;
    episodeFilters.value = { ...next.episode };
    turnFilters.value = { ...next.turn };
    includeSuperseded.value = next.includeSuperseded;
    step.value = next.step;
    episodes.loaded.value = false;
    turns.loaded.value = false;
    await loadShown();
  }

  function setStep(next: number | null): Promise<void> {
    step.value = next;
    return loadShown();
  }

  function setEpisodeFilters(next: Partial<EpisodeFilters>): Promise<void> {
    episodeFilters.value = { ...episodeFilters.value, ...next };
    return loadEpisodes();
  }

  function setTurnFilters(next: Partial<TurnFilters>): Promise<void> {
    turnFilters.value = { ...turnFilters.value, ...next };
    return loadTurns();
  }

  async function setIncludeSuperseded(next: boolean): Promise<void> {
    includeSuperseded.value = next;
    if (episodes.loaded.value || mode.value === 'episodes') await loadEpisodes();
    if (turns.loaded.value || mode.value === 'turns') await loadTurns();
  }

  function setMode(next: BrowserMode): Promise<void> {
    mode.value = next;
    if (next === 'episodes' && !episodes.loaded.value) return loadEpisodes();
    if (next === 'turns' && !turns.loaded.value) return loadTurns();
    return Promise.resolve();
  }

  /** The episodes a run that is writing added at the end of a fully loaded list (the tail query leaves superseded rows out, as it always has). */
  function loadEpisodeTail(id: number): Promise<void> {
    if (mode.value !== 'episodes') return Promise.resolve();
    return episodes.loadTail((afterId) => studioClient().listEpisodes({ ...episodeQuery(id, step.value, episodeFilters.value), afterId }), () => runId.value === id);
  }

  return {
    step,
    mode,
    episodeFilters,
    turnFilters,
    includeSuperseded,
    episodes,
    turns,
    forget,
    loadEpisodes,
    loadTurns,
    applyFilters,
    setStep,
    setEpisodeFilters,
    setTurnFilters,
    setIncludeSuperseded,
    setMode,
    loadEpisodeTail,
  };
}

export const useTrajectoriesStore = defineStore('trajectories', () => {
  const runId = ref<number | null>(null);
  const run = shallowRef<RunDetail | null>(null);
  const error = ref<string | null>(null);
  const lists = browserLists(runId, error);
  const tree = episodeTree(error, () => episodeMatch(lists.mode.value, lists.episodeFilters.value));

  const agents = computed(() => {
    const rounds = (run.value?.config.rollout as { rounds?: number } | undefined)?.rounds;
    return agentChain(typeof rounds === 'number' ? rounds : 1);
  });
  const lastStep = computed(() => run.value?.lastStep ?? null);

  function open(id: number): Promise<void> {
    if (runId.value !== id) {
      runId.value = id;
      run.value = null;
      lists.forget();
      tree.clear();
    }
    return readInto(error, () => studioClient().getRun(id), (detail) => (run.value = markRaw(detail)));
  }

  /**
   * The last step that has training episodes, where the browser opens (issue 18: it opened on
   * step 0's held-out episodes, which carry no rewards); null when the run has none.
   */
  async function latestTrainingStep(): Promise<number | null> {
    const id = runId.value;
    if (id === null) return null;
    const page = await studioClient().listEpisodes({ runId: id, split: 'train', latestStep: true, limit: 1 });
    return page.items[0]?.step ?? null;
  }

  // --- live: a run that is writing grows the counts and the list's end ---------------------
  async function refreshLive(): Promise<void> {
    const id = runId.value;
    if (id === null) return;
    try {
      run.value = markRaw(await studioClient().getRun(id));
      await lists.loadEpisodeTail(id);
    } catch (caught) {
      error.value = errorMessage(caught);
    }
  }
  const { follow, unfollow } = liveRefresh({
    delayMs: LIVE_REFRESH_MS,
    wants: (event) =>
      runId.value !== null && 'runId' in event && event.runId === runId.value && (event.type === 'run-progress' || event.type === 'run-status' || event.type === 'run-updated'),
    refresh: () => void refreshLive(),
  });

  return {
    runId,
    run,
    step: lists.step,
    mode: lists.mode,
    episodes: lists.episodes.items,
    episodesCursor: lists.episodes.cursor,
    episodesLoading: lists.episodes.loading,
    episodesLoaded: lists.episodes.loaded,
    episodeFilters: lists.episodeFilters,
    turnFilters: lists.turnFilters,
    includeSuperseded: lists.includeSuperseded,
    turns: lists.turns.items,
    turnsCursor: lists.turns.cursor,
    turnsLoading: lists.turns.loading,
    turnsLoaded: lists.turns.loaded,
    episode: tree.episode,
    episodeLoading: tree.loading,
    selectedTurnId: tree.selectedTurnId,
    selectedTurn: tree.selectedTurn,
    treeRows: tree.treeRows,
    agents,
    lastStep,
    error,
    open,
    loadEpisodes: lists.loadEpisodes,
    loadTurns: lists.loadTurns,
    selectEpisode: tree.select,
    setStep: lists.setStep,
    setEpisodeFilters: lists.setEpisodeFilters,
    applyFilters: lists.applyFilters,
    latestTrainingStep,
    follow,
    unfollow,
    setTurnFilters: lists.setTurnFilters,
    setIncludeSuperseded: lists.setIncludeSuperseded,
    setMode: lists.setMode,
  };
});
