/**
 * What veRL and DrMAS plans share: the attempt layout, the starting models, the Studio settings
 * neither engine can honour (refused with the field named, never silently dropped), the number of
 * epochs that covers the requested steps, and the overrides checked against the engine's own key
 * set the way Hydra checks them.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ConfigIssue } from '../config/load';
import type { Role } from '#shared/agents';
import type { RunConfig } from '../config/schema';
import { attemptLayout, runFolderName, submissionIdOf } from './attempt';
import type { EngineConfig } from '../config/engine';
import { float, hydraRefusal, override, overrideText, parseOverride, type KeySet, type Override } from './hydra';
import { EnginePlanError, type AttemptLayout, type PlanContext, type PlannedFile, type RayEngineKind } from './types';

export class Issues {
  readonly list: ConfigIssue[] = [];
  add(path: string, message: string, value?: unknown): void {
    this.list.push(value === undefined ? { path, message } : { path, message, value });
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw new EnginePlanError(this.list);
  }
}

/** The attempt's folders: `engine.run_root` (the cluster's path) and `engine.mount` (the same folder here). */
export function planLayout(engine: EngineConfig, context: PlanContext, issues: Issues): AttemptLayout {
  const root = engine.run_root ?? context.defaultRunRoot;
  const localRoot = engine.mount ?? root;
  if (engine.run_root !== undefined && !fs.existsSync(localRoot)) {
    const field = engine.mount !== undefined ? 'engine.mount' : 'engine.run_root';
    issues.add(field, `${localRoot} does not exist on this machine; the Studio reads the engine's files there, so the run folder must be on a filesystem both see (mount the cluster's ${root} here and set engine.mount)`);
  }
  const name = runFolderName(context.runId, context.storeTag);
  return attemptLayout(path.posix.join(root, name), path.join(localRoot, name), context.attempt);
}

export function planSubmissionId(context: PlanContext): string {
  return submissionIdOf(context.runId, context.storeTag, context.attempt);
}

/** A model path as the engine receives it (a trailing slash would make DrMAS's `split("/")[-1]` empty). */
function cleanModel(model: string): string {
  return model.length > 1 ? model.replace(/\/+$/, '') : model;
}

/** The starting model of each policy the given roles use (`engine.model`: one for all, or per policy id). */
export function planModels(config: RunConfig, engine: EngineConfig, roles: readonly Role[], issues: Issues): Map<string, string> {
  const out = new Map<string, string>();
  const policies = [...new Set(roles.map((r) => config.agents[r]))];
  if (engine.model === undefined) {
    issues.add('engine.model', `the engine needs a starting model: --set engine.model=/models/Qwen3-4B (an absolute folder where the job runs, or a Hugging Face id)${policies.length > 1 ? `, or one per policy: --set engine.model.${policies[0]}=…` : ''}`);
    return out;
  }
  if (typeof engine.model === 'string') {
    for (const p of policies) out.set(p, cleanModel(engine.model));
    return out;
  }
  for (const key of Object.keys(engine.model)) {
    if (!policies.includes(key)) issues.add(`engine.model.${key}`, `no agent of this run uses policy "${key}"; the policies in use are ${policies.join(', ')}`);
  }
  for (const p of policies) {
    const model = engine.model[p];
    if (model === undefined) issues.add(`engine.model.${p}`, `policy "${p}" has no starting model; give engine.model.${p}=FOLDER (or one engine.model for every policy)`);
    else out.set(p, cleanModel(model));
  }
  return out;
}

/**
 * Studio settings no engine run can honour, refused rather than dropped: the engines score the
 * math task with the shipped reward, compute GRPO's advantage one way (veRL/DrMAS
 * `compute_grpo_outcome_advantage`: unbiased `torch.std`, ε = 1e-6, a group of one gets mean 0 and
 * std 1) and clip gradients always (`clip_grad_norm_(max_norm=grad_clip)`, so 0 would zero them).
 */
