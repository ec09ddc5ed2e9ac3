import { describe, expect, it } from 'vitest';
import {
  accuracy,
  avgAtK,
  chainFinalAnswer,
  correctorFixRate,
  episodeFinalAnswer,
  passAtK,
  passAtKEstimate,
  solverAccuracy,
  systemAccuracy,
  verifierPrecisionRecall,
  type ChainTurn,
} from '../../src-main/engine/agents/outcome';

const solver = (answer: string | null): ChainTurn => ({ agent: 'solver', answer });
const verifier = (round: number, verdict: 'approve' | 'reject' | null): ChainTurn => ({ agent: `verifier${round}`, verdict });
const corrector = (round: number, answer: string | null): ChainTurn => ({ agent: `corrector${round}`, answer });

describe('chainFinalAnswer: the last surviving solution', () => {
  it('the Solver alone decides a chain without Verifiers', () => {
    expect(chainFinalAnswer([solver('12')])).toEqual({ answer: '12', decidedBy: 'solver', stoppedAt: 'solver', approved: false });
  });

  it('an approval stops the chain with the approved answer', () => {
    expect(chainFinalAnswer([solver('12'), verifier(1, 'approve')])).toEqual({
      answer: '12',
      decidedBy: 'solver',
      stoppedAt: 'verifier1',
      approved: true,
    });
  });

  it('a rejection hands over to the Corrector, whose answer replaces the Solver’s', () => {
    const chain = [solver('12'), verifier(1, 'reject'), corrector(1, '21'), verifier(2, 'approve')];
    expect(chainFinalAnswer(chain)).toEqual({ answer: '21', decidedBy: 'corrector1', stoppedAt: 'verifier2', approved: true });
  });

  it('the last Corrector decides when the rounds run out, even without an answer', () => {
    const chain = [solver('12'), verifier(1, 'reject'), corrector(1, '13'), verifier(2, 'reject'), corrector(2, null)];
    expect(chainFinalAnswer(chain)).toMatchObject({ answer: null, decidedBy: 'corrector2', approved: false });
  });

  it('an unparseable verdict is not a rejection: the chain stops unapproved', () => {
    expect(chainFinalAnswer([solver('12'), verifier(1, null)])).toEqual({ answer: '12', decidedBy: 'solver', stoppedAt: 'verifier1', approved: false });
  });

  it('a chain that ends on a rejection keeps the rejected answer (no Corrector acted)', () => {
    expect(chainFinalAnswer([solver('12'), verifier(1, 'reject')])).toMatchObject({ answer: '12', decidedBy: 'solver', approved: false });
  });

  it('rejects chains that break the order', () => {
    expect(() => chainFinalAnswer([])).toThrow(/starts with the solver/);
    expect(() => chainFinalAnswer([verifier(1, 'reject')])).toThrow(/starts with the solver/);
    expect(() => chainFinalAnswer([solver('1'), corrector(1, '2')])).toThrow(/only receive rejections/);
    expect(() => chainFinalAnswer([solver('1'), verifier(1, 'reject'), verifier(2, 'reject')])).toThrow(/corrector must act first/);
    expect(() => chainFinalAnswer([solver('1'), solver('2')])).toThrow(/second solver/);
  });
});

describe('episodeFinalAnswer: majority over chains', () => {
  it('takes the most frequent final answer', () => {
    const chains = [
      [solver('5'), verifier(1, 'approve')],
      [solver('7'), verifier(1, 'reject'), corrector(1, '6')],
      [solver('6'), verifier(1, 'approve')],
    ];
    expect(episodeFinalAnswer(chains)).toEqual({ answer: '6', votes: 2, chains: 3 });
  });

  it('breaks ties by the earliest chain and ignores chains without an answer', () => {
    const chains = [[solver(null)], [solver('b')], [solver('a')], [solver('a ')], [solver('b')]];
    expect(episodeFinalAnswer(chains)).toEqual({ answer: 'b', votes: 2, chains: 5 });
    expect(episodeFinalAnswer([[solver(null)]])).toEqual({ answer: null, votes: 0, chains: 1 });
  });

  it('a single chain is its own episode answer', () => {
    const chain = [solver('1'), verifier(1, 'reject'), corrector(1, '2')];
    expect(episodeFinalAnswer([chain]).answer).toBe(chainFinalAnswer(chain).answer);
  });
});

