/**
 * sort: order a string of digits. Checked by order and by permutation (digit counts), never by
 * comparing with a reference string.
 *
 * Texts at difficulty d (n = d + 5 digits), e.g. d = 3:
 *   question  `sort 53819072`
 *   solver    `c:1111011111 A:01235789`         counts of 0…9, then the answer
 *   verifier  reads `sort 53819072|A:01325789` (the final answer only, see formats.ts) and writes
 *             `s:0=1=2x3x5=7=8=9= V:no`: the question's digits re-sorted, each followed by `=` when
 *             the answer has the same digit at that position and `x` when not (an answer longer
 *             than the question gets one `x` per extra digit), then the verdict. An answer that
 *             is not a digit string (or longer than 16) gets `x V:no`.
 *
 * Why the Verifier re-sorts instead of counting. The prototype's Verifier wrote per-digit counts
 * and adjacent-order checks, and that was tried first here: with 100k-parameter character models
 * it never learned to count the answer's digits. It copied the Solver's count string (or its own
 * count of the question) as the answer's counts and approved 96% of wrong answers greedily (recall
 * 0.04 on the shipped Solver's samples). The Solver's own errors show why counting is the wrong
 * tool for these models: in 45 greedy errors on held-out problems its count string was wrong 44
 * times while its answer was one substitution away from right, so the model sorts by content, it
 * does not count. Re-sorting is the Solver's own skill, and the per-position mark puts every
 * comparison next to the digit it checks, so the verdict only has to notice an `x`. Trained from
 * scratch this Verifier reached recall 0.85 at precision 0.98 on the Solver's samples after 400
 * warm-start steps (a verdict-only re-sort, or a separate mark string after the re-sorted digits,
 * stayed at recall < 0.1: the model learned to re-sort but not to look the answer up).
 * Checking is still cheaper than solving in what it has to get right: a re-sort that is wrong
 * only costs a false rejection, which the Corrector, reading the question, mostly leaves right.
 *
 * Maxima in characters over 2000 generated problems, each with its reference solution and one
 * constructed mistake (`corruptSolution`); test/tasks/lengths.test.ts holds d = 3 to ≤ 60.
 * | d  | n  | question | solution | verifier prompt | verifier target | corrector prompt |
 * |----|----|----------|----------|-----------------|-----------------|------------------|
 * | 1  | 6  | 11       | 22       | 21              | 20              | 39               |
 * | 3  | 8  | 13       | 24       | 25              | 24              | 43               |
 * | 5  | 10 | 15       | 26       | 29              | 28              | 47               |
 * | 10 | 15 | 20       | 31       | 39              | 38              | 57               |
 * The corrector target is a solution (the solver's length).
 */
import type { Rng } from '../util/rng';
import { answerText, parseSolution, verdictText, ANSWER_MARKER } from '../agents/formats';
import { assertDifficulty, characterFamily, firstWrong, generateDistinct, nudgeDigit, solves, DIGITS } from './common';
import type { GenerateOptions, Problem, TaskFamily } from './types';

const FAMILY = 'sort';
/** Digits to sort at difficulty d. */
export function sortLength(difficulty: number): number {
  assertDifficulty(FAMILY, difficulty);
  return difficulty + 5;
}
/** Longer answers are not analysed digit by digit (their counts would not fit one character). */
const MAX_ANALYSED_LENGTH = 16;
/** Counts 0…16 written as one character each. */
const COUNT_CHARS = '0123456789abcdefg';

function digitCounts(digits: string): number[] {
  const counts = new Array<number>(10).fill(0);
  for (const ch of digits) counts[Number(ch)]++;
  return counts;
}

function countVector(digits: string): string {
  return digitCounts(digits)
    .map((count) => COUNT_CHARS[count])
    .join('');
}

/** `0<1=1>0`: each adjacent pair as `<` (increasing), `=` (equal) or `>` (out of order). */
function orderMarks(digits: string): string {
  let marks = digits[0] ?? '';
  for (let i = 1; i < digits.length; i++) {
    const relation = digits[i - 1] < digits[i] ? '<' : digits[i - 1] === digits[i] ? '=' : '>';
    marks += relation + digits[i];
  }
  return marks;
}

function sortedDigits(digits: string): string {
  return [...digits].sort().join('');
}

function isDigitString(text: string): boolean {
  return /^[0-9]+$/.test(text);
}

function questionDigits(problem: Problem): string {
  return problem.meta.digits as string;
}

/** Checked by order and by permutation, never by comparing with the reference string. */
export function checkSortAnswer(problem: Problem, answer: string | null): boolean {
  if (answer === null) return false;
  const candidate = answer.trim();
  const digits = questionDigits(problem);
  if (!isDigitString(candidate) || candidate.length !== digits.length) return false;
  if (orderMarks(candidate).includes('>')) return false;
  return countVector(candidate) === countVector(digits);
}

