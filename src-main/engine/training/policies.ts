/**
 * The policies of a run: one model, tokenizer and optimizer per policy id, shared by every role
 * that the config's `agents` maps to it (one shared policy, one per role, or different sizes per
 * role). Callers reach a policy only through the seam of policy-model.ts (`PolicyModel`,
 * `PolicyTokenizer`), so the same rollout, training and checkpoint code serves the Studio's own
 * GPT and a Hugging Face model (issue #13), even side by side in one run.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { PolicyConfig, RunConfig } from '../config/schema';
import { ROLES, type Role } from '#shared/agents';
import { resolveModelFolder } from '../preflight/model-folder';
import { createModel, type GPTConfig } from '../gpt/model';
import { createOptimizer, type Adam, type AdamState } from '../model/optim';
import { readWeights, syncWhereReadable, withReadAhead } from '../model/readback';
import * as tf from '@tensorflow/tfjs-core';
import { acquireLoraBase, loadCheckpoint, loadHfCheckpoint, loadLoraCheckpoint, loraBaseFromCheckpoint, loraBaseFromFolder, saveCheckpoint, saveHfCheckpoint, saveLoraCheckpoint } from '../checkpoint/checkpoint';
import { CHECKPOINT_MANIFEST, checkpointFamily, readAnyCheckpointManifest, resolveInitPath, type HfPromptSettings, type LoraBaseIdentity } from '../checkpoint/manifest';
import type { HfArchConfig } from '../hf/config';
import { loadHfModel, readHfConfig } from '../hf/load';
import { checkLoraSettings, LoraHfModel, loraSettingsFromBlock, type LoraSettings } from '../hf/lora';
import { HfModel } from '../hf/model';
import { hfPolicyTokenizer, HfTokenizer } from '../hf/tokenizer';
import type { PolicyModel, PolicyTokenizer } from '../model/policy-model';
import { Tokenizer, type TokenizerJSON } from '../gpt/tokenizer';
import { hashString } from '../util/rng';
import { CharPolicyTokenizer } from './sequences';

/**
 * What another process (the pipeline's rollout) or a KL reference needs to rebuild a policy's
 * model and tokenizer without its trainable weights, which travel separately as one flat buffer.
 */
export type PolicyModelSource =
  | { family: 'gpt'; config: GPTConfig; tokenizer: TokenizerJSON }
  | {
      family: 'hf';
      /** A Hugging Face folder or a Studio checkpoint of the hf family (its architecture and weights are read). */
      path: string;
      dtype: 'float32';
      /** The folder holding the tokenizer files (the model folder, or a checkpoint's tokenizer/). */
      tokenizerDir: string;
      prompts: HfPromptSettings;
      /**
       * A LoRA policy (issue #14): its settings and the frozen base (then `path` is the base). The
       * copy built elsewhere loads the real base, once per process, and receives only the adapters.
       */
      lora?: { settings: LoraSettings; base: LoraBaseIdentity };
    };

/**
 * Which model a policy started from, recorded with the run so that Compare shows when two runs
 * started from different models: for the GPT family the init checkpoint (or a fresh seed), for the
 * Hugging Face family the folder and the digests of its config and weights.
 */
export interface ModelIdentity {
  family: 'gpt' | 'hf';
  /** The init checkpoint (gpt) or the model folder (hf); null for a freshly initialised GPT. */
  path: string | null;
  /** SHA-256 of the model's config (hf: config.json; gpt: the architecture and tokenizer). */
  configDigest: string;
  /** SHA-256 of the starting weights (hf: the safetensors; gpt: the init checkpoint's weights.bin, or null when fresh). */
  weightsDigest: string | null;
  /** hf: the Hugging Face folder the weights came from first (what an hf checkpoint records as its base). */
  base?: { path: string; configDigest: string; weightsDigest: string };
}

export class PolicyRuntime {
  /** Frozen copy of the starting weights, for the KL penalty (only when kl_coef > 0). */
  reference: PolicyModel | null = null;

