/**
 * Warm start: supervised training of each policy on its roles' target texts before RL.
 *
 * - Solver: question → a worked solution ending in the answer.
 * - Verifier: question + solution → working-out then the verdict. Solutions are the Solver's own
 *   samples (after its warm start) and constructed mistakes (`corruptSolution`) besides reference
 *   solutions, so the Verifier sees the errors it will meet in RL, not only synthetic ones.
 * - Corrector: question + a solution + a Verifier's report → a repaired solution; a share of the
 *   solutions are right, for which the target keeps the answer. With
 *   `pretrain.corrector_mistaken_reports` a share of the reports come from a Verifier that worked
 *   the problem wrong, as a run's Verifier often does, so the Corrector does not learn to trust them.
 * Learning rate: linear warm-up then cosine decay; global-norm clipping from the policy's optimizer
 * config. Warm-start accuracy jumps unevenly with steps, so the checkpoint is chosen by held-out
 * evaluation, optionally the one nearest a target Solver accuracy (to leave room for RL).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PretrainSchema, RunConfig } from '../config/schema';
import type { Role } from '#shared/agents';
import type { z } from 'zod';
import { hfConfigJson } from '../hf/config';
import { exportHfFolder } from '../hf/export';
import { hfModelIdentity, hfNamedTensors } from '../hf/load';
import { HfModel } from '../hf/model';
import { taskCorpus, writeTinyQwenModel } from '../hf/tiny-qwen';
import { textFormatOf } from '../agents/prompts';
import { createOptimizer } from '../model/optim';
import type { PolicyTokenizer } from '../model/policy-model';
import { syncWhereReadable } from '../model/readback';
import { supervisedStep, supervisedStepAsync } from '../model/train';
import type { Problem, TaskFamily } from '../tasks/types';
import { Rng } from '../util/rng';
import { DEFAULT_SYSTEM_PROMPTS, rolesOf, usedPolicyIds, type PolicyRuntime } from './policies';
import { decodeInSegmentsSteps, drive, type RolloutSteps } from './rollout';
import { padBatch, type TrainingSequence } from './sequences';

export interface WarmStartExample {
  role: Role;
  prompt: string;
  target: string;
}

type PretrainConfig = z.infer<typeof PretrainSchema>;

/**
 * Solver samples used as Verifier/Corrector inputs: what the Solver really writes. `family` gives
 * the prompt format (the character format when absent).
 */
export function sampleSolverSolutions(policy: PolicyRuntime, problems: readonly Problem[], config: RunConfig, seed: number, family: Pick<TaskFamily, 'format'> = {}): Promise<string[]> {
  // On every backend: the decode reads back synchronously where it can, asynchronously on webgpu (readback.ts; issue #15).
  return drive(sampleSolverSolutionsSteps(policy, problems, config, seed, family), () => undefined);
}

function* sampleSolverSolutionsSteps(policy: PolicyRuntime, problems: readonly Problem[], config: RunConfig, seed: number, family: Pick<TaskFamily, 'format'>): RolloutSteps<string[]> {
  const { solverPrompt } = textFormatOf(family);
  const requests = problems.map((p, i) => ({ promptText: solverPrompt(p), promptTokens: policy.tokenizer.promptTokens('solver', solverPrompt(p)), streamId: i }));
  const results = yield* decodeInSegmentsSteps(policy, requests, {
    seed,
    temperature: 1,
    topP: 1,
    maxNewTokens: config.rollout.max_response_tokens,
    segmentTokens: config.rollout.max_response_tokens,
    maxSegments: 1,
    agent: 'solver',
  });
  return results.map((r) => policy.tokenizer.responseText(r.responseTokens));
}

export interface WarmStartOptions {
  /** The Solver's own samples keyed by problem key, preferred as judged solutions half of the time. */
  solverSamples?: Map<string, string>;
  /** `pretrain.corrector_mistaken_reports`: the share of Corrector examples read with a mistaken report. */
  mistakenReportShare?: number;
}

