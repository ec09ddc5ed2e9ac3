/**
 * From a run config's `endpoints` block to a pool (issue #16), and the checks that need the
 * machine rather than the schema: an API key's environment variable that is not set (at
 * validation, before anything runs) and, by the capability probe, an unreachable URL, a model the
 * server does not serve, or a key it refuses. Both report as config issues on the field to fix.
 */
import type { RunConfig } from '../config/schema';
import { ROLES } from '#shared/agents';
import type { ConfigIssue } from '../config/load';
import type { ServedEventSink } from './events';
import { EndpointPool, type PoolEndpointSpec, type PoolOptions } from './pool';
import type { ProbeReport } from './client';
import { loadKeyApprovals, type KeyApprovals } from './key-approvals';

/** The endpoints some role's policy points at, by name. */
export function usedEndpoints(config: RunConfig): Map<string, Array<(typeof ROLES)[number]>> {
  const used = new Map<string, Array<(typeof ROLES)[number]>>();
  for (const role of ROLES) {
    const endpoint = config.policies[config.agents[role]]?.endpoint;
    if (endpoint === undefined) continue;
    used.set(endpoint, [...(used.get(endpoint) ?? []), role]);
  }
  return used;
}

/**
 * Issues the schema cannot see: an API key variable that is not set in `env`, or one that is set
 * but not approved on this machine for the host of the base URL or of a replica (key-approvals.ts,
 * issue #36). `approvals`: this machine's, read when some variable needs them.
 */
export function endpointEnvIssues(config: RunConfig, env: NodeJS.ProcessEnv = process.env, approvals?: KeyApprovals): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [name, endpoint] of Object.entries(config.endpoints ?? {})) {
    const variable = endpoint.api_key_env;
    if (variable === undefined) continue;
    if (env[variable] === undefined || env[variable] === '') {
      issues.push({ path: `endpoints.${name}.api_key_env`, message: `the environment variable ${variable} is not set; export it with the API key of ${endpoint.base_url} before starting the run` });
      continue;
    }
    approvals ??= loadKeyApprovals();
    if (!approvals.allows(variable, endpoint.base_url)) issues.push({ path: `endpoints.${name}.api_key_env`, message: approvals.refusal(variable, endpoint.base_url, 'api_key_env') });
    endpoint.replicas.forEach((url, i) => {
      if (!approvals!.allows(variable, url)) issues.push({ path: `endpoints.${name}.replicas.${i}`, message: approvals!.refusal(variable, url, `replicas.${i} (api_key_env ${variable})`) });
    });
  }
  return issues;
}

/** `probePrompt`: the user message of the probe's tiny request (a run probes with one of its own prompts, which any policy of the task can encode). */
export function poolSpecs(config: RunConfig, probePrompt?: string): PoolEndpointSpec[] {
  return Object.entries(config.endpoints ?? {}).map(([name, e]) => ({
    name,
    baseUrls: [e.base_url, ...e.replicas],
    model: e.model,
    apiKeyEnv: e.api_key_env ?? null,
    concurrency: e.concurrency,
    timeoutMs: e.timeout_s * 1000,
    retries: e.retries,
    sampling: e.sampling,
    probePrompt,
  }));
}

/** A pool for the config's served policies: each role whose policy names an endpoint maps to it. */
/**
 * `healthChecks`: a run's pool checks its replicas in the background (`health_check_s`); a pool
 * made only to probe does not.
 */
export function poolFromConfig(config: RunConfig, opts: { env?: NodeJS.ProcessEnv; onEvent?: ServedEventSink; probePrompt?: string; healthChecks?: boolean } & Partial<PoolOptions> = {}): EndpointPool {
  const agents: Record<string, string> = {};
  for (const [endpoint, roles] of usedEndpoints(config)) for (const role of roles) agents[role] = endpoint;
  const { probePrompt, healthChecks, ...poolOpts } = opts;
  const pool = new EndpointPool({ ...poolOpts, endpoints: poolSpecs(config, probePrompt), agents });
  // One timer checks every replica: at the shortest interval an endpoint in use asks for.
  const used = new Set(Object.values(agents));
  const intervals = Object.entries(config.endpoints ?? {}).flatMap(([name, e]) => (used.has(name) && e.health_check_s > 0 ? [e.health_check_s] : []));
  if (healthChecks && intervals.length > 0) pool.startHealthChecks(Math.min(...intervals) * 1000);
  return pool;
}

/** The probe's findings as config issues on the field to fix (empty when every endpoint is usable). */
export function probeIssues(reports: readonly ProbeReport[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const r of reports) {
    if (r.error === null) continue;
    // The key first: a probe that stops at a missing or refused key never reached the server, and
    // reads as unreachable; the fix is the key variable, not the URL.
    const field = /API key|api_key_env/.test(r.error) ? 'api_key_env' : !r.reachable ? 'base_url' : r.models.length > 0 && !r.modelServed ? 'model' : 'base_url';
    issues.push({ path: `endpoints.${r.endpoint}.${field}`, message: r.error });
  }
  return issues;
}
