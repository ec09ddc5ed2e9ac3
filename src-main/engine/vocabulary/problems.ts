/**
 * The words a task family and the agents share (issue 37, the vocabulary leaf): the task family
 * names, a problem and its split, how a family is asked for problems, and the contract every
 * family implements — seeded generation with a difficulty knob, a deterministic checker, and the
 * warm-start targets for the three roles; and what an agent's text format is (how prompts are
 * written for a problem and outputs parsed into an answer or a verdict). Types and names only:
 * the families live in tasks/, the formats in agents/formats.ts (the character tasks') and
 * tasks/math-format.ts (the math family's), and both import these words from here rather than
 * from each other.
 */
import type { Role } from '#shared/agents';
import type { Rng } from '../util/rng';

/** The task families a config may name (`task.family`), in the schema's order. */
export const TASK_FAMILIES = ['sort', 'countdown', 'factor', 'addition', 'jsonl', 'math'] as const;
export type TaskFamilyName = (typeof TASK_FAMILIES)[number];

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
  roles: readonly Role[];
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
   * answers and verdict lines (tasks/math-format.ts). Targets and `checkAnswer` follow this format.
   */
  format?: AgentTextFormat;
}

export type Verdict = 'approve' | 'reject';

export interface ParsedSolution {
  /** The text after the last answer marker, trimmed; null when there is no marker or nothing after it. */
  answer: string | null;
  /** True when the text has exactly one answer marker followed by a non-empty answer. */
  formatValid: boolean;
}

export interface ParsedVerdict {
  /** The word after the last verdict marker; null when there is none or it is neither `ok` nor `no`. */
  verdict: Verdict | null;
  /** True when the text has exactly one verdict marker, followed by `ok`/`no` and nothing else. */
  formatValid: boolean;
}

/** A chat message rendered by a model's chat template. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * What a task family's agents read and how their outputs are parsed. The character tasks use
 * `agents/formats` (`A:` / `V:` markers, tiny prompts); the math family uses prompt templates.
 * Prompts are plain text for the policy seam's `promptTokens(role, text)`.
 */
export interface AgentTextFormat {
  solverPrompt(problem: Pick<Problem, 'question'>): string;
  verifierPrompt(problem: Pick<Problem, 'question'>, solution: string): string;
  correctorPrompt(problem: Pick<Problem, 'question'>, solution: string, report: string | null): string;
  parseSolution(text: string): ParsedSolution;
  parseVerdict(text: string): ParsedVerdict;
  /** A bare verdict as this format writes it (the oracle Verifier's report, the warm-start report). */
  verdictText(verdict: Verdict): string;
  /**
   * The same prompts as chat messages (system, user), for policies that render a chat template
   * (the Hugging Face family); the string prompts above are these messages flattened.
   */
  chat?: {
    solver(problem: Pick<Problem, 'question'>): ChatMessage[];
    verifier(problem: Pick<Problem, 'question'>, solution: string): ChatMessage[];
    corrector(problem: Pick<Problem, 'question'>, solution: string, report: string | null): ChatMessage[];
  };
}
