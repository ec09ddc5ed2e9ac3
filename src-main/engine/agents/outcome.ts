/**
 * The system's final answer, and the metrics that compare the system with its agents.
 *
 * Final answer of a chain (one path Solver → Verifier1 → Corrector1 → Verifier2 → …): the answer of
 * the last surviving solution. The Solver's answer stands until a Verifier rejects it; a rejection
 * hands the solution to the next Corrector, whose answer replaces it (even when the Corrector's
 * output has no readable answer: the system then has none). The chain stops at the first Verifier
 * that does not reject (an approval, or a verdict that cannot be parsed, which Correctors never
 * receive), or when the rounds run out: MarsRL's loop (arXiv 2511.11373) of verify → correct until
 * the Verifier approves or the round limit is reached.
 *
 * Final answer of an episode (one problem's rollout tree, several chains): the majority answer over
 * its chains' final answers (exact string match after trimming; chains without an answer do not
 * vote); a tie goes to the answer whose first chain comes first, so a single-chain episode (how
 * evaluation runs) is its chain. The answer never depends on the reference.
 */
import type { Verdict } from './formats';
import { roleOf } from '#shared/agents';

export interface ChainTurn {
  /** solver, verifier1, corrector1, … in chain order. */
  agent: string;
  /** Parsed final answer, for the Solver and Correctors. */
  answer?: string | null;
  /** Parsed verdict, for Verifiers. */
  verdict?: Verdict | null;
}

export interface ChainOutcome {
  answer: string | null;
  /** The agent whose answer is final (solver or a corrector). */
  decidedBy: string;
  /** The last agent that acted before the chain stopped. */
  stoppedAt: string;
  /** True when a Verifier approved the final answer. */
  approved: boolean;
}

/** Walks one chain; throws when the chain breaks the Solver → (Verifier → Corrector)* order. */
export function chainFinalAnswer(chain: readonly ChainTurn[]): ChainOutcome {
  if (chain.length === 0 || roleOf(chain[0].agent) !== 'solver') throw new Error('chainFinalAnswer: a chain starts with the solver');
  let answer = chain[0].answer ?? null;
  let decidedBy = chain[0].agent;
  let stoppedAt = chain[0].agent;
  let awaitingCorrector = false;
  for (const turn of chain.slice(1)) {
    const role = roleOf(turn.agent);
    if (role === 'solver') throw new Error(`chainFinalAnswer: a second solver turn (${turn.agent}) in one chain`);
    if (role === 'verifier') {
      if (awaitingCorrector) throw new Error(`chainFinalAnswer: ${turn.agent} follows a rejection; a corrector must act first`);
      stoppedAt = turn.agent;
      if (turn.verdict !== 'reject') return { answer, decidedBy, stoppedAt, approved: turn.verdict === 'approve' };
      awaitingCorrector = true;
    } else {
      if (!awaitingCorrector) throw new Error(`chainFinalAnswer: ${turn.agent} did not receive a rejection; correctors only receive rejections`);
      answer = turn.answer ?? null;
      decidedBy = turn.agent;
      stoppedAt = turn.agent;
      awaitingCorrector = false;
    }
  }
  return { answer, decidedBy, stoppedAt, approved: false };
}

export interface EpisodeAnswer {
  answer: string | null;
  /** Chains whose final answer is the chosen one. */
  votes: number;
  chains: number;
}

/** Majority vote over the final answers of an episode's chains (see the file comment). */
export function episodeFinalAnswer(chains: readonly (readonly ChainTurn[])[]): EpisodeAnswer {
  const votes = new Map<string, number>();
  for (const chain of chains) {
    const { answer } = chainFinalAnswer(chain);
    if (answer === null) continue;
    const key = answer.trim();
    votes.set(key, (votes.get(key) ?? 0) + 1);
  }
  let best: string | null = null;
  let bestVotes = 0;
  // Map iteration follows first insertion, so a strict `>` keeps the earliest answer on ties.
  for (const [answer, count] of votes) {
    if (count > bestVotes) {
      best = answer;
      bestVotes = count;
    }
  }
  return { answer: best, votes: bestVotes, chains: chains.length };
}

/** Mean of booleans as 0/1; null for an empty list (no data is not 0% accuracy). */
export function accuracy(flags: readonly boolean[]): number | null {
  if (flags.length === 0) return null;
  return flags.filter(Boolean).length / flags.length;
}

/** Solver accuracy: the share of Solver turns whose answer is right. */
export function solverAccuracy(turns: readonly { agent: string; correct: boolean }[]): number | null {
  return accuracy(turns.filter((t) => roleOf(t.agent) === 'solver').map((t) => t.correct));
}

