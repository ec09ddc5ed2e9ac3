/**
 * factor: write a number as a product of primes. Producing needs a search for divisors; checking
 * needs only a primality test of each (small) factor and one running product.
 *
 * The final answer lists the primes joined by `*` (any order is accepted; the reference is
 * ascending). Texts at difficulty 3:
 *   question  `factor 462`
 *   solver    `2:231 3:77 7:11 A:2*3*7*11`   each division as `divisor:quotient` until the quotient
 *             is prime, then the answer
 *   verifier  `p:yyyy m:6,42,462 y V:ok`      `y`/`n` per factor for "is prime", the running
 *             products from the second factor on (stopping once past the number), `y`/`n` for
 *             "the product is the number"; an unreadable answer gets `x V:no`.
 *
 * Difficulty table (a number is the product of a random count of primes ≤ max prime, kept when
 * it is ≤ max number; "distinct numbers" is the size of the whole space, both splits):
 * | d  | primes | max prime | max number | distinct numbers | question | solution | verifier prompt | verifier target | corrector prompt |
 * |----|--------|-----------|------------|------------------|----------|----------|-----------------|-----------------|------------------|
 * | 1  | 2–4    | 199       | 9999       | 3396             | 11       | 35       | 47              | 34              | 52               |
 * | 2  | 2–4    | 97        | 99999      | 6556             | 12       | 37       | 50              | 39              | 55               |
 * | 3  | 3–4    | 199       | 99999      | 12922            | 12       | 41       | 54              | 38              | 59               |
 * | 5  | 4–5    | 97        | 10^7 − 1   | large            | 14       | 52       | 67              | 51              | 72               |
 * | 10 | 6–8    | 199       | 10^12 − 1  | large            | 19       | 115      | 135             | 89              | 140              |
 * Maxima in characters over 2000 generated problems, each with its reference solution and one
 * constructed mistake (`corruptSolution`); test/tasks/lengths.test.ts holds d = 3 to ≤ 60.
 * About 10% of the distinct numbers are held out, so d = 1 has ≈ 3000 training problems. From d = 4
 * a solution can pass the default 64-token response budget: raise rollout.max_response_tokens and
 * model.context with the difficulty.
 */
import type { Rng } from '../util/rng';
import { answerText, parseSolution, verdictText, ANSWER_MARKER } from '../agents/formats';
import { assertDifficulty, characterFamily, firstWrong, generateDistinct, solves, DIGITS } from './common';
import type { GenerateOptions, Problem, TaskFamily } from './types';

const FAMILY = 'factor';

interface Level {
  minFactors: number;
  maxFactors: number;
  maxPrime: number;
  maxNumber: number;
}

/** Index d − 1 holds difficulty d. */
const LEVELS: readonly Level[] = [
  { minFactors: 2, maxFactors: 4, maxPrime: 199, maxNumber: 9_999 },
  { minFactors: 2, maxFactors: 4, maxPrime: 97, maxNumber: 99_999 },
  { minFactors: 3, maxFactors: 4, maxPrime: 199, maxNumber: 99_999 },
  { minFactors: 3, maxFactors: 5, maxPrime: 97, maxNumber: 999_999 },
  { minFactors: 4, maxFactors: 5, maxPrime: 97, maxNumber: 9_999_999 },
  { minFactors: 4, maxFactors: 6, maxPrime: 97, maxNumber: 99_999_999 },
  { minFactors: 5, maxFactors: 6, maxPrime: 199, maxNumber: 999_999_999 },
  { minFactors: 5, maxFactors: 7, maxPrime: 199, maxNumber: 9_999_999_999 },
  { minFactors: 6, maxFactors: 7, maxPrime: 199, maxNumber: 99_999_999_999 },
  { minFactors: 6, maxFactors: 8, maxPrime: 199, maxNumber: 999_999_999_999 },
];

export function factorLevel(difficulty: number): Level {
  assertDifficulty(FAMILY, difficulty);
  return LEVELS[difficulty - 1];
}

