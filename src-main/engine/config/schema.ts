/**
 * The one run-configuration schema (issue #2). Every field has a default and a description; the
 * CLI, the HTTP server, the IPC handlers and the new-run form all validate against this object,
 * so an error message reads the same wherever a config enters.
 *
 * Field names are snake_case because they appear in YAML files and `--set a.b=value` overrides.
 */
import { z } from 'zod';

export const ROLES = ['solver', 'verifier', 'corrector'] as const;
export type Role = (typeof ROLES)[number];

export const TASK_FAMILIES = ['sort', 'countdown', 'factor', 'addition', 'jsonl'] as const;
export const SELECTION_STRATEGIES = ['random', 'balanced', 'adaptive'] as const;
export const REWARD_SCHEMES = ['decoupled', 'shared'] as const;
export const ADVANTAGE_MODES = ['agentwise', 'global', 'agent-mean', 'agent-std', 'no-std'] as const;
export const STD_CONVENTIONS = ['unbiased', 'population'] as const;
export const SINGLE_SAMPLE_RULES = ['zero', 'verl'] as const;
export const PIPELINE_MODES = ['sync', 'pipeline'] as const;
export const BACKENDS = ['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'] as const;

const positiveInt = (max: number) => z.number().int().min(1).max(max);

export const ModelSchema = z
  .strictObject({
    d_model: z.number().int().min(8).max(4096).default(64).describe('Width of the residual stream.'),
    n_layers: positiveInt(48).default(2).describe('Number of transformer blocks.'),
    n_heads: positiveInt(64).default(4).describe('Attention heads per block; must divide d_model.'),
    context: z.number().int().min(16).max(8192).default(128).describe('Maximum sequence length in tokens (prompt + response).'),
    mlp_ratio: positiveInt(8).default(4).describe('Hidden width of the MLP as a multiple of d_model.'),
  })
  .refine((m) => m.d_model % m.n_heads === 0, {
    message: 'n_heads must divide d_model (e.g. d_model 64 with 1, 2, 4, 8 or 16 heads)',
    path: ['n_heads'],
  });
export type ModelConfig = z.infer<typeof ModelSchema>;

export const OptimizerSchema = z.strictObject({
  lr: z.number().gt(0).max(1).default(1e-4).describe('RL learning rate (Adam). 1e-3 collapsed a 100k-parameter policy in one step in the prototype; 1e-4 worked.'),
  beta1: z.number().min(0).lt(1).default(0.9).describe('Adam β1.'),
  beta2: z.number().min(0).lt(1).default(0.999).describe('Adam β2.'),
  weight_decay: z.number().min(0).max(1).default(0).describe('Decoupled weight decay (AdamW); 0 disables it.'),
  grad_clip: z.number().min(0).default(1).describe('Global-norm gradient clipping threshold; 0 disables clipping. The per-agent gradient norm is logged before clipping.'),
});
export type OptimizerConfig = z.infer<typeof OptimizerSchema>;

export const PolicySchema = z.strictObject({
  model: ModelSchema.prefault({}).describe('Transformer size of this policy.'),
  optimizer: OptimizerSchema.prefault({}).describe('Optimizer used in RL for this policy.'),
  init: z
    .string()
    .min(1)
    .optional()
    .describe('Starting checkpoint (a folder written by `marsrl pretrain`); when absent the run warms up first.'),
}).describe('One policy: its model size, optimizer and starting checkpoint.');
export type PolicyConfig = z.infer<typeof PolicySchema>;

export const TaskSchema = z.strictObject({
  family: z.enum(TASK_FAMILIES).default('sort').describe('Problem family: sort (checked by order and permutation), countdown (reach a target), factor, addition, or jsonl (your own {question, answer} file).'),
  difficulty: z.number().int().min(1).max(10).default(3).describe('Difficulty knob of the generator (list length, number size, …).'),
  train_size: z.number().int().min(1).max(10_000_000).default(2000).describe('Number of training problems generated from the seed.'),
  test_size: z.number().int().min(1).max(1_000_000).default(200).describe('Number of held-out problems; never overlaps the training set.'),
  jsonl_path: z.string().min(1).optional().describe('Path to a JSONL file of {"question", "answer"} lines; required when family is jsonl.'),
  checker: z.enum(['exact', 'numeric']).default('exact').describe('How a jsonl answer is compared to the reference.'),
});