/** One warm-start example for a role. */
export function warmStartExample(family: TaskFamily, role: Role, problem: Problem, rng: Rng, options: WarmStartOptions = {}): WarmStartExample {
  const { solverSamples, mistakenReportShare = 0 } = options;
  const { solverPrompt, verifierPrompt, correctorPrompt, parseSolution, verdictText } = textFormatOf(family);
  if (role === 'solver') return { role, prompt: solverPrompt(problem), target: family.solverTarget(problem) };
  const reference = family.solverTarget(problem);
  const own = solverSamples?.get(problem.key);
  const pickSolution = (wrongShare: number): string => {
    if (own !== undefined && parseSolution(own).answer !== null && rng.next() < 0.5) return own;
    return rng.next() < wrongShare ? family.corruptSolution(problem, reference, rng) : reference;
  };
  if (role === 'verifier') {
    const solution = pickSolution(0.5);
    return { role, prompt: verifierPrompt(problem, solution), target: family.verifierTarget(problem, solution) };
  }
  const solution = pickSolution(0.8);
  // Chat-style families (math): the report a Verifier writes for this solution, its findings and
  // then the verdict, which is what the Corrector reads in a run. Warm-started on a bare verdict
  // line, a tiny-qwen Corrector met reports it had never seen and often wrote garbage: at the first
  // evaluation it repaired 7% of the answers a sampling Verifier rejected, and 24% once
  // warm-started on reports (resources/checkpoints/README.md). The character families keep the
  // verdict line their shipped warm starts were made with (their Verifier's findings are a few
  // characters).
  // A mistaken report is drawn only when asked for, so the warm starts made before the option
  // existed are reproduced draw for draw.
  const mistaken = family.mistakenReport && mistakenReportShare > 0 && rng.next() < mistakenReportShare ? family.mistakenReport(problem, solution, rng) : null;
  const report = mistaken ?? (family.format ? family.verifierTarget(problem, solution) : verdictText('reject'));
  return { role, prompt: correctorPrompt(problem, solution, report), target: family.correctorTarget(problem, solution, report) };
}

function toSequence(tokenizer: PolicyTokenizer, example: WarmStartExample, context: number): TrainingSequence | null {
  const prompt = tokenizer.promptTokens(example.role, example.prompt);
  const tokens = [...prompt, ...tokenizer.targetTokens(example.target)];
  if (tokens.length > context) return null;
  return { tokens, responseStart: prompt.length };
}

export interface PretrainProgress {
  policyId: string;
  step: number;
  steps: number;
  loss: number;
  gradNorm: number;
  lr: number;
}

export interface PretrainEval {
  policyId: string;
  step: number;
  /** Per role: greedy exact-match of the target's final line (answer or verdict) on held-out problems. */
  scores: Partial<Record<Role, number>>;
  /** The Solver's accuracy when sampling at the rollout temperature (what RL starts from). */
  sampledSolver?: number;
}

/**
 * Held-out score of a policy for one role: is the output's answer/verdict right? Greedy by
 * default; at the rollout temperature it says what RL will see (a Solver whose samples are all
 * wrong gives RL no signal, whatever its greedy accuracy).
 */
export function roleScore(policy: PolicyRuntime, family: TaskFamily, role: Role, problems: readonly Problem[], config: RunConfig, seed: number, temperature = 0): Promise<number> {
  return drive(roleScoreSteps(policy, family, role, problems, config, seed, temperature), () => undefined);
}

function* roleScoreSteps(policy: PolicyRuntime, family: TaskFamily, role: Role, problems: readonly Problem[], config: RunConfig, seed: number, temperature: number): RolloutSteps<number> {
  const rng = new Rng(seed, `score:${role}`);
  // Held out as trained: a Corrector warm-started on mistaken reports is scored on them too.
  const examples = problems.map((p) => warmStartExample(family, role, p, rng, { mistakenReportShare: config.pretrain.corrector_mistaken_reports }));
  const requests = examples.map((ex, i) => ({ promptText: ex.prompt, promptTokens: policy.tokenizer.promptTokens(role, ex.prompt), streamId: i }));
  const results = yield* decodeInSegmentsSteps(policy, requests, {
    seed,
    temperature,
    topP: temperature === 0 ? 1 : config.rollout.top_p,
    topK: temperature === 0 ? 0 : config.rollout.top_k,
    maxNewTokens: config.rollout.max_response_tokens,
    segmentTokens: config.rollout.max_response_tokens,
    maxSegments: 1,
    agent: role,
  });
  let right = 0;
  results.forEach((r, i) => {
    const text = policy.tokenizer.responseText(r.responseTokens);
    if (role === 'verifier') {
      if (family.format) {
        // A templated Verifier is right when its well-formed verdict line is the target's.
        const parsed = family.format.parseVerdict(text);
        if (parsed.formatValid && parsed.verdict === family.format.parseVerdict(examples[i].target).verdict) right++;
      } else {
        const expected = examples[i].target.slice(examples[i].target.lastIndexOf('V:'));
        if (text.trim().endsWith(expected)) right++;
      }
    } else if (family.checkAnswer(problems[i], textFormatOf(family).parseSolution(text).answer)) {
      right++;
    }
  });
  return right / Math.max(results.length, 1);
}