function solverTarget(problem: Problem): string {
  const digits = questionDigits(problem);
  return `c:${countVector(digits)} ${answerText(sortedDigits(digits))}`;
}

function verifierTarget(problem: Problem, solutionText: string): string {
  const { answer } = parseSolution(solutionText);
  const correct = checkSortAnswer(problem, answer);
  if (answer === null || !isDigitString(answer) || answer.length > MAX_ANALYSED_LENGTH) return `x ${verdictText('reject')}`;
  const resorted = sortedDigits(questionDigits(problem));
  let work = '';
  for (let i = 0; i < Math.max(resorted.length, answer.length); i++) work += (resorted[i] ?? '') + (resorted[i] === answer[i] ? '=' : 'x');
  return `s:${work} ${verdictText(correct ? 'approve' : 'reject')}`;
}

/** Splits a solution into the text before the final answer and the answer itself. */
function splitSolution(solutionText: string, fallback: string): { work: string; answer: string } {
  const parsed = parseSolution(solutionText);
  const source = parsed.answer !== null && isDigitString(parsed.answer) ? solutionText : fallback;
  const at = source.lastIndexOf(ANSWER_MARKER);
  return { work: source.slice(0, at), answer: source.slice(at + ANSWER_MARKER.length).trim() };
}

function corruptSolution(problem: Problem, solutionText: string, rng: Rng): string {
  const reference = solverTarget(problem);
  const { work, answer } = splitSolution(solutionText, reference);
  const withAnswer = (wrong: string, newWork = work) => `${newWork}${ANSWER_MARKER}${wrong}`;
  const position = (limit: number) => rng.int(0, Math.max(0, limit - 1));
  const mutations = [
    // Two neighbours swapped: an ordering slip.
    () => {
      const i = position(answer.length - 1);
      if (answer.length < 2 || answer[i] === answer[i + 1]) return null;
      return withAnswer(answer.slice(0, i) + answer[i + 1] + answer[i] + answer.slice(i + 2));
    },
    // A digit dropped.
    () => {
      const i = position(answer.length);
      return answer.length < 2 ? null : withAnswer(answer.slice(0, i) + answer.slice(i + 1));
    },
    // A digit written twice.
    () => {
      const i = position(answer.length);
      return withAnswer(answer.slice(0, i + 1) + answer.slice(i));
    },
    // A digit off by one.
    () => withAnswer(nudgeDigit(answer, position(answer.length), rng)),
    // Another sorted string of the same length: an answer unrelated to the question, so that
    // copying the answer is never a safe way to write the re-sorted digits.
    () => {
      let other = '';
      for (let i = 0; i < answer.length; i++) other += DIGITS[rng.int(0, 9)];
      return withAnswer(sortedDigits(other));
    },
    // A miscount: one digit's count off by one, and the answer written from the wrong counts.
    () => {
      const counts = digitCounts(questionDigits(problem));
      const digit = rng.int(0, 9);
      counts[digit] = Math.max(0, counts[digit] + (rng.next() < 0.5 ? -1 : 1));
      const wrong = counts.map((count, d) => String(d).repeat(count)).join('');
      const wrongWork = `c:${counts.map((count) => COUNT_CHARS[count]).join('')} `;
      return wrong === '' ? null : withAnswer(wrong, wrongWork);
    },
  ];
  const isCorrect = solves(checkSortAnswer, problem);
  return firstWrong(rng, mutations, isCorrect, () => withAnswer(`${answer}${DIGITS[position(10)]}`));
}

export const sortFamily: TaskFamily = characterFamily({
  name: FAMILY,
  description: 'Sort a string of digits; checked by order and by permutation (digit counts).',
  notation: [
    { roles: ['solver', 'corrector'], marker: 'c:1111011111', meaning: "How many times each digit 0…9 occurs in the question (one character per digit: 0–9, then a–g for 10–16), written before the answer." },
    { roles: ['verifier'], marker: 's:0=1=2x3…', meaning: "The question's digits re-sorted, each followed by = when the answer has the same digit at that position and x when it does not (one x per extra answer digit); any x means the answer is wrong. A lone x means the answer was not a digit string." },
  ],
  ownCharacters: `${DIGITS}${COUNT_CHARS}sortc:o<=>x `,
  generate(options: GenerateOptions): Problem[] {
    const length = sortLength(options.difficulty);
    return generateDistinct(FAMILY, options, (rng) => {
      let digits = '';
      for (let i = 0; i < length; i++) digits += DIGITS[rng.int(0, 9)];
      return { canonical: digits, question: `sort ${digits}`, answer: sortedDigits(digits), meta: { digits, difficulty: options.difficulty } };
    });
  },
  checkAnswer: checkSortAnswer,
  solverTarget,
  verifierTarget,
  corruptSolution,
});