  constructor(
    readonly id: string,
    readonly config: PolicyConfig,
    readonly model: PolicyModel,
    /** How this policy's prompts and responses become tokens (one per policy: bases may differ). */
    readonly tokenizer: PolicyTokenizer,
    public optimizer: Adam,
    /** How to rebuild this policy's model elsewhere (see `buildPolicyModel`). */
    readonly source: PolicyModelSource,
    /** The model this policy started from. */
    readonly identity: ModelIdentity,
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

  /**
   * Freeze a copy of the current weights as the KL reference (any family: rebuilt from `source`;
   * on webgpu read asynchronously). A LoRA policy's reference is its shared base with the
   * adapters off (issue #14): no second copy.
   */
  async freezeReference(): Promise<void> {
    this.reference?.dispose();
    if (this.model instanceof LoraHfModel) {
      this.reference = this.model.referenceModel();
      return;
    }
    const weights = await readWeights(this.model);
    const { model } = buildPolicyModel(this.source);
    model.setWeights(weights);
    this.reference = model;
  }

  dispose(): void {
    this.model.dispose();
    this.optimizer.dispose();
    this.reference?.dispose();
  }
}

/**
 * A policy's model and tokenizer rebuilt from its source, for a caller that then sets the trained
 * weights (`setWeights`): the pipeline's rollout and every KL reference. The starting values are
 * placeholders (gpt: a seed-0 initialisation; hf: zeros, so that no weights file is read or hashed,
 * which for a real checkpoint is gigabytes). A LoRA policy's frozen base is real: it comes from
 * this process's shared cache (loaded, digest-checked, once), and its zero-B adapters are the
 * placeholders.
 */
export function buildPolicyModel(source: PolicyModelSource): { model: PolicyModel; tokenizer: PolicyTokenizer } {
  if (source.family === 'gpt') {
    return { model: createModel(source.config, 0), tokenizer: new CharPolicyTokenizer(Tokenizer.fromJSON(source.tokenizer)) };
  }
  const tokenizer = HfTokenizer.fromFolder(source.tokenizerDir);
  const withPrompts = hfPolicyTokenizer(tokenizer, source.prompts.systemPrompts, { enableThinking: source.prompts.enableThinking });
  if (source.lora) {
    const model = new LoraHfModel(acquireLoraBase(source.lora.base), source.lora.settings, { seed: 0 });
    // As the trainer's (createLoraPolicy): a gradient share computed here drops adapter inputs too.
    model.training = source.lora.settings.dropout > 0;
    return { model, tokenizer: withPrompts };
  }
  const config = hfSourceConfig(source.path);
  const model = new HfModel(config, (spec) => tf.zeros(spec.shape, 'float32'));
  return { model, tokenizer: withPrompts };
}

/** The architecture of a Hugging Face folder or of a Studio checkpoint of the family. */
function hfSourceConfig(dir: string): HfArchConfig {
  if (fs.existsSync(path.join(dir, CHECKPOINT_MANIFEST))) {
    const manifest = readAnyCheckpointManifest(dir);
    if (manifest.family !== 'hf') throw new Error(`${dir} is a checkpoint of the gpt family, not of a Hugging Face model`);
    return manifest.model.config;
  }
  return readHfConfig(dir).config;
}

/**
 * What each role of a Hugging Face policy is told in its system message on the character tasks:
 * its job and the exact output format the Studio parses (agents/formats.ts: `A:<answer>` on the
 * last line, `V:ok` / `V:no`); the user message is the role's prompt text, as the GPT family reads
 * it. A templated prompt (the math family's `prompts.<role>`) brings its own system and user
 * messages instead (agents/prompts.ts `chatMessagesOf`), so these never reach a math prompt.
 */
export const DEFAULT_SYSTEM_PROMPTS: Record<Role, string> = {
  solver:
    'You are the Solver in a team of agents. Solve the problem in the user message. Keep any working short, then end your reply with one line of the form A:<answer> holding only the final answer.',
  verifier:
    'You are the Verifier in a team of agents. The user message is a problem, then "|", then a proposed final answer written A:<answer>. Check whether that answer is right. Reply with exactly V:ok if it is right or V:no if it is wrong, and nothing after it.',
  corrector:
    'You are the Corrector in a team of agents. The user message is a problem, a proposed solution and the Verifier\'s verdict on it (V:no), separated by "|". Write a corrected solution and end your reply with one line of the form A:<answer> holding only the final answer.',
};

export type RolePolicies = Record<Role, PolicyRuntime>;

/**
 * Each role's policy. A role whose policy names an endpoint (issue #16, served and frozen) has no
 * entry: nothing is built for it, and the rollout and evaluation reach it through their `served`
 * roles instead.
 */
export function rolePolicies(config: RunConfig, byId: Map<string, PolicyRuntime>): RolePolicies {
  const out = {} as RolePolicies;
  for (const role of ROLES) {
    if (isServedPolicy(config, config.agents[role])) continue;
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

/** A policy played by a served model (`endpoint`): no model, optimizer or checkpoint of it in a run. */
export function isServedPolicy(config: RunConfig, policyId: string): boolean {
  return config.policies[policyId]?.endpoint !== undefined;
}

/** The used policies a run builds, trains and checkpoints: all but the served ones. */
export function trainedPolicyIds(config: RunConfig): string[] {
  return usedPolicyIds(config).filter((id) => !isServedPolicy(config, id));
}

/** Roles a policy plays. */
export function rolesOf(config: RunConfig, policyId: string): Role[] {
  return ROLES.filter((role) => config.agents[role] === policyId);
}


function sha256Json(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

function gptSource(config: GPTConfig, tokenizer: Tokenizer): Extract<PolicyModelSource, { family: 'gpt' }> {
  return { family: 'gpt', config: { ...config }, tokenizer: tokenizer.toJSON() };
}

function gptIdentity(source: Extract<PolicyModelSource, { family: 'gpt' }>, init: string | null, weightsDigest: string | null): ModelIdentity {
  return { family: 'gpt', path: init, configDigest: sha256Json({ config: source.config, tokenizer: source.tokenizer }), weightsDigest };
}

/**
 * A fresh policy, or one loaded from its init checkpoint, with a new RL optimizer. `tokenizer` is
 * the task's character tokenizer, which the GPT family uses.
 */
export function createPolicy(id: string, policyConfig: PolicyConfig, tokenizer: Tokenizer, seed: number): { policy: PolicyRuntime; fromCheckpoint: string | null } {
  if (policyConfig.model.kind === 'hf') {
    if (policyConfig.model.lora) return createLoraPolicy(id, policyConfig, policyConfig.model, policyConfig.model.lora, (seed ^ hashString(`policy:${id}`)) >>> 0);
    return createHfPolicy(id, policyConfig, policyConfig.model);
  }
  if (policyConfig.init) {
    const dir = resolveInitPath(policyConfig.init);
    if (checkpointFamily(dir) !== 'gpt') throw new Error(`policies.${id}.init: ${dir} is a checkpoint of a Hugging Face model, but policies.${id}.model is kind gpt; set model.kind to hf (with the base folder as model.path) or give a gpt checkpoint`);
    const loaded = loadCheckpoint(dir);
    if (loaded.tokenizer.charset !== tokenizer.charset) {
      loaded.model.dispose();
      loaded.optimizer?.dispose();
      throw new Error(`checkpoint ${dir} was trained with another character set than this task's; pretrain for this task family`);
    }
    loaded.optimizer?.dispose();
    const optimizer = createOptimizer(loaded.model, policyConfig.optimizer);
    const source = gptSource(loaded.model.config, loaded.tokenizer);
    const identity = gptIdentity(source, dir, loaded.manifest.files['weights.bin']?.sha256 ?? null);
    return { policy: new PolicyRuntime(id, policyConfig, loaded.model, new CharPolicyTokenizer(loaded.tokenizer), optimizer, source, identity), fromCheckpoint: dir };
  }
  const { kind: _kind, ...sizes } = policyConfig.model;
  const model = createModel({ ...sizes, vocabSize: tokenizer.vocabSize }, (seed ^ hashString(`policy:${id}`)) >>> 0);
  const source = gptSource(model.config, tokenizer);
  const policy = new PolicyRuntime(id, policyConfig, model, new CharPolicyTokenizer(tokenizer), createOptimizer(model, policyConfig.optimizer), source, gptIdentity(source, null, null));
  return { policy, fromCheckpoint: null };
}

/**
 * Save one policy as a Studio checkpoint of its family (model, optimizer state when given,
 * tokenizer, the run's config snapshot, `extra` plus the policy's identity).
 */
export function savePolicyCheckpoint(dir: string, policy: PolicyRuntime, args: { optimizer: Adam | AdamState | null; config: unknown; step: number; extra?: object }): void {
  const extra = { ...args.extra, identity: policy.identity };
  const { source } = policy;
  if (policy.model instanceof LoraHfModel) {
    if (source.family !== 'hf' || !source.lora) throw new Error(`policy ${policy.id}: a LoRA model without the source of its base`);
    const base = policy.identity.base;
    if (!base) throw new Error(`policy ${policy.id}: the Hugging Face folder it started from is not known, so its checkpoint cannot name its base`);
    saveLoraCheckpoint(dir, { model: policy.model, loraBase: source.lora.base, base, tokenizerDir: source.tokenizerDir, prompts: source.prompts, optimizer: args.optimizer, config: args.config, step: args.step, extra });
  } else if (source.family === 'gpt') {
    const model = { config: source.config, specs: policy.model.specs, numParams: policy.model.numParams, getWeights: () => policy.model.getWeights() };
    saveCheckpoint(dir, { model, optimizer: args.optimizer, tokenizer: Tokenizer.fromJSON(source.tokenizer), config: args.config, step: args.step, extra });
  } else {
    const base = policy.identity.base;
    if (!base) throw new Error(`policy ${policy.id}: the Hugging Face folder it started from is not known, so its checkpoint cannot name its base`);
    if (!(policy.model instanceof HfModel)) throw new Error(`policy ${policy.id}: its source is a Hugging Face folder but its model is of the ${policy.model.family} family`);
    saveHfCheckpoint(dir, { model: policy.model, base, tokenizerDir: source.tokenizerDir, prompts: source.prompts, optimizer: args.optimizer, config: args.config, step: args.step, extra });
  }
}

/**
 * A Hugging Face policy: the folder's weights (or the init checkpoint's, a Studio checkpoint of the
 * hf family), its tokenizer with the chat template, and a new RL optimizer. It needs no warm start,
 * so `fromCheckpoint` is always its starting folder.
 */
function createHfPolicy(id: string, policyConfig: PolicyConfig, model: Extract<PolicyConfig['model'], { kind: 'hf' }>): { policy: PolicyRuntime; fromCheckpoint: string } {
  const prompts: HfPromptSettings = { systemPrompts: { ...DEFAULT_SYSTEM_PROMPTS }, enableThinking: model.enable_thinking };
  const withPrompts = (tok: HfTokenizer) => hfPolicyTokenizer(tok, prompts.systemPrompts, { enableThinking: prompts.enableThinking });
  if (policyConfig.init) {
    const dir = resolveInitPath(policyConfig.init);
    if (checkpointFamily(dir) !== 'hf') throw new Error(`policies.${id}.init: ${dir} is a checkpoint of the gpt family, but policies.${id}.model is kind hf; give an hf checkpoint or remove init`);
    const loaded = loadHfCheckpoint(dir);
    loaded.optimizer?.dispose();
    const source: PolicyModelSource = { family: 'hf', path: dir, dtype: model.dtype, tokenizerDir: loaded.tokenizerDir, prompts };
    const identity: ModelIdentity = { family: 'hf', path: dir, configDigest: loaded.base.configDigest, weightsDigest: loaded.manifest.files['weights.safetensors']?.sha256 ?? null, base: loaded.base };
    const policy = new PolicyRuntime(id, policyConfig, loaded.model, withPrompts(loaded.tokenizer), createOptimizer(loaded.model, policyConfig.optimizer), source, identity);
    return { policy, fromCheckpoint: dir };
  }
  const dir = resolveModelFolder(model.path);
  const loaded = loadHfModel(dir, { dtype: model.dtype });
  const source: PolicyModelSource = { family: 'hf', path: dir, dtype: model.dtype, tokenizerDir: dir, prompts };
  const identity: ModelIdentity = { family: 'hf', ...loaded.identity, base: loaded.identity };
  const policy = new PolicyRuntime(id, policyConfig, loaded.model, withPrompts(loaded.tokenizer), createOptimizer(loaded.model, policyConfig.optimizer), source, identity);
  return { policy, fromCheckpoint: dir };
}

type HfModelBlock = Extract<PolicyConfig['model'], { kind: 'hf' }>;

/** How the config's settings (`b`) differ from a checkpoint's (`a`): the first field that does, or null. */
function loraSettingsDiffer(a: LoraSettings, b: LoraSettings): string | null {
  if (a.rank !== b.rank) return `rank ${b.rank} vs ${a.rank}`;
  if (a.alpha !== b.alpha) return `alpha ${b.alpha} vs ${a.alpha}`;
  if (a.targets.join(',') !== b.targets.join(',')) return `targets ${b.targets.join(', ')} vs ${a.targets.join(', ')}`;
  return null;
}

/**
 * A LoRA policy (issue #14; Dr. MAS's shared / per-role / heterogeneous settings are which policy
 * ids the roles use and which base each names): fresh adapters (PEFT's initialisation, so the
 * policy starts as its base exactly) on the frozen base, held once per process however many
 * policies use it, and an optimizer over the adapters only. The base is `model.path`, or the
 * `init` checkpoint: one of full hf weights (a warm start) becomes the base; a LoRA checkpoint
 * brings its base and its trained adapters (settings must match the config's).
 */
function createLoraPolicy(id: string, policyConfig: PolicyConfig, model: HfModelBlock, block: NonNullable<HfModelBlock['lora']>, seed: number): { policy: PolicyRuntime; fromCheckpoint: string } {
  const where = `policies.${id}.model.lora`;
  const prompts: HfPromptSettings = { systemPrompts: { ...DEFAULT_SYSTEM_PROMPTS }, enableThinking: model.enable_thinking };
  const withPrompts = (tok: HfTokenizer) => hfPolicyTokenizer(tok, prompts.systemPrompts, { enableThinking: prompts.enableThinking });
  let lora: LoraHfModel;
  let loraBase: LoraBaseIdentity;
  let tokenizerDir: string;
  let identity: ModelIdentity;
  let fromCheckpoint: string;
  if (policyConfig.init) {
    const dir = resolveInitPath(policyConfig.init);
    const manifest = readAnyCheckpointManifest(dir);
    if (manifest.family !== 'hf') throw new Error(`policies.${id}.init: ${dir} is a checkpoint of the gpt family, but policies.${id}.model is kind hf; give an hf checkpoint or remove init`);
    const settings = checkLoraSettings(manifest.model.config, loraSettingsFromBlock(block), where);
    if (manifest.lora) {
      const differ = loraSettingsDiffer(manifest.lora.settings, settings);
      if (differ) throw new Error(`${where}: the init checkpoint ${dir} holds adapters of other settings (${differ} in the checkpoint); make the lora block match it or start from its base`);
      const loaded = loadLoraCheckpoint(dir, { seed });
      loaded.optimizer?.dispose();
      lora = loaded.model;
      loraBase = loaded.lora.base;
      tokenizerDir = loraBase.kind === 'folder' ? loraBase.path : path.join(loraBase.path, 'tokenizer');
      identity = (loaded.extra as { identity?: ModelIdentity } | null)?.identity ?? { family: 'hf', path: dir, configDigest: loaded.base.configDigest, weightsDigest: loaded.manifest.files['adapter_model.safetensors']?.sha256 ?? null, base: loaded.base };
    } else {
      loraBase = loraBaseFromCheckpoint(dir);
      lora = new LoraHfModel(acquireLoraBase(loraBase), settings, { seed });
      tokenizerDir = path.join(dir, 'tokenizer');
      identity = { family: 'hf', path: dir, configDigest: manifest.model.base.configDigest, weightsDigest: loraBase.weightsDigest, base: manifest.model.base };
    }
    fromCheckpoint = dir;
  } else {
    const dir = resolveModelFolder(model.path);
    const settings = checkLoraSettings(readHfConfig(dir).config, loraSettingsFromBlock(block), where);
    loraBase = loraBaseFromFolder(dir);
    lora = new LoraHfModel(acquireLoraBase(loraBase, { verified: true }), settings, { seed });
    tokenizerDir = dir;
    const folder = { path: loraBase.path, configDigest: loraBase.configDigest, weightsDigest: loraBase.weightsDigest };
    identity = { family: 'hf', ...folder, base: folder };
    fromCheckpoint = dir;
  }
  let tokenizer: HfTokenizer;
  try {
    tokenizer = HfTokenizer.fromFolder(tokenizerDir);
    if (tokenizer.vocabSize > lora.config.vocabSize) throw new Error(`${path.join(tokenizerDir, 'tokenizer.json')}: the tokenizer has ${tokenizer.vocabSize} ids but the model's vocab_size is ${lora.config.vocabSize}: the tokenizer does not belong to these weights`);
  } catch (error) {
    lora.dispose();
    throw error;
  }
  // PEFT's lora_dropout acts in training passes; decoding (prefill/decodeStep) never drops.
  lora.training = lora.settings!.dropout > 0;
  const source: PolicyModelSource = { family: 'hf', path: loraBase.path, dtype: model.dtype, tokenizerDir, prompts, lora: { settings: lora.settings!, base: loraBase } };
  const policy = new PolicyRuntime(id, policyConfig, lora, withPrompts(tokenizer), createOptimizer(lora, policyConfig.optimizer), source, identity);
  return { policy, fromCheckpoint };
}

/**
 * Save every policy of a run at an RL step (model, optimizer state, tokenizer, config). On a
 * backend without synchronous readback (webgpu) the weights and moments are read asynchronously
 * first (readback.ts `withReadAhead`); the files are the same.
 */
export async function savePolicies(dir: string, policies: Map<string, PolicyRuntime>, config: RunConfig, step: number, extra: object): Promise<string[]> {
  const written: string[] = [];
  for (const [id, policy] of policies) {
    const target = path.join(dir, id);
    const optimizer = await syncWhereReadable<Adam | AdamState>(() => policy.optimizer, () => policy.optimizer.getStateAsync());
    await withReadAhead(policy.model.variables, () => savePolicyCheckpoint(target, policy, { optimizer, config, step, extra: { ...extra, policyVersion: policy.version } }));
    written.push(target);
  }
  return written;
}

/** Load policies saved by `savePolicies`, restoring optimizer state and versions exactly. */
export function loadPolicies(dir: string, config: RunConfig): { policies: Map<string, PolicyRuntime>; step: number; extra: unknown } {
  const policies = new Map<string, PolicyRuntime>();
  let step = -1;
  let extra: unknown = null;
  // A served policy has no checkpoint (its weights are the endpoint's).
  for (const id of trainedPolicyIds(config)) {
    const manifest = readAnyCheckpointManifest(path.join(dir, id));
    if (manifest.family === 'hf' && manifest.lora) {
      const loaded = loadLoraCheckpoint(path.join(dir, id), { seed: (config.seed ^ hashString(`policy:${id}`)) >>> 0 });
      const optimizer = loaded.optimizer ?? createOptimizer(loaded.model, config.policies[id].optimizer);
      const { base: loraBase } = loaded.lora;
      // The base's own tokenizer, not this checkpoint's copy: older checkpoints of a run are pruned as it goes.
      const tokenizerDir = loraBase.kind === 'folder' ? loraBase.path : path.join(loraBase.path, 'tokenizer');
      const source: PolicyModelSource = { family: 'hf', path: loraBase.path, dtype: 'float32', tokenizerDir, prompts: loaded.prompts, lora: loaded.lora };
      const saved = (loaded.extra as { identity?: ModelIdentity } | null)?.identity;
      const identity = saved ?? { family: 'hf', path: loraBase.path, configDigest: loaded.base.configDigest, weightsDigest: loaded.base.weightsDigest, base: loaded.base };
      const tokenizer = hfPolicyTokenizer(loaded.tokenizer, loaded.prompts.systemPrompts, { enableThinking: loaded.prompts.enableThinking });
      loaded.model.training = loaded.lora.settings.dropout > 0;
      policies.set(id, new PolicyRuntime(id, config.policies[id], loaded.model, tokenizer, optimizer, source, identity));
      step = loaded.step;
      extra = loaded.extra;
      continue;
    }
    if (manifest.family === 'hf') {
      const loaded = loadHfCheckpoint(path.join(dir, id));
      const optimizer = loaded.optimizer ?? createOptimizer(loaded.model, config.policies[id].optimizer);
      // The base folder, not this checkpoint's copy: older checkpoints of a run are pruned as it goes.
      const source: PolicyModelSource = { family: 'hf', path: loaded.base.path, dtype: 'float32', tokenizerDir: loaded.base.path, prompts: loaded.prompts };
      const saved = (loaded.extra as { identity?: ModelIdentity } | null)?.identity;
      const identity = saved ?? { family: 'hf', path: loaded.base.path, configDigest: loaded.base.configDigest, weightsDigest: loaded.base.weightsDigest, base: loaded.base };
      const tokenizer = hfPolicyTokenizer(loaded.tokenizer, loaded.prompts.systemPrompts, { enableThinking: loaded.prompts.enableThinking });
      policies.set(id, new PolicyRuntime(id, config.policies[id], loaded.model, tokenizer, optimizer, source, identity));
      step = loaded.step;
      extra = loaded.extra;
      continue;
    }
    const loaded = loadCheckpoint(path.join(dir, id));
    const optimizer = loaded.optimizer ?? createOptimizer(loaded.model, config.policies[id].optimizer);
    const source = gptSource(loaded.model.config, loaded.tokenizer);
    const saved = (loaded.extra as { identity?: ModelIdentity } | null)?.identity;
    // The optimizer's own step count already counts the updates; baseVersion stays 0.
    policies.set(id, new PolicyRuntime(id, config.policies[id], loaded.model, new CharPolicyTokenizer(loaded.tokenizer), optimizer, source, saved ?? gptIdentity(source, null, null)));
    step = loaded.step;
    extra = loaded.extra;
  }
  if (step < 0) throw new Error(`no policy checkpoints in ${dir}`);
  return { policies, step, extra };
}
