/**
 * The StudioApi's replay area (issue 40): a replay starts in the background once its request is
 * checked (a bad episode, checkpoint or endpoint is answered at once, naming the field); its
 * turns and its end are pushed as `replay-progress` events. Replays are their own rows
 * (store/replays.ts): the run's episodes and metrics never change.
 */
import type { StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import type { ServiceContext } from './context';

type ReplaysApi = Pick<StudioApi, 'startReplay' | 'listReplays' | 'getReplay' | 'replayModels'>;

/**
 * Loaded on first use, like the dataset and model exports: the replay engine brings the tensor
 * backend and the tokenizers, which listing or showing runs (`marsrl runs`) does not need.
 */
const replayEngine = () => import('../engine/replay/replay');

export function createReplaysApi(context: ServiceContext): ReplaysApi {
  const { store, hub } = context;
  return {
    async startReplay(request) {
      context.requireRun(request.runId);
      const { runReplay, ReplayRequestError } = await replayEngine();
      const { runId } = request;
      const started = new Promise<number>((resolve, reject) => {
        runReplay(store, request, {
          onStart: resolve,
          onTurn: (replayId, turns) => hub?.publish({ type: 'replay-progress', replayId, runId, turns, status: 'running' }),
        }).then(
          (replayId) => {
            const r = store.replays.get(replayId)!.replay;
            hub?.publish({ type: 'replay-progress', replayId, runId, turns: r.turnCount, status: r.status });
          },
          (error: unknown) => reject(error instanceof ReplayRequestError ? invalidRequest(error) : error),
        );
      });
      return { replayId: await started };
    },
    async listReplays(runId) {
      context.requireRun(runId);
      return store.replays.list(runId);
    },
    async getReplay(replayId) {
      const detail = store.replays.get(replayId);
      if (!detail) throw new StudioError('not_found', `replay ${replayId} does not exist`);
      return detail;
    },
    async replayModels(runId) {
      context.requireRun(runId);
      const { replayModels } = await replayEngine();
      return replayModels(store, runId);
    },
  };
}

/** A bad episode, checkpoint or endpoint, answered naming the request's field. */
function invalidRequest(error: { message: string; field: string }): StudioError {
  return new StudioError('invalid_request', error.message, [{ path: error.field, message: error.message }]);
}
