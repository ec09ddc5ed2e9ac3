/**
 * The one run-configuration schema (issue #2). Every field has a default and a description; the
 * CLI, the HTTP server, the IPC handlers and the new-run form all validate against this object,
 * so an error message reads the same wherever a config enters.
 *
 * Pure (issue 37): nothing here reads the disk or asks the machine. What only this machine can
 * say (a model folder, a task file, whether the run fits its memory) is preflight/'s, checked at
 * the edge where a config enters, in the same pass as these rules.
 *
 * Field names are snake_case because they appear in YAML files and `--set a.b=value` overrides.
 */
import { z } from 'zod';
import { EngineSchema } from './engine';
import { DEFAULT_PROMPTS, checkTemplate } from '../vocabulary/templates';
import { ADVANTAGE_MODES, REWARD_SCHEMES, SELECTION_STRATEGIES, SINGLE_SAMPLE_RULES, STD_CONVENTIONS, TASK_FAMILIES } from '../vocabulary';
import { ROLES, type Role } from '#shared/agents';


// The names the schema offers live in the engine's vocabulary (issue 37), re-exported for its readers.
export { ADVANTAGE_MODES, REWARD_SCHEMES, SELECTION_STRATEGIES, SINGLE_SAMPLE_RULES, STD_CONVENTIONS, TASK_FAMILIES };
export const PIPELINE_MODES = ['sync', 'pipeline'] as const;
export const BACKENDS = ['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'] as const;

const positiveInt = (max: number) => z.number().int().min(1).max(max);