describe('accuracy metrics', () => {
  it('solver and system accuracy', () => {
    const turns = [
      { agent: 'solver', correct: true },
      { agent: 'solver', correct: false },
      { agent: 'solver', correct: true },
      { agent: 'corrector1', correct: true },
    ];
    expect(solverAccuracy(turns)).toBeCloseTo(2 / 3, 12);
    expect(systemAccuracy([{ correct: true }, { correct: false }, { correct: false }, { correct: false }])).toBe(0.25);
    expect(accuracy([])).toBeNull();
    expect(solverAccuracy([{ agent: 'verifier1', correct: true }])).toBeNull();
  });

  it('verifier precision and recall of rejecting wrong answers', () => {
    const judgements = [
      { verdict: 'reject' as const, solutionCorrect: false }, // caught
      { verdict: 'reject' as const, solutionCorrect: false }, // caught
      { verdict: 'reject' as const, solutionCorrect: true }, // false alarm
      { verdict: 'approve' as const, solutionCorrect: false }, // missed
      { verdict: null, solutionCorrect: false }, // no verdict: missed
      { verdict: 'approve' as const, solutionCorrect: true },
    ];
    expect(verifierPrecisionRecall(judgements)).toEqual({ precision: 2 / 3, recall: 2 / 4, rejections: 3, wrongSolutions: 4, caught: 2 });
    expect(verifierPrecisionRecall([{ verdict: 'approve', solutionCorrect: true }])).toMatchObject({ precision: null, recall: null });
  });

  it('corrector fix rate (and break rate on false rejections)', () => {
    const repairs = [
      { inputCorrect: false, correct: true },
      { inputCorrect: false, correct: false },
      { inputCorrect: false, correct: false },
      { inputCorrect: false, correct: true },
      { inputCorrect: true, correct: false },
    ];
    expect(correctorFixRate(repairs)).toEqual({ fixRate: 0.5, breakRate: 1, fixed: 2, wrongInputs: 4, broken: 1, rightInputs: 1 });
    expect(correctorFixRate([])).toMatchObject({ fixRate: null, breakRate: null });
  });
});

/** pass@k by its definition: the share of k-subsets of the n samples that hold a correct one. */
function passAtKByEnumeration(samples: boolean[], k: number): number {
  let hit = 0;
  let total = 0;
  const choose = (start: number, left: number, any: boolean) => {
    if (left === 0) {
      total++;
      if (any) hit++;
      return;
    }
    for (let i = start; i <= samples.length - left; i++) choose(i + 1, left - 1, any || samples[i]);
  };
  choose(0, k, false);
  return hit / total;
}

describe('pass@k and avg@k', () => {
  it('the unbiased estimator equals the subset definition', () => {
    for (let n = 1; n <= 9; n++) {
      for (let c = 0; c <= n; c++) {
        const samples = Array.from({ length: n }, (_, i) => i < c);
        for (let k = 1; k <= n; k++) {
          expect(passAtKEstimate(n, c, k), `n=${n} c=${c} k=${k}`).toBeCloseTo(passAtKByEnumeration(samples, k), 12);
        }
      }
    }
  });

  it('hand values: n = k is "any correct"; pass@1 is the accuracy', () => {
    expect(passAtKEstimate(8, 1, 8)).toBe(1);
    expect(passAtKEstimate(8, 0, 8)).toBe(0);
    expect(passAtKEstimate(10, 3, 1)).toBeCloseTo(0.3, 12);
    // 1 − C(2,2)/C(4,2) = 1 − 1/6.
    expect(passAtKEstimate(4, 2, 2)).toBeCloseTo(5 / 6, 12);
    expect(() => passAtKEstimate(4, 2, 5)).toThrow(/1 ≤ k ≤ n/);
  });

  it('averages over problems', () => {
    const problems = [
      [true, false, false, false],
      [false, false, false, false],
      [true, true, true, true],
    ];
    expect(passAtK(problems, 4)).toBeCloseTo((1 + 0 + 1) / 3, 12);
    expect(passAtK(problems, 1)).toBeCloseTo((0.25 + 0 + 1) / 3, 12);
    expect(avgAtK(problems, 4)).toBeCloseTo((0.25 + 0 + 1) / 3, 12);
    expect(passAtK([], 4)).toBeNull();
    expect(avgAtK([], 4)).toBeNull();
    expect(() => avgAtK([[true]], 2)).toThrow(/fewer than k/);
  });
});
