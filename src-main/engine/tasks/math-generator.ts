/**
 * The shipped generator of multi-step arithmetic word problems (issue #14): seeded, deterministic,
 * with a difficulty knob for CPU-scale runs and tests. A problem is a person, a kind of thing, a
 * starting count and a chain of events, each one arithmetic operation on the running count:
 *
 *   question  Mia has 7 apples. She buys 3 more apples. She gives away 4 apples.
 *             How many apples does Mia have now?
 *   solution  7 + 3 = 10
 *             10 - 4 = 6
 *             \boxed{6}
 *
 * Knobs (config `task.math_generator`, each defaulting from `task.difficulty` d):
 *   steps       1 + ⌊(d − 1) / 3⌋ operations (1 at d = 1–3, 2 at 4–6, 3 at 7–9, 4 at 10);
 *   max_number  10^(1 + (d − 1) / 3), rounded: the largest starting count and operand of + and −
 *               (10 at d = 1, 100 at 4, 1000 at 7, 10 000 at 10);
 *   operations  + and − up to d = 3, × (by 2…9) from 4, ÷ (by 2…9, exact, keeping one share) from 7.
 * Counts never go below zero, and a division is only drawn when it is exact, so every answer is a
 * non-negative integer.
 */
import type { Rng } from '../util/rng';
import { assertDifficulty } from './common';

export type Operation = '+' | '-' | '*' | '/';
export const OPERATIONS: readonly Operation[] = ['+', '-', '*', '/'];

export interface WordProblemSettings {
  steps: number;
  maxNumber: number;
  operations: Operation[];
}

/** Config overrides of the knobs (`task.math_generator`). */
export interface WordProblemOverrides {
  steps?: number;
  max_number?: number;
  /** A string of `+ - * /`. */
  operations?: string;
}

export function wordProblemSettings(difficulty: number, overrides: WordProblemOverrides = {}): WordProblemSettings {
  assertDifficulty('math', difficulty);
  const defaultOperations: Operation[] = difficulty <= 3 ? ['+', '-'] : difficulty <= 6 ? ['+', '-', '*'] : ['+', '-', '*', '/'];
  const operations = overrides.operations === undefined ? defaultOperations : OPERATIONS.filter((op) => overrides.operations!.includes(op));
  if (operations.length === 0) throw new Error(`math: task.math_generator.operations must name at least one of + - * /, got ${JSON.stringify(overrides.operations)}`);
  return {
    steps: overrides.steps ?? 1 + Math.floor((difficulty - 1) / 3),
    maxNumber: overrides.max_number ?? Math.round(10 ** (1 + (difficulty - 1) / 3)),
    operations,
  };
}

/** One arithmetic step: `left op operand = result`. */
export interface WordProblemStep {
  op: Operation;
  left: number;
  operand: number;
  result: number;
}

export interface WordProblem {
  /** The text the Solver reads. */
  question: string;
  /** Identity of the problem (decides its split): person, thing, start and operations, not the wording. */
  canonical: string;
  start: number;
  steps: WordProblemStep[];
  answer: number;
}

interface Person {
  name: string;
  subject: string;
  object: string;
}

const PEOPLE: readonly Person[] = [
  { name: 'Mia', subject: 'She', object: 'her' },
  { name: 'Noah', subject: 'He', object: 'him' },
  { name: 'Ava', subject: 'She', object: 'her' },
  { name: 'Liam', subject: 'He', object: 'him' },
  { name: 'Zoe', subject: 'She', object: 'her' },
  { name: 'Omar', subject: 'He', object: 'him' },
  { name: 'Lena', subject: 'She', object: 'her' },
  { name: 'Ravi', subject: 'He', object: 'him' },
  { name: 'Sara', subject: 'She', object: 'her' },
  { name: 'Tom', subject: 'He', object: 'him' },
];

const THINGS: readonly string[] = ['apples', 'marbles', 'stickers', 'coins', 'books', 'pencils', 'cards', 'shells', 'stamps', 'cookies'];

