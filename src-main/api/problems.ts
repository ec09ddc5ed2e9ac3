/**
 * The StudioApi's problems area (issue 40): one problem across the steps of a run and across the
 * runs chosen in Compare. The matching and the reads live in engine/compare/problems.ts; here the
 * engine's errors become the caller's (`not_found`, or `invalid_request` naming the field).
 */
import type { ProblemEpisodes, ProblemEpisodesQuery, ProblemOutcomePage, ProblemOutcomeQuery, StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { listProblemOutcomes, problemEpisodes, ProblemRequestError, UnknownRunError } from '../engine/compare';
import type { ServiceContext } from './context';

type ProblemsApi = Pick<StudioApi, 'listProblemOutcomes' | 'getProblemEpisodes'>;

function asStudioError(error: unknown): unknown {
  if (error instanceof UnknownRunError) return new StudioError('not_found', `run ${error.ref} does not exist`);
  if (error instanceof ProblemRequestError) {
    return error.kind === 'not_found' ? new StudioError('not_found', error.message) : new StudioError('invalid_request', error.message, [{ path: error.field, message: error.message }]);
  }
  return error;
}

export function createProblemsApi({ store }: ServiceContext): ProblemsApi {
  return {
    async listProblemOutcomes(query: ProblemOutcomeQuery): Promise<ProblemOutcomePage> {
      try {
        return listProblemOutcomes(store, query);
      } catch (error) {
        throw asStudioError(error);
      }
    },

    async getProblemEpisodes(query: ProblemEpisodesQuery): Promise<ProblemEpisodes> {
      try {
        return problemEpisodes(store, query);
      } catch (error) {
        throw asStudioError(error);
      }
    },
  };
}