export function commonRefusals(config: RunConfig, engine: EngineConfig, roles: readonly Role[], issues: Issues): void {
  if (config.task.family !== 'math') {
    issues.add('task.family', `an engine run trains language models on the math family (boxed answers scored by the shipped reward); "${config.task.family}" is a character task for the Studio's own GPT — set task.family=math`, config.task.family);
  }
  if (config.advantage.std === 'population') {
    issues.add('advantage.std', `${engine.kind} normalizes GRPO groups with the unbiased standard deviation (torch.std); set advantage.std=unbiased`, 'population');
  }
  if (config.advantage.eps !== 1e-6) {
    issues.add('advantage.eps', `${engine.kind} adds a fixed 1e-6 to σ (compute_grpo_outcome_advantage's epsilon is not a config key); set advantage.eps=1e-6`, config.advantage.eps);
  }
  if (config.advantage.single_sample === 'zero' && config.rollout.solver_group === 1) {
    issues.add('advantage.single_sample', `${engine.kind} gives a group of one sample mean 0 and std 1 (its advantage is its raw reward); set advantage.single_sample=verl or a group larger than 1`, 'zero');
  }
  if (config.advantage.verifier_class_balance) {
    issues.add('advantage.verifier_class_balance', `${engine.kind} has no class-balanced Verifier weights; set advantage.verifier_class_balance=false`, true);
  }
  for (const role of roles) {
    const id = config.agents[role];
    const policy = config.policies[id];
    if (policy?.optimizer.grad_clip === 0) {
      issues.add(`policies.${id}.optimizer.grad_clip`, `${engine.kind} always clips the gradient norm (clip_grad_norm_ with max_norm 0 would zero every gradient); give a positive grad_clip such as 1.0, veRL's default`, 0);
    }
    if (policy?.endpoint !== undefined) issues.add(`policies.${id}.endpoint`, `${engine.kind} trains its own copies of the models; a served endpoint cannot be a policy of an engine run`, policy.endpoint);
  }
  if (config.system !== undefined) issues.add('system', 'a reasoning-system run is inference only; the engines train. Remove system or use engine.kind=studio');
  if (config.task.train_size < config.rollout.problems_per_step) {
    issues.add('task.train_size', `${config.task.train_size} problems make no full batch of rollout.problems_per_step=${config.rollout.problems_per_step} (the engine's dataloader drops the last incomplete batch)`);
  }
}

/** Settings the engine ignores, said once. */
export function commonWarnings(config: RunConfig, engine: EngineConfig): string[] {
  const out = [
    'pipeline.* (MarsRL\'s agentic pipeline and segment rollout) is the Studio trainer\'s; the engine schedules its own rollouts and updates.',
    'pretrain.* is not used: the engine starts from engine.model.',
  ];
  if (engine.kind === 'drmas') out.push('prompts.* is not used: DrMAS\'s agents build their own prompts (agent_system/agent/agents/math/*.py; the Corrector\'s is the Studio hook\'s).');
  if (config.reward.scheme === 'decoupled' && engine.kind === 'verl') out.push('reward.scheme: with one policy (the Solver alone) decoupled and shared rewards are the same: 1 for a right answer.');
  return out;
}

/**
 * Epochs enough for `optimization.steps` (veRL and DrMAS stop at `total_training_steps`, but also
 * when the epochs run out: `len(dataloader) * total_epochs`, drop_last=True).
 */
export function epochsFor(config: RunConfig): number {
  const batches = Math.max(1, Math.floor(config.task.train_size / config.rollout.problems_per_step));
  return Math.max(1, Math.ceil(config.optimization.steps / batches));
}

/** Test and save frequencies: the Studio's 0 means "only at the end", the engines' -1 means "never". */
function everyOrEnd(every: number, steps: number): number {
  return every > 0 ? every : Math.max(1, steps);
}

/**
 * The `trainer.*` settings veRL and DrMAS share (DrMAS is a veRL fork: `verl/trainer/config/
 * ppo_trainer.yaml` in both): the machine, how long, when to validate and save, resuming from the
 * run's checkpoints, and where this attempt's dumps and Hydra's folder go. Every path absolute.
 */
export function trainerOverrides(config: RunConfig, engine: EngineConfig, context: PlanContext, layout: AttemptLayout): Override[] {
  const steps = config.optimization.steps;
  return [
    override('trainer.project_name', 'marsrl'),
    override('trainer.experiment_name', `run-${context.runId}`),
    override('trainer.n_gpus_per_node', engine.gpus_per_node),
    override('trainer.nnodes', engine.nodes),
    override('trainer.total_epochs', epochsFor(config)),
    override('trainer.total_training_steps', steps),
    override('trainer.save_freq', everyOrEnd(config.optimization.checkpoint_every, steps)),
    override('trainer.test_freq', everyOrEnd(config.eval.every, steps)),
    override('trainer.val_before_train', true),
    override('trainer.resume_mode', 'auto'),
    override('trainer.default_local_dir', layout.checkpointsDir),
    override('trainer.rollout_data_dir', layout.rolloutDir),
    override('hydra.run.dir', layout.hydraDir),
  ];
}

/**
 * The final override list: the planned ones, then the user's raw overrides (a raw override of a
 * key the plan sets replaces the planned one), each checked against the engine's key set the way
 * Hydra checks it, so a typo is refused here, naming the override, and not after the job starts.
 */
export function finishOverrides(planned: readonly Override[], raw: readonly string[], keys: KeySet, issues: Issues): Override[] {
  const user: Override[] = [];
  raw.forEach((text, i) => {
    try {
      user.push(parseOverride(text));
    } catch (error) {
      issues.add(`engine.overrides.${i}`, (error as Error).message, text);
    }
  });
  const replaced = new Set(user.map((o) => o.key));
  const all = [...planned.filter((o) => !replaced.has(o.key)), ...user];
  all.forEach((o) => {
    const refusal = hydraRefusal(o, keys.keys);
    if (refusal === null) return;
    const userIndex = user.indexOf(o);
    if (userIndex >= 0) issues.add(`engine.overrides.${userIndex}`, `${refusal} (checked against ${keys.source})`, overrideText(o));
    else issues.add('engine.version', `the planned override ${overrideText(o)} is not accepted by this engine version (${keys.source}): ${refusal}`);
  });
  return all;
}