/** Event sentences per operation; `{n}` is the operand. */
const EVENTS: Readonly<Record<Operation, readonly string[]>> = {
  '+': ['{S} buys {n} more {t}.', '{S} finds {n} more {t}.', 'A friend gives {O} {n} more {t}.'],
  '-': ['{S} gives away {n} {t}.', '{S} loses {n} {t}.', '{S} sells {n} {t}.'],
  '*': ['Then {s} has {n} times as many {t} as before.', 'The number of {t} {s} has grows {n} times.'],
  '/': ['{S} splits the {t} into {n} equal groups and keeps one group.', '{S} shares the {t} equally among {n} children, {s} included, and keeps one share.'],
};

/** Every character the generator writes into a question (letters, digits and this punctuation). */
export const GENERATOR_PUNCTUATION = ' .,?';

function apply(op: Operation, left: number, operand: number): number {
  if (op === '+') return left + operand;
  if (op === '-') return left - operand;
  if (op === '*') return left * operand;
  return left / operand;
}

/** The steps of a chain of operations from `start` (used to recompute after a mutation). */
export function runSteps(start: number, ops: readonly { op: Operation; operand: number }[]): WordProblemStep[] {
  const steps: WordProblemStep[] = [];
  let value = start;
  for (const { op, operand } of ops) {
    const result = apply(op, value, operand);
    steps.push({ op, left: value, operand, result });
    value = result;
  }
  return steps;
}

/** Draws one problem; null when the draw cannot be completed (the caller draws again). */
export function sampleWordProblem(rng: Rng, settings: WordProblemSettings): WordProblem | null {
  const person = rng.pick(PEOPLE);
  const thing = rng.pick(THINGS);
  const start = rng.int(1, settings.maxNumber);
  const ops: { op: Operation; operand: number }[] = [];
  const sentences: string[] = [];
  let value = start;
  for (let s = 0; s < settings.steps; s++) {
    const possible = settings.operations.filter((op) => {
      if (op === '-') return value >= 1;
      if (op === '/') return divisors(value).length > 0;
      return true;
    });
    if (possible.length === 0) return null;
    const op = rng.pick(possible);
    const operand = op === '+' ? rng.int(1, settings.maxNumber) : op === '-' ? rng.int(1, Math.min(value, settings.maxNumber)) : op === '*' ? rng.int(2, 9) : rng.pick(divisors(value));
    ops.push({ op, operand });
    value = apply(op, value, operand);
    const fill = (template: string) =>
      template.replace('{S}', person.subject).replace('{s}', person.subject.toLowerCase()).replace('{O}', person.object).replace('{n}', String(operand)).replace('{t}', thing);
    sentences.push(fill(rng.pick(EVENTS[op])));
  }
  const question = `${person.name} has ${start} ${thing}. ${sentences.join(' ')} How many ${thing} does ${person.name} have now?`;
  return {
    question,
    // The wording is not part of the identity: the same arithmetic told twice is one problem.
    canonical: `${person.name}|${thing}|${start}|${ops.map((o) => `${o.op}${o.operand}`).join('')}`,
    start,
    steps: runSteps(start, ops),
    answer: value,
  };
}

/** Divisors 2…9 of `value` that leave a whole share (value ≥ divisor). */
function divisors(value: number): number[] {
  const out: number[] = [];
  for (let k = 2; k <= 9; k++) if (value >= k && value % k === 0) out.push(k);
  return out;
}

/** `a op b = c` as the solutions write it. */
export function stepText(step: Pick<WordProblemStep, 'op' | 'left' | 'operand' | 'result'>): string {
  return `${step.left} ${step.op} ${step.operand} = ${step.result}`;
}

const STEP_PATTERN = /(-?\d+)\s*([-+*/])\s*(-?\d+)\s*=\s*(-?\d+(?:\.\d+)?)/g;

/** The `a op b = c` lines a solution writes, in order. */
export function parseSteps(solution: string): WordProblemStep[] {
  return [...solution.matchAll(STEP_PATTERN)].map((m) => ({ left: Number(m[1]), op: m[2] as Operation, operand: Number(m[3]), result: Number(m[4]) }));
}
