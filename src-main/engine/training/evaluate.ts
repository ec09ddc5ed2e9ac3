/**
 * Held-out evaluation of the Solver alone and of the whole system, the way the system is used at
 * inference: one chain per sample — a Solver answer, a Verifier verdict, and on rejection a
 * Corrector's repair, judged again, up to `rollout.rounds` rounds.
 *
 * Two controls tell where a system gain comes from (DESIGN.md):
 * - oracle Verifier: the verdict is the truth of the solution, so the Corrector is the only
 *   learned part after the Solver;
 * - Corrector on every answer, no Verifier: every Solver answer is repaired as if rejected.
 * Both greedy accuracy and sampled avg@k / pass@k are reported, because sampled reward lags
 * greedy accuracy in small policies.
 *
 * Verifier and Corrector quality on the Solver's current answers says how the system does, but
 * not whether those two agents got better: as the Solver learns, its remaining errors get fewer
 * and harder, and recall on them can fall while the Verifier improves. So each run also keeps a
 * fixed judged set, the warm-start Solver's sampled answers to the held-out problems (taken from
 * the first evaluation), and every evaluation has the current Verifier judge, and the current
 * Corrector repair, exactly those (`fixedSetMetrics`, `eval/fixed/…`).
 */
import type { RunConfig } from '../config/schema';
import type { Role } from '#shared/agents';
import type { Verdict } from '../agents';
import { textFormatOf } from '../agents/prompts';
import { avgAtK, correctorFixRate, passAtK, verifierPrecisionRecall, type CorrectorRepair, type VerifierJudgement } from '../agents/outcome';
import type { Problem, TaskFamily } from '../tasks/types';
import type { PolicyRuntime } from './policies';
import type { ServedRole } from '../served/roles';
import { awaitIn, decodeInSegmentsSteps, drain, drive, type RolloutSteps } from './rollout';
import { maxOf } from '../util/arrays';

export type VerifierMode = 'model' | 'oracle' | 'corrector-always';

export interface ChainStep {
  role: Role;
  round: number;
  prompt: string;
  text: string;
  /** Tokens generated: the decoded ids, or a served reply's count (0 for the oracle's verdict). */
  tokens: number;
  answer?: string | null;
  verdict?: Verdict | null;
  correct: boolean;
  /** The text parsed as its role's format asks (a boxed answer, a verdict line). */
  formatValid: boolean;
}

export interface EvalChain {
  problem: Problem;
  sample: number;
  steps: ChainStep[];
  solverCorrect: boolean;
  finalAnswer: string | null;
  finalCorrect: boolean;
}

export interface EvalContext {
  family: TaskFamily;
  /** Each role's policy, with its own model and tokenizer (a served role has none). */
  policies: Record<Role, PolicyRuntime>;
  /** Roles played by served models (issue #16): their decodes go through the pool. */
  served?: Partial<Record<Role, ServedRole>>;
  config: RunConfig;
}

/**
 * Every evaluation function is written once as a paused computation (`RolloutSteps`): the plain
 * form drains it (wasm/cpu, synchronous), the `…Async` form drives it, which awaits the readbacks
 * of a backend without synchronous reads (webgpu in Node, readback.ts; issue #15).
 */
function settle<T>(steps: RolloutSteps<T>): Promise<T> {
  return drive(steps, () => undefined);
}

function* decodeTexts(ctx: EvalContext, role: Role, prompts: string[], seed: number, temperature: number): RolloutSteps<Array<{ text: string; tokens: number }>> {
  const served = ctx.served?.[role];
  if (served) {
    if (prompts.length === 0) return [];
    // Seeded per request as the rollout seeds a served role's calls; greedy at temperature 0.
    const replies = yield* awaitIn(served.generate(role, prompts.map((promptText, i) => ({ promptText, seed: (seed + i) >>> 0, temperature }))), `the served ${role} in evaluation`);
    return replies.map((r) => ({ text: r.text, tokens: r.tokens }));
  }
  const policy = ctx.policies[role];
  const requests = prompts.map((promptText, i) => ({ promptText, promptTokens: policy.tokenizer.promptTokens(role, promptText), streamId: i }));
  if (requests.length === 0) return [];
  const longest = maxOf(requests, (r) => r.promptTokens.length);
  const results = yield* decodeInSegmentsSteps(policy, requests, {
    seed,
    temperature,
    topP: temperature === 0 ? 1 : ctx.config.rollout.top_p,
    topK: temperature === 0 ? 0 : ctx.config.rollout.top_k,
    maxNewTokens: Math.max(1, Math.min(ctx.config.rollout.max_response_tokens, policy.model.context - longest)),
    // Evaluation decodes to the end at once: segments matter for training overlap, not here.
    segmentTokens: ctx.config.rollout.max_response_tokens,
    maxSegments: 1,
    agent: role,
  });
  return results.map((r) => ({ text: policy.tokenizer.responseText(r.responseTokens), tokens: r.responseTokens.length }));
}

