/**
 * The StudioApi's endpoint area: a reasoning system's OpenAI-compatible endpoints probed for the
 * run form (issue #16), every finding placed on its field.
 */
import type { StudioApi } from '#shared/contract';
import { poolFromConfig, probeIssues } from '../engine/served/config';
import type { ServiceContext } from './context';
import { OffThreadError } from './off-thread';
import type { endpointPrechecksOp } from './off-thread-ops';

type EndpointsApi = Pick<StudioApi, 'checkEndpoints'>;

export function createEndpointsApi({ thread }: ServiceContext): EndpointsApi {
  return {
    async checkEndpoints(config) {
      let checked: ReturnType<typeof endpointPrechecksOp>;
      try {
        checked = await thread().run('endpointPrechecks', config);
      } catch (error) {
        if (error instanceof OffThreadError) return { ok: false, issues: [{ path: '', message: error.message }], endpoints: [] };
        throw error;
      }
      if ('invalid' in checked) return { ok: false, issues: checked.invalid, endpoints: [] };
      const { config: resolved, issues } = checked;
      if (!resolved.endpoints) return { ok: issues.length === 0, issues, endpoints: [] };
      // Unlike the CLI, which stops at the first kind of problem, every endpoint is probed even
      // when another's key variable is missing, so the form can place every finding at once. An
      // endpoint without its key is reported once, at api_key_env (its probe stops at the key and
      // reads as unreachable, which probeIssues would place at base_url).
      const keyless = new Set(issues.filter((i) => i.path.startsWith('endpoints.')).map((i) => i.path.split('.')[1]));
      const pool = poolFromConfig(resolved);
      try {
        const reports = await pool.probe();
        issues.push(...probeIssues(reports.filter((r) => !keyless.has(r.endpoint))));
        return {
          ok: issues.length === 0,
          issues,
          endpoints: reports.map((r) => ({ endpoint: r.endpoint, reachable: r.reachable, models: [...r.models], modelServed: r.modelServed, missing: [...r.missing], notes: [...r.notes], error: r.error })),
        };
      } finally {
        pool.close();
      }
    },
  };
}
