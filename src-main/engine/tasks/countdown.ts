/**
 * countdown: reach a target from given numbers with +, − and ×, each number used at most once.
 * Producing a solution is a search; checking one is local: redo each step's arithmetic and confirm
 * its operands were available (given and unused, or produced by an earlier step and unused).
 *
 * The final answer is the list of steps, `a<op>b=r` joined by commas; the last step must produce
 * the target. Texts at difficulty 3 (4 numbers from 1…9, target ≤ 199):
 *   question  `make 54: 2 3 5 7`
 *   solver    `A:3+5=8,8*7=56,56-2=54`
 *   verifier  `8yy 56yy 54yy t:y V:ok`   per step: the recomputed result, `y`/`n` for "the written
 *             result is right", `y`/`n` for "both operands were available"; then `t:y`/`t:n` for
 *             "the last result is the target"; an unreadable answer gets `x V:no`.
 *
 * Difficulty table (numbers drawn uniformly with repeats; the target is built by combining all of
 * them in a random order, so a solution with count − 1 steps exists; the target never equals a
 * given number):
 * | d  | numbers | max number | max target | question | solution | verifier prompt | verifier target | corrector prompt |
 * |----|---------|------------|------------|----------|----------|-----------------|-----------------|------------------|
 * | 1  | 3       | 12         | 99         | 17       | 19       | 37              | 20              | 42               |
 * | 3  | 4       | 9          | 199        | 17       | 27       | 45              | 26              | 50               |
 * | 5  | 5       | 15         | 499        | 24       | 44       | 69              | 33              | 74               |
 * | 10 | 7       | 99         | 999        | 30       | 66       | 97              | 47              | 102              |
 * Maxima in characters over 2000 generated problems, each with its reference solution and one
 * constructed mistake (`corruptSolution`); test/tasks/lengths.test.ts holds d = 3 to ≤ 60.
 * From d = 5 a solution can pass the default 64-token response budget: raise
 * rollout.max_response_tokens and model.context with the difficulty.
 */
import type { Rng } from '../util/rng';
import { answerText, parseSolution, verdictText } from '../agents/formats';
import { assertDifficulty, characterFamily, firstWrong, generateDistinct, solves, DIGITS } from './common';
import type { GenerateOptions, Problem, TaskFamily } from './types';

const FAMILY = 'countdown';
type Operator = '+' | '-' | '*';
const OPERATORS: readonly Operator[] = ['+', '-', '*'];

interface Level {
  numbers: number;
  maxNumber: number;
  maxTarget: number;
}

/** Index d − 1 holds difficulty d. */
const LEVELS: readonly Level[] = [
  { numbers: 3, maxNumber: 12, maxTarget: 99 },
  { numbers: 3, maxNumber: 20, maxTarget: 199 },
  { numbers: 4, maxNumber: 9, maxTarget: 199 },
  { numbers: 4, maxNumber: 15, maxTarget: 299 },
  { numbers: 5, maxNumber: 15, maxTarget: 499 },
  { numbers: 5, maxNumber: 25, maxTarget: 999 },
  { numbers: 6, maxNumber: 25, maxTarget: 999 },
  { numbers: 6, maxNumber: 50, maxTarget: 999 },
  { numbers: 7, maxNumber: 50, maxTarget: 999 },
  { numbers: 7, maxNumber: 99, maxTarget: 999 },
];

export function countdownLevel(difficulty: number): Level {
  assertDifficulty(FAMILY, difficulty);
  return LEVELS[difficulty - 1];
}

export interface Step {
  left: number;
  operator: Operator;
  right: number;
  result: number;
}

function apply(left: number, operator: Operator, right: number): number {
  return operator === '+' ? left + right : operator === '-' ? left - right : left * right;
}

function stepText(step: Step): string {
  return `${step.left}${step.operator}${step.right}=${step.result}`;
}

