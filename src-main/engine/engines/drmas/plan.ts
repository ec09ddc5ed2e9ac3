/**
 * DrMAS's plan (issue 38): the Studio's agents as DrMAS agents on its math environment
 * (langfengQ/DrMAS@19c632bc, `examples/drmas_trainer/run_math.sh` is the shape). DrMAS's own keys:
 * `agent.agent_ids`, `agent.model_ids`, `agent.model_sharing`, `agent.orchestra_type`,
 * `+agent.agent_specific_parameters.actor.*=[per agent]`, `algorithm.group_by_agent_id` (Dr. MAS's
 * agent-wise normalization), `env.rollout.n` (the group; `actor_rollout_ref.rollout.n` must stay 1,
 * `main_ppo.py:160`).
 *
 * The Corrector. DrMAS ships two orchestras (`math`: Solver ↔ Verifier; `search`) chosen by an
 * if/elif in `MultiAgentTrajectoryCollector.__init__` (`rollout_loop.py:396-401`) with no plug-in
 * point, and registers no "Corrector Agent". With `engine.drmas.orchestra=marsrl` (the default) the
 * Studio's hook — its own code, loaded in every worker by Ray's `worker_process_setup_hook` —
 * registers a Corrector agent and replaces the `math` orchestra's class with MarsRL's chain:
 * Solver, then per round Verifier → Corrector on the rejected items (`agent.orchestra_type` stays
 * `math`, which DrMAS accepts; `agent.orchestra.math.max_loop_num` = rounds + 1). With
 * `orchestra=math` DrMAS's own loop runs: the Solver re-solves after a rejection and no Corrector
 * exists.
 *
 * Rewards. DrMAS gives every turn of a trajectory the environment's episode reward (its
 * EpisodeRewardManager), minus `invalid_action_penalty_coef` for a turn without a boxed answer or a
 * verify tag: that is the Studio's shared scheme with a format penalty; decoupled rewards and role
 * scales are refused.
 */
import path from 'node:path';
import { ROLES, type Role } from '#shared/agents';
import type { RunConfig } from '../../config/schema';
import type { EngineConfig } from '../../config/engine';
import { STUDIO_DATA_SOURCE } from '../dataset';
import { float, loadKeySet, override, overrideText, shellLine, shellQuote, type HydraValue, type Override } from '../hydra';
import { Issues, commonRefusals, commonWarnings, finishOverrides, grpoOverrides, planDataset, planLayout, planMetadata, planModels, planSubmissionId, ppoLossOverrides, rolloutOverrides, trainerOverrides } from '../plan-common';
import type { FollowSpec } from '../follow/spec';
import type { AttemptLayout, EnginePlan, PlanContext } from '../types';
import { DRMAS_AGENT_IDS, drmasEngineAgents, drmasWorkerGroups } from './agents';

export const DRMAS_VERSION = '0.3.1.dev';
export const DRMAS_KEYS = '19c632bc';
/** The hook module and function Ray runs in every worker of the job (resources/engines/drmas/). */
export const DRMAS_HOOK = 'marsrl_drmas_hook.install';

/** The roles that act in this run, in DrMAS's agent order. */
function rolesOf(config: RunConfig, engine: EngineConfig): Role[] {
  if (config.rollout.rounds === 0) return ['solver'];
  return engine.drmas.orchestra === 'marsrl' ? [...ROLES] : ['solver', 'verifier'];
}

/** Whether agents share weights, as DrMAS can say it: sharing is by model id, all or nothing per model. */
function sharingOf(config: RunConfig, roles: readonly Role[], models: Map<string, string>, issues: Issues): boolean {
  const policyOf = (r: Role) => config.agents[r];
  const shared = roles.some((a, i) => roles.some((b, j) => j > i && policyOf(a) === policyOf(b)));
  if (!shared) {
    // Separate policies: DrMAS without sharing gives every agent its own worker group, whatever the folders.
    return false;
  }
  // With agent.model_sharing=True DrMAS puts every agent with the same model id in one group, so
  // two policies on one folder would be merged into one.
  for (const a of roles) {
    for (const b of roles) {
      if (a < b && policyOf(a) !== policyOf(b) && models.get(policyOf(a)) === models.get(policyOf(b))) {
        issues.add(
          `agents.${b}`,
          `DrMAS shares weights by model (agent.model_sharing=True puts every agent with the same model in one policy), so ${a} and ${b} on the same folder would share one policy although agents maps them to "${policyOf(a)}" and "${policyOf(b)}"; share all of them, or give engine.model.${policyOf(b)} another folder`,
        );
      }
    }
  }
  return true;
}