/** What a warm start reads of a run's task data. */
interface WarmStartData {
  family: TaskFamily;
  train: readonly Problem[];
}

/**
 * The Solver's own samples on the first `count` training problems, by problem key: the Verifier
 * and Corrector warm-start on real Solver output (both `marsrl pretrain` and a run's warm start).
 */
export async function solverSamplesOf(solver: PolicyRuntime, config: RunConfig, data: WarmStartData, count: number): Promise<Map<string, string>> {
  const problems = data.train.slice(0, Math.min(count, data.train.length));
  const texts = await sampleSolverSolutions(solver, problems, config, config.seed + 3, data.family);
  return new Map(problems.map((p, i) => [p.key, texts[i]]));
}

/** The arguments of `pretrainPolicy` that a run's config and task data fix, for `marsrl pretrain` and a run's warm start alike. */
export function warmStartArgs(config: RunConfig, data: WarmStartData, heldOut: readonly Problem[], solverSamples: Map<string, string> | undefined) {
  return { family: data.family, config, pretrain: config.pretrain, train: data.train, heldOut, seed: config.seed, solverSamples };
}

/**
 * Supervised training of one policy on the roles it plays. Returns the evaluation history; the
 * caller snapshots weights at the chosen evaluation via `onEval` (return true to keep them).
 */
