/**
 * veRL's plan (issue 38): the Studio's settings as `python3 -m verl.trainer.main_ppo key=value …`
 * for GRPO on the Studio's math task with one policy (the Solver). Key names and defaults are
 * veRL's, version by version (resources/engines/verl/keys-*.json, flattened from each release's
 * `_generated_ppo_trainer.yaml`); the refusals repeat veRL's own checks (v0.7.1
 * `verl/utils/config.py:74-190`, `workers/fsdp_workers.py:249-268`) so the form names the field
 * before a GPU is touched.
 *
 * Mapping (Studio → veRL):
 *   rollout.problems_per_step → data.train_batch_size (prompts per step)
 *   rollout.solver_group      → actor_rollout_ref.rollout.n (the GRPO group)
 *   rollout.temperature/top_p/top_k → actor_rollout_ref.rollout.* (top_k 0 → veRL's -1)
 *   rollout.max_response_tokens → data.max_response_length
 *   optimization.steps        → trainer.total_training_steps (+ enough total_epochs)
 *   optimization.minibatch_size (turns) → actor.ppo_mini_batch_size (prompts) = minibatch / n
 *   optimization.ppo_epochs / ppo_clip / kl_coef → actor.ppo_epochs / clip_ratio / use_kl_loss+kl_loss_coef
 *   optimization.checkpoint_every → trainer.save_freq; eval.every → trainer.test_freq (0: at the end)
 *   policies.<solver>.optimizer.{lr, weight_decay, beta1, beta2, grad_clip} → actor.optim.*, actor.grad_clip
 *   advantage.mode no-std     → algorithm.norm_adv_by_std_in_grpo=False (Dr. GRPO); with one agent the
 *                               other modes all normalize by the group's μ and σ, which is GRPO
 *   eval.k / eval.problems    → rollout.val_kwargs.n (sampled when k > 1) / rows of test.parquet
 *   reward.format_penalty, reward.scale.solver → the shipped reward function, by environment variable
 */
import path from 'node:path';
import type { RunConfig } from '../../config/schema';
import type { EngineConfig } from '../../config/engine';
import { STUDIO_DATA_SOURCE } from '../dataset';
import { float, loadKeySet, override, overrideText, shellLine, type Override } from '../hydra';
import { Issues, commonRefusals, commonWarnings, finishOverrides, grpoOverrides, planDataset, planLayout, planMetadata, planModels, planSubmissionId, ppoLossOverrides, rolloutOverrides, trainerOverrides } from '../plan-common';
import type { FollowSpec } from '../follow/spec';
import type { AttemptLayout, EnginePlan, PlanContext } from '../types';

/** The veRL releases whose key sets are vendored, oldest first. */
export const VERL_KEY_VERSIONS = ['0.6.1', '0.7.0', '0.7.1', '0.8.0', '0.9.0'] as const;