export const ModelSchema = z
  .strictObject({
    kind: z.literal('gpt').default('gpt').describe('Model family: gpt (the Studio’s own small transformer with a character tokenizer, trained from scratch) or hf (a Hugging Face Llama / Qwen2 / Qwen3 folder).'),
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
/** The GPT family's model block (the sizes; `kind` is implied). */
export type ModelConfig = Omit<z.infer<typeof ModelSchema>, 'kind'>;

export const HF_DTYPES = ['float32'] as const;

/**
 * LoRA adapters on a Hugging Face policy (issue #14): W x + (alpha/rank)·B A x on the target
 * linears, the base frozen. Checked against the model's layers when the folder is (names the
 * modules that exist; a rank above a layer's min(in, out) is refused).
 */
export const LoraSchema = z.strictObject({
  rank: z.number().int().min(1).max(4096).describe('LoRA rank r: the inner size of the adapters (PEFT r); 8–64 is usual.'),
  alpha: z.number().gt(0).optional().describe('LoRA alpha (PEFT lora_alpha): the update is scaled by alpha / rank. Default 2 × rank.'),
  dropout: z.number().min(0).lt(1).optional().describe('Dropout on the adapters’ inputs in training passes (PEFT lora_dropout), masks drawn from the seed. Default 0.'),
  targets: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('Target modules, adapted in every layer: some of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj. Default all seven.'),
});
export type LoraConfig = z.infer<typeof LoraSchema>;

/** A Hugging Face decoder checkpoint as a policy (issue #13). */
export const HfModelSchema = z.strictObject({
  kind: z.literal('hf').describe('Model family: hf, a Hugging Face Llama / Qwen2 / Qwen3 folder.'),
  path: z
    .string()
    .min(1)
    .describe('Folder of a Hugging Face checkpoint: config.json, model.safetensors (or its index and shards), tokenizer.json and tokenizer_config.json.'),
  dtype: z.enum(HF_DTYPES).default('float32').describe('Numeric type the weights are held and trained in (F16/BF16 files are converted on load).'),
  enable_thinking: z.boolean().default(false).describe('Qwen3 chat templates: let the model think before answering (a <think> block); off keeps responses within the token budget.'),
  lora: LoraSchema.optional().describe('LoRA adapters (issue #14) instead of full fine-tuning; leave out to train every weight.'),
});
export type HfModelConfig = z.infer<typeof HfModelSchema>;

/**
 * A policy's model: the Studio's GPT (`kind: gpt`, the default, so a block without `kind` is a
 * GPT and every older config still reads the same) or a Hugging Face folder (`kind: hf`).
 */
export const PolicyModelSchema = z.union([ModelSchema, HfModelSchema]);
export type PolicyModelConfig = z.infer<typeof PolicyModelSchema>;

export const OptimizerSchema = z.strictObject({
  lr: z.number().gt(0).max(1).default(1e-4).describe('RL learning rate (Adam). 1e-3 collapsed a 100k-parameter policy in one step in the prototype; 1e-4 worked.'),
  beta1: z.number().min(0).lt(1).default(0.9).describe('Adam β1.'),
  beta2: z.number().min(0).lt(1).default(0.999).describe('Adam β2.'),
  weight_decay: z.number().min(0).max(1).default(0).describe('Decoupled weight decay (AdamW); 0 disables it.'),
  grad_clip: z.number().min(0).default(1).describe('Global-norm gradient clipping threshold; 0 disables clipping. The per-agent gradient norm is logged before clipping.'),
});
export type OptimizerConfig = z.infer<typeof OptimizerSchema>;

/**
 * Served models (issue #16): sampling parameters sent with every request to an endpoint. Fields
 * beyond OpenAI's (top_k, min_p, chat_template_kwargs) are vLLM / SGLang extensions; the
 * capability probe reports before a run which ones a server lacks.
 */
export const EndpointSamplingSchema = z.strictObject({
  temperature: z.number().min(0).max(2).optional().describe('Sampling temperature (MarsRL’s reasoning system uses 0.6).'),
  top_p: z.number().gt(0).max(1).optional().describe('Nucleus threshold (MarsRL uses 0.95).'),
  top_k: z.number().int().min(-1).max(100_000).optional().describe('Keep the k most likely tokens (vLLM/SGLang/llama.cpp; -1 disables).'),
  min_p: z.number().min(0).max(1).optional().describe('Drop tokens less likely than min_p × the most likely one (vLLM/SGLang/llama.cpp).'),
  max_tokens: z.number().int().min(1).max(1_000_000).optional().describe('Most tokens per response.'),
  seed: z.number().int().min(0).max(2 ** 31 - 1).optional().describe('Sampling seed, where the server honours it.'),
  n: z.number().int().min(1).max(256).optional().describe('Choices per request: a whole group in one request where the server supports it.'),
  stop: z.array(z.string().min(1)).max(16).optional().describe('Text sequences that end a response.'),
  logprobs: z.boolean().optional().describe('Keep the sampled tokens’ log-probabilities when the server returns them.'),
  top_logprobs: z.number().int().min(0).max(20).optional().describe('Alternatives per position kept with logprobs.'),
  chat_template_kwargs: z.record(z.string(), z.unknown().describe('One chat-template option (any JSON value).')).optional().describe('Chat-template options, e.g. {enable_thinking: false} for Qwen3 (vLLM/SGLang).'),
});

const httpUrl = z
  .string()
  .regex(/^https?:\/\/[^\s/]+(\/\S*)?$/, 'must be an http(s) URL including the API prefix, e.g. http://127.0.0.1:8000/v1');

export const EndpointSchema = z.strictObject({
  base_url: httpUrl.describe('Base URL of the OpenAI-compatible API, including /v1 (vLLM, SGLang, Ollama, llama.cpp, marsrl serve-model).'),
  model: z.string().min(1).describe('Model name the server serves (as its /v1/models lists it).'),
  api_key_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key itself')
    .optional()
    .describe('Name of the environment variable holding the API key; the key itself is never written to a config, the database or a log.'),
  replicas: z.array(httpUrl).max(256).default([]).describe('Further base URLs serving the same model; requests are balanced over base_url and these by outstanding requests.'),
  concurrency: z.number().int().min(1).max(4096).default(8).describe('Most requests in flight at once over all replicas; more wait in a queue.'),
  timeout_s: z.number().gt(0).max(3600).default(120).describe('Seconds without an answer (or a streamed byte) before a request is abandoned and retried.'),
  retries: z.number().int().min(0).max(20).default(3).describe('Attempts after the first on 429, 5xx, timeouts and cut streams (exponential backoff with jitter, Retry-After honoured).'),
  health_check_s: z.number().min(0).max(3600).default(30).describe('Seconds between background health checks of every replica (GET /models) during a run, so a replica that stopped answering is taken out before a request meets it; 0 turns them off (a failed replica is still checked before it gets requests again).'),
  sampling: EndpointSamplingSchema.prefault({}).describe('Sampling parameters sent with every request.'),
}).describe('One served model: where it is, its name, its key’s environment variable and how to call it.');
export type EndpointConfig = z.infer<typeof EndpointSchema>;

export const PolicySchema = z.strictObject({
  model: PolicyModelSchema.prefault({}).describe('This policy’s model: a GPT of the given size, or a Hugging Face folder.'),
  optimizer: OptimizerSchema.prefault({}).describe('Optimizer used in RL for this policy.'),
  init: z
    .string()
    .min(1)
    .optional()
    .describe('Starting checkpoint (a folder written by `marsrl pretrain`); when absent the run warms up first.'),
  endpoint: z
    .string()
    .min(1)
    .optional()
    .describe('A served model (a name in `endpoints`) plays this policy: inference only, never trained.'),
}).describe('One policy: its model size, optimizer and starting checkpoint.');
export type PolicyConfig = z.infer<typeof PolicySchema>;

export const MathGeneratorSchema = z.strictObject({
  steps: z.number().int().min(1).max(8).optional().describe('Operations per word problem; by default 1 + ⌊(difficulty − 1) / 3⌋ (1 at difficulty 1–3, 4 at 10).'),
  max_number: z.number().int().min(3).max(1_000_000).optional().describe('Largest number a problem starts from or adds; by default 10 at difficulty 1, growing to 10 000 at 10.'),
  operations: z
    .string()
    .regex(/^[-+*/]+$/, 'write the operations as a string of + - * / (e.g. "+-" for addition and subtraction)')
    .optional()
    .describe('Operations a problem may use, as a string of + - * /; by default + and − up to difficulty 3, × from 4, ÷ (exact) from 7.'),
}).describe('The shipped generator of multi-step arithmetic word problems (task.family math without task.math_path); task.difficulty sets every knob not given here.');

/**
 * The task block; `machine` (preflight's) adds the check of a math file, here with the other field
 * errors so that a bad file is refused before a run exists and reported in the same pass.
 */
function taskSchema(machine?: MachineRules) {
  const schema = z.strictObject({
    family: z.enum(TASK_FAMILIES).default('sort').describe('Problem family: sort (checked by order and permutation), countdown (reach a target), factor, addition, jsonl (your own {question, answer} file), or math (word problems: a JSONL/Parquet file in task.math_path, or the shipped generator).'),
    difficulty: z.number().int().min(1).max(10).default(3).describe('Difficulty knob of the generator (list length, number size, …).'),
    train_size: z.number().int().min(1).max(10_000_000).default(2000).describe('Number of training problems generated from the seed.'),
    test_size: z.number().int().min(1).max(1_000_000).default(200).describe('Number of held-out problems; never overlaps the training set.'),
    jsonl_path: z.string().min(1).optional().describe('Path to a JSONL file of {"question", "answer"} lines; required when family is jsonl.'),
    checker: z.enum(['exact', 'numeric']).default('exact').describe('How a jsonl answer is compared to the reference.'),
    math_path: z
      .string()
      .min(1)
      .optional()
      .describe('Math family: a JSONL or Parquet (.parquet) file with a question/problem column and an answer column (GSM8K "#### n", MATH/AIME \\boxed{}, or a bare answer), optionally a solution column; without it the shipped word-problem generator is used.'),
    math_generator: MathGeneratorSchema.prefault({}),
  });
  if (!machine) return schema;
  return schema.superRefine((task, ctx) => {
    if (task.family !== 'math' || task.math_path === undefined) return;
    const problem = machine.mathFile(task.math_path);
    if (problem !== null) ctx.addIssue({ code: 'custom', path: ['math_path'], message: problem });
  });
}
export const TaskSchema = taskSchema();

/** One role's prompt templates; see agents/prompts.ts for the syntax and the variables. */
function rolePromptSchema(role: Role) {
  const template = (part: 'system' | 'user') =>
    z
      .string()
      .max(20_000)
      .default(DEFAULT_PROMPTS[role][part])
      .superRefine((text, ctx) => {
        const problem = checkTemplate(role, text);
        if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
      });
  return z
    .strictObject({
      system: template('system').describe(`System message of the ${role} (empty: none).`),
      user: template('user').refine((text) => text.trim() !== '', 'the user message cannot be empty').describe(`User message of the ${role}.`),
    })
    .prefault({});
}

export const PromptsSchema = z
  .strictObject({
    solver: rolePromptSchema('solver').describe('Solver prompt; variable {question}. The default asks for a step-by-step solution ending in \\boxed{answer}.'),
    verifier: rolePromptSchema('verifier').describe('Verifier prompt; variables {question}, {solution}, {answer}. The default asks for findings, then a final line "Verdict: correct" or "Verdict: incorrect".'),
    corrector: rolePromptSchema('corrector').describe('Corrector prompt; variables {question}, {solution}, {report}. The default asks for a revised solution ending in \\boxed{answer}.'),
  })
  .describe('Chat prompt templates of the math family (the character tasks keep their own fixed formats).');

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
  top_k: z.number().int().min(0).max(1_000_000).default(0).describe('Sample only among the k most likely tokens (applied before top_p); 0 keeps every token. Real vocabularies (128k–152k tokens) often use 20–50.'),
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
  verifier_class_balance: z
    .boolean()
    .default(false)
    .describe(
      'Weight each Verifier agent’s advantages of a step so that the solutions it judged right and those it judged wrong pull equally (weight N / (2 N_class)); without it a weak Solver’s many wrong answers teach the Verifier to reject everything (issue #14). The weight is stored with each advantage.',
    ),
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

/** The sizes of a tiny Qwen3 made from scratch by `marsrl pretrain` (engine/hf/tiny-qwen.ts). */
export const HfScratchSchema = z
  .strictObject({
    layers: z.number().int().min(1).max(48).describe('num_hidden_layers.'),
    hidden: z.number().int().min(8).max(4096).describe('hidden_size.'),
    heads: z.number().int().min(1).max(64).describe('num_attention_heads.'),
    kv_heads: z.number().int().min(1).max(64).describe('num_key_value_heads (grouped-query attention when fewer than heads); must divide heads.'),
    head_dim: z.number().int().min(2).max(512).describe('head_dim (Qwen3 states it; it need not be hidden / heads). Even, for RoPE.'),
    intermediate: z.number().int().min(1).max(65536).describe('intermediate_size of the SwiGLU MLP.'),
    context: z.number().int().min(16).max(32768).describe('max_position_embeddings: prompt + response tokens.'),
    merges: z.number().int().min(0).max(100_000).default(400).describe('Most BPE merges the tokenizer learns on the task\'s texts (vocabulary: 256 bytes + merges + 5 ChatML tokens).'),
    seed: z.number().int().min(0).max(2 ** 31 - 1).default(0).describe('Seed of the fresh weights (the run seed is not used, so the same sizes give the same starting model).'),
  })
  .superRefine((s, ctx) => {
    if (s.heads % s.kv_heads !== 0) ctx.addIssue({ code: 'custom', path: ['kv_heads'], message: `kv_heads (${s.kv_heads}) must divide heads (${s.heads}), e.g. ${s.heads} or 1` });
    if (s.head_dim % 2 !== 0) ctx.addIssue({ code: 'custom', path: ['head_dim'], message: `head_dim (${s.head_dim}) must be even (RoPE rotates pairs of dimensions)` });
  });

export const PretrainSchema = z.strictObject({
  steps: z.number().int().min(0).max(1_000_000).default(300).describe('Supervised warm-start steps per policy when no init checkpoint is given.'),
  lr: z.number().gt(0).max(1).default(3e-3).describe('Peak warm-start learning rate (linear warm-up, cosine decay).'),
  batch_size: z.number().int().min(1).max(4096).default(32).describe('Sequences per warm-start batch.'),
  warmup_steps: z.number().int().min(0).max(100_000).default(20).describe('Linear warm-up steps.'),
  start_from_solver: z
    .boolean()
    .default(false)
    .describe(
      'Warm-start the Verifier\'s and Corrector\'s policies from the Solver\'s weights after its last warm-start step instead of from fresh weights (issue #14, the tiny-qwen preset): they begin knowing the arithmetic the Solver learned. Their models must have the Solver\'s sizes.',
    ),
  corrector_mistaken_reports: z
    .number()
    .min(0)
    .max(1)
    .default(0)
    .describe(
      'Share of the Corrector\'s warm-start examples whose bug report comes from a Verifier that worked the problem wrong (a right solution rejected, or a wrong one rejected naming another wrong answer), the target still the right solution (issue #14, the tiny-qwen preset): a Corrector that only ever read truthful reports copies the report\'s answer, and in a run the Verifier\'s answer is often wrong. Families whose reports carry working (math); 0 shows truthful reports only.',
    ),
  hf_scratch: HfScratchSchema.optional().describe(
    'Hugging Face policies only (issue #14, the tiny-qwen preset): warm-start a tiny Qwen3 made from scratch — a byte-level BPE tokenizer learned on the task\'s texts and fresh weights of these sizes — instead of the weights at model.path; pretrain writes each result as a Hugging Face folder.',
  ),
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

/**
 * A reasoning-system run (issue #16): inference only, the agents (served endpoints or local
 * checkpoints) run on the held-out problems; no RL step is taken.
 */
export const SYSTEM_MODES = ['loop', 'chain'] as const;
export const SystemSchema = z.strictObject({
  mode: z
    .enum(SYSTEM_MODES)
    .default('loop')
    .describe('loop: MarsRL’s reasoning system (Solver, then Verifier → Corrector until `approvals` consecutive approvals or `max_iterations`); chain: the unrolled chain the RL runs evaluate (rollout.rounds verify/correct rounds, stopping at the first approval).'),
  max_iterations: z.number().int().min(1).max(100).default(10).describe('Loop mode: most Verifier → Corrector iterations per problem (10 in MarsRL’s public code).'),
  approvals: z.number().int().min(1).max(100).default(4).describe('Loop mode: consecutive approving verdicts that accept a solution (4 in MarsRL’s public code).'),
  error_budget: z.number().int().min(0).max(1000).default(10).describe('Failed calls (after the endpoint’s own retries) allowed per problem chain before it is marked failed (10 in MarsRL’s public code).'),
  k: z.number().int().min(1).max(256).optional().describe('Sampled chains per problem for avg@k and pass@k; defaults to eval.k.'),
  controls: z.boolean().default(true).describe('Also run the two controls of RL evaluation: an oracle Verifier, and the Corrector on every answer without a Verifier.'),
  metrics_every_s: z.number().gt(0).max(3600).default(5).describe('Seconds between snapshots of the pool’s metrics (queue, in-flight, latency, errors, tokens) in the run’s metrics.'),
});
export type SystemConfig = z.infer<typeof SystemSchema>;

/**
 * What only this machine can say of a config, asked where the schema's rules need it (preflight's
 * rules fill it in; the schema itself reads nothing). Each adds its issues to `ctx`.
 */
export interface MachineRules {
  /** Why `task.math_path` cannot be used, or null. */
  mathFile(file: string): string | null;
  /** A Hugging Face policy's folder: its context and what `runSize` needs of it, or null (issues added). */
  modelFolder(id: string, model: HfModelConfig, ctx: RefinementContext): { context: number; detail: unknown } | null;
  /**
   * Whether the run fits this machine; `cfg` is the parsed config (a RunConfig: typed loosely here
   * because RunConfig is inferred from this schema), `folders` each checked folder's `detail`, by policy id.
   */
  runSize(cfg: unknown, folders: ReadonlyMap<string, unknown>, ctx: RefinementContext): void;
}

/** The run-config schema; with `machine` (preflight's rules) it also checks files, folders and sizes in the same pass. */
export function runConfigSchema(machine?: MachineRules) {
  return z
    .strictObject({
      name: z.string().max(200).optional().describe('A name for the run; defaults to preset and time.'),
      seed: z.number().int().min(0).max(2 ** 31 - 1).default(1).describe('Seed for problem generation, initialisation and sampling.'),
      task: taskSchema(machine).prefault({}).describe('Which problems the agents solve.'),
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
      prompts: PromptsSchema.prefault({}),
      endpoints: z
        .record(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'endpoint names are lower-case words (letters, digits, - and _)'), EndpointSchema)
        .optional()
        .describe('Served models by name (OpenAI-compatible endpoints) that policies may point at.'),
      system: SystemSchema.optional().describe('Present: a reasoning-system run (inference only) of the agents on the held-out problems instead of RL training.'),
      engine: EngineSchema.optional().describe('Who trains the run: absent (or kind studio) the Studio\'s own trainer; kind verl or drmas an outside engine on Ray (issue 38).'),
    })
    .superRefine((cfg, ctx) => {
      // Cross-field rules only mean something once the fields they read are valid on their own:
      // with solver_group 0 already reported, "select_k exceeds solver_group (0)" would be noise.
      // Other fields' errors do not hold them back: every problem is reported in one pass (issue 18).
      const valid = fieldsThatParsed(ctx);
      const policyIds = valid('policies') ? Object.keys(cfg.policies) : [];
      if (valid('policies') && policyIds.length === 0) {
        ctx.addIssue({ code: 'custom', path: ['policies'], message: 'at least one policy is required' });
      }
      for (const role of ROLES) {
        if (!valid('agents', 'policies')) break;
        const id = cfg.agents[role];
        if (!cfg.policies[id]) {
          ctx.addIssue({
            code: 'custom',
            path: ['agents', role],
            message: `policy "${id}" is not defined; defined policies: ${policyIds.join(', ') || '(none)'}`,
          });
        }
      }
      const endpointNames = Object.keys(cfg.endpoints ?? {});
      // Only once policies parsed: `policies: null` or a policy of null reached here and threw (found
      // by the HTTP fuzz of issue #36, a 500 for a caller's mistake).
      for (const [id, policy] of valid('policies') ? Object.entries(cfg.policies) : []) {
        if (policy.endpoint !== undefined && !cfg.endpoints?.[policy.endpoint]) {
          ctx.addIssue({
            code: 'custom',
            path: ['policies', id, 'endpoint'],
            message: `endpoint "${policy.endpoint}" is not defined; defined endpoints: ${endpointNames.join(', ') || '(none: add an endpoints block)'}`,
          });
        }
      }
      // An outside engine trains the models named in engine.model on its cluster: the rules of the
      // Studio's own trainer (its segments, a GPT's context, Hugging Face folders on this disk,
      // this machine's memory) do not hold; the engine's plan checks what the engine would refuse.
      const studio = (cfg.engine?.kind ?? 'studio') === 'studio';
      if (!studio && cfg.system !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['engine', 'kind'], message: `a system run (inference only) runs on the Studio; remove the system block or set engine.kind to studio` });
      }
      if (studio && valid('pipeline.segment_tokens', 'rollout.max_response_tokens') && cfg.pipeline.segment_tokens > cfg.rollout.max_response_tokens) {
        ctx.addIssue({
          code: 'custom',
          path: ['pipeline', 'segment_tokens'],
          message: `segment_tokens (${cfg.pipeline.segment_tokens}) exceeds the response budget rollout.max_response_tokens (${cfg.rollout.max_response_tokens}); use at most ${cfg.rollout.max_response_tokens}`,
        });
      }
      // A Hugging Face policy's context is its folder's config.json: known only where preflight reads it.
      const folders = new Map<string, unknown>();
      for (const [id, policy] of studio && valid('policies') ? Object.entries(cfg.policies) : []) {
        let context: number;
        if (policy.model.kind === 'hf') {
          const folder = machine?.modelFolder(id, policy.model, ctx);
          if (!folder) continue;
          folders.set(id, folder.detail);
          context = folder.context;
        } else {
          context = policy.model.context;
        }
        responseBudgetRule(cfg, id, context, valid, ctx);
      }
      if (valid('rollout.select_k', 'rollout.solver_group') && cfg.rollout.select_k > cfg.rollout.solver_group) {
        ctx.addIssue({
          code: 'custom',
          path: ['rollout', 'select_k'],
          message: `select_k (${cfg.rollout.select_k}) exceeds solver_group (${cfg.rollout.solver_group}); use at most ${cfg.rollout.solver_group}`,
        });
      }
      if (valid('task.family', 'task.jsonl_path') && cfg.task.family === 'jsonl' && !cfg.task.jsonl_path) {
        ctx.addIssue({ code: 'custom', path: ['task', 'jsonl_path'], message: 'required when task.family is "jsonl": give the path of a {"question","answer"} JSONL file' });
      }
      if (valid('eval.problems', 'task.test_size') && cfg.eval.problems > cfg.task.test_size) {
        ctx.addIssue({
          code: 'custom',
          path: ['eval', 'problems'],
          message: `eval.problems (${cfg.eval.problems}) exceeds task.test_size (${cfg.task.test_size}); use at most ${cfg.task.test_size}`,
        });
      }
      // What the run will hold at its peak, against this machine's memory (issue #36): refused here,
      // before a step builds a decode batch no machine holds.
      if (studio && machine && valid('policies', 'agents', 'rollout', 'eval', 'system')) machine.runSize(cfg, folders, ctx);
      // Run even when other fields failed (zod skips refinements then by default); `valid` above
      // keeps each rule to fields that parsed.
    }, { when: (payload) => typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value) });
}