/** Run `samples` chains per problem; temperature 0 is greedy (then one sample is enough). */
export function runChains(ctx: EvalContext, problems: readonly Problem[], samples: number, temperature: number, mode: VerifierMode, seed: number): EvalChain[] {
  return drain(runChainsSteps(ctx, problems, samples, temperature, mode, seed));
}

/** `runChains` as a paused computation. */
export function* runChainsSteps(ctx: EvalContext, problems: readonly Problem[], samples: number, temperature: number, mode: VerifierMode, seed: number): RolloutSteps<EvalChain[]> {
  const { solverPrompt, verifierPrompt, correctorPrompt, parseSolution, parseVerdict, verdictText } = textFormatOf(ctx.family);
  const chains: EvalChain[] = [];
  for (const problem of problems) {
    for (let s = 0; s < samples; s++) chains.push({ problem, sample: s, steps: [], solverCorrect: false, finalAnswer: null, finalCorrect: false });
  }
  const solutions = yield* decodeTexts(ctx, 'solver', chains.map((c) => solverPrompt(c.problem)), seed, temperature);
  const current = chains.map((chain, i) => {
    const { text, tokens } = solutions[i];
    const parsed = parseSolution(text);
    const correct = ctx.family.checkAnswer(chain.problem, parsed.answer);
    chain.steps.push({ role: 'solver', round: 0, prompt: solverPrompt(chain.problem), text, tokens, answer: parsed.answer, correct, formatValid: parsed.formatValid });
    chain.solverCorrect = correct;
    return { text, answer: parsed.answer, correct };
  });
  const rounds = mode === 'corrector-always' ? Math.min(1, ctx.config.rollout.rounds) : ctx.config.rollout.rounds;
  let active = chains.map((_, i) => i);
  for (let round = 1; round <= rounds && active.length > 0; round++) {
    let rejected: number[];
    const reports = new Map<number, string | null>();
    if (mode === 'model') {
      const prompts = active.map((i) => verifierPrompt(chains[i].problem, current[i].text));
      const replies = yield* decodeTexts(ctx, 'verifier', prompts, seed + round * 7919, temperature);
      rejected = [];
      active.forEach((i, j) => {
        const { text, tokens } = replies[j];
        const { verdict, formatValid } = parseVerdict(text);
        chains[i].steps.push({ role: 'verifier', round, prompt: prompts[j], text, tokens, verdict, correct: verdict !== null && (verdict === 'approve') === current[i].correct, formatValid });
        reports.set(i, text);
        if (verdict === 'reject') rejected.push(i);
      });
    } else if (mode === 'oracle') {
      rejected = active.filter((i) => !current[i].correct);
      for (const i of active) {
        const verdict: Verdict = current[i].correct ? 'approve' : 'reject';
        chains[i].steps.push({ role: 'verifier', round, prompt: '(oracle)', text: verdictText(verdict), tokens: 0, verdict, correct: true, formatValid: true });
        reports.set(i, verdictText(verdict));
      }
    } else {
      rejected = active;
      for (const i of active) reports.set(i, null);
    }
    const prompts = rejected.map((i) => correctorPrompt(chains[i].problem, current[i].text, reports.get(i) ?? null));
    const repaired = yield* decodeTexts(ctx, 'corrector', prompts, seed + round * 104729, temperature);
    rejected.forEach((i, j) => {
      const { text, tokens } = repaired[j];
      const parsed = parseSolution(text);
      const correct = ctx.family.checkAnswer(chains[i].problem, parsed.answer);
      chains[i].steps.push({ role: 'corrector', round, prompt: prompts[j], text, tokens, answer: parsed.answer, correct, formatValid: parsed.formatValid });
      current[i] = { text, answer: parsed.answer, correct };
    });
    active = rejected;
  }
  chains.forEach((chain, i) => {
    chain.finalAnswer = current[i].answer;
    chain.finalCorrect = current[i].correct;
  });
  return chains;
}

function byProblem(chains: readonly EvalChain[], pick: (c: EvalChain) => boolean): boolean[][] {
  const groups = new Map<string, boolean[]>();
  for (const c of chains) {
    const list = groups.get(c.problem.key) ?? [];
    list.push(pick(c));
    groups.set(c.problem.key, list);
  }
  return [...groups.values()];
}

