/**
 * The Replay dialog (issue 40): a stored episode (or a prompt typed by hand) played again with a
 * checkpoint or an endpoint, and the replay's tree beside the stored one. The replay runs in main;
 * its turns arrive as `replay-progress` events, and the dialog reads it back when it ends.
 */
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import type { EpisodeDetail, ReplayDetail, ReplayModels, ReplaySummary, StudioEvent } from '#shared/contract';
import { errorMessage, studioClient } from '../api/client';
import { modelChoices, replayEpisode, replayRequestOf, type ReplayForm } from '../util/replayView';

export const useReplayStore = defineStore('replay', () => {
  const isOpen = ref(false);
  const runId = ref<number | null>(null);
  const stored = ref<EpisodeDetail | null>(null);
  const models = ref<ReplayModels | null>(null);
  const form = ref<ReplayForm>({ runId: 0, episodeId: null, prompt: '', model: '', decoding: 'as-sampled', seed: '' });
  const busy = ref(false);
  const turns = ref(0);
  const error = ref<string | null>(null);
  const replay = ref<ReplayDetail | null>(null);
  const list = ref<ReplaySummary[]>([]);
  let unsubscribe: (() => void) | null = null;
  let waiting: number | null = null;

  const choices = computed(() => modelChoices(models.value, runId.value ?? 0));
  const replayTree = computed(() => (replay.value ? replayEpisode(replay.value) : null));

  async function open(run: number, episode: EpisodeDetail | null): Promise<void> {
    runId.value = run;
    stored.value = episode;
    replay.value = null;
    error.value = null;
    turns.value = 0;
    form.value = { runId: run, episodeId: episode?.episode.id ?? null, prompt: '', model: '', decoding: 'as-sampled', seed: '' };
    isOpen.value = true;
    listen();
    try {
      models.value = await studioClient().replayModels(run);
    } catch (e) {
      error.value = errorMessage(e);
    }
  }

  /** A stored replay, beside its episode when it has one. */
  async function show(replayId: number): Promise<void> {
    const detail = await studioClient().getReplay(replayId);
    const episode = detail.replay.episodeId === null ? null : await studioClient().getEpisode(detail.replay.episodeId);
    await open(detail.replay.runId, episode);
    replay.value = detail;
  }

  function listen(): void {
    unsubscribe ??= studioClient().onEvent((event: StudioEvent) => {
      if (event.type !== 'replay-progress' || event.replayId !== waiting) return;
      turns.value = event.turns;
      if (event.status !== 'running') void finished(event.replayId);
    });
  }

  async function finished(replayId: number): Promise<void> {
    waiting = null;
    try {
      replay.value = await studioClient().getReplay(replayId);
      if (replay.value.replay.status === 'failed') error.value = replay.value.replay.error;
      if (runId.value !== null) list.value = await studioClient().listReplays(runId.value);
    } catch (e) {
      error.value = errorMessage(e);
    } finally {
      busy.value = false;
    }
  }

  async function start(): Promise<void> {
    const made = replayRequestOf(form.value);
    if ('error' in made) {
      error.value = made.error;
      return;
    }
    busy.value = true;
    error.value = null;
    replay.value = null;
    turns.value = 0;
    try {
      const { replayId } = await studioClient().startReplay(made.request);
      waiting = replayId;
      // The replay may have ended before its id came back: read it once in any case.
      const now = await studioClient().getReplay(replayId);
      if (now.replay.status !== 'running' && waiting === replayId) await finished(replayId);
    } catch (e) {
      error.value = errorMessage(e);
      busy.value = false;
    }
  }

  async function loadList(run: number): Promise<void> {
    runId.value = run;
    list.value = await studioClient().listReplays(run);
  }

  function close(): void {
    isOpen.value = false;
  }

  return { isOpen, runId, stored, models, form, busy, turns, error, replay, replayTree, list, choices, open, show, start, close, loadList };
});
