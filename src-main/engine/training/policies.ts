/**
 * The policies of a run: one model and optimizer per policy id, shared by every role that the
 * config's `agents` maps to it (one shared policy, one per role, or different sizes per role).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PolicyConfig, Role, RunConfig } from '../config/schema';
import { ROLES } from '../config/schema';
import { createModel, type GPT } from '../model/gpt';
import { createOptimizer, type Adam } from '../model/optim';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint';
import { Tokenizer } from '../model/tokenizer';
import { hashString } from '../util/rng';
import { resourcesDir } from '../resources';

export class PolicyRuntime {
  /** Frozen copy of the starting weights, for the KL penalty (only when kl_coef > 0). */
  reference: GPT | null = null;

  constructor(
    readonly id: string,
    readonly config: PolicyConfig,
    readonly model: GPT,
    public optimizer: Adam,
    /** RL updates applied before this process loaded the policy (from a checkpoint). */
    private readonly baseVersion = 0,
  ) {}

  /**
   * The trainer's version of weights adopted from another process (`adoptWeights`); null while
   * this process's own optimizer defines the version.
   */
  private adoptedVersion: number | null = null;

  /** Policy version: RL updates applied so far. Segments and turns record it. */
  get version(): number {
    return this.adoptedVersion ?? this.baseVersion + this.optimizer.stepCount;
  }

  /**
   * Replace the weights with a copy trained elsewhere (the pipeline's rollout process receives
   * them from the trainer after each update) and take that copy's version, so segments decoded
   * with it record the version the trainer knows it by.
   */
  adoptWeights(weights: Float32Array, version: number): void {
    this.model.setWeights(weights);
    this.adoptedVersion = version;
  }

  dispose(): void {
    this.model.dispose();
    this.optimizer.dispose();
    this.reference?.dispose();
  }
}

export type RolePolicies = Record<Role, PolicyRuntime>;

export function rolePolicies(config: RunConfig, byId: Map<string, PolicyRuntime>): RolePolicies {
  const out = {} as RolePolicies;
  for (const role of ROLES) {
    const policy = byId.get(config.agents[role]);
    if (!policy) throw new Error(`agents.${role} uses policy "${config.agents[role]}", which was not created`);
    out[role] = policy;
  }
  return out;
}

/** Policy ids actually used by some role (a config may define spares). */
export function usedPolicyIds(config: RunConfig): string[] {
  return [...new Set(ROLES.map((role) => config.agents[role]))];
}

/** Roles a policy plays. */
export function rolesOf(config: RunConfig, policyId: string): Role[] {
  return ROLES.filter((role) => config.agents[role] === policyId);
}

/**
 * Resolve a policy's `init` path: absolute, relative to the working directory, or relative to the
 * shipped resources folder (how presets name their starting checkpoints).
 */
export function resolveInitPath(init: string): string {
  const candidates = [path.resolve(init), path.join(resourcesDir(), init)];
  const found = candidates.find((c) => fs.existsSync(path.join(c, 'checkpoint.json')));
  if (!found) {
    throw new Error(`policy init checkpoint "${init}" not found (looked in ${candidates.join(' and ')}); run \`marsrl pretrain\` to make one or remove init`);
  }
  return found;
}

/** A fresh policy, or one loaded from its init checkpoint, with a new RL optimizer. */
export function createPolicy(id: string, policyConfig: PolicyConfig, tokenizer: Tokenizer, seed: number): { policy: PolicyRuntime; fromCheckpoint: string | null } {
  if (policyConfig.init) {
    const dir = resolveInitPath(policyConfig.init);
    const loaded = loadCheckpoint(dir);
    if (loaded.tokenizer.charset !== tokenizer.charset) {
      loaded.model.dispose();
      loaded.optimizer?.dispose();
      throw new Error(`checkpoint ${dir} was trained with another character set than this task's; pretrain for this task family`);
    }
    loaded.optimizer?.dispose();
    const optimizer = createOptimizer(loaded.model, policyConfig.optimizer);
    return { policy: new PolicyRuntime(id, policyConfig, loaded.model, optimizer), fromCheckpoint: dir };
  }
  const model = createModel({ ...policyConfig.model, vocabSize: tokenizer.vocabSize }, (seed ^ hashString(`policy:${id}`)) >>> 0);
  return { policy: new PolicyRuntime(id, policyConfig, model, createOptimizer(model, policyConfig.optimizer)), fromCheckpoint: null };
}

/** Save every policy of a run at an RL step (model, optimizer state, tokenizer, config). */
export function savePolicies(dir: string, policies: Map<string, PolicyRuntime>, tokenizer: Tokenizer, config: RunConfig, step: number, extra: unknown): string[] {
  const written: string[] = [];
  for (const [id, policy] of policies) {
    const target = path.join(dir, id);
    saveCheckpoint(target, { model: policy.model, optimizer: policy.optimizer, tokenizer, config, step, extra: { ...(extra as object), policyVersion: policy.version } });
    written.push(target);
  }
  return written;
}

/** Load policies saved by `savePolicies`, restoring optimizer state and versions exactly. */
export function loadPolicies(dir: string, config: RunConfig): { policies: Map<string, PolicyRuntime>; step: number; extra: unknown; tokenizer: Tokenizer } {
  const policies = new Map<string, PolicyRuntime>();
  let step = -1;
  let extra: unknown = null;
  let tokenizer: Tokenizer | null = null;
  for (const id of usedPolicyIds(config)) {
    const loaded = loadCheckpoint(path.join(dir, id));
    const optimizer = loaded.optimizer ?? createOptimizer(loaded.model, config.policies[id].optimizer);
    // The optimizer's own step count already counts the updates; baseVersion stays 0.
    policies.set(id, new PolicyRuntime(id, config.policies[id], loaded.model, optimizer));
    step = loaded.step;
    extra = loaded.extra;
    tokenizer = loaded.tokenizer;
  }
  if (!tokenizer) throw new Error(`no policy checkpoints in ${dir}`);
  return { policies, step, extra, tokenizer };
}