export function parseVersion(v: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

function atLeast(v: [number, number, number], major: number, minor: number, patch = 0): boolean {
  return v[0] !== major ? v[0] > major : v[1] !== minor ? v[1] > minor : v[2] >= patch;
}

/**
 * The vendored key set for an installed version: the release of the same minor (0.7.0 and 0.7.1
 * differ: 0.7.1 renamed the reward keys), or the newest for a newer veRL (with a warning). Before
 * 0.6 veRL has no `file` logger, the Studio's metric source: refused.
 */
export function verlKeyVersion(version: string): { keys: string; newer: boolean } | null {
  const v = parseVersion(version);
  if (!v || !atLeast(v, 0, 6)) return null;
  if (!atLeast(v, 0, 7)) return { keys: '0.6.1', newer: false };
  if (!atLeast(v, 0, 7, 1)) return { keys: '0.7.0', newer: false };
  if (!atLeast(v, 0, 8)) return { keys: '0.7.1', newer: false };
  if (!atLeast(v, 0, 9)) return { keys: '0.8.0', newer: false };
  return { keys: '0.9.0', newer: atLeast(v, 0, 10) };
}

export const VERL_MODULE = 'verl.trainer.main_ppo';

function refusals(config: RunConfig, engine: EngineConfig, issues: Issues): { mini: number } {
  const n = config.rollout.solver_group;
  const gpus = engine.gpus_per_node * engine.nodes;
  const batch = config.rollout.problems_per_step;
  if (config.rollout.rounds !== 0) {
    issues.add('rollout.rounds', 'veRL trains one policy on single answers (GRPO); set rollout.rounds=0, or engine.kind=drmas for Solver, Verifier and Corrector agents', config.rollout.rounds);
  }
  if ((batch * n) % gpus !== 0) {
    issues.add('rollout.problems_per_step', `veRL needs data.train_batch_size × rollout.n = ${batch} × ${n} = ${batch * n} divisible by the ${gpus} GPUs (real_train_batch_size must be divisible by minimal possible batch size)`, batch);
  }
  const minibatch = config.optimization.minibatch_size;
  const mini = minibatch / n;
  if (!Number.isInteger(mini) || mini < 1) {
    issues.add('optimization.minibatch_size', `veRL counts its mini-batch in prompts (ppo_mini_batch_size × rollout.n samples), so the turns per update must be a multiple of rollout.solver_group (${n}), e.g. ${n * Math.max(1, Math.round(minibatch / n))}`, minibatch);
  } else if (mini > batch) {
    issues.add('optimization.minibatch_size', `train_batch_size (${batch}) must be >= actor.ppo_mini_batch_size (${mini} = ${minibatch} turns / ${n}); use at most ${batch * n} turns per update`, minibatch);
  } else {
    const perGpu = (mini * n) / gpus;
    if (!Number.isInteger(perGpu) || perGpu < 1) {
      issues.add('optimization.minibatch_size', `the mini-batch of ${mini * n} samples does not split over ${gpus} GPUs (normalized ppo_mini_batch_size must be a positive integer)`, minibatch);
    } else if (perGpu % engine.micro_batch_per_gpu !== 0) {
      issues.add('engine.micro_batch_per_gpu', `normalized ppo_mini_batch_size (${perGpu} samples per GPU) should be divisible by ppo_micro_batch_size_per_gpu (${engine.micro_batch_per_gpu}); use a divisor of ${perGpu}`, engine.micro_batch_per_gpu);
    }
  }
  if (engine.gpus_per_node % engine.tensor_parallel !== 0) {
    issues.add('engine.tensor_parallel', `rollout tensor parallelism (${engine.tensor_parallel}) must divide the GPUs per node (${engine.gpus_per_node})`, engine.tensor_parallel);
  }
  return { mini };
}

export function planVerl(config: RunConfig, engine: EngineConfig, context: PlanContext): EnginePlan {
  const issues = new Issues();
  const version = engine.version ?? context.probe.verl;
  const warnings = commonWarnings(config, engine);
  if (version === null) {
    issues.add('engine.python', `veRL is not importable by ${engine.python} (import verl failed where the job runs); install veRL there (pip install verl) or point engine.python at the interpreter that has it`);
    issues.throwIfAny();
  }
  if (context.probe.drmas && engine.version === undefined) {
    issues.add('engine.kind', `${engine.python} has DrMAS installed (its verl is ${version}); DrMAS and veRL cannot share one environment. Set engine.kind=drmas, or engine.python to a veRL environment`);
  }
  const keyVersion = verlKeyVersion(version!);
  if (keyVersion === null) {
    issues.add('engine.version', `veRL ${version} has no file logger (added in 0.6.0), the Studio's metric source; install veRL 0.6 or newer`, version);
    issues.throwIfAny();
  }
  if (keyVersion!.newer) warnings.push(`veRL ${version} is newer than the newest the Studio knows (0.9.0); its overrides were checked against 0.9.0's keys.`);
  const keys = loadKeySet('verl', keyVersion!.keys);
  const v = parseVersion(version!)!;

  commonRefusals(config, engine, ['solver'], issues);
  const { mini } = refusals(config, engine, issues);
  const layout = planLayout(engine, context, issues);
  const models = planModels(config, engine, ['solver'], issues);
  const policyId = config.agents.solver;
  const policy = config.policies[policyId];
  const opt = policy?.optimizer;
  const n = config.rollout.solver_group;
  const k = config.eval.k;
  const rewardPrefix = atLeast(v, 0, 7, 1) ? 'reward.custom_reward_function' : 'custom_reward_function';
  const { trainFile, testFile, files: datasetFiles } = planDataset(config, engine, layout, 'verl');
  const rewardFile = path.posix.join(layout.codeDir, 'marsrl_reward.py');
  const micro = engine.micro_batch_per_gpu;

  const o: Override[] = [
    ...grpoOverrides(config, engine, { trainFile, testFile }),
    override('data.prompt_key', 'prompt'),
    override('data.truncation', engine.truncation ?? 'error'),
    override('data.seed', config.seed),
    override('actor_rollout_ref.model.path', models.get(policyId) ?? null),
    override('actor_rollout_ref.model.use_remove_padding', true),
    override('actor_rollout_ref.actor.optim.lr', float(opt?.lr ?? 1e-6)),
    override('actor_rollout_ref.actor.optim.weight_decay', float(opt?.weight_decay ?? 0)),
    override('actor_rollout_ref.actor.optim.betas', [float(opt?.beta1 ?? 0.9), float(opt?.beta2 ?? 0.999)]),
    override('actor_rollout_ref.actor.grad_clip', float(opt?.grad_clip ?? 1)),
    override('actor_rollout_ref.actor.ppo_mini_batch_size', Number.isInteger(mini) ? mini : 1),
    override('actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu', micro),
    ...ppoLossOverrides(config),
    // hf_model: full Hugging Face weights in global_step_N/actor/huggingface/, which the Studio's model tools open.
    override('actor_rollout_ref.actor.checkpoint.save_contents', ['model', 'optimizer', 'extra', 'hf_model']),
    ...rolloutOverrides(config, engine),
    override('actor_rollout_ref.rollout.n', n),
    override('actor_rollout_ref.rollout.val_kwargs.n', k),
    override(`${rewardPrefix}.path`, rewardFile),
    override(`${rewardPrefix}.name`, 'compute_score'),
    override('trainer.logger', engine.tensorboard ? ['console', 'file', 'tensorboard'] : ['console', 'file']),
    ...trainerOverrides(config, engine, context, layout),
    override('trainer.validation_data_dir', layout.validationDir),
    override('trainer.log_val_generations', 0),
  ];
  const overrides = finishOverrides(o, engine.overrides, keys, issues);
  issues.throwIfAny();

  const texts = overrides.map(overrideText);
  const argv = [engine.python, '-m', VERL_MODULE, ...texts];
  const v1 = atLeast(v, 0, 9) && !texts.includes('trainer.use_v1=False');
  const follow = verlFollowSpec(layout, engine, version!, v1, k);
  return {
    kind: 'verl',
    engineVersion: version!,
    layout,
    submissionId: planSubmissionId(context),
    argv,
    entrypoint: shellLine(argv),
    overrides: texts,
    runtimeEnv: {
      env_vars: {
        VERL_FILE_LOGGER_PATH: layout.metricsFile,
        ...(engine.tensorboard ? { TENSORBOARD_DIR: layout.tensorboardDir } : {}),
        // Read by the shipped reward function (resources/engines/verl/marsrl_reward.py).
        MARSRL_FORMAT_PENALTY: String(config.reward.format_penalty),
        MARSRL_REWARD_SCALE: String(config.reward.scale.solver),
      },
    },
    metadata: planMetadata(context, 'verl'),
    files: [
      ...datasetFiles,
      { path: rewardFile, kind: 'resource', resource: 'engines/verl/marsrl_reward.py' },
    ],
    follow,
    warnings,
  };
}

/** What the follower reads of a veRL attempt: the file logger's metrics, the dumps in this release's order, one policy. */
function verlFollowSpec(layout: AttemptLayout, engine: EngineConfig, version: string, v1: boolean, k: number): FollowSpec {
  return {
    engine: 'verl',
    engineVersion: version,
    dumpOrder: v1 ? 'v1' : 'legacy',
    uid: v1,
    metricSource: 'file',
    consoleActor: v1 ? 'TaskRunnerV1' : 'TaskRunner',
    files: {
      attemptDir: layout.attemptDir,
      metricsFile: layout.metricsFile,
      rolloutDir: layout.rolloutDir,
      validationDir: layout.validationDir,
      tensorboardDir: engine.tensorboard ? layout.tensorboardDir : null,
      checkpointsDir: layout.checkpointsDir,
    },
    runDir: layout.runDir,
    localRunDir: layout.localRunDir,
    attempt: layout.attempt,
    agents: [{ engineId: 'solver', wgId: 'actor', role: 'solver' }],
    dataSources: [STUDIO_DATA_SOURCE],
    valN: k,
    hook: false,
  };
}
