/**
 * The StudioApi's trajectories area: pages of turns and episodes, one episode with its turns and
 * their segments, and how a turn's advantage was computed.
 */
import type { EpisodeQuery, EpisodeSummary, StudioApi, TurnQuery } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { resolveConfig } from '../engine/preflight';
import { DEFAULT_ADVANTAGE_OPTIONS, type AdvantageOptions } from '../engine/rl/advantages';
import { explainAdvantage } from '../engine/rl/explain';
import type { EpisodeListItem } from '../engine/store';
import { familyNotation } from '../engine/tasks/registry';
import type { ServiceContext } from './context';

type TrajectoriesApi = Pick<StudioApi, 'listTurns' | 'listEpisodes' | 'getEpisode' | 'explainAdvantage'>;

export function createTrajectoriesApi({ store, requireRun }: ServiceContext): TrajectoriesApi {
  return {
    async listTurns(query: TurnQuery) {
      requireRun(query.runId);
      return store.trajectories.pageTurns(query);
    },

    async listEpisodes(query: EpisodeQuery) {
      requireRun(query.runId);
      const page = store.trajectories.pageEpisodes(query);
      return { items: page.items.map(toEpisodeSummary), nextCursor: page.nextCursor };
    },

    async getEpisode(episodeId, match) {
      const episode = store.trajectories.getEpisode(episodeId);
      if (!episode) throw new StudioError('not_found', `episode ${episodeId} does not exist`);
      const problem = episode.problemId === null ? null : store.trajectories.getProblem(episode.problemId);
      const turns = store.trajectories.episodeTurns(episodeId).map((turn) => ({
        ...turn,
        segments: store.trajectories.segments(turn.id).map(({ id: _id, turnId: _turn, runId: _run, ...segment }) => segment),
      }));
      return {
        episode: toEpisodeSummary({ ...episode, question: problem?.question ?? null, reference: problem?.answer ?? null, turnCount: turns.length }),
        turns,
        notation: familyNotation(problem?.family ?? '').map((n) => ({ ...n, roles: [...n.roles] })),
        matchedTurnIds: match ? store.diagnostics.matchingTurns(episodeId, match) : [],
      };
    },

    async explainAdvantage(turnId) {
      const group = store.diagnostics.advantageGroup(turnId);
      if (!group) throw new StudioError('not_found', `turn ${turnId} does not exist or has no advantage (a held-out turn is not trained on)`);
      const run = requireRun(store.trajectories.getTurn(turnId)!.runId);
      return explainAdvantage(group, advantageOptionsOf(run.config));
    },
  };
}

/** The contract's fields of an episode row: all but its `meta`, which stays in the store. */
function toEpisodeSummary({ meta: _meta, ...summary }: EpisodeListItem): EpisodeSummary {
  return summary;
}

/** The std convention, ε and one-sample rule a run normalised its advantages with (the defaults for a config that no longer resolves). */
function advantageOptionsOf(config: Record<string, unknown>): AdvantageOptions {
  try {
    const { advantage } = resolveConfig(config);
    return { std: advantage.std, singleSample: advantage.single_sample, eps: advantage.eps };
  } catch {
    return DEFAULT_ADVANTAGE_OPTIONS;
  }
}
