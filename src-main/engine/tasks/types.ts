/**
 * The contract every task family implements: seeded generation with a difficulty knob, a
 * deterministic checker, and the warm-start targets for the three roles.
 */
import type { AgentTextFormat } from '../agents/prompts';
import type { Rng } from '../util/rng';

export type Split = 'train' | 'test';

export interface Problem {
  /** Stable id, unique across families and splits: `<family>:<canonical problem>`. */
  key: string;
  family: string;
  split: Split;
  /** What the Solver reads. */
  question: string;
  /** A reference final answer (for countdown: one valid solution among possibly many). */
  answer: string;
  /** Family-specific structure (digits, numbers, factors, …) used by the targets and checkers. */
  meta: Record<string, unknown>;
}

export interface GenerateOptions {
  seed: number;
  /** 1 (easiest) … 10. */
  difficulty: number;
  count: number;
  split: Split;
}

/** One piece of a family's text format, explained where a turn is shown (issue 18). */
export interface TaskNotation {
  /** The roles whose texts contain it. */
  roles: readonly ('solver' | 'verifier' | 'corrector')[];
  /** How it looks in a text: `c:`, `s:0=1=2x…`. */
  marker: string;
  meaning: string;
}

export interface TaskFamily {
  name: string;
  /** One line for the UI. */
  description: string;
  /** What the family's own notation in the agents' texts means (the shared `A:`/`V:` marks aside). */
  notation: readonly TaskNotation[];
  /**
   * Every character a question, a target response or a prompt built by `agents/formats` can
   * contain, sorted and de-duplicated; the tokenizer is built from it.
   */
  charset: string;
  /**
   * `count` distinct problems of one split. Deterministic in (seed, difficulty, split); asking for
   * more returns a longer list with the same prefix. Train and test never share a problem, whatever
   * the seeds. Throws when the split holds fewer than `count` distinct problems.
   */
  generate(options: GenerateOptions): Problem[];
  /** Whether a final answer (the text after `A:`) is correct. Deterministic; null is wrong. */
  checkAnswer(problem: Problem, answerText: string | null): boolean;
  /** A worked solution ending in `A:<answer>`: the Solver's warm-start target. */
  solverTarget(problem: Problem): string;
  /** Working-out then `V:ok`/`V:no`, correct for the given solution: the Verifier's warm-start target. */
  verifierTarget(problem: Problem, solutionText: string): string;
  /** A repaired solution (the given one when it is already right): the Corrector's warm-start target. */
  correctorTarget(problem: Problem, solutionText: string, reportText: string): string;
  /** A plausible wrong solution built from `solutionText` (or from the reference when it has no answer). */
  corruptSolution(problem: Problem, solutionText: string, rng: Rng): string;
  /**
   * A report rejecting `solutionText` written by a Verifier that worked the problem wrong, for
   * the Corrector's warm start (`pretrain.corrector_mistaken_reports`); null when there is none
   * for this solution. Families whose reports carry no working (the character families) omit it.
   */
  mistakenReport?(problem: Problem, solutionText: string, rng: Rng): string | null;
  /**
   * How the agents' prompts are written and their outputs parsed, when not by the character
   * format of `agents/formats` (`A:` / `V:`): the math family's templated chat prompts, boxed
   * answers and verdict lines (agents/prompts.ts). Targets and `checkAnswer` follow this format.
   */
  format?: AgentTextFormat;
}