/** Operands of at most 6 digits keep every product exact in a double (< 2^53). */
const STEP_PATTERN = /^(0|[1-9][0-9]{0,5})([+\-*])(0|[1-9][0-9]{0,5})=(0|[1-9][0-9]{0,11})$/;

/** Parses `a+b=c,…`; null when any step is unreadable (whitespace around tokens is ignored). */
export function parseSteps(answer: string): Step[] | null {
  const parts = answer.replace(/\s+/g, '').split(',');
  const steps: Step[] = [];
  for (const part of parts) {
    const match = STEP_PATTERN.exec(part);
    if (!match) return null;
    steps.push({ left: Number(match[1]), operator: match[2] as Operator, right: Number(match[3]), result: Number(match[4]) });
  }
  return steps;
}

interface StepAudit {
  recomputed: number;
  arithmeticOk: boolean;
  operandsAvailable: boolean;
}

/**
 * Replays the steps over the multiset of available values (the given numbers, then each written
 * result). Operands that are not available are not consumed; the written result always becomes
 * available, so one bad step does not hide the checks of the next ones.
 */
function auditSteps(numbers: readonly number[], steps: readonly Step[]): StepAudit[] {
  const available = new Map<number, number>();
  const add = (value: number) => available.set(value, (available.get(value) ?? 0) + 1);
  const take = (value: number): boolean => {
    const count = available.get(value) ?? 0;
    if (count === 0) return false;
    available.set(value, count - 1);
    return true;
  };
  numbers.forEach(add);
  return steps.map((step) => {
    const leftOk = take(step.left);
    const rightOk = take(step.right);
    add(step.result);
    const recomputed = apply(step.left, step.operator, step.right);
    return { recomputed, arithmeticOk: recomputed === step.result, operandsAvailable: leftOk && rightOk };
  });
}

function numbersOf(problem: Problem): number[] {
  return problem.meta.numbers as number[];
}

function targetOf(problem: Problem): number {
  return problem.meta.target as number;
}

export function checkCountdownAnswer(problem: Problem, answer: string | null): boolean {
  if (answer === null) return false;
  const steps = parseSteps(answer);
  if (steps === null || steps.length === 0) return false;
  const audits = auditSteps(numbersOf(problem), steps);
  return audits.every((a) => a.arithmeticOk && a.operandsAvailable) && steps[steps.length - 1].result === targetOf(problem);
}

function solverTarget(problem: Problem): string {
  return answerText((problem.meta.steps as Step[]).map(stepText).join(','));
}

function verifierTarget(problem: Problem, solutionText: string): string {
  const { answer } = parseSolution(solutionText);
  const steps = answer === null ? null : parseSteps(answer);
  if (steps === null || steps.length === 0) return `x ${verdictText('reject')}`;
  const audits = auditSteps(numbersOf(problem), steps);
  const flag = (ok: boolean) => (ok ? 'y' : 'n');
  const perStep = audits.map((a) => `${a.recomputed}${flag(a.arithmeticOk)}${flag(a.operandsAvailable)}`).join(' ');
  const reachesTarget = steps[steps.length - 1].result === targetOf(problem);
  const verdict = checkCountdownAnswer(problem, answer) ? 'approve' : 'reject';
  return `${perStep} t:${flag(reachesTarget)} ${verdictText(verdict)}`;
}

/** Combines all numbers in a random order into one value; null when a step breaks the level's rules. */
function randomDerivation(rng: Rng, numbers: readonly number[], level: Level): Step[] | null {
  const pool = numbers.slice();
  const steps: Step[] = [];
  while (pool.length > 1) {
    const first = pool.splice(rng.int(0, pool.length - 1), 1)[0];
    const second = pool.splice(rng.int(0, pool.length - 1), 1)[0];
    const operator = rng.pick(OPERATORS);
    const [left, right] = operator === '-' ? [Math.max(first, second), Math.min(first, second)] : [first, second];
    const result = apply(left, operator, right);
    // Keep every intermediate positive and small, and skip steps that change nothing (×1, −0).
    if (result <= 0 || result > level.maxTarget || (operator === '*' && (left === 1 || right === 1))) return null;
    steps.push({ left, operator, right, result });
    pool.push(result);
  }
  return steps;
}

