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

  it('with corrector_mistaken_reports, give that share of math Correctors a rejecting report whose working is wrong, the target still the right answer', () => {
    const family = createMathFamily({ prompts: { verifier: { system: 'Check.', user: 'Problem:\n{question}\n\nGiven answer: {answer}' } } });
    const problems = family.generate({ seed: 5, difficulty: 2, count: 400, split: 'train' });
    const rng = new Rng(11, 'examples');
    let mistaken = 0;
    let rightRejected = 0;
    for (const problem of problems) {
      const ex = warmStartExample(family, 'corrector', problem, rng, { mistakenReportShare: 0.5 });
      const solution = /Solution:\n([\s\S]*?)\n\nBug report:/.exec(ex.prompt)![1];
      const report = /Bug report:\n([\s\S]*)$/.exec(ex.prompt)![1];
      const solutionAnswer = /\\boxed\{([^}]*)\}/.exec(solution)?.[1] ?? null;
      const right = family.checkAnswer(problem, solutionAnswer);
      // Whatever the report says, the Corrector is taught the right answer.
      expect(family.checkAnswer(problem, /\\boxed\{([^}]*)\}$/.exec(ex.target)?.[1] ?? null), ex.target).toBe(true);
      if (report === family.verifierTarget(problem, solution)) continue;
      mistaken++;
      // A mistaken report rejects, and the answer its working reaches is neither the truth nor the solution's.
      expect(report.endsWith('Verdict: incorrect'), report).toBe(true);
      const believed = /^Answer: (-?\d+)\. The solution has /m.exec(report)![1];
      expect(believed).not.toBe(problem.answer);
      expect(believed).not.toBe(solutionAnswer);
      // Its working is a chain of the Solver's "a op b = c" lines ending where it says it does.
      const workLines = report.split('\n').filter((line) => / = /.test(line));
      expect(workLines.length).toBeGreaterThan(0);
      expect(workLines[workLines.length - 1].endsWith(`= ${believed}`)).toBe(true);
      if (right) rightRejected++;
    }
    // About half the examples (400 draws at 0.5: 3 standard deviations is ±30), and among them the false rejections of right solutions a run's Corrector meets.
    expect(mistaken).toBeGreaterThan(170);
    expect(mistaken).toBeLessThan(230);
    expect(rightRejected).toBeGreaterThan(20);
  });

  it('give a file problem\'s right solution a false rejection as its mistaken report, and none to a wrong one', () => {
    const family = createMathFamily({ records: [{ row: 1, question: 'What is 1/2 + 1/4?', answer: '\\frac{3}{4}', solution: null }] });
    // A file's problem carries no generator steps, so its reports have no working to get wrong.
    const problem = { key: 'math:q', family: 'math', split: 'train' as const, question: 'What is 1/2 + 1/4?', answer: '\\frac{3}{4}', meta: { source: 'file' } };
    expect(family.mistakenReport!(problem, 'Add them.\n\\boxed{0.75}', new Rng(1, 'r'))).toBe('Answer: 0.75 is wrong.\nVerdict: incorrect');
    expect(family.mistakenReport!(problem, 'Add them.\n\\boxed{0.5}', new Rng(1, 'r'))).toBeNull();
  });

  it('give a character-family Corrector the bare verdict line', () => {
    const family = getTaskFamily('addition');
    const [problem] = family.generate({ seed: 3, difficulty: 2, count: 1, split: 'train' });
    const ex = warmStartExample(family, 'corrector', problem, new Rng(1, 'x'));
    expect(family.format).toBeUndefined();
    expect(ex.prompt.endsWith('|V:no')).toBe(true);
  });
});
