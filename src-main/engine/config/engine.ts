/**
 * The `engine` block of a run config (issue 38): which engine trains the run and where. `studio`
 * (the default) is the Studio's own trainer; `verl` and `drmas` run on Ray, locally (a head the
 * Studio starts and stops) or on a cluster's dashboard URL.
 *
 * The run schema holds it as an optional `engine` block: absent means the Studio's own trainer,
 * so the configs of every Studio run stay as they were. A token is named by its environment variable, never
 * stored, and sent only to hosts approved on this machine (`marsrl secrets allow VAR --host
 * HOST:8265`, the same approvals as endpoint keys, issue 36).
 */
import path from 'node:path';
import { z } from 'zod';
import { ENGINE_KINDS } from '../vocabulary';

export const ROLLOUT_ENGINES = ['vllm', 'sglang'] as const;
export const DRMAS_ORCHESTRAS = ['marsrl', 'math'] as const;
export const TRUNCATIONS = ['error', 'left', 'right', 'middle'] as const;

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `http(s)://HOST:PORT` with nothing after it but an optional slash: the dashboard's root. */
const DASHBOARD_URL = /^https?:\/\/(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?\/?$/;
/** A Hugging Face hub id (`Qwen/Qwen3-4B`): the engine downloads it on the cluster. */
export const HF_REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

const absolutePath = (what: string) =>
  z
    .string()
    .min(1)
    .refine((p) => path.isAbsolute(p), `${what} must be an absolute path (the engine trains inside a Ray actor whose working directory is not yours)`);

/** A model: an absolute folder where the job runs, or a Hugging Face hub id. */
const modelRef = z
  .string()
  .min(1)
  .refine((m) => path.isAbsolute(m) || HF_REPO_ID.test(m), 'give an absolute model folder on the machine the job runs on (e.g. /models/Qwen3-4B) or a Hugging Face id (Qwen/Qwen3-4B); a relative path would be read from a Ray worker\'s folder');

export const DrmasSchema = z.strictObject({
  orchestra: z
    .enum(DRMAS_ORCHESTRAS)
    .default('marsrl')
    .describe('marsrl: Solver, then Verifier → Corrector rounds (the Corrector registered by the Studio\'s hook, since DrMAS has none); math: DrMAS\'s own Solver ↔ Verifier loop, where the Solver re-solves after a rejection.'),
  hook: z
    .boolean()
    .default(true)
    .describe('Load the Studio\'s hook (resources/engines/drmas/marsrl_drmas_hook.py) in the job\'s workers, which writes agent ids, trajectory ids, advantages and a duplicate flag into the dumps; without it every dumped turn is "agent unknown". The marsrl orchestra needs it.'),
});

export const EngineSchema = z
  .strictObject({
    kind: z.enum(ENGINE_KINDS).default('studio').describe('Who trains: studio (the Studio\'s own trainer), verl (veRL on Ray) or drmas (DrMAS, a veRL fork with per-agent policies, on Ray).'),
    address: z
      .string()
      .default('local')
      .refine((a) => a === 'local' || DASHBOARD_URL.test(a), 'must be "local" (the Studio starts a Ray head on this machine) or a Ray dashboard URL such as http://10.0.0.5:8265')
      .describe('Where the job runs: local (a Ray head the Studio starts and later stops) or a Ray cluster\'s dashboard URL, e.g. http://10.0.0.5:8265.'),
    token_env: z
      .string()
      .regex(VARIABLE, 'must be the NAME of an environment variable (e.g. RAY_AUTH_TOKEN), never the token itself')
      .optional()
      .describe('Name of the environment variable holding the cluster\'s token (sent as "Authorization: Bearer …" only to a host approved with marsrl secrets allow VAR --host HOST:PORT).'),
    python: z.string().min(1).default('python3').describe('The interpreter that has the engine installed, where the job runs (a venv\'s bin/python).'),
    version: z
      .string()
      .regex(/^\d+\.\d+(\.\d+)?([.-]?(dev|rc|post)\d*)?$/, 'a version such as 0.7.1')
      .optional()
      .describe('The engine\'s version when the probe cannot run (veRL renamed keys between releases); by default the Studio asks the interpreter.'),
    model: z
      .union([modelRef, z.record(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'policy ids are lower-case words'), modelRef)])
      .optional()
      .describe('The starting model: one folder (or Hugging Face id) for every agent, or one per policy id where policies differ ({solver: /m/a, verifier: /m/b}).'),
    run_root: absolutePath('engine.run_root')
      .optional()
      .describe('Folder, as the cluster sees it, under which run folders are made (dataset, checkpoints, one folder per attempt); it must be on a filesystem this machine also sees. Default: the Studio\'s data folder (a local head).'),
    mount: absolutePath('engine.mount')
      .optional()
      .describe('Where engine.run_root is visible on this machine, when the cluster\'s path differs (an NFS or sshfs mount).'),
    working_dir: absolutePath('engine.working_dir')
      .optional()
      .describe('DrMAS: its checkout where the job runs (the folder holding verl/ and agent_system/); the entrypoint runs from it, as DrMAS\'s scripts do.'),
    gpus_per_node: z.number().int().min(1).max(64).default(1).describe('trainer.n_gpus_per_node.'),
    nodes: z.number().int().min(1).max(4096).default(1).describe('trainer.nnodes.'),
    rollout_engine: z.enum(ROLLOUT_ENGINES).default('vllm').describe('actor_rollout_ref.rollout.name: the inference engine of rollouts.'),
    tensor_parallel: z.number().int().min(1).max(64).default(1).describe('actor_rollout_ref.rollout.tensor_model_parallel_size.'),
    gpu_memory_utilization: z.number().gt(0).max(1).default(0.5).describe('actor_rollout_ref.rollout.gpu_memory_utilization.'),
    micro_batch_per_gpu: z.number().int().min(1).max(4096).default(4).describe('Sequences per GPU per forward pass (ppo_micro_batch_size_per_gpu and the log-prob micro batches).'),
    max_prompt_tokens: z.number().int().min(16).max(1_000_000).default(1024).describe('data.max_prompt_length: longest prompt in tokens (DrMAS\'s later agents read the team\'s outputs too).'),
    truncation: z.enum(TRUNCATIONS).optional().describe('data.truncation for a prompt over max_prompt_tokens; default error for veRL, middle for DrMAS (as its math example).'),
    tensorboard: z.boolean().optional().describe('Also log TensorBoard event files (needs tensorboard where the job runs); default on for DrMAS, whose console rounds values to 3 decimals.'),
    dataset: z
      .strictObject({
        train: absolutePath('engine.dataset.train').describe('Training parquet, in the engine\'s columns (prompt, reward_model.ground_truth, extra_info, …).'),
        test: absolutePath('engine.dataset.test').describe('Validation parquet, in the same columns.'),
      })
      .optional()
      .describe('Your own parquet files in the engine\'s layout instead of the Studio\'s task exported.'),
    drmas: DrmasSchema.prefault({}).describe('DrMAS only: which orchestra runs the agents, and whether the Studio\'s hook writes agent ids into the dumps.'),
    overrides: z
      .array(z.string().min(1).max(4000))
      .max(500)
      .default([])
      .describe('Raw Hydra overrides appended to the planned ones (key=value, +key=value, ++key=value, ~key); a key the plan also sets is replaced.'),
  })
  .superRefine((e, ctx) => {
    if (e.token_env !== undefined && e.address === 'local') {
      ctx.addIssue({ code: 'custom', path: ['token_env'], message: 'a local head needs no token; remove engine.token_env or give a cluster address' });
    }
    if (e.mount !== undefined && e.run_root === undefined) {
      ctx.addIssue({ code: 'custom', path: ['mount'], message: 'engine.mount is where engine.run_root is seen here; set engine.run_root too' });
    }
    if (e.kind !== 'drmas' && e.working_dir !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['working_dir'], message: 'engine.working_dir is DrMAS\'s checkout; veRL runs from its installed package' });
    }
  });

export type EngineConfig = z.infer<typeof EngineSchema>;
export type EngineConfigInput = z.input<typeof EngineSchema>;