function refusals(config: RunConfig, engine: EngineConfig, roles: readonly Role[], issues: Issues): void {
  const gpus = engine.gpus_per_node * engine.nodes;
  if (config.reward.scheme !== 'shared') {
    issues.add('reward.scheme', 'DrMAS gives every turn its trajectory\'s episode reward (EpisodeRewardManager), the Studio\'s shared scheme; set reward.scheme=shared', config.reward.scheme);
  }
  for (const role of ROLES) {
    if (config.reward.scale[role] !== 1) issues.add(`reward.scale.${role}`, 'DrMAS has no per-role reward scale; set it to 1', config.reward.scale[role]);
  }
  if (config.advantage.mode === 'agent-mean' || config.advantage.mode === 'agent-std') {
    issues.add('advantage.mode', `DrMAS normalizes by the group's (μ, σ) (global) or each agent's (μ_k, σ_k) (agentwise, group_by_agent_id), optionally without σ (no-std); it has no ${config.advantage.mode}`, config.advantage.mode);
  }
  if (config.rollout.problems_per_step % gpus !== 0) {
    issues.add('rollout.problems_per_step', `DrMAS needs data.train_batch_size × rollout.n (n is 1 in DrMAS) = ${config.rollout.problems_per_step} divisible by the ${gpus} GPUs (real_train_batch_size must be divisible by total n_gpus)`, config.rollout.problems_per_step);
  }
  if (engine.drmas.orchestra === 'marsrl' && !engine.drmas.hook && roles.includes('corrector')) {
    issues.add('engine.drmas.hook', 'the marsrl orchestra (Solver → Verifier → Corrector) is the Studio hook\'s code; DrMAS has no Corrector without it. Set engine.drmas.hook=true, or engine.drmas.orchestra=math', false);
  }
  if (engine.gpus_per_node % engine.tensor_parallel !== 0) {
    issues.add('engine.tensor_parallel', `rollout tensor parallelism (${engine.tensor_parallel}) must divide the GPUs per node (${engine.gpus_per_node})`, engine.tensor_parallel);
  }
}

/** One actor setting: a plain override when every agent has the same value, a per-agent list otherwise (or always, for `perAgent`). */
function actorSetting(key: string, values: HydraValue[], perAgent: boolean): Override[] {
  const same = values.every((v) => JSON.stringify(v) === JSON.stringify(values[0]));
  if (same && !perAgent) return [override(`actor_rollout_ref.actor.${key}`, values[0])];
  return [override(`actor_rollout_ref.actor.${key}`, null), override(`agent.agent_specific_parameters.actor.${key}`, values, '+')];
}

