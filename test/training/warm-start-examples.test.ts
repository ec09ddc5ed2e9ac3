/**
 * What the warm start shows each role (engine/training/pretrain.ts warmStartExample): a math
 * Corrector reads the report a Verifier writes for the solution in front of it (findings, then
 * the verdict), as it will in a run; a character-family Corrector reads the bare verdict its
 * shipped warm start was made with.
 */
import { describe, expect, it } from 'vitest';
import { createMathFamily } from '../../src-main/engine/tasks/math';
import { getTaskFamily } from '../../src-main/engine/tasks/registry';
import { warmStartExample } from '../../src-main/engine/training/pretrain';
import { Rng } from '../../src-main/engine/util/rng';

describe('warm-start examples', () => {
  it("give a math Corrector the Verifier's report on that very solution, and as target the reference when it is wrong", () => {
    const family = createMathFamily();
    const problems = family.generate({ seed: 3, difficulty: 1, count: 40, split: 'train' });
    const rng = new Rng(9, 'examples');
    let wrongSeen = 0;
    for (const problem of problems) {
      const ex = warmStartExample(family, 'corrector', problem, rng);
      const solution = /Solution:\n([\s\S]*?)\n\nBug report:/.exec(ex.prompt)?.[1];
      const report = /Bug report:\n([\s\S]*)$/.exec(ex.prompt)?.[1];
      expect(solution, ex.prompt).toBeDefined();
      expect(report).toBe(family.verifierTarget(problem, solution!));
      expect(report).toMatch(/^Step 1: \d+ (plus|minus) \d+ gives \d+\.\n/);
      const right = family.checkAnswer(problem, /\\boxed\{([^}]*)\}/.exec(solution!)?.[1] ?? null);
      expect(report!.endsWith(right ? 'Verdict: correct' : 'Verdict: incorrect')).toBe(true);
      expect(ex.target).toBe(right ? solution!.trim() : family.solverTarget(problem));
      if (!right) wrongSeen++;
    }
    // Corrector examples are mostly wrong solutions (pickSolution's 0.8).
    expect(wrongSeen).toBeGreaterThan(20);
  });

  it('give a character-family Corrector the bare verdict line', () => {
    const family = getTaskFamily('addition');
    const [problem] = family.generate({ seed: 3, difficulty: 2, count: 1, split: 'train' });
    const ex = warmStartExample(family, 'corrector', problem, new Rng(1, 'x'));
    expect(family.format).toBeUndefined();
    expect(ex.prompt.endsWith('|V:no')).toBe(true);
  });
});
