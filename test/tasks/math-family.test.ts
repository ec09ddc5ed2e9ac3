/**
 * The math task family (issue #14) under the TaskFamily contract that test/tasks/families.test.ts
 * holds the character families to, in its own format: boxed answers and verdict lines.
 */
import { describe, expect, it } from 'vitest';
import { parseStrictVerdict } from '../../src-main/engine/agents/prompts';
import { parseBoxedSolution } from '../../src-main/engine/tasks/math-format';
import { getTaskFamily } from '../../src-main/engine/tasks';
import { familyNotation } from '../../src-main/engine/tasks/registry';
import { createMathFamily } from '../../src-main/engine/tasks/math';
import { parseSteps, wordProblemSettings } from '../../src-main/engine/tasks/math-generator';
import type { Problem, TaskFamily } from '../../src-main/engine/tasks/types';
import { Rng } from '../../src-main/engine/util/rng';
import { mistakeShapes } from '../helpers/mistakes';
import { problemsInBothSplits } from '../helpers/splits';

const family: TaskFamily = getTaskFamily('math');
const answerOf = (text: string) => parseBoxedSolution(text).answer;

/** The question's arithmetic, recomputed from its words alone (an independent reading of the text). */
function solveFromText(question: string): number {
  const start = /has (\d+) /.exec(question);
  let value = Number(start![1]);
  for (const sentence of question.split(/(?<=\.) /).slice(1)) {
    const n = Number(/(\d+)/.exec(sentence)?.[1]);
    if (/buys|finds|gives \w+ \d+ more/.test(sentence)) value += n;
    else if (/gives away|loses|sells/.test(sentence)) value -= n;
    else if (/times/.test(sentence)) value *= n;
    else if (/equal groups|equally among/.test(sentence)) value /= n;
  }
  return value;
}

describe('math notation in the trajectory browser', () => {
  it("explains the boxed answer and the verdict line, not the character families' A: and V:ok / V:no", () => {
    const notation = familyNotation('math');
    expect(notation.map((n) => [n.roles.join(','), n.marker])).toEqual([
      ['solver,corrector', '\\boxed{…}'],
      ['verifier', 'Verdict: correct / Verdict: incorrect'],
    ]);
    // The character families keep the shared marks after their own.
    expect(familyNotation('sort').map((n) => n.marker)).toContain('V:ok / V:no');
  });
});

