/**
 * The trajectory browser: episodes of a run (optionally one step), one episode's tree, and a
 * turn search by agent, correctness and reward. Every list is a keyset page from the store, so a
 * run with millions of turns opens as fast as a small one.
 */
import { defineStore } from 'pinia';
import { computed, markRaw, ref, shallowRef } from 'vue';
import { agentChain } from '#shared/agents';
import type { EpisodeDetail, EpisodeMatch, EpisodeQuery, EpisodeSummary, RunDetail, Turn, TurnQuery } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { liveRefresh } from '../api/liveRefresh';
import { episodeTreeRows } from '../util/episodeTree';
import { NO_EPISODE_FILTERS, type EpisodeFilters, type TurnFilters } from '../util/trajectoryUrl';

export const EPISODE_PAGE = 100;
export const TURN_PAGE = 100;

/** How often a browser open on a run that is writing refreshes its counts and list, at most. */
export const LIVE_REFRESH_MS = 1000;

export const useTrajectoriesStore = defineStore('trajectories', () => {
  const runId = ref<number | null>(null);
  const run = shallowRef<RunDetail | null>(null);
  const step = ref<number | null>(null);
  const mode = ref<'episodes' | 'turns'>('episodes');

  const episodes = shallowRef<readonly EpisodeSummary[]>([]);
  const episodesCursor = ref<number | null>(null);
  const episodesLoading = ref(false);
  const episodesLoaded = ref(false);
  const episodeFilters = ref<EpisodeFilters>({ ...NO_EPISODE_FILTERS });

  const turnFilters = ref<TurnFilters>({ agent: null, correct: null, minReward: null, maxReward: null });
  /** Also rows of killed attempts whose steps a resume redid (issue #17); both lists follow it. */
  const includeSuperseded = ref(false);
  const turns = shallowRef<readonly Turn[]>([]);
  const turnsCursor = ref<number | null>(null);
  const turnsLoading = ref(false);
  const turnsLoaded = ref(false);

  const episode = shallowRef<EpisodeDetail | null>(null);
  /** The episode filters the open episode's matched turns were asked for (a change asks again). */
  let episodeMatchKey = '';
  const episodeLoading = ref(false);
  const selectedTurnId = ref<number | null>(null);
  const error = ref<string | null>(null);

  const agents = computed(() => {
    const rounds = (run.value?.config.rollout as { rounds?: number } | undefined)?.rounds;
    return agentChain(typeof rounds === 'number' ? rounds : 1);
  });
  const treeRows = computed(() => (episode.value ? episodeTreeRows(episode.value.turns) : []));
  const selectedTurn = computed(() => episode.value?.turns.find((t) => t.id === selectedTurnId.value) ?? null);
  const lastStep = computed(() => run.value?.lastStep ?? null);

  let episodesGen = 0;
  let turnsGen = 0;
  let episodeGen = 0;

  async function open(id: number): Promise<void> {
    if (runId.value !== id) {
      runId.value = id;
      run.value = null;
      episodes.value = [];
      turns.value = [];
      episode.value = null;
      selectedTurnId.value = null;
      episodesLoaded.value = false;
      turnsLoaded.value = false;
      episodeFilters.value = { ...NO_EPISODE_FILTERS };
    }
    try {
      run.value = markRaw(await studioClient().getRun(id));
      error.value = null;
    } catch (caught) {
      error.value = errorMessage(caught);
    }
  }

  function episodeQuery(id: number): EpisodeQuery {
    const f = episodeFilters.value;
    return {
      runId: id,
      limit: EPISODE_PAGE,
      ...(step.value !== null ? { step: step.value } : {}),
      ...(f.outcome ? { outcome: f.outcome } : {}),
      ...(f.verifier ? { verifier: f.verifier } : {}),
      ...(f.corrector ? { corrector: f.corrector } : {}),
      ...(f.split ? { split: f.split } : {}),
      ...(f.stepFrom !== null ? { stepFrom: f.stepFrom } : {}),
      ...(f.stepTo !== null ? { stepTo: f.stepTo } : {}),
      ...(f.search.trim() ? { search: f.search.trim() } : {}),
    };
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

  async function loadEpisodes(more = false): Promise<void> {
    const id = runId.value;
    if (id === null) return;
    if (more && (episodesCursor.value === null || episodesLoading.value)) return;
    const mine = more ? episodesGen : ++episodesGen;
    episodesLoading.value = true;
    try {
      const page = await studioClient().listEpisodes({
        ...episodeQuery(id),
        ...(more && episodesCursor.value !== null ? { afterId: episodesCursor.value } : {}),
        ...(includeSuperseded.value ? { includeSuperseded: true } : {}),
      });
      if (mine !== episodesGen) return;
      episodes.value = markRaw(more ? [...episodes.value, ...page.items] : page.items);
      episodesCursor.value = page.nextCursor;
      episodesLoaded.value = true;
    } catch (caught) {
      if (mine === episodesGen) error.value = errorMessage(caught);
    } finally {
      if (mine === episodesGen) episodesLoading.value = false;
    }
  }

  function turnQuery(id: number, afterId: number | null): TurnQuery {
    const f = turnFilters.value;
    return {
      runId: id,
      limit: TURN_PAGE,
      ...(afterId !== null ? { afterId } : {}),
      ...(step.value !== null ? { step: step.value } : {}),
      ...(f.agent ? { agent: f.agent } : {}),
      ...(f.correct !== null ? { correct: f.correct } : {}),
      ...(f.minReward !== null ? { minReward: f.minReward } : {}),
      ...(f.maxReward !== null ? { maxReward: f.maxReward } : {}),
      ...(includeSuperseded.value ? { includeSuperseded: true } : {}),
    };
  }

  async function loadTurns(more = false): Promise<void> {
    const id = runId.value;
    if (id === null) return;
    if (more && (turnsCursor.value === null || turnsLoading.value)) return;
    const mine = more ? turnsGen : ++turnsGen;
    turnsLoading.value = true;
    try {
      const page = await studioClient().listTurns(turnQuery(id, more ? turnsCursor.value : null));
      if (mine !== turnsGen) return;
      turns.value = markRaw(more ? [...turns.value, ...page.items] : page.items);
      turnsCursor.value = page.nextCursor;
      turnsLoaded.value = true;
    } catch (caught) {
      if (mine === turnsGen) error.value = errorMessage(caught);
    } finally {
      if (mine === turnsGen) turnsLoading.value = false;
    }
  }

  /** The turn-level episode filters in force (their matching turns are highlighted, issue 35). */
  function episodeMatch(): EpisodeMatch | undefined {
    const f = episodeFilters.value;
    if (mode.value !== 'episodes' || (!f.verifier && !f.corrector)) return undefined;
    return { ...(f.verifier ? { verifier: f.verifier } : {}), ...(f.corrector ? { corrector: f.corrector } : {}) };
  }

  async function selectEpisode(episodeId: number | null, turnId: number | null = null): Promise<void> {
    const mine = ++episodeGen;
    selectedTurnId.value = turnId;
    if (episodeId === null) {
      episode.value = null;
      return;
    }
    const match = episodeMatch();
    const matchKey = JSON.stringify(match ?? {});
    if (episode.value?.episode.id === episodeId && episodeMatchKey === matchKey) {
      if (turnId === null) selectedTurnId.value = defaultTurn(episode.value);
      return;
    }
    episodeLoading.value = true;
    try {
      const detail = await studioClient().getEpisode(episodeId, match);
      if (mine !== episodeGen) return;
      episode.value = markRaw(detail);
      episodeMatchKey = matchKey;
      if (selectedTurnId.value === null) selectedTurnId.value = defaultTurn(detail);
    } catch (caught) {
      if (mine === episodeGen) error.value = errorMessage(caught);
    } finally {
      if (mine === episodeGen) episodeLoading.value = false;
    }
  }

  /** The turn an episode opens on: the first one its filters matched, else its first. */
  function defaultTurn(detail: EpisodeDetail): number | null {
    return detail.matchedTurnIds[0] ?? detail.turns[0]?.id ?? null;
  }

  /**
   * Every filter at once, from the page's URL (issue 35: the URL is the source of truth, so a link
   * and Back restore them); the list of the mode shown is loaded again, the other on its next show.
   */
  async function applyFilters(next: { mode: 'episodes' | 'turns'; episode: EpisodeFilters; turn: TurnFilters; includeSuperseded: boolean; step: number | null }): Promise<void> {
    mode.value = next.mode;
    episodeFilters.value = { ...next.episode };
    turnFilters.value = { ...next.turn };
    includeSuperseded.value = next.includeSuperseded;
    step.value = next.step;
    episodesLoaded.value = false;
    turnsLoaded.value = false;
    await (next.mode === 'episodes' ? loadEpisodes() : loadTurns());
  }

  function setStep(next: number | null): Promise<void> {
    step.value = next;
    return mode.value === 'episodes' ? loadEpisodes() : loadTurns();
  }

  function setEpisodeFilters(next: Partial<EpisodeFilters>): Promise<void> {
    episodeFilters.value = { ...episodeFilters.value, ...next };
    return loadEpisodes();
  }

  // --- live: a run that is writing grows the counts and the list's end ---------------------
  async function refreshLive(): Promise<void> {
    const id = runId.value;
    if (id === null) return;
    try {
      run.value = markRaw(await studioClient().getRun(id));
      // Keyset pages: new episodes have larger ids, so a fully loaded list only needs its tail.
      if (mode.value !== 'episodes' || !episodesLoaded.value || episodesCursor.value !== null || episodesLoading.value) return;
      const mine = episodesGen;
      const last = episodes.value[episodes.value.length - 1]?.id ?? 0;
      const page = await studioClient().listEpisodes({ ...episodeQuery(id), afterId: last });
      if (mine !== episodesGen || runId.value !== id || page.items.length === 0) return;
      episodes.value = markRaw([...episodes.value, ...page.items]);
      episodesCursor.value = page.nextCursor;
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

  function setTurnFilters(next: Partial<TurnFilters>): Promise<void> {
    turnFilters.value = { ...turnFilters.value, ...next };
    return loadTurns();
  }

  async function setIncludeSuperseded(next: boolean): Promise<void> {
    includeSuperseded.value = next;
    if (episodesLoaded.value || mode.value === 'episodes') await loadEpisodes();
    if (turnsLoaded.value || mode.value === 'turns') await loadTurns();
  }

  function setMode(next: 'episodes' | 'turns'): Promise<void> {
    mode.value = next;
    if (next === 'episodes' && !episodesLoaded.value) return loadEpisodes();
    if (next === 'turns' && !turnsLoaded.value) return loadTurns();
    return Promise.resolve();
  }

  return {
    runId,
    run,
    step,
    mode,
    episodes,
    episodesCursor,
    episodesLoading,
    episodesLoaded,
    episodeFilters,
    turnFilters,
    includeSuperseded,
    turns,
    turnsCursor,
    turnsLoading,
    turnsLoaded,
    episode,
    episodeLoading,
    selectedTurnId,
    selectedTurn,
    treeRows,
    agents,
    lastStep,
    error,
    open,
    loadEpisodes,
    loadTurns,
    selectEpisode,
    setStep,
    setEpisodeFilters,
    applyFilters,
    latestTrainingStep,
    follow,
    unfollow,
    setTurnFilters,
    setIncludeSuperseded,
    setMode,
  };
});