export const RunConfigSchema = runConfigSchema();

/** A refinement's context, as far as the rules below read it. */
export type RefinementContext = { addIssue(issue: { code: 'custom'; path: PropertyKey[]; message: string }): void };

/**
 * Which fields parsed, for a refinement of the whole config: cross-field rules only mean something
 * once the fields they read are valid on their own. zod keeps the issues found so far on the
 * context; a path is valid when no issue sits on it, above it or below it.
 */
function fieldsThatParsed(ctx: unknown): (...paths: string[]) => boolean {
  const issues = (ctx as { issues?: { path?: PropertyKey[] }[] }).issues ?? [];
  const bad = issues.map((i) => (i.path ?? []).map(String).join('.'));
  return (...paths: string[]) => !bad.some((b) => b === '' || paths.some((p) => b === p || b.startsWith(`${p}.`) || p.startsWith(`${b}.`)));
}

/** The response budget must leave room for a prompt in each policy's context. */
function responseBudgetRule(cfg: Pick<RunConfig, 'rollout'>, id: string, context: number, valid: (...paths: string[]) => boolean, ctx: RefinementContext): void {
  if (valid('rollout.max_response_tokens', `policies.${id}`) && cfg.rollout.max_response_tokens >= context) {
    ctx.addIssue({
      code: 'custom',
      path: ['rollout', 'max_response_tokens'],
      message: `response budget ${cfg.rollout.max_response_tokens} leaves no room for the prompt in policy "${id}" (context ${context}); use less than ${context}`,
    });
  }
}

/** A fully resolved run configuration: every default filled in. */
export type RunConfig = z.infer<typeof RunConfigSchema>;
/** What a user may write: every field optional. */
export type RunConfigInput = z.input<typeof RunConfigSchema>;