export function planDrmas(config: RunConfig, engine: EngineConfig, context: PlanContext): EnginePlan {
  const issues = new Issues();
  const warnings = commonWarnings(config, engine);
  const workingDir = engine.working_dir ?? context.probe.drmasRoot;
  if (workingDir === null) {
    issues.add('engine.working_dir', `give DrMAS's checkout where the job runs (the folder holding verl/ and agent_system/), e.g. --set engine.working_dir=/opt/DrMAS; ${engine.python} does not have DrMAS installed in editable mode`);
  }
  if (engine.version === undefined && context.probe.verl !== null && !context.probe.drmas && engine.working_dir === undefined) {
    issues.add('engine.kind', `${engine.python} has veRL ${context.probe.verl}, not DrMAS; set engine.kind=verl, or engine.python to DrMAS's environment`);
  }
  const roles = rolesOf(config, engine);
  commonRefusals(config, engine, roles, issues);
  refusals(config, engine, roles, issues);
  const keys = loadKeySet('drmas', DRMAS_KEYS);
  const layout = planLayout(engine, context, issues);
  const models = planModels(config, engine, roles, issues);
  const sharing = sharingOf(config, roles, models, issues);
  const agentIds = roles.map((r) => DRMAS_AGENT_IDS[r]);
  const modelIds = roles.map((r) => models.get(config.agents[r]) ?? '');
  const groups = models.size > 0 && modelIds.every(Boolean) ? drmasWorkerGroups(agentIds, modelIds, sharing) : [];
  const policies = roles.map((r) => config.policies[config.agents[r]]?.optimizer);
  const tensorboard = engine.tensorboard ?? context.probe.tensorboard !== null;
  if (!tensorboard) warnings.push('DrMAS logs metrics only to its console here (tensorboard is not installed where the job runs): values are rounded to 3 decimals, so learning rates and small losses read 0.000. pip install tensorboard there for full precision.');
  if (config.optimization.minibatch_size !== 64) {
    warnings.push('optimization.minibatch_size is not used: DrMAS sizes each agent\'s mini-batch from its turns (use_adaptive_ppo_mini_batch_size, one update per step, as its math example).');
  }
  const { trainFile, testFile, files: datasetFiles } = planDataset(config, engine, layout, 'drmas');
  const micro = engine.micro_batch_per_gpu;
  const k = config.eval.k;
  const penalty = config.reward.format_penalty;
  const agentwise = config.advantage.mode === 'agentwise' || config.advantage.mode === 'no-std';

  const o: Override[] = [
    ...grpoOverrides(config, engine, { trainFile, testFile }),
    // Dr. MAS's agent-wise normalization: each agent's advantages over its own turns of the group.
    override('algorithm.group_by_agent_id', agentwise),
    // DrMAS: the number of validation environments (env_manager.py passes env_num=val_batch_size).
    override('data.val_batch_size', config.eval.problems),
    override('data.truncation', engine.truncation ?? 'middle'),
    override('data.return_raw_chat', true),
    override('actor_rollout_ref.model.path', null),
    override('actor_rollout_ref.model.use_remove_padding', true),
    ...actorSetting('optim.lr', policies.map((p) => float(p?.lr ?? 1e-6)), true),
    ...actorSetting('optim.weight_decay', policies.map((p) => float(p?.weight_decay ?? 0)), false),
    ...actorSetting('grad_clip', policies.map((p) => float(p?.grad_clip ?? 1)), false),
    ...actorSetting('ppo_micro_batch_size_per_gpu', roles.map(() => micro), true),
    override('actor_rollout_ref.actor.use_adaptive_ppo_mini_batch_size', true),
    override('actor_rollout_ref.actor.ppo_mini_update_num', 1),
    ...ppoLossOverrides(config),
    override('actor_rollout_ref.actor.use_invalid_action_penalty', penalty > 0),
    ...(penalty > 0 ? [override('actor_rollout_ref.actor.invalid_action_penalty_coef', float(penalty))] : []),
    override('actor_rollout_ref.actor.checkpoint.contents', ['model', 'optimizer', 'extra', 'hf_model']),
    ...rolloutOverrides(config, engine),
    // DrMAS keeps rollout.n at 1 and makes the GRPO group with env.rollout.n (its AssertionError otherwise).
    override('actor_rollout_ref.rollout.n', 1),
    override('agent.agent_ids', agentIds),
    override('agent.model_ids', modelIds),
    override('agent.model_sharing', sharing),
    override('agent.orchestra_type', 'math'),
    override('agent.orchestra.math.max_loop_num', config.rollout.rounds + 1),
    override('env.env_name', 'math'),
    override('env.seed', config.seed),
    override('env.rollout.n', config.rollout.solver_group),
    override('env.rollout.val_n', k),
    override('trainer.logger', tensorboard ? ['console', 'tensorboard'] : ['console']),
    ...trainerOverrides(config, engine, context, layout),
    override('trainer.critic_warmup', 0),
  ];
  const overrides = finishOverrides(o, engine.overrides, keys, issues);
  issues.throwIfAny();

  const texts = overrides.map(overrideText);
  const argv = [engine.python, '-m', 'verl.trainer.main_ppo', ...texts];
  const hook = engine.drmas.hook;
  const follow = drmasFollowSpec(layout, groups, tensorboard, k, hook);
  return {
    kind: 'drmas',
    engineVersion: DRMAS_VERSION,
    layout,
    submissionId: planSubmissionId(context),
    argv,
    // DrMAS imports agent_system/ from the current folder (it is not an installed package), as its scripts run from the checkout.
    entrypoint: `cd ${shellQuote(workingDir ?? '/')} && ${shellLine(argv)}`,
    overrides: texts,
    runtimeEnv: {
      env_vars: {
        // ${PYTHONPATH} is expanded by Ray (runtime_env env_vars reference existing variables), so the cluster's own path is kept.
        PYTHONPATH: `${layout.codeDir}:${workingDir ?? ''}:\${PYTHONPATH}`,
        ...(tensorboard ? { TENSORBOARD_DIR: layout.tensorboardDir } : {}),
        ...(hook ? { MARSRL_DRMAS_ORCHESTRA: engine.drmas.orchestra } : {}),
      },
      ...(hook ? { worker_process_setup_hook: DRMAS_HOOK } : {}),
    },
    metadata: planMetadata(context, 'drmas'),
    files: [
      ...datasetFiles,
      ...(hook ? [{ path: path.posix.join(layout.codeDir, 'marsrl_drmas_hook.py'), kind: 'resource' as const, resource: 'engines/drmas/marsrl_drmas_hook.py' }] : []),
    ],
    follow,
    warnings,
  };
}

/** What the follower reads of a DrMAS attempt: TensorBoard or console metrics, the rollout dumps, one agent per worker group. */
function drmasFollowSpec(layout: AttemptLayout, groups: ReturnType<typeof drmasWorkerGroups>, tensorboard: boolean, k: number, hook: boolean): FollowSpec {
  return {
    engine: 'drmas',
    engineVersion: DRMAS_VERSION,
    dumpOrder: 'drmas',
    uid: false,
    metricSource: tensorboard ? 'tensorboard' : 'console',
    consoleActor: 'TaskRunner',
    files: {
      attemptDir: layout.attemptDir,
      metricsFile: null,
      rolloutDir: layout.rolloutDir,
      validationDir: null,
      tensorboardDir: tensorboard ? layout.tensorboardDir : null,
      checkpointsDir: layout.checkpointsDir,
    },
    runDir: layout.runDir,
    localRunDir: layout.localRunDir,
    attempt: layout.attempt,
    agents: drmasEngineAgents(groups),
    dataSources: [STUDIO_DATA_SOURCE],
    valN: k,
    hook,
  };
}
