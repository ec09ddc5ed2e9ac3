/**
 * The policies are character-level GPTs with a 128-character context and a 64-token response budget
 * by default. At the default difficulty (3) every prompt and every target response must stay within
 * about 60 characters so that prompt + response fits; the tables in each family's file come from
 * these measurements.
 */
import { describe, expect, it } from 'vitest';
import { getTaskFamily } from '../../src-main/engine/tasks';
import { correctorPrompt, solverPrompt, verifierPrompt } from '../../src-main/engine/agents/formats';
import { RolloutSchema, ModelSchema } from '../../src-main/engine/config/schema';
import { Rng } from '../../src-main/engine/util/rng';

const LIMIT = 60;
const DEFAULT_CONTEXT = ModelSchema.parse({}).context;
const DEFAULT_RESPONSE_BUDGET = RolloutSchema.parse({}).max_response_tokens;

/** Room left for role and special tokens around prompt and response. */
const SPECIAL_TOKEN_ALLOWANCE = 4;

interface Maxima {
  question: number;
  solution: number;
  verifierPrompt: number;
  verifierTarget: number;
  correctorPrompt: number;
  correctorTarget: number;
}

function measure(name: string, difficulty: number, count: number): Maxima {
  const family = getTaskFamily(name);
  const rng = new Rng(difficulty, `lengths/${name}`);
  const max: Maxima = { question: 0, solution: 0, verifierPrompt: 0, verifierTarget: 0, correctorPrompt: 0, correctorTarget: 0 };
  for (const p of family.generate({ seed: 1, difficulty, count, split: 'train' })) {
    const right = family.solverTarget(p);
    const solutions = [right, family.corruptSolution(p, right, rng), family.corruptSolution(p, right, rng)];
    max.question = Math.max(max.question, solverPrompt(p).length);
    for (const solution of solutions) {
      const report = family.verifierTarget(p, solution);
      max.solution = Math.max(max.solution, solution.length);
      max.verifierPrompt = Math.max(max.verifierPrompt, verifierPrompt(p, solution).length);
      max.verifierTarget = Math.max(max.verifierTarget, report.length);
      max.correctorPrompt = Math.max(max.correctorPrompt, correctorPrompt(p, solution, report).length);
      max.correctorTarget = Math.max(max.correctorTarget, family.correctorTarget(p, solution, report).length);
    }
  }
  return max;
}

describe.each(['sort', 'countdown', 'factor', 'addition'])('%s lengths', (name) => {
  it(`at difficulty 3 every prompt and target is ≤ ${LIMIT} characters`, () => {
    const max = measure(name, 3, 1500);
    for (const [what, length] of Object.entries(max)) expect(length, `${name} ${what}`).toBeLessThanOrEqual(LIMIT);
    // Each agent's prompt + response fits the default context with room for special tokens.
    expect(max.question + max.solution + SPECIAL_TOKEN_ALLOWANCE).toBeLessThanOrEqual(DEFAULT_CONTEXT);
    expect(max.verifierPrompt + max.verifierTarget + SPECIAL_TOKEN_ALLOWANCE).toBeLessThanOrEqual(DEFAULT_CONTEXT);
    expect(max.correctorPrompt + max.correctorTarget + SPECIAL_TOKEN_ALLOWANCE).toBeLessThanOrEqual(DEFAULT_CONTEXT);
    expect(Math.max(max.solution, max.verifierTarget, max.correctorTarget)).toBeLessThanOrEqual(DEFAULT_RESPONSE_BUDGET);
  });

  it('lengths grow with difficulty', () => {
    const easy = measure(name, 1, 200);
    const hard = measure(name, 10, 200);
    expect(hard.question).toBeGreaterThan(easy.question);
    expect(hard.solution).toBeGreaterThan(easy.solution);
    expect(hard.verifierTarget).toBeGreaterThan(easy.verifierTarget);
  });
});

describe('sort stays within the default budget at every difficulty', () => {
  it('prompt + response ≤ context for every role up to difficulty 10', () => {
    for (let difficulty = 1; difficulty <= 10; difficulty++) {
      const max = measure('sort', difficulty, 200);
      expect(max.verifierPrompt + max.verifierTarget + SPECIAL_TOKEN_ALLOWANCE, `d=${difficulty}`).toBeLessThanOrEqual(DEFAULT_CONTEXT);
    }
  });
});
