/**
 * The StudioApi implemented once, on the engine and store. Electron's IPC handlers, the HTTP
 * bridge of `marsrl serve` and the CLI all call these functions, so every surface shows the same
 * data. Arguments arrive here already validated (dispatch.ts).
 *
 * One module per area of the API, each given the same context (context.ts): configs and presets,
 * runs, trajectories, dataset exports, imports of runs made elsewhere, models, endpoints, engines (Ray jobs), compare and studies.
 */
import type { StudioApi } from '#shared/contract';
import { createCompareApi } from './compare';
import { createConfigsApi } from './configs';
import { createServiceContext, type StudioServiceOptions } from './context';
import { createEndpointsApi } from './endpoints';
import { createEnginesApi } from './engines';
import { createExportsApi } from './exports';
import { createImportsApi } from './imports';
import { createModelsApi } from './models';
import { createProblemsApi } from './problems';
import { createReplaysApi } from './replays';
import { createRunsApi } from './runs';
import { createStudiesApi } from './studies';
import { createTrajectoriesApi } from './trajectories';
import { createCreditApi } from './credit';

export type { StudioServiceOptions } from './context';

export function createStudioService(options: StudioServiceOptions): StudioApi {
  const context = createServiceContext(options);
  return {
    ...createConfigsApi(context),
    ...createRunsApi(context),
    ...createTrajectoriesApi(context),
    ...createExportsApi(context),
    ...createImportsApi(context),
    ...createModelsApi(context),
    ...createEndpointsApi(context),
    ...createEnginesApi(context),
    ...createCompareApi(context),
    ...createStudiesApi(context),
    ...createCreditApi(context),
    ...createProblemsApi(context),
    ...createReplaysApi(context),
  };
}