export const AgentsSchema = z.strictObject({
  solver: z.string().min(1).default('solver').describe('Policy id used by the Solver.'),
  verifier: z.string().min(1).default('verifier').describe('Policy id used by every Verifier round.'),
  corrector: z.string().min(1).default('corrector').describe('Policy id used by every Corrector round.'),
});

export const RolloutSchema = z.strictObject({
  problems_per_step: z.number().int().min(1).max(4096).default(8).describe('Problems sampled for each RL step.'),
  solver_group: z.number().int().min(1).max(256).default(8).describe('Solver samples per problem (the GRPO group; 8 in MarsRL).'),
  select_k: z.number().int().min(1).max(256).default(2).describe('Outputs of the previous agent each later agent selects (2 in MarsRL).'),
  verifier_group: z.number().int().min(1).max(256).default(4).describe('Verifier samples per selected solution.'),
  corrector_group: z.number().int().min(1).max(256).default(4).describe('Corrector samples per selected rejection.'),
  selection: z.enum(SELECTION_STRATEGIES).default('adaptive').describe('How later agents pick inputs: random, balanced (half correct, half wrong), or adaptive (Verifier prefers incorrect solutions, Corrector prefers correct bug reports; best in MarsRL).'),
  rounds: z.number().int().min(0).max(8).default(2).describe('Verify/correct rounds after the Solver (Solver → V1 → C1 → V2 → C2 …); 0 trains the Solver alone.'),
  temperature: z.number().gt(0).max(5).default(1).describe('Sampling temperature for rollouts.'),
  top_p: z.number().gt(0).max(1).default(1).describe('Nucleus sampling threshold for rollouts.'),
  max_response_tokens: z.number().int().min(1).max(65536).default(64).describe('Token budget of one agent response.'),
});

export const RewardSchema = z.strictObject({
  scheme: z.enum(REWARD_SCHEMES).default('decoupled').describe('decoupled: agent-specific rewards (MarsRL); shared: the episode outcome given to every agent turn.'),
  format_penalty: z.number().min(0).max(10).default(0).describe('Subtracted from the reward of a turn whose output cannot be parsed.'),
  scale: z
    .strictObject({
      solver: z.number().gt(0).max(1000).default(1).describe('Reward of a right Solver turn.'),
      verifier: z.number().gt(0).max(1000).default(1).describe('Reward of a right Verifier verdict.'),
      corrector: z.number().gt(0).max(1000).default(1).describe('Reward of a right Corrector turn.'),
    })
    .prefault({})
    .describe('Reward scale per role (Dr. MAS: agents whose rewards differ in scale get inflated advantages under global normalization).'),
});

export const AdvantageSchema = z.strictObject({
  mode: z.enum(ADVANTAGE_MODES).default('agentwise').describe('Normalization (Dr. MAS Table 3): global (μ, σ), agentwise (μ_k, σ_k), agent-mean (μ_k, σ), agent-std (μ, σ_k), no-std (R − μ_k, Dr. GRPO).'),
  std: z.enum(STD_CONVENTIONS).default('unbiased').describe('Standard deviation convention: unbiased (N − 1, the reference code) or population (1/N, Dr. MAS Eq. 5).'),
  single_sample: z.enum(SINGLE_SAMPLE_RULES).default('zero').describe('Statistic over one sample: zero (no baseline, advantage 0) or verl (mean 0, std 1: the raw reward).'),
  eps: z.number().gt(0).max(1).default(1e-6).describe('Added to σ before dividing.'),
});

