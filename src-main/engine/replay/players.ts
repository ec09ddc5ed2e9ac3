/**
 * Who plays the roles of a replay (issue 40): a checkpoint of any run (the Studio GPT or a
 * Hugging Face model, LoRA included, as `loadPolicies` restores it), a run's starting policies,
 * or an endpoint of the run's config serving every role. Without a choice, the model the episode
 * was sampled with: a system run's own endpoints and policies, an RL run's checkpoint of the
 * step before the episode's (its policies after that step's update are what the step's
 * evaluation and rollout used; step 0 is the starting policies).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ReplayRequest } from '#shared/contract';
import { ROLES, type Role } from '#shared/agents';
import { parseRunConfig } from '../config/load';
import type { RunConfig } from '../config/schema';
import { EndpointPool } from '../served/pool';
import { poolFromConfig, usedEndpoints } from '../served/config';
import type { Store } from '../store';
import { createPolicy, isServedPolicy, loadPolicies, usedPolicyIds, type PolicyRuntime } from '../training/policies';
import type { TaskData } from '../training/task-data';
import { ReplayRequestError, type ReplayTarget } from './target';

export interface ReplayPlayers {
  /** In words, for the replay's row and the UI. */
  label: string;
  /** What was asked, as stored with the replay. */
  model: Record<string, unknown>;
  /** The config the calls are made with (its endpoints, each role's policy). */
  config: RunConfig;
  /** Local policies by role (a served role has none). */
  policies: Partial<Record<Role, PolicyRuntime>>;
  pool: EndpointPool | null;
  /** The model is the one the stored episode was sampled with. */
  sameAsEpisode: boolean;
  dispose(): Promise<void>;
}

export interface PlayerOptions {
  env?: NodeJS.ProcessEnv;
  pool?: Partial<ConstructorParameters<typeof EndpointPool>[0]>;
}

export function replayPlayers(store: Store, request: ReplayRequest, target: ReplayTarget, options: PlayerOptions = {}): ReplayPlayers {
  if (request.checkpoint && request.endpoint) throw new ReplayRequestError('endpoint', 'give a checkpoint or an endpoint, not both');
  if (request.endpoint !== undefined) return endpointPlayers(request.endpoint, target.config, options);
  const sampledWith = episodeCheckpoint(target);
  const checkpoint: NonNullable<ReplayRequest['checkpoint']> = request.checkpoint ?? (target.config.system ? { step: 'init' } : sampledWith);
  if (checkpoint.path !== undefined) return withPool(target.config, loadedFrom(path.resolve(checkpoint.path), target.config, `checkpoint ${checkpoint.path}`, { path: checkpoint.path }), false, options);
  const runId = checkpoint.runId ?? request.runId;
  // Left out, the model is the episode's by definition; chosen, it is when it names the same checkpoint.
  const same = target.episode !== null && (request.checkpoint === undefined || (runId === request.runId && !target.config.system && checkpoint.step === sampledWith.step));
  if (checkpoint.step === 'init' || checkpoint.step === undefined) {
    const config = runId === request.runId ? target.config : configOf(store, runId);
    return withPool(config, initialPolicies(config, target.data, runId), same, options);
  }
  const row = store.events.checkpoints(runId).find((c) => c.step === checkpoint.step);
  const onDisk = store.events.checkpoints(runId).filter((c) => fs.existsSync(path.dirname(c.path))).map((c) => c.step);
  if (!row || !fs.existsSync(path.dirname(row.path))) {
    throw new ReplayRequestError('checkpoint.step', `run ${runId} has no checkpoint of step ${checkpoint.step} on disk (a run keeps its newest two); on disk: ${[...new Set(onDisk)].join(', ') || 'none'}; or 'init' for its starting policies`);
  }
  const config = runId === request.runId ? target.config : configOf(store, runId);
  return withPool(config, loadedFrom(path.dirname(row.path), config, `checkpoint of step ${checkpoint.step} of run ${runId}`, { runId, step: checkpoint.step }), same, options);
}

/** The checkpoint an RL run's episode of step S was sampled with: step S − 1's, or the starting policies at step 0. */
function episodeCheckpoint(target: ReplayTarget): { step: number | 'init' } {
  const step = target.episode?.step;
  if (step === undefined) return { step: 'init' };
  return step === 0 ? { step: 'init' } : { step: step - 1 };
}

function configOf(store: Store, runId: number): RunConfig {
  const run = store.runs.get(runId);
  if (!run) throw new ReplayRequestError('checkpoint.runId', `run ${runId} does not exist`);
  return parseRunConfig(run.config, `run ${runId}`);
}

interface Loaded {
  label: string;
  model: Record<string, unknown>;
  byId: Map<string, PolicyRuntime>;
  config: RunConfig;
}

function loadedFrom(dir: string, config: RunConfig, label: string, model: Record<string, unknown>): Loaded {
  if (!fs.existsSync(dir)) throw new ReplayRequestError('checkpoint.path', `${dir} does not exist; give a run's checkpoint folder (step-NNNNNN, one folder per policy)`);
  try {
    return { label, model, byId: loadPolicies(dir, config).policies, config };
  } catch (error) {
    throw new ReplayRequestError('checkpoint.path', `${dir} cannot be loaded as a checkpoint of the policies ${usedPolicyIds(config).join(', ')}: ${(error as Error).message}`);
  }
}

function initialPolicies(config: RunConfig, data: TaskData, runId: number): Loaded {
  const byId = new Map<string, PolicyRuntime>();
  for (const id of usedPolicyIds(config)) {
    if (!isServedPolicy(config, id)) byId.set(id, createPolicy(id, config.policies[id], data.tokenizer, config.seed).policy);
  }
  return { label: `starting policies of run ${runId}`, model: { runId, step: 'init' }, byId, config };
}

/** Local policies by role, the served roles through a pool of the config's endpoints. */
function withPool(runConfig: RunConfig, loaded: Loaded, sameAsEpisode: boolean, options: PlayerOptions): ReplayPlayers {
  const policies: Partial<Record<Role, PolicyRuntime>> = {};
  for (const role of ROLES) {
    const policy = loaded.byId.get(loaded.config.agents[role]);
    if (policy) policies[role] = policy;
  }
  const pool = usedEndpoints(runConfig).size > 0 && ROLES.some((r) => !policies[r]) ? poolFromConfig(runConfig, { ...options.pool, env: options.env }) : null;
  return {
    label: loaded.label,
    model: loaded.model,
    config: runConfig,
    policies,
    pool,
    sameAsEpisode,
    dispose: async () => {
      for (const p of loaded.byId.values()) p.dispose();
      pool?.close();
    },
  };
}

/** Every role served by one endpoint of the run's config. */
function endpointPlayers(name: string, config: RunConfig, options: PlayerOptions): ReplayPlayers {
  const names = Object.keys(config.endpoints ?? {});
  if (!names.includes(name)) throw new ReplayRequestError('endpoint', `the run's config has no endpoint "${name}"; its endpoints: ${names.join(', ') || 'none'}`);
  const policies = Object.fromEntries(Object.entries(config.policies).map(([id, p]) => [id, { ...p, endpoint: name }]));
  const served = { ...config, policies } as RunConfig;
  const roles = usedEndpoints(config).get(name) ?? [];
  // The run's own mapping when the endpoint played every role already: the episode's model.
  const same = roles.length === ROLES.length;
  const pool = poolFromConfig(served, { ...options.pool, env: options.env });
  return { label: `endpoint ${name}`, model: { endpoint: name }, config: served, policies: {}, pool, sameAsEpisode: same, dispose: async () => pool.close() };
}