/**
 * The run's dataset: the user's parquet files (`engine.dataset`), or the Studio's task exported
 * into the run folder in the engine's layout before submission (`files`).
 */
export function planDataset(config: RunConfig, engine: EngineConfig, layout: AttemptLayout, format: RayEngineKind): { trainFile: string; testFile: string; files: PlannedFile[] } {
  if (engine.dataset) return { trainFile: engine.dataset.train, testFile: engine.dataset.test, files: [] };
  const trainFile = path.posix.join(layout.dataDir, 'train.parquet');
  const testFile = path.posix.join(layout.dataDir, 'test.parquet');
  return {
    trainFile,
    testFile,
    files: [
      { path: trainFile, kind: 'dataset', format, split: 'train', rows: config.task.train_size },
      { path: testFile, kind: 'dataset', format, split: 'test', rows: config.eval.problems },
    ],
  };
}

/** What the Studio tags its Ray jobs with (Ray wants strings): whose run and attempt, from which store, which engine. */
export function planMetadata(context: PlanContext, kind: RayEngineKind): Record<string, string> {
  return { marsrl_run: String(context.runId), marsrl_attempt: String(context.attempt), marsrl_store: context.storeTag, marsrl_engine: kind };
}

/**
 * GRPO and its data, as both engines take them (`algorithm.*`, `data.*` of veRL's
 * ppo_trainer.yaml): the group baseline, divided by the group's std unless `advantage.mode` is
 * no-std (Dr. GRPO), no KL in the reward; the Studio's prompts per step and length budgets.
 */
export function grpoOverrides(config: RunConfig, engine: EngineConfig, dataset: { trainFile: string; testFile: string }): Override[] {
  return [
    override('algorithm.adv_estimator', 'grpo'),
    override('algorithm.norm_adv_by_std_in_grpo', config.advantage.mode !== 'no-std'),
    override('algorithm.use_kl_in_reward', false),
    override('data.train_files', dataset.trainFile),
    override('data.val_files', dataset.testFile),
    override('data.train_batch_size', config.rollout.problems_per_step),
    override('data.max_prompt_length', engine.max_prompt_tokens),
    override('data.max_response_length', config.rollout.max_response_tokens),
    override('data.filter_overlong_prompts', true),
    override('data.apply_chat_template_kwargs.enable_thinking', false, '+'),
  ];
}

/** The PPO loss of every actor: clipping, epochs, KL as a loss term (low_var_kl, as veRL's GRPO examples) when kl_coef > 0, no entropy bonus. */
export function ppoLossOverrides(config: RunConfig): Override[] {
  const kl = config.optimization.kl_coef > 0;
  return [
    override('actor_rollout_ref.actor.clip_ratio', float(config.optimization.ppo_clip)),
    override('actor_rollout_ref.actor.ppo_epochs', config.optimization.ppo_epochs),
    override('actor_rollout_ref.actor.use_kl_loss', kl),
    ...(kl ? [override('actor_rollout_ref.actor.kl_loss_coef', float(config.optimization.kl_coef)), override('actor_rollout_ref.actor.kl_loss_type', 'low_var_kl')] : []),
    override('actor_rollout_ref.actor.entropy_coeff', float(0)),
  ];
}

/**
 * Sampling, for training and validation (`actor_rollout_ref.rollout.*`): the Studio's temperature,
 * top-p and top-k (0 is veRL's -1), greedy validation unless eval.k > 1; the inference engine and
 * its memory; the reference policy's log-prob batches when a KL term needs them.
 */
export function rolloutOverrides(config: RunConfig, engine: EngineConfig): Override[] {
  const k = config.eval.k;
  const micro = engine.micro_batch_per_gpu;
  return [
    override('actor_rollout_ref.rollout.name', engine.rollout_engine),
    override('actor_rollout_ref.rollout.temperature', float(config.rollout.temperature)),
    override('actor_rollout_ref.rollout.top_p', float(config.rollout.top_p)),
    override('actor_rollout_ref.rollout.top_k', config.rollout.top_k > 0 ? config.rollout.top_k : -1),
    override('actor_rollout_ref.rollout.tensor_model_parallel_size', engine.tensor_parallel),
    override('actor_rollout_ref.rollout.gpu_memory_utilization', float(engine.gpu_memory_utilization)),
    override('actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu', micro),
    override('actor_rollout_ref.rollout.val_kwargs.do_sample', k > 1),
    override('actor_rollout_ref.rollout.val_kwargs.temperature', float(k > 1 ? config.rollout.temperature : 0)),
    override('actor_rollout_ref.rollout.val_kwargs.top_p', float(k > 1 ? config.rollout.top_p : 1)),
    ...(config.optimization.kl_coef > 0 ? [override('actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu', micro)] : []),
  ];
}