/** Verifier precision/recall/verdict accuracy and Corrector fix/break rates, as `<prefix><agent>/<metric>`. */
function putQuality(judgements: readonly VerifierJudgement[], repairs: readonly CorrectorRepair[], prefix: string, out: Record<string, number>): void {
  const vq = verifierPrecisionRecall(judgements);
  const cq = correctorFixRate(repairs);
  const put = (key: string, value: number | null) => {
    if (value !== null && Number.isFinite(value)) out[`${prefix}${key}`] = value;
  };
  put('verifier/precision', vq.precision);
  put('verifier/recall', vq.recall);
  if (judgements.length) put('verifier/verdict_accuracy', judgements.filter((j) => j.verdict !== null && (j.verdict === 'approve') === j.solutionCorrect).length / judgements.length);
  put('corrector/fix_rate', cq.fixRate);
  put('corrector/break_rate', cq.breakRate);
}

/** Verifier and Corrector quality over the first round of model chains. */
function agentQuality(chains: readonly EvalChain[], prefix: string, out: Record<string, number>): void {
  const judgements: VerifierJudgement[] = [];
  const repairs: CorrectorRepair[] = [];
  for (const chain of chains) {
    const solver = chain.steps[0];
    const verifier = chain.steps.find((s) => s.role === 'verifier' && s.round === 1);
    const corrector = chain.steps.find((s) => s.role === 'corrector' && s.round === 1);
    if (verifier) judgements.push({ solutionCorrect: solver.correct, verdict: verifier.verdict ?? null });
    if (corrector) repairs.push({ inputCorrect: solver.correct, correct: corrector.correct });
  }
  putQuality(judgements, repairs, prefix, out);
}

export interface EvaluationResult {
  metrics: Record<string, number>;
  /** The greedy system chains, kept as the evaluation's trajectories. */
  greedyChains: EvalChain[];
  /** The sampled chains (the first evaluation's Solver answers become the fixed judged set). */
  sampledChains: EvalChain[];
}

/** One answer of the fixed judged set: a held-out problem (index in the evaluation set) and a Solver's text. */
export interface FixedSolution {
  problem: number;
  text: string;
}

/** The fixed judged set from an evaluation's sampled chains: every Solver answer, by problem index. */
export function fixedSetFrom(problems: readonly Problem[], sampledChains: readonly EvalChain[]): FixedSolution[] {
  const index = new Map(problems.map((p, i) => [p.key, i]));
  return sampledChains.map((c) => {
    const problem = index.get(c.problem.key);
    if (problem === undefined) throw new Error(`fixed judged set: problem ${c.problem.key} is not in the evaluation set`);
    return { problem, text: c.steps[0].text };
  });
}

/**
 * The current Verifier judges, and the current Corrector repairs (told V:no, as if rejected),
 * every answer of the fixed set, greedily. Verifier precision/recall/verdict accuracy and Corrector
 * fix/break rates on the same inputs at every evaluation of a run.
 */
export function fixedSetMetrics(ctx: EvalContext, problems: readonly Problem[], solutions: readonly FixedSolution[], evalSeed: number): Promise<Record<string, number>> {
  return settle(fixedSetMetricsSteps(ctx, problems, solutions, evalSeed));
}

function* fixedSetMetricsSteps(ctx: EvalContext, problems: readonly Problem[], solutions: readonly FixedSolution[], evalSeed: number): RolloutSteps<Record<string, number>> {
  // Its own seeds, apart from the evaluation's parts (greedy decoding uses them only for stream ids).
  const seed = evalSeed + 31;
  const { verifierPrompt, correctorPrompt, parseSolution, parseVerdict } = textFormatOf(ctx.family);
  const metrics: Record<string, number> = {};
  if (ctx.config.rollout.rounds === 0 || solutions.length === 0) return metrics;
  const items = solutions.map((s) => {
    const problem = problems[s.problem];
    if (!problem) throw new Error(`fixed judged set: no held-out problem ${s.problem} (the evaluation set has ${problems.length})`);
    return { problem, text: s.text, correct: ctx.family.checkAnswer(problem, parseSolution(s.text).answer) };
  });
  const verdicts = (yield* decodeTexts(ctx, 'verifier', items.map((it) => verifierPrompt(it.problem, it.text)), seed, 0)).map((r) => parseVerdict(r.text).verdict);
  const repairs = yield* decodeTexts(ctx, 'corrector', items.map((it) => correctorPrompt(it.problem, it.text, null)), seed + 1, 0);
  const judgements = items.map((it, j) => ({ solutionCorrect: it.correct, verdict: verdicts[j] }));
  const repaired = items.map((it, j) => ({ inputCorrect: it.correct, correct: ctx.family.checkAnswer(it.problem, parseSolution(repairs[j].text).answer) }));
  metrics['eval/fixed/answers'] = items.length;
  metrics['eval/fixed/wrong_share'] = items.filter((it) => !it.correct).length / items.length;
  putQuality(judgements, repaired, 'eval/fixed/', metrics);
  return metrics;
}