export const OptimizationSchema = z.strictObject({
  steps: z.number().int().min(0).max(1_000_000).default(40).describe('RL steps to train.'),
  ppo_clip: z.number().gt(0).max(1).default(0.2).describe('PPO clipping range ε for the probability ratio.'),
  ppo_epochs: z.number().int().min(1).max(16).default(1).describe('Passes over each batch of rollouts.'),
  minibatch_size: z.number().int().min(1).max(65536).default(64).describe('Turns per gradient update.'),
  kl_coef: z.number().min(0).max(10).default(0).describe('Weight of the KL penalty to the frozen starting policy; 0 disables it.'),
  nan_tolerance: z.number().int().min(1).max(1000).default(3).describe('Consecutive updates with a NaN/Inf loss or gradient (each skipped) after which the run stops.'),
  checkpoint_every: z.number().int().min(0).max(1_000_000).default(10).describe('Steps between checkpoints; 0 writes only the final one.'),
});

export const PretrainSchema = z.strictObject({
  steps: z.number().int().min(0).max(1_000_000).default(300).describe('Supervised warm-start steps per policy when no init checkpoint is given.'),
  lr: z.number().gt(0).max(1).default(3e-3).describe('Peak warm-start learning rate (linear warm-up, cosine decay).'),
  batch_size: z.number().int().min(1).max(4096).default(32).describe('Sequences per warm-start batch.'),
  warmup_steps: z.number().int().min(0).max(100_000).default(20).describe('Linear warm-up steps.'),
});

export const PipelineSchema = z.strictObject({
  mode: z.enum(PIPELINE_MODES).default('pipeline').describe('sync: generate every agent’s outputs, then train (baseline); pipeline: each agent’s outputs enter its training queue as soon as it finishes (MarsRL).'),
  segment_tokens: z.number().int().min(1).max(65536).default(32).describe('Tokens decoded per segment (S); finished sequences leave after each segment.'),
  max_segments: z.number().int().min(1).max(1024).default(4).describe('Segments per stage (M); unfinished sequences carry over.'),
  max_staleness: z.number().int().min(0).max(1000).default(1).describe('Most policy versions a rollout may lag the trainer; rollout waits rather than exceed it.'),
  gradient_share: z
    .number()
    .min(0)
    .max(0.9)
    .default(0.5)
    .describe('Pipeline mode: the share of each minibatch’s parts offered to the rollout process, which computes their gradients between its segments or while it waits for weights; the trainer computes the rest, and any offered part not yet begun when it gets there; the parts add up to the same gradient. 0 keeps all training in the trainer.'),
  gradient_parts: z
    .number()
    .int()
    .min(2)
    .max(64)
    .default(12)
    .describe('Pipeline mode: parts of about equal tokens a minibatch is cut into for sharing its gradient (see gradient_share); the trainer waits at most for the one part the rollout is computing.'),
});

export const EvalSchema = z.strictObject({
  every: z.number().int().min(0).max(1_000_000).default(10).describe('Steps between held-out evaluations; 0 evaluates only at start and end.'),
  k: z.number().int().min(1).max(256).default(8).describe('Samples per problem for avg@k and pass@k.'),
  problems: z.number().int().min(1).max(1_000_000).default(100).describe('Held-out problems per evaluation (at most task.test_size).'),
});

export const RuntimeSchema = z.strictObject({
  backend: z.enum(BACKENDS).default('auto').describe('Tensor backend: auto picks webgpu (a hardware adapter only) → tensorflow (CUDA, then native CPU) → wasm → cpu; webgpu uses even a software adapter, with a warning.'),
  gpu_memory_limit_mb: z
    .number()
    .min(0)
    .max(16 * 1024 * 1024)
    .default(0)
    .describe('Budget in MiB for what the policies keep on the tensor device (weights, optimizer state, key/value caches, counted from tensor sizes); over it the run ends naming what did not fit and the fields that shrink it. 0 = no limit (still accounted and reported).'),
});

