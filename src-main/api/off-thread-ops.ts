/**
 * The StudioApi work that reads what a request names (a model folder, a config's task file and
 * model folders) and may take long on a hostile input: done in the off-thread worker
 * (off-thread.ts, issue #36), so the thread answering requests never waits on it. Plain
 * functions of plain data: the worker calls them, and so can anything that wants them inline.
 */
import type { ConfigIssue, ConfigValidation, ModelInspection } from '#shared/contract';
import { resolveModelFolder } from '../engine/preflight/model-folder';
import { machineIssues, validateConfig } from '../engine/preflight';
import type { RunConfig } from '../engine/config/schema';
import { inspectHfFolder } from '../engine/checkpoint/inspect';
import { toModelInspection } from './views';

/** What `marsrl model inspect` says of a folder, as the API shows it. */
export function inspectModelOp(folder: string): ModelInspection {
  // Read the folder as the config will (`~/…` is the home folder).
  return toModelInspection(inspectHfFolder(resolveModelFolder(folder)));
}

/**
 * The schema's verdict, then what only this machine can say: a missing task file, an API key
 * variable that is not set or not approved (`marsrl config validate` refuses both too).
 */
export function validateConfigOp(config: unknown): ConfigValidation {
  const result = validateConfig(config);
  if (!result.ok) return result;
  const issues = machineIssues(result.config);
  return issues.length ? { ok: false, issues } : { ok: true, config: result.config as unknown as Record<string, unknown> };
}

/** A valid config and its machine issues (checkEndpoints then probes from the caller's thread). */
export function endpointPrechecksOp(config: unknown): { config: RunConfig; issues: ConfigIssue[] } | { invalid: ConfigIssue[] } {
  const result = validateConfig(config);
  if (!result.ok) return { invalid: result.issues };
  return { config: result.config, issues: machineIssues(result.config) };
}

export const OFF_THREAD_OPS = { inspectModel: inspectModelOp, validateConfig: validateConfigOp, endpointPrechecks: endpointPrechecksOp } as const;
export type OffThreadOp = keyof typeof OFF_THREAD_OPS;