/** System accuracy: the share of episodes (or chains) whose final answer is right. */
export function systemAccuracy(outcomes: readonly { correct: boolean }[]): number | null {
  return accuracy(outcomes.map((o) => o.correct));
}

export interface VerifierJudgement {
  verdict: Verdict | null;
  /** Truth of the judged solution. */
  solutionCorrect: boolean;
}

export interface VerifierQuality {
  /** Of the rejections, the share that hit a wrong solution; null when nothing was rejected. */
  precision: number | null;
  /** Of the wrong solutions judged, the share rejected; null when no wrong solution was judged. */
  recall: number | null;
  rejections: number;
  wrongSolutions: number;
  caught: number;
}

/**
 * Precision and recall of rejecting wrong answers (the positive class is "wrong solution"). An
 * unparseable verdict is not a rejection: it lowers recall and does not count towards precision.
 */
export function verifierPrecisionRecall(judgements: readonly VerifierJudgement[]): VerifierQuality {
  const rejections = judgements.filter((j) => j.verdict === 'reject').length;
  const wrongSolutions = judgements.filter((j) => !j.solutionCorrect).length;
  const caught = judgements.filter((j) => j.verdict === 'reject' && !j.solutionCorrect).length;
  return {
    precision: rejections === 0 ? null : caught / rejections,
    recall: wrongSolutions === 0 ? null : caught / wrongSolutions,
    rejections,
    wrongSolutions,
    caught,
  };
}

export interface CorrectorRepair {
  /** Truth of the solution the Corrector received. */
  inputCorrect: boolean;
  /** Truth of the Corrector's own answer. */
  correct: boolean;
}

export interface CorrectorQuality {
  /** Of wrong inputs, the share turned right; null when no input was wrong. */
  fixRate: number | null;
  /** Of right inputs (false rejections), the share turned wrong; null when no input was right. */
  breakRate: number | null;
  fixed: number;
  wrongInputs: number;
  broken: number;
  rightInputs: number;
}

export function correctorFixRate(repairs: readonly CorrectorRepair[]): CorrectorQuality {
  const wrong = repairs.filter((r) => !r.inputCorrect);
  const right = repairs.filter((r) => r.inputCorrect);
  const fixed = wrong.filter((r) => r.correct).length;
  const broken = right.filter((r) => !r.correct).length;
  return {
    fixRate: wrong.length === 0 ? null : fixed / wrong.length,
    breakRate: right.length === 0 ? null : broken / right.length,
    fixed,
    wrongInputs: wrong.length,
    broken,
    rightInputs: right.length,
  };
}

/**
 * Unbiased pass@k for one problem from n samples of which c are correct (Chen et al. 2021,
 * "Evaluating Large Language Models Trained on Code", Eq. 1): 1 − C(n − c, k) / C(n, k), computed as
 * the product ∏_{i = n − c + 1}^{n} (1 − k / i) to stay stable for large n. Equals "any of the k
 * is correct" when n = k. Requires 1 ≤ k ≤ n.
 */
export function passAtKEstimate(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || k < 1 || k > n || c < 0 || c > n) {
    throw new Error(`passAtKEstimate: need integers 1 ≤ k ≤ n and 0 ≤ c ≤ n, got n=${n} c=${c} k=${k}`);
  }
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/**
 * pass@k over problems: the mean of `passAtKEstimate` with n = each problem's sample count (all
 * samples are used, which is what makes the estimator unbiased when n > k). Null for no problems.
 */
export function passAtK(samplesPerProblem: readonly (readonly boolean[])[], k: number): number | null {
  if (samplesPerProblem.length === 0) return null;
  const total = samplesPerProblem.reduce((sum, samples) => sum + passAtKEstimate(samples.length, samples.filter(Boolean).length, k), 0);
  return total / samplesPerProblem.length;
}

/**
 * avg@k over problems (Dr. MAS's evaluation): the mean over problems of the share of correct
 * samples. Every one of a problem's n ≥ k samples is used: the expectation is the same as with the
 * first k, the variance lower; evaluation draws exactly k, where the two coincide.
 */
export function avgAtK(samplesPerProblem: readonly (readonly boolean[])[], k: number): number | null {
  if (!Number.isInteger(k) || k < 1) throw new Error(`avgAtK: k must be a positive integer, got ${k}`);
  if (samplesPerProblem.length === 0) return null;
  let total = 0;
  for (const samples of samplesPerProblem) {
    if (samples.length < k) throw new Error(`avgAtK: a problem has ${samples.length} samples, fewer than k = ${k}`);
    total += samples.filter(Boolean).length / samples.length;
  }
  return total / samplesPerProblem.length;
}