describe('word-problem knobs', () => {
  it('follow the difficulty, and the config overrides each', () => {
    expect(wordProblemSettings(1)).toEqual({ steps: 1, maxNumber: 10, operations: ['+', '-'] });
    expect(wordProblemSettings(4)).toEqual({ steps: 2, maxNumber: 100, operations: ['+', '-', '*'] });
    expect(wordProblemSettings(10)).toEqual({ steps: 4, maxNumber: 10000, operations: ['+', '-', '*', '/'] });
    expect(wordProblemSettings(1, { steps: 3, max_number: 50, operations: '*/' })).toEqual({ steps: 3, maxNumber: 50, operations: ['*', '/'] });
    expect(() => wordProblemSettings(1, { operations: 'x' })).toThrow(/at least one of \+ - \* \//);
  });
});

describe('math family, shipped generator', () => {
  const train = family.generate({ seed: 11, difficulty: 5, count: 300, split: 'train' });
  const test = family.generate({ seed: 11, difficulty: 5, count: 100, split: 'test' });

  it('is deterministic, a longer request extending a shorter one, with stable keys', () => {
    expect(new Set(train.map((p) => p.key)).size).toBe(300);
    expect(family.generate({ seed: 11, difficulty: 5, count: 300, split: 'train' })).toEqual(train);
    expect(family.generate({ seed: 11, difficulty: 5, count: 30, split: 'train' })).toEqual(train.slice(0, 30));
    expect(family.generate({ seed: 12, difficulty: 5, count: 30, split: 'train' }).map((p) => p.key)).not.toEqual(train.slice(0, 30).map((p) => p.key));
    expect(train.every((p) => p.family === 'math' && p.key.startsWith('math:') && p.split === 'train')).toBe(true);
    expect(test.every((p) => p.split === 'test')).toBe(true);
  });

  it('never puts a problem in both splits', () => {
    expect(problemsInBothSplits(family, 1, 3000, 300)).toEqual([]);
  });

  it('asks questions whose answer is what the words say', () => {
    for (const p of [...train, ...family.generate({ seed: 3, difficulty: 10, count: 200, split: 'train' })]) {
      expect(String(solveFromText(p.question)), p.question).toBe(p.answer);
      expect(Number(p.answer)).toBeGreaterThanOrEqual(0);
      expect(Number.isInteger(Number(p.answer))).toBe(true);
    }
  });

  it('grows with the difficulty: more steps, larger numbers', () => {
    const mean = (d: number, f: (p: Problem) => number) => {
      const ps = family.generate({ seed: 3, difficulty: d, count: 100, split: 'train' });
      return ps.reduce((s, p) => s + f(p), 0) / ps.length;
    };
    const steps = (p: Problem) => parseSteps(family.solverTarget(p)).length;
    expect(mean(1, steps)).toBe(1);
    expect(mean(10, steps)).toBe(4);
    expect(mean(10, (p) => family.solverTarget(p).length)).toBeGreaterThan(mean(1, (p) => family.solverTarget(p).length) + 20);
  });

  it('writes a worked solution ending in \\boxed{answer} that the checker accepts', () => {
    const p = train[0];
    const target = family.solverTarget(p);
    expect(target).toMatch(/^(-?\d+ [-+*/] \d+ = -?\d+\n)+\\boxed\{\d+\}$/);
    for (const q of train) {
      const parsed = parseBoxedSolution(family.solverTarget(q));
      expect(parsed.formatValid).toBe(true);
      expect(family.checkAnswer(q, parsed.answer)).toBe(true);
      expect(family.checkAnswer(q, null)).toBe(false);
      expect(family.checkAnswer(q, '')).toBe(false);
    }
  });

  it('shows its exact texts on a hand-checked problem', () => {
    const p = family.generate({ seed: 5, difficulty: 4, count: 1, split: 'train' })[0];
    const steps = p.meta.steps as { left: number; op: string; operand: number; result: number }[];
    const lines = steps.map((s) => `${s.left} ${s.op} ${s.operand} = ${s.result}`);
    expect(family.solverTarget(p)).toBe(`${lines.join('\n')}\n\\boxed{${p.answer}}`);
    // The Verifier works the steps again in words (never the solution's "a - b ="), sets the two answers side by side, then their difference.
    const words: Record<string, string> = { '+': 'plus', '-': 'minus', '*': 'times', '/': 'divided by' };
    const worked = steps.map((s, i) => `Step ${i + 1}: ${s.left} ${words[s.op]} ${s.operand} gives ${s.result}.`).join('\n');
    expect(worked).toMatch(/^Step 1: \d+ (plus|minus|times|divided by) \d+ gives \d+\.\nStep 2: /);
    expect(family.verifierTarget(p, family.solverTarget(p))).toBe(`${worked}\nAnswer: ${p.answer}. The solution has ${p.answer}.\nDifference: ${p.answer} - ${p.answer} gives 0.\nVerdict: correct`);
    const slipped = `${lines[0].replace(/= (\d+)$/, (_, r: string) => `= ${Number(r) + 1}`)}\n\\boxed{${Number(steps[0].result) + 1}}`;
    const theirs = steps[0].result + 1;
    expect(family.verifierTarget(p, slipped)).toBe(`${worked}\nAnswer: ${p.answer}. The solution has ${theirs}.\nDifference: ${theirs} - ${p.answer} gives ${theirs - Number(p.answer)}.\nVerdict: incorrect`);
    // No boxed answer: nothing to subtract.
    expect(family.verifierTarget(p, 'I do not know')).toBe(`${worked}\nAnswer: ${p.answer}. The solution has no boxed answer.\nVerdict: incorrect`);

    // A Verifier shown only the final answer has no steps to copy: it works them as the Solver writes them.
    const answerOnly = createMathFamily({ prompts: { verifier: { system: 'Compare.', user: 'Problem:\n{question}\n\nGiven answer: {answer}' } } });
    expect(answerOnly.verifierTarget(p, slipped)).toBe(`${lines.join('\n')}\nAnswer: ${p.answer}. The solution has ${theirs}.\nDifference: ${theirs} - ${p.answer} gives ${theirs - Number(p.answer)}.\nVerdict: incorrect`);
    // {solution} in the system message counts as showing it.
    const inSystem = createMathFamily({ prompts: { verifier: { system: 'Check this: {solution}', user: '{question}' } } });
    expect(inSystem.verifierTarget(p, slipped).startsWith(worked)).toBe(true);
  });

  it('constructs plausible mistakes that are always wrong and well formed, of several kinds', () => {
    const kinds = mistakeShapes(family, train, parseBoxedSolution, { shape: /[0-9]+/g, label: (p, wrong) => `${p.question}\n${wrong}` });
    expect(kinds.size).toBeGreaterThan(3);
  });

  it('verifier targets end with the verdict the checker gives, after the findings', () => {
    const rng = new Rng(6, 'verify');
    for (const p of train) {
      const right = family.verifierTarget(p, family.solverTarget(p));
      expect(parseStrictVerdict(right)).toMatchObject({ verdict: 'approve', formatValid: true, verdictLines: 1 });
      const wrong = family.verifierTarget(p, family.corruptSolution(p, family.solverTarget(p), rng));
      expect(parseStrictVerdict(wrong)).toMatchObject({ verdict: 'reject', formatValid: true, verdictLines: 1 });
      // A right answer reached with the wrong working-out is still a right answer (the reward is about the answer).
      expect(parseStrictVerdict(family.verifierTarget(p, `garbage\n\\boxed{${p.answer}}`)).verdict).toBe('approve');
    }
  });

  it('corrector targets repair wrong solutions and keep right ones', () => {
    const rng = new Rng(8, 'correct');
    for (const p of train.slice(0, 100)) {
      const wrong = family.corruptSolution(p, family.solverTarget(p), rng);
      expect(family.checkAnswer(p, answerOf(family.correctorTarget(p, wrong, family.verifierTarget(p, wrong))))).toBe(true);
      const right = family.solverTarget(p);
      expect(family.correctorTarget(p, right, 'Verdict: incorrect')).toBe(right);
    }
  });

  it('its charset covers every question, target and prompt', () => {
    const small = createMathFamily({
      prompts: {
        solver: { system: '', user: '{question}' },
        verifier: { system: 'Check it.', user: '{question}\n{solution}' },
        corrector: { system: '', user: '{question}\n{solution}\n{report}' },
      },
    });
    for (const fam of [family, small]) {
      const allowed = new Set(fam.charset);
      expect([...fam.charset].sort().join('')).toBe(fam.charset);
      const rng = new Rng(9, 'charset');
      const missing = new Set<string>();
      for (const difficulty of [1, 5, 10]) {
        for (const p of fam.generate({ seed: 9, difficulty, count: 100, split: 'train' })) {
          const right = fam.solverTarget(p);
          const wrong = fam.corruptSolution(p, right, rng);
          const report = fam.verifierTarget(p, wrong);
          const texts = [p.question, right, wrong, report, fam.verifierTarget(p, 'x'), fam.format!.solverPrompt(p), fam.format!.verifierPrompt(p, wrong), fam.format!.correctorPrompt(p, wrong, report), fam.correctorTarget(p, wrong, report)];
          for (const text of texts) for (const ch of text) if (!allowed.has(ch)) missing.add(`"${ch}" in ${text}`);
        }
      }
      expect([...missing]).toEqual([]);
    }
  });

  it('renders its prompts from the templates', () => {
    const p = train[0];
    const custom = createMathFamily({ prompts: { solver: { system: 'Sys', user: 'Q: {question}' } } });
    expect(custom.format!.solverPrompt(p)).toBe(`Sys\n\nQ: ${p.question}`);
    expect(family.format!.solverPrompt(p)).toContain('\\boxed{answer}');
    expect(family.format!.verifierPrompt(p, family.solverTarget(p))).toContain(`Solution:\n${family.solverTarget(p)}`);
  });
});

describe('math family, from records', () => {
  const records = Array.from({ length: 60 }, (_, i) => ({
    row: i + 1,
    question: `What is ${i} halves?`,
    answer: `\\frac{${i}}{2}`,
    solution: i % 2 === 0 ? `${i} halves is ${i / 2}, so \\boxed{${i / 2}}` : null,
  }));
  const fromFile = createMathFamily({ records, mathPath: 'halves.jsonl' });

  it('splits by question, returns at most what a split holds, in a seeded order', () => {
    const train = fromFile.generate({ seed: 1, difficulty: 3, count: 1000, split: 'train' });
    const test = fromFile.generate({ seed: 1, difficulty: 3, count: 1000, split: 'test' });
    expect(train.length + test.length).toBe(60);
    expect(train.filter((p) => test.some((q) => q.key === p.key))).toEqual([]);
    expect(fromFile.generate({ seed: 2, difficulty: 3, count: 1000, split: 'train' }).map((p) => p.key).sort()).toEqual(train.map((p) => p.key).sort());
    expect(fromFile.generate({ seed: 1, difficulty: 3, count: 5, split: 'train' })).toEqual(train.slice(0, 5));
  });

  it('checks answers by value and uses the file’s solution as the Solver target', () => {
    const all = [...fromFile.generate({ seed: 1, difficulty: 3, count: 100, split: 'train' }), ...fromFile.generate({ seed: 1, difficulty: 3, count: 100, split: 'test' })];
    const four = all.find((p) => p.question === 'What is 4 halves?')!;
    expect(fromFile.checkAnswer(four, '2')).toBe(true);
    expect(fromFile.checkAnswer(four, '\\frac{4}{2}')).toBe(true);
    expect(fromFile.checkAnswer(four, '4')).toBe(false);
    expect(fromFile.solverTarget(four)).toBe('4 halves is 2, so \\boxed{2}');
    const three = all.find((p) => p.question === 'What is 3 halves?')!;
    expect(fromFile.solverTarget(three)).toBe('\\boxed{\\frac{3}{2}}');
    expect(fromFile.checkAnswer(three, '1.5')).toBe(true);
    expect(fromFile.verifierTarget(three, '\\boxed{1.5}')).toBe('Answer: 1.5 is right.\nVerdict: correct');
    const rng = new Rng(1, 'file-corrupt');
    for (const p of all) {
      const wrong = fromFile.corruptSolution(p, fromFile.solverTarget(p), rng);
      expect(parseBoxedSolution(wrong).formatValid).toBe(true);
      expect(fromFile.checkAnswer(p, answerOf(wrong)), wrong).toBe(false);
      for (const ch of fromFile.verifierTarget(p, wrong) + wrong + p.question) expect(fromFile.charset).toContain(ch);
    }
  });
});