/**
 * The independent parts of an evaluation: each decodes with its own seed and stream ids, so the
 * parts can run in any order or in different processes (the pipeline splits them between its
 * trainer and rollout worker) and `evaluationMetrics` gives exactly what `evaluate` gives.
 */
export type EvalPart = 'greedy' | 'oracle' | 'corrector-always' | 'sampled';

/** The parts an evaluation of this config runs (the controls need a Verifier round). */
export function evaluationParts(config: RunConfig): EvalPart[] {
  return config.rollout.rounds > 0 ? ['greedy', 'oracle', 'corrector-always', 'sampled'] : ['greedy', 'sampled'];
}

/** Run one part of the evaluation: its chains. */
export function evaluatePart(ctx: EvalContext, problems: readonly Problem[], seed: number, part: EvalPart): EvalChain[] {
  return drain(evaluatePartSteps(ctx, problems, seed, part));
}

/** `evaluatePart` on every backend, WebGPU included. */
export function evaluatePartAsync(ctx: EvalContext, problems: readonly Problem[], seed: number, part: EvalPart): Promise<EvalChain[]> {
  return settle(evaluatePartSteps(ctx, problems, seed, part));
}

function evaluatePartSteps(ctx: EvalContext, problems: readonly Problem[], seed: number, part: EvalPart): RolloutSteps<EvalChain[]> {
  switch (part) {
    case 'greedy':
      return runChainsSteps(ctx, problems, 1, 0, 'model', seed);
    case 'oracle':
      return runChainsSteps(ctx, problems, 1, 0, 'oracle', seed);
    case 'corrector-always':
      return runChainsSteps(ctx, problems, 1, 0, 'corrector-always', seed);
    case 'sampled':
      return runChainsSteps(ctx, problems, ctx.config.eval.k, ctx.config.rollout.temperature, 'model', seed + 1);
  }
}

/** The evaluation's metrics from its parts' chains (every part of `evaluationParts`). */
export function evaluationMetrics(config: RunConfig, parts: Partial<Record<EvalPart, EvalChain[]>>): EvaluationResult {
  const k = config.eval.k;
  const metrics: Record<string, number> = {};
  const mean = (flags: boolean[]) => flags.filter(Boolean).length / Math.max(flags.length, 1);
  const chainsOf = (part: EvalPart) => {
    const chains = parts[part];
    if (!chains) throw new Error(`evaluation part "${part}" is missing`);
    return chains;
  };

  const greedy = chainsOf('greedy');
  metrics['eval/solver/accuracy'] = mean(greedy.map((c) => c.solverCorrect));
  metrics['eval/system/accuracy'] = mean(greedy.map((c) => c.finalCorrect));
  metrics['eval/system/margin'] = metrics['eval/system/accuracy'] - metrics['eval/solver/accuracy'];
  agentQuality(greedy, 'eval/', metrics);

  if (config.rollout.rounds > 0) {
    metrics['eval/control/oracle_verifier/accuracy'] = mean(chainsOf('oracle').map((c) => c.finalCorrect));
    metrics['eval/control/corrector_always/accuracy'] = mean(chainsOf('corrector-always').map((c) => c.finalCorrect));
  }

  const sampled = chainsOf('sampled');
  const solverSamples = byProblem(sampled, (c) => c.solverCorrect);
  const systemSamples = byProblem(sampled, (c) => c.finalCorrect);
  const put = (key: string, value: number | null) => {
    if (value !== null) metrics[key] = value;
  };
  put(`eval/solver/avg@${k}`, avgAtK(solverSamples, k));
  put(`eval/solver/pass@${k}`, passAtK(solverSamples, k));
  put(`eval/system/avg@${k}`, avgAtK(systemSamples, k));
  put(`eval/system/pass@${k}`, passAtK(systemSamples, k));
  agentQuality(sampled, 'eval/sampled/', metrics);
  return { metrics, greedyChains: greedy, sampledChains: sampled };
}

export function evaluate(ctx: EvalContext, problems: readonly Problem[], seed: number): EvaluationResult {
  return drain(evaluateSteps(ctx, problems, seed));
}

/** `evaluate` on every backend, WebGPU included. */
export function evaluateAsync(ctx: EvalContext, problems: readonly Problem[], seed: number): Promise<EvaluationResult> {
  return settle(evaluateSteps(ctx, problems, seed));
}

function* evaluateSteps(ctx: EvalContext, problems: readonly Problem[], seed: number): RolloutSteps<EvaluationResult> {
  const parts: Partial<Record<EvalPart, EvalChain[]>> = {};
  for (const part of evaluationParts(ctx.config)) parts[part] = yield* evaluatePartSteps(ctx, problems, seed, part);
  return evaluationMetrics(ctx.config, parts);
}
