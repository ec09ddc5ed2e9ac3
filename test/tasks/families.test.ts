import { describe, expect, it } from 'vitest';
import { getTaskFamily, TASK_FAMILY_NAMES } from '../../src-main/engine/tasks';
import type { Problem, TaskFamily } from '../../src-main/engine/tasks';
import { correctorPrompt, parseSolution, parseVerdict, verifierPrompt } from '../../src-main/engine/agents/formats';
import { Rng } from '../../src-main/engine/util/rng';
import { mistakeShapes } from '../helpers/mistakes';
import { problemsInBothSplits } from '../helpers/splits';

const GENERATED = ['sort', 'countdown', 'factor', 'addition'] as const;

describe('task registry', () => {
  it('knows the families of the config schema', () => {
    expect([...TASK_FAMILY_NAMES]).toEqual(['sort', 'countdown', 'factor', 'addition', 'jsonl', 'math']);
    for (const name of GENERATED) expect(getTaskFamily(name).name).toBe(name);
  });

  it('fails on an unknown family with the list of known ones', () => {
    expect(() => getTaskFamily('sudoku')).toThrow(/unknown task family "sudoku"; known families: sort, countdown, factor, addition, jsonl, math/);
  });
});

describe.each(GENERATED)('%s family', (name) => {
  const family: TaskFamily = getTaskFamily(name);
  const train = family.generate({ seed: 11, difficulty: 3, count: 300, split: 'train' });
  const test = family.generate({ seed: 11, difficulty: 3, count: 100, split: 'test' });

  it('generates distinct problems with stable keys, deterministically, a longer request extending a shorter one', () => {
    expect(new Set(train.map((p) => p.key)).size).toBe(train.length);
    expect(family.generate({ seed: 11, difficulty: 3, count: 300, split: 'train' })).toEqual(train);
    expect(family.generate({ seed: 11, difficulty: 3, count: 40, split: 'train' })).toEqual(train.slice(0, 40));
    const otherSeed = family.generate({ seed: 12, difficulty: 3, count: 40, split: 'train' });
    expect(otherSeed.map((p) => p.key)).not.toEqual(train.slice(0, 40).map((p) => p.key));
    for (const p of [...train, ...test]) {
      expect(p.family).toBe(name);
      expect(p.key.startsWith(`${name}:`)).toBe(true);
    }
    expect(train.every((p) => p.split === 'train') && test.every((p) => p.split === 'test')).toBe(true);
  });

  it('never puts a problem in both splits (thousands of problems, different seeds)', () => {
    expect(problemsInBothSplits(family, 3, 3000, 1000)).toEqual([]);
  });

  it('validates its options', () => {
    expect(() => family.generate({ seed: 1, difficulty: 0, count: 1, split: 'train' })).toThrow(/difficulty must be an integer from 1 to 10/);
    expect(() => family.generate({ seed: 1, difficulty: 11, count: 1, split: 'train' })).toThrow(/difficulty/);
    expect(() => family.generate({ seed: 1, difficulty: 3, count: -1, split: 'train' })).toThrow(/count/);
    expect(family.generate({ seed: 1, difficulty: 3, count: 0, split: 'test' })).toEqual([]);
  });

  it('every difficulty generates problems, and harder ones are longer', () => {
    let previous = 0;
    for (let difficulty = 1; difficulty <= 10; difficulty++) {
      const problems = family.generate({ seed: 3, difficulty, count: 50, split: 'train' });
      expect(problems).toHaveLength(50);
      const meanLength = problems.reduce((sum, p) => sum + family.solverTarget(p).length, 0) / problems.length;
      expect(meanLength, `d=${difficulty}`).toBeGreaterThanOrEqual(previous - 1);
      previous = meanLength;
    }
    const easy = family.generate({ seed: 3, difficulty: 1, count: 50, split: 'train' });
    const hard = family.generate({ seed: 3, difficulty: 10, count: 50, split: 'train' });
    const mean = (ps: Problem[]) => ps.reduce((s, p) => s + family.solverTarget(p).length, 0) / ps.length;
    expect(mean(hard)).toBeGreaterThan(mean(easy) + 5);
  });

  it('its reference answer and solver target are correct, and a missing answer is wrong', () => {
    for (const p of train) {
      expect(family.checkAnswer(p, p.answer), p.key).toBe(true);
      const parsed = parseSolution(family.solverTarget(p));
      expect(parsed.formatValid).toBe(true);
      expect(family.checkAnswer(p, parsed.answer), p.key).toBe(true);
      expect(family.checkAnswer(p, null)).toBe(false);
      expect(family.checkAnswer(p, '')).toBe(false);
    }
  });

  it('constructs plausible mistakes that are always wrong and well formed', () => {
    const kinds = mistakeShapes(family, train, parseSolution, { shape: /[0-9]/g, label: (p, wrong) => `${p.key}: ${wrong}` });
    // Mistakes come in several shapes, not one.
    expect(kinds.size).toBeGreaterThan(3);
  });

  it('corrupts a wrong or unreadable solution too', () => {
    const rng = new Rng(5, 'corrupt');
    for (const p of train.slice(0, 50)) {
      const wrong = family.corruptSolution(p, family.solverTarget(p), rng);
      const twice = family.corruptSolution(p, wrong, rng);
      expect(family.checkAnswer(p, parseSolution(twice).answer)).toBe(false);
      const fromGarbage = family.corruptSolution(p, 'garbage', rng);
      expect(family.checkAnswer(p, parseSolution(fromGarbage).answer)).toBe(false);
    }
  });

  it('verifier targets approve right solutions and reject wrong ones, with working-out first', () => {
    const rng = new Rng(6, 'verify');
    for (const p of train) {
      const right = family.verifierTarget(p, family.solverTarget(p));
      expect(parseVerdict(right), right).toEqual({ verdict: 'approve', formatValid: true });
      expect(right.length).toBeGreaterThan('V:ok'.length + 1);
      const wrong = family.verifierTarget(p, family.corruptSolution(p, family.solverTarget(p), rng));
      expect(parseVerdict(wrong), wrong).toEqual({ verdict: 'reject', formatValid: true });
    }
    expect(parseVerdict(family.verifierTarget(train[0], 'no answer here'))).toEqual({ verdict: 'reject', formatValid: true });
    expect(parseVerdict(family.verifierTarget(train[0], 'A:??'))).toEqual({ verdict: 'reject', formatValid: true });
  });

  it('verifier targets agree with the checker on arbitrary model-like outputs', () => {
    const rng = new Rng(7, 'fuzz');
    const alphabet = family.charset;
    for (const p of train.slice(0, 100)) {
      for (let i = 0; i < 5; i++) {
        let junk = '';
        const length = rng.int(1, 12);
        for (let j = 0; j < length; j++) junk += alphabet[rng.int(0, alphabet.length - 1)];
        const variants = [`A:${junk}`, `A:${p.answer}${junk}`, `A:${junk}${p.answer}`];
        for (const solution of variants) {
          const verdict = parseVerdict(family.verifierTarget(p, solution)).verdict;
          expect(verdict, `${p.question} / ${solution}`).toBe(family.checkAnswer(p, parseSolution(solution).answer) ? 'approve' : 'reject');
        }
      }
    }
  });

  it('corrector targets repair wrong solutions and keep right ones', () => {
    const rng = new Rng(8, 'correct');
    for (const p of train.slice(0, 100)) {
      const wrong = family.corruptSolution(p, family.solverTarget(p), rng);
      const repaired = family.correctorTarget(p, wrong, family.verifierTarget(p, wrong));
      expect(family.checkAnswer(p, parseSolution(repaired).answer)).toBe(true);
      const right = family.solverTarget(p);
      expect(family.correctorTarget(p, right, 'V:no')).toBe(right);
    }
  });

  it('its charset covers every question, target and prompt', () => {
    const rng = new Rng(9, 'charset');
    const allowed = new Set(family.charset);
    const missing = new Set<string>();
    expect([...family.charset].sort().join('')).toBe(family.charset);
    expect(new Set(family.charset).size).toBe(family.charset.length);
    for (const difficulty of [1, 3, 10]) {
      for (const p of family.generate({ seed: 9, difficulty, count: 200, split: 'train' })) {
        const right = family.solverTarget(p);
        const wrong = family.corruptSolution(p, right, rng);
        const texts = [
          p.question,
          right,
          wrong,
          family.verifierTarget(p, right),
          family.verifierTarget(p, wrong),
          family.verifierTarget(p, 'A:?'),
          verifierPrompt(p, wrong),
          correctorPrompt(p, wrong, family.verifierTarget(p, wrong)),
          family.correctorTarget(p, wrong, 'V:no'),
        ];
        for (const text of texts) for (const ch of text) if (!allowed.has(ch)) missing.add(`"${ch}" in ${text}`);
      }
    }
    expect([...missing]).toEqual([]);
  });
});
