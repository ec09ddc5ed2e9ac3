/**
 * The StudioApi implemented once, on the engine and store. Electron's IPC handlers, the HTTP
 * bridge of `marsrl serve` and the CLI all call these functions, so every surface shows the same
 * data. Arguments arrive here already validated (dispatch.ts).
 */
import type { AppInfo, ListRunsQuery, StudioApi } from '../../src-preload/api';
import { listPresets, presetDocument, resolveConfig, validateConfig } from '../engine/config/load';
import type { Store } from '../engine/store';
import { packageVersion } from '../engine/version';
import { StudioError } from './errors';
import { toRunDetail, toRunSummary } from './views';

export interface StudioServiceOptions {
  store: Store;
  databasePath: string;
  transport: AppInfo['transport'];
}

export function createStudioService({ store, databasePath, transport }: StudioServiceOptions): StudioApi {
  return {
    async appInfo() {
      return { version: packageVersion(), databasePath, schemaVersion: store.schemaVersion, transport };
    },

    async listRuns(query: ListRunsQuery = {}) {
      const page = store.runs.list(query);
      return { items: page.items.map((run) => toRunSummary(store, run)), nextCursor: page.nextCursor };
    },

    async getRun(runId: number) {
      const run = store.runs.get(runId);
      if (!run) throw new StudioError('not_found', `run ${runId} does not exist`);
      return toRunDetail(store, run);
    },

    async listPresets() {
      return listPresets().map(({ name, description }) => ({ name, description }));
    },

    async getPreset(name: string) {
      const known = listPresets().map((p) => p.name);
      if (!known.includes(name)) throw new StudioError('not_found', `unknown preset "${name}"; known presets: ${known.join(', ')}`);
      return resolveConfig(presetDocument(name), `preset ${name}`) as unknown as Record<string, unknown>;
    },

    async validateConfig(config: unknown) {
      const result = validateConfig(config);
      return result.ok ? { ok: true, config: result.config as unknown as Record<string, unknown> } : result;
    },
  };
}
