/**
 * Pieces shared by the generated families: the train/test split, seeded distinct generation, and
 * the generic parts of the warm-start targets.
 */
import { hashString, Rng } from '../util/rng';
import { parseSolution, uniqueChars, FORMAT_CHARSET } from '../agents/formats';
import type { GenerateOptions, Problem, Split, TaskFamily } from './types';

export const MIN_DIFFICULTY = 1;
export const MAX_DIFFICULTY = 10;

/**
 * Share of every family's problem space held out for testing, in thousandths. A problem's split is
 * a hash of its canonical form alone (not of the seed or the difficulty), so no seed, difficulty or
 * size ever puts one problem in both splits, and the held-out set is the same across runs.
 */
export const TEST_SHARE_PER_MILLE = 100;

export function splitOf(family: string, canonical: string): Split {
  return hashString(`split/${family}/${canonical}`) % 1000 < TEST_SHARE_PER_MILLE ? 'test' : 'train';
}

export function problemKey(family: string, canonical: string): string {
  return `${family}:${canonical}`;
}

export function assertDifficulty(family: string, difficulty: number): void {
  if (!Number.isInteger(difficulty) || difficulty < MIN_DIFFICULTY || difficulty > MAX_DIFFICULTY) {
    throw new Error(`${family}: difficulty must be an integer from ${MIN_DIFFICULTY} to ${MAX_DIFFICULTY}, got ${difficulty}`);
  }
}

/** One sampled candidate: its canonical form decides identity and split. */
export interface Candidate {
  canonical: string;
  question: string;
  answer: string;
  meta: Record<string, unknown>;
}

/** Attempts in a row without a new problem after which the split is declared exhausted. */
const EXHAUSTION_ATTEMPTS = 50_000;

/**
 * Draws candidates from one seeded stream until `count` distinct problems of the wanted split are
 * found. The stream depends on (seed, family, difficulty, split) only, so a longer request extends
 * a shorter one.
 */
export function generateDistinct(family: string, options: GenerateOptions, sample: (rng: Rng) => Candidate | null): Problem[] {
  assertDifficulty(family, options.difficulty);
  if (!Number.isInteger(options.count) || options.count < 0) throw new Error(`${family}: count must be a non-negative integer, got ${options.count}`);
  if (options.split !== 'train' && options.split !== 'test') throw new Error(`${family}: split must be "train" or "test", got ${String(options.split)}`);
  const rng = new Rng(options.seed, `tasks/${family}/d${options.difficulty}/${options.split}`);
  const seen = new Set<string>();
  const problems: Problem[] = [];
  let misses = 0;
  while (problems.length < options.count) {
    const candidate = sample(rng);
    if (candidate === null || seen.has(candidate.canonical) || splitOf(family, candidate.canonical) !== options.split) {
      if (++misses > EXHAUSTION_ATTEMPTS) {
        throw new Error(
          `${family}: difficulty ${options.difficulty} yields only ${problems.length} distinct ${options.split} problems ` +
            `(asked for ${options.count}); raise the difficulty or lower task.train_size/task.test_size`,
        );
      }
      continue;
    }
    misses = 0;
    seen.add(candidate.canonical);
    problems.push({
      key: problemKey(family, candidate.canonical),
      family,
      split: options.split,
      question: candidate.question,
      answer: candidate.answer,
      meta: candidate.meta,
    });
  }
  return problems;
}

/** A family's charset: its own characters plus those the prompt/answer/verdict formats add. */
function familyCharset(ownCharacters: string): string {
  return uniqueChars(ownCharacters + FORMAT_CHARSET);
}

/** What a family of the character format writes itself; `characterFamily` derives the rest. */
export type CharacterFamilyParts = Omit<TaskFamily, 'charset' | 'correctorTarget' | 'format'> & {
  /** The family's own characters (`charset` adds the formats'). */
  ownCharacters: string;
};

/**
 * A family of the character format (`A:` / `V:`, agents/formats.ts): the sorted, generated and
 * jsonl families. Their charset is their own characters plus the formats', and their Corrector
 * target is the same rule under each one's checker (`repairedSolution`).
 */
export function characterFamily({ ownCharacters, ...parts }: CharacterFamilyParts): TaskFamily {
  return {
    ...parts,
    charset: familyCharset(ownCharacters),
    correctorTarget: (problem, solutionText) => repairedSolution(solutionText, (answer) => parts.checkAnswer(problem, answer), () => parts.solverTarget(problem)),
  };
}

/** Whether a character-format solution's final answer solves `problem` under `checkAnswer` (for `firstWrong`). */
export function solves(checkAnswer: (problem: Problem, answer: string | null) => boolean, problem: Problem): (solution: string) => boolean {
  return (solution) => checkAnswer(problem, parseSolution(solution).answer);
}

/**
 * The Corrector's warm-start target: keep a solution that is already right and well formed (the
 * Verifier wrongly rejected it), otherwise write the reference worked solution.
 */
function repairedSolution(solutionText: string, isCorrect: (answer: string | null) => boolean, reference: () => string): string {
  const parsed = parseSolution(solutionText);
  if (parsed.formatValid && isCorrect(parsed.answer)) return solutionText.trim();
  return reference();
}

/**
 * Applies randomly chosen mutations until one yields a wrong answer; `fallback` must always be
 * wrong. Mutations may return null when they do not apply to this answer.
 */
export function firstWrong(
  rng: Rng,
  mutations: ReadonlyArray<() => string | null>,
  isCorrect: (solution: string) => boolean,
  fallback: () => string,
): string {
  for (let attempt = 0; attempt < 32; attempt++) {
    const mutated = rng.pick(mutations)();
    if (mutated !== null && !isCorrect(mutated)) return mutated;
  }
  return fallback();
}

/** `digits` with the digit at `index` replaced by a neighbour (±1, staying within 0…9). */
export function nudgeDigit(digits: string, index: number, rng: Rng): string {
  const digit = Number(digits[index]);
  const nudged = digit === 0 ? 1 : digit === 9 ? 8 : digit + (rng.next() < 0.5 ? -1 : 1);
  return digits.slice(0, index) + String(nudged) + digits.slice(index + 1);
}

export const DIGITS = '0123456789';

/**
 * Problems of one split drawn from a file's records (the jsonl and math families): a seeded
 * shuffle of the split's records, the first `count` of them. Records are split by their question
 * (`splitOf`), so train and test never share one whatever the seed.
 */
export function problemsFromRecords<R extends { question: string; answer: string }>(
  family: string,
  splitRecords: Record<Split, R[]>,
  options: GenerateOptions,
  meta: (record: R) => Record<string, unknown>,
): Problem[] {
  assertDifficulty(family, options.difficulty);
  const pool = splitRecords[options.split];
  if (pool === undefined) throw new Error(`${family}: split must be "train" or "test", got ${String(options.split)}`);
  const order = new Rng(options.seed, `tasks/${family}/${options.split}`).shuffle(pool);
  return order.slice(0, options.count).map((record) => ({
    key: problemKey(family, record.question),
    family,
    split: options.split,
    question: record.question,
    answer: record.answer,
    meta: meta(record),
  }));
}