function corruptSolution(problem: Problem, solutionText: string, rng: Rng): string {
  const parsed = parseSolution(solutionText);
  const own = parsed.answer === null ? null : parseSteps(parsed.answer);
  const steps = own !== null && own.length > 0 ? own : (problem.meta.steps as Step[]);
  const write = (changed: Step[]) => answerText(changed.map(stepText).join(','));
  const at = () => rng.int(0, steps.length - 1);
  const offByOne = (value: number) => (value <= 1 ? value + 1 : value + (rng.next() < 0.5 ? -1 : 1));
  const mutations = [
    // An arithmetic slip: one result off by one (later steps still use it as written).
    () => {
      const i = at();
      return write(steps.map((s, j) => (j === i ? { ...s, result: offByOne(s.result) } : s)));
    },
    // A wrong operator with the result left as is.
    () => {
      const i = at();
      const others = OPERATORS.filter((op) => op !== steps[i].operator);
      return write(steps.map((s, j) => (j === i ? { ...s, operator: rng.pick(others) } : s)));
    },
    // An operand that was not given (or already used), with consistent arithmetic.
    () => {
      const i = at();
      const s = steps[i];
      const right = offByOne(s.right);
      const result = apply(s.left, s.operator, right);
      return result < 0 ? null : write(steps.map((t, j) => (j === i ? { ...t, right, result } : t)));
    },
    // Stopping one step short of the target.
    () => (steps.length < 2 ? null : write(steps.slice(0, -1))),
    // Claiming the target on the last step although the arithmetic does not give it.
    () => {
      const last = steps[steps.length - 1];
      const wrongRight = offByOne(last.right);
      return write([...steps.slice(0, -1), { ...last, right: wrongRight, result: targetOf(problem) }]);
    },
  ];
  const isCorrect = solves(checkCountdownAnswer, problem);
  // Fallback: a last step that does not reach the target (target + 1 is never the target).
  const last = steps[steps.length - 1];
  return firstWrong(rng, mutations, isCorrect, () => write([...steps.slice(0, -1), { ...last, result: targetOf(problem) + 1 }]));
}

export const countdownFamily: TaskFamily = characterFamily({
  name: FAMILY,
  description: 'Reach a target from given numbers with +, − and ×, each used at most once; checked by replaying the steps.',
  notation: [
    { roles: ['solver', 'corrector'], marker: 'A:3+5=8,8*7=56', meaning: 'The answer is the list of steps a<op>b=r joined by commas; the last result must be the target.' },
    { roles: ['verifier'], marker: '56yy', meaning: 'Per step: the recomputed result, then y/n for "the written result is right" and y/n for "both operands were available" (given and unused, or made by an earlier step).' },
    { roles: ['verifier'], marker: 't:y', meaning: 't:y / t:n: whether the last result is the target.' },
  ],
  ownCharacters: `${DIGITS}make: +-*=,ytnx `,
  generate(options: GenerateOptions): Problem[] {
    const level = countdownLevel(options.difficulty);
    return generateDistinct(FAMILY, options, (rng) => {
      const numbers: number[] = [];
      for (let i = 0; i < level.numbers; i++) numbers.push(rng.int(1, level.maxNumber));
      numbers.sort((a, b) => a - b);
      const steps = randomDerivation(rng, numbers, level);
      if (steps === null) return null;
      const target = steps[steps.length - 1].result;
      if (numbers.includes(target)) return null;
      return {
        canonical: `${numbers.join(',')}>${target}`,
        question: `make ${target}: ${numbers.join(' ')}`,
        answer: steps.map(stepText).join(','),
        meta: { numbers, target, steps, difficulty: options.difficulty },
      };
    });
  },
  checkAnswer: checkCountdownAnswer,
  solverTarget,
  verifierTarget,
  corruptSolution,
});