export const RunConfigSchema = z
  .strictObject({
    name: z.string().max(200).optional().describe('A name for the run; defaults to preset and time.'),
    seed: z.number().int().min(0).max(2 ** 31 - 1).default(1).describe('Seed for problem generation, initialisation and sampling.'),
    task: TaskSchema.prefault({}).describe('Which problems the agents solve.'),
    policies: z
      .record(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'policy ids are lower-case words (letters, digits, - and _)'), PolicySchema)
      .default({
        solver: PolicySchema.parse({}),
        verifier: PolicySchema.parse({}),
        corrector: PolicySchema.parse({}),
      })
      .describe('Policies by id: one shared policy for all agents, one per role, or different sizes per role.'),
    agents: AgentsSchema.prefault({}).describe('Which policy each role uses.'),
    rollout: RolloutSchema.prefault({}).describe('Grouped agentic rollouts.'),
    reward: RewardSchema.prefault({}).describe('Reward scheme.'),
    advantage: AdvantageSchema.prefault({}).describe('Advantage normalization.'),
    optimization: OptimizationSchema.prefault({}).describe('RL optimization.'),
    pretrain: PretrainSchema.prefault({}).describe('Supervised warm start used when a policy has no init checkpoint.'),
    pipeline: PipelineSchema.prefault({}).describe('Rollout/training overlap and segment rollout.'),
    eval: EvalSchema.prefault({}).describe('Held-out evaluation.'),
    runtime: RuntimeSchema.prefault({}).describe('Where the numerics run.'),
  })
  .superRefine((cfg, ctx) => {
    // Cross-field rules only mean something once each field is valid on its own: with
    // solver_group 0 already reported, "select_k exceeds solver_group (0)" would be noise.
    if (((ctx as unknown as { issues?: unknown[] }).issues?.length ?? 0) > 0) return;
    const policyIds = Object.keys(cfg.policies);
    if (policyIds.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['policies'], message: 'at least one policy is required' });
    }
    for (const role of ROLES) {
      const id = cfg.agents[role];
      if (!cfg.policies[id]) {
        ctx.addIssue({
          code: 'custom',
          path: ['agents', role],
          message: `policy "${id}" is not defined; defined policies: ${policyIds.join(', ') || '(none)'}`,
        });
      }
    }
    if (cfg.pipeline.segment_tokens > cfg.rollout.max_response_tokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['pipeline', 'segment_tokens'],
        message: `segment_tokens (${cfg.pipeline.segment_tokens}) exceeds the response budget rollout.max_response_tokens (${cfg.rollout.max_response_tokens}); use at most ${cfg.rollout.max_response_tokens}`,
      });
    }
    for (const [id, policy] of Object.entries(cfg.policies)) {
      if (cfg.rollout.max_response_tokens >= policy.model.context) {
        ctx.addIssue({
          code: 'custom',
          path: ['rollout', 'max_response_tokens'],
          message: `response budget ${cfg.rollout.max_response_tokens} leaves no room for the prompt in policy "${id}" (context ${policy.model.context}); use less than ${policy.model.context}`,
        });
      }
    }
    if (cfg.rollout.select_k > cfg.rollout.solver_group) {
      ctx.addIssue({
        code: 'custom',
        path: ['rollout', 'select_k'],
        message: `select_k (${cfg.rollout.select_k}) exceeds solver_group (${cfg.rollout.solver_group}); use at most ${cfg.rollout.solver_group}`,
      });
    }
    if (cfg.task.family === 'jsonl' && !cfg.task.jsonl_path) {
      ctx.addIssue({ code: 'custom', path: ['task', 'jsonl_path'], message: 'required when task.family is "jsonl": give the path of a {"question","answer"} JSONL file' });
    }
    if (cfg.eval.problems > cfg.task.test_size) {
      ctx.addIssue({
        code: 'custom',
        path: ['eval', 'problems'],
        message: `eval.problems (${cfg.eval.problems}) exceeds task.test_size (${cfg.task.test_size}); use at most ${cfg.task.test_size}`,
      });
    }
  });

/** A fully resolved run configuration: every default filled in. */
export type RunConfig = z.infer<typeof RunConfigSchema>;
/** What a user may write: every field optional. */
export type RunConfigInput = z.input<typeof RunConfigSchema>;
