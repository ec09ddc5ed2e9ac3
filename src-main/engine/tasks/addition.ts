/**
 * addition: the negative control. Checking a sum is as hard as computing it, so a Verifier has no
 * easier route than redoing the Solver's work; in the prototype a small Verifier on 4-digit
 * addition never learned to reject and the system never beat the Solver alone. Runs on this family
 * show what the other families' gains are not made of.
 *
 * Texts at difficulty d (two numbers of d + 1 digits), e.g. d = 3:
 *   question  `4821+3907`
 *   solver    `8,2,17,8 A:8728`        the column sums from the right, carries included, then the answer
 *   verifier  `8,2,17,8 s:8728 V:ok`   the column sums recomputed, the sum, then the verdict; an
 *             answer that is not a digit string gets `x V:no`.
 *
 * Maxima in characters over 2000 generated problems, each with its reference solution and one
 * constructed mistake (`corruptSolution`); test/tasks/lengths.test.ts holds d = 3 to ≤ 60.
 * | d  | digits | question | solution | verifier prompt | verifier target | corrector prompt |
 * |----|--------|----------|----------|-----------------|-----------------|------------------|
 * | 1  | 2      | 5        | 13       | 19              | 18              | 24               |
 * | 3  | 4      | 9        | 21       | 31              | 26              | 36               |
 * | 5  | 6      | 13       | 29       | 43              | 34              | 48               |
 * | 10 | 11     | 23       | 49       | 73              | 54              | 78               |
 */
import type { Rng } from '../util/rng';
import { answerText, parseSolution, verdictText, ANSWER_MARKER } from '../agents/formats';
import { assertDifficulty, characterFamily, firstWrong, generateDistinct, nudgeDigit, solves, DIGITS } from './common';
import type { GenerateOptions, Problem, TaskFamily } from './types';

const FAMILY = 'addition';

export function additionDigits(difficulty: number): number {
  assertDifficulty(FAMILY, difficulty);
  return difficulty + 1;
}

/**
 * Column sums from the right with the incoming carry included; `dropCarryAt` ignores the carry
 * out of that column (a classic slip, used to build plausible mistakes).
 */
function columnSums(a: string, b: string, dropCarryAt = -1): number[] {
  const width = Math.max(a.length, b.length);
  const sums: number[] = [];
  let carry = 0;
  for (let i = 0; i < width; i++) {
    const da = Number(a[a.length - 1 - i] ?? '0');
    const db = Number(b[b.length - 1 - i] ?? '0');
    const sum = da + db + carry;
    sums.push(sum);
    carry = i === dropCarryAt ? 0 : Math.floor(sum / 10);
  }
  if (carry > 0) sums.push(carry);
  return sums;
}

function sumFromColumns(sums: readonly number[]): string {
  const digits = sums.map((s, i) => (i === sums.length - 1 ? String(s) : String(s % 10)));
  return digits.reverse().join('');
}

function operands(problem: Problem): [string, string] {
  return [problem.meta.a as string, problem.meta.b as string];
}

export function checkAdditionAnswer(problem: Problem, answer: string | null): boolean {
  if (answer === null) return false;
  const [a, b] = operands(problem);
  return answer.trim() === (BigInt(a) + BigInt(b)).toString();
}

function solverTarget(problem: Problem): string {
  const [a, b] = operands(problem);
  const sums = columnSums(a, b);
  return `${sums.join(',')} ${answerText(sumFromColumns(sums))}`;
}

function verifierTarget(problem: Problem, solutionText: string): string {
  const { answer } = parseSolution(solutionText);
  if (answer === null || !/^[0-9]+$/.test(answer)) return `x ${verdictText('reject')}`;
  const [a, b] = operands(problem);
  const sums = columnSums(a, b);
  const verdict = checkAdditionAnswer(problem, answer) ? 'approve' : 'reject';
  return `${sums.join(',')} s:${sumFromColumns(sums)} ${verdictText(verdict)}`;
}

function corruptSolution(problem: Problem, solutionText: string, rng: Rng): string {
  const [a, b] = operands(problem);
  const parsed = parseSolution(solutionText);
  const source = parsed.answer !== null && /^[0-9]+$/.test(parsed.answer) ? solutionText : solverTarget(problem);
  const at = source.lastIndexOf(ANSWER_MARKER);
  const work = source.slice(0, at);
  const answer = source.slice(at + ANSWER_MARKER.length).trim();
  const mutations = [
    // A dropped carry, with working-out consistent with the slip.
    () => {
      const sums = columnSums(a, b);
      const carrying = sums.map((s, i) => (s >= 10 && i < sums.length - 1 ? i : -1)).filter((i) => i >= 0);
      if (carrying.length === 0) return null;
      const wrongSums = columnSums(a, b, rng.pick(carrying));
      return `${wrongSums.join(',')} ${answerText(sumFromColumns(wrongSums))}`;
    },
    // One digit of the answer off by one.
    () => `${work}${ANSWER_MARKER}${nudgeDigit(answer, rng.int(0, answer.length - 1), rng)}`,
    // Two neighbouring digits swapped.
    () => {
      const i = rng.int(0, Math.max(0, answer.length - 2));
      if (answer.length < 2 || answer[i] === answer[i + 1]) return null;
      return `${work}${ANSWER_MARKER}${answer.slice(0, i)}${answer[i + 1]}${answer[i]}${answer.slice(i + 2)}`;
    },
  ];
  const isCorrect = solves(checkAdditionAnswer, problem);
  return firstWrong(rng, mutations, isCorrect, () => `${work}${ANSWER_MARKER}${answer}0`);
}

export const additionFamily: TaskFamily = characterFamily({
  name: FAMILY,
  description: 'Add two numbers (negative control: checking is as hard as solving).',
  notation: [
    { roles: ['solver', 'corrector', 'verifier'], marker: '8,2,17,8', meaning: 'The column sums from the right, carries included.' },
    { roles: ['verifier'], marker: 's:8728', meaning: 'The sum the Verifier recomputed, compared with the answer.' },
  ],
  ownCharacters: `${DIGITS}+,s:x `,
  generate(options: GenerateOptions): Problem[] {
    const width = additionDigits(options.difficulty);
    const randomNumber = (rng: Rng) => {
      let digits = String(rng.int(1, 9));
      for (let i = 1; i < width; i++) digits += DIGITS[rng.int(0, 9)];
      return digits;
    };
    return generateDistinct(FAMILY, options, (rng) => {
      const a = randomNumber(rng);
      const b = randomNumber(rng);
      return {
        canonical: `${a}+${b}`,
        question: `${a}+${b}`,
        answer: (BigInt(a) + BigInt(b)).toString(),
        meta: { a, b, difficulty: options.difficulty },
      };
    });
  },
  checkAnswer: checkAdditionAnswer,
  solverTarget,
  verifierTarget,
  corruptSolution,
});