export function isPrime(n: number): boolean {
  if (!Number.isSafeInteger(n) || n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

function primesUpTo(limit: number): number[] {
  const primes: number[] = [];
  for (let n = 2; n <= limit; n++) if (isPrime(n)) primes.push(n);
  return primes;
}

/** Factors longer than this are not read as numbers (nothing the families generate comes close). */
const MAX_FACTOR_DIGITS = 13;
const FACTOR_PATTERN = /^[1-9][0-9]*$/;

/** Parses `2*3*7`; null when an item is not a positive integer without leading zeros. */
export function parseFactors(answer: string): number[] | null {
  const items = answer.replace(/\s+/g, '').split('*');
  if (items.some((item) => !FACTOR_PATTERN.test(item) || item.length > MAX_FACTOR_DIGITS)) return null;
  return items.map(Number);
}

interface FactorAudit {
  primeFlags: boolean[];
  /** Running products from the second factor on (the first alone for a single factor), stopping past n. */
  runningProducts: bigint[];
  productIsNumber: boolean;
}

function auditFactors(n: number, factors: readonly number[]): FactorAudit {
  const target = BigInt(n);
  const runningProducts: bigint[] = [];
  let product = 1n;
  let finished = true;
  for (let i = 0; i < factors.length; i++) {
    product *= BigInt(factors[i]);
    if (i > 0 || factors.length === 1) runningProducts.push(product);
    if (product > target && i < factors.length - 1) {
      if (i === 0) runningProducts.push(product);
      finished = false;
      break;
    }
  }
  return { primeFlags: factors.map(isPrime), runningProducts, productIsNumber: finished && product === target };
}

function numberOf(problem: Problem): number {
  return problem.meta.n as number;
}

export function checkFactorAnswer(problem: Problem, answer: string | null): boolean {
  if (answer === null) return false;
  const factors = parseFactors(answer);
  if (factors === null) return false;
  // The product first: it is cheap and bounds every factor by n before any primality test.
  const product = factors.reduce((acc, f) => acc * BigInt(f), 1n);
  return product === BigInt(numberOf(problem)) && factors.every(isPrime);
}

function solverTarget(problem: Problem): string {
  const factors = problem.meta.factors as number[];
  const divisions: string[] = [];
  let quotient = numberOf(problem);
  for (const factor of factors.slice(0, -1)) {
    quotient /= factor;
    divisions.push(`${factor}:${quotient}`);
  }
  return [...divisions, answerText(factors.join('*'))].join(' ');
}

function verifierTarget(problem: Problem, solutionText: string): string {
  const { answer } = parseSolution(solutionText);
  const factors = answer === null ? null : parseFactors(answer);
  if (factors === null) return `x ${verdictText('reject')}`;
  const audit = auditFactors(numberOf(problem), factors);
  const flag = (ok: boolean) => (ok ? 'y' : 'n');
  const work = `p:${audit.primeFlags.map(flag).join('')} m:${audit.runningProducts.join(',')} ${flag(audit.productIsNumber)}`;
  return `${work} ${verdictText(checkFactorAnswer(problem, answer) ? 'approve' : 'reject')}`;
}

function corruptSolution(problem: Problem, solutionText: string, rng: Rng): string {
  const parsed = parseSolution(solutionText);
  const own = parsed.answer === null ? null : parseFactors(parsed.answer);
  const factors = own ?? (problem.meta.factors as number[]);
  // Keep the given solution's working-out; only the final answer goes wrong.
  const source = own === null ? solverTarget(problem) : solutionText;
  const work = source.slice(0, source.lastIndexOf(ANSWER_MARKER));
  const primes = primesUpTo(Math.max(...(problem.meta.factors as number[]), 7));
  const write = (changed: number[]) => `${work}${answerText(changed.join('*'))}`;
  const at = () => rng.int(0, factors.length - 1);
  const mutations = [
    // Two factors left multiplied: the product is right, one factor is not prime.
    () => {
      if (factors.length < 2) return null;
      const i = rng.int(0, factors.length - 2);
      return write([...factors.slice(0, i), factors[i] * factors[i + 1], ...factors.slice(i + 2)]);
    },
    // A factor dropped.
    () => {
      const i = at();
      return factors.length < 2 ? null : write(factors.filter((_, j) => j !== i));
    },
    // A factor written twice.
    () => {
      const i = at();
      return write([...factors.slice(0, i + 1), ...factors.slice(i)]);
    },
    // A factor off by one.
    () => {
      const i = at();
      return write(factors.map((f, j) => (j === i ? f + (f <= 2 || rng.next() < 0.5 ? 1 : -1) : f)));
    },
    // A neighbouring prime in place of the right one.
    () => {
      const i = at();
      const index = primes.indexOf(factors[i]);
      if (index === -1) return null;
      const neighbour = primes[index === 0 ? 1 : index + (rng.next() < 0.5 ? -1 : 1)];
      return neighbour === undefined ? null : write(factors.map((f, j) => (j === i ? neighbour : f)));
    },
  ];
  const isCorrect = solves(checkFactorAnswer, problem);
  // Fallback: an extra factor 2 always breaks the product.
  return firstWrong(rng, mutations, isCorrect, () => write([...factors, 2]));
}

export const factorFamily: TaskFamily = characterFamily({
  name: FAMILY,
  description: 'Write a number as a product of primes; checked by primality of each factor and the product.',
  notation: [
    { roles: ['solver', 'corrector'], marker: '2:231 3:77', meaning: 'Each division as divisor:quotient, until the quotient is prime; then the answer, the primes joined by *.' },
    { roles: ['verifier'], marker: 'p:yyyy', meaning: 'y/n per factor for "is prime".' },
    { roles: ['verifier'], marker: 'm:6,42,462 y', meaning: 'The running products from the second factor on (stopping once past the number), then y/n for "the product is the number".' },
  ],
  ownCharacters: `${DIGITS}factor :*pmyx,`,
  generate(options: GenerateOptions): Problem[] {
    const level = factorLevel(options.difficulty);
    const primes = primesUpTo(level.maxPrime);
    return generateDistinct(FAMILY, options, (rng) => {
      const count = rng.int(level.minFactors, level.maxFactors);
      const factors: number[] = [];
      for (let i = 0; i < count; i++) factors.push(rng.pick(primes));
      factors.sort((a, b) => a - b);
      const n = factors.reduce((product, f) => product * f, 1);
      if (n > level.maxNumber) return null;
      return {
        canonical: String(n),
        question: `factor ${n}`,
        answer: factors.join('*'),
        meta: { n, factors, difficulty: options.difficulty },
      };
    });
  },
  checkAnswer: checkFactorAnswer,
  solverTarget,
  verifierTarget,
  corruptSolution,
});