export async function pretrainPolicy(
  policy: PolicyRuntime,
  args: {
    family: TaskFamily;
    config: RunConfig;
    pretrain: PretrainConfig;
    train: readonly Problem[];
    heldOut: readonly Problem[];
    seed: number;
    solverSamples?: Map<string, string>;
    evalEvery: number;
    onProgress?: (p: PretrainProgress) => void;
    /** May return a promise (e.g. reading the weights to keep on webgpu); training waits for it. */
    onEval?: (e: PretrainEval) => void | Promise<void>;
    signal?: AbortSignal;
  },
): Promise<PretrainEval[]> {
  const roles = rolesOf(args.config, policy.id);
  const rng = new Rng(args.seed, `pretrain:${policy.id}`);
  const optimizer = createOptimizer(policy.model, { ...policy.config.optimizer, lr: args.pretrain.lr }, { warmupSteps: args.pretrain.warmup_steps, decaySteps: args.pretrain.steps, minLrRatio: 0.1 });
  const history: PretrainEval[] = [];
  const evaluateNow = async (step: number) => {
    const scores: Partial<Record<Role, number>> = {};
    for (const role of roles) scores[role] = await roleScore(policy, args.family, role, args.heldOut, args.config, args.seed + 17);
    const e: PretrainEval = { policyId: policy.id, step, scores };
    if (roles.includes('solver')) e.sampledSolver = await roleScore(policy, args.family, 'solver', args.heldOut, args.config, args.seed + 19, args.config.rollout.temperature);
    history.push(e);
    await args.onEval?.(e);
  };
  try {
    for (let step = 0; step < args.pretrain.steps; step++) {
      // Yield now and then so a stop request reaches a process busy warm-starting.
      if (step % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
      if (args.signal?.aborted) break;
      const sequences: TrainingSequence[] = [];
      while (sequences.length < args.pretrain.batch_size) {
        const role = roles[sequences.length % roles.length];
        const problem = args.train[rng.int(0, args.train.length - 1)];
        const seq = toSequence(policy.tokenizer, warmStartExample(args.family, role, problem, rng, { solverSamples: args.solverSamples, mistakenReportShare: args.pretrain.corrector_mistaken_reports }), policy.model.context);
        if (seq) sequences.push(seq);
      }
      const { tokens, lossMask } = padBatch(sequences, policy.tokenizer.padId);
      const batch = { tokens, lossMask };
      const result = await syncWhereReadable(
        () => supervisedStep(policy.model, optimizer, batch),
        () => supervisedStepAsync(policy.model, optimizer, batch),
      );
      args.onProgress?.({ policyId: policy.id, step, steps: args.pretrain.steps, loss: result.loss, gradNorm: result.gradNorm, lr: result.lr });
      if (args.evalEvery > 0 && (step + 1) % args.evalEvery === 0) await evaluateNow(step + 1);
    }
    if (history.length === 0 || history[history.length - 1].step !== args.pretrain.steps) await evaluateNow(args.pretrain.steps);
  } finally {
    optimizer.dispose();
  }
  return history;
}

/**
 * `pretrain.start_from_solver`: `policy` (a Verifier's or Corrector's) starts its warm start from
 * `solverWeights`, the Solver's weights after its last warm-start step. The Solver's checkpoint is
 * chosen early on purpose (to leave RL room); its last step knows the arithmetic best, and that
 * is what the other roles compute with. On the tiny-qwen preset a Verifier trained on its role
 * alone reached 0.58 on the even mix of right and wrong solutions in 600 steps, while the Solver,
 * in as many, solved 0.94 (resources/checkpoints/README.md).
 */
export function startFromSolverWeights(policy: PolicyRuntime, solverWeights: Float32Array): void {
  policy.model.setWeights(solverWeights);
}

/**
 * With `pretrain.start_from_solver`, every policy of `policies` other than the Solver must have the
 * Solver's sizes. Called before any training, so a mismatch is found before the Solver's warm
 * start is spent.
 */
export function assertStartFromSolverFits(config: RunConfig, policies: Iterable<PolicyRuntime>, solver: PolicyRuntime | undefined): void {
  if (!config.pretrain.start_from_solver || !solver) return;
  const shape = (p: PolicyRuntime) => p.model.specs.map((s) => `${s.name}:${s.shape.join('x')}`).join(',');
  for (const policy of policies) {
    if (policy === solver || shape(policy) === shape(solver)) continue;
    throw new Error(
      `pretrain.start_from_solver: policy ${policy.id}'s model does not have the Solver's (${solver.id}) sizes (${policy.model.numParams} against ${solver.model.numParams} trainable values); give it the Solver's model or set pretrain.start_from_solver to false`,
    );
  }
}

/** Problems whose texts the tiny tokenizer learns from (more add little: the generator's words repeat). */
const SCRATCH_CORPUS_PROBLEMS = 2000;

/**
 * `pretrain.hf_scratch`: make the tiny Qwen3 every Hugging Face policy of `config` warm-starts
 * from (tokenizer learned on the task's texts and the system prompts the policy adds, fresh
 * weights; engine/hf/tiny-qwen.ts) in a temporary folder, and point those policies' model.path at
 * it. Their LoRA blocks are dropped: a warm start trains every weight. Returns the folder (the
 * caller removes it), or null when the config has no hf_scratch or no Hugging Face policy.
 */
export function prepareHfScratch(config: RunConfig, family: TaskFamily, train: readonly Problem[]): string | null {
  const scratch = config.pretrain.hf_scratch;
  const hfIds = usedPolicyIds(config).filter((id) => config.policies[id].model.kind === 'hf');
  for (const id of hfIds) {
    const model = config.policies[id].model;
    if (model.kind === 'hf') delete model.lora;
  }
  if (!scratch || hfIds.length === 0) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-tiny-qwen-'));
  const corpus = taskCorpus(family, train.slice(0, SCRATCH_CORPUS_PROBLEMS), config.seed, Object.values(DEFAULT_SYSTEM_PROMPTS));
  writeTinyQwenModel(dir, {
    sizes: { layers: scratch.layers, hidden: scratch.hidden, heads: scratch.heads, kvHeads: scratch.kv_heads, headDim: scratch.head_dim, intermediate: scratch.intermediate, context: scratch.context, merges: scratch.merges },
    corpus,
    seed: scratch.seed,
  });
  for (const id of hfIds) {
    const model = config.policies[id].model;
    if (model.kind === 'hf') model.path = dir;
  }
  return dir;
}

/** The file beside a warm-started Hugging Face folder that says how it was made. */
export const PRETRAIN_INFO_FILE = 'marsrl-pretrain.json';

/**
 * Write a warm-started Hugging Face policy as a Hugging Face folder at `dir` (replacing one there):
 * config.json, model.safetensors (F32), the tokenizer's files and generation_config.json, plus
 * marsrl-pretrain.json (`info`, and the SHA-256 of config and weights so a preset can check them).
 */
export function saveHfWarmStart(dir: string, policy: PolicyRuntime, info: object): void {
  const { model, source } = policy;
  if (!(model instanceof HfModel) || source.family !== 'hf') throw new Error(`policy ${policy.id} is not a Hugging Face policy; save it with savePolicyCheckpoint`);
  exportHfFolder(dir, { config: model.config, configJson: hfConfigJson(model.config), tensors: hfNamedTensors(model), dtype: 'F32', tokenizerDir: source.tokenizerDir, force: true });
  const identity = hfModelIdentity(dir);
  fs.writeFileSync(path.join(dir, PRETRAIN_INFO_FILE), `${JSON.stringify({ ...info, configDigest: identity.configDigest, weightsDigest: identity.weightsDigest }, null, 2)}\n`);
}
