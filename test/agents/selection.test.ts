import { describe, expect, it } from 'vitest';
import { selectInputs, type SelectionCandidate } from '../../src-main/engine/agents/selection';
import type { Verdict } from '../../src-main/engine/agents/formats';
import { Rng } from '../../src-main/engine/util/rng';

interface Solution extends SelectionCandidate {
  id: number;
}
interface Report extends SelectionCandidate {
  id: number;
  verdict: Verdict | null;
}

/** A Solver group of 8 with the given number of right answers first. */
function solutions(right: number, total = 8): Solution[] {
  return Array.from({ length: total }, (_, id) => ({ id, correct: id < right }));
}

/** Reports: [verdict, verdict right?] */
function reports(spec: Array<[Verdict | null, boolean]>): Report[] {
  return spec.map(([verdict, correct], id) => ({ id, verdict, correct }));
}

const ids = (items: { id: number }[]) => items.map((i) => i.id);

describe('selectInputs: random', () => {
  it('picks min(k, n) distinct candidates, in the candidates’ order, reproducibly', () => {
    const pool = solutions(3);
    const first = selectInputs(pool, 3, 'random', 'verifier', new Rng(1, 's'));
    expect(first).toHaveLength(3);
    expect(new Set(ids(first)).size).toBe(3);
    expect(ids(first)).toEqual([...ids(first)].sort((a, b) => a - b));
    expect(selectInputs(pool, 3, 'random', 'verifier', new Rng(1, 's'))).toEqual(first);
    expect(selectInputs(pool, 20, 'random', 'verifier', new Rng(1, 's'))).toEqual(pool);
    expect(selectInputs(pool, 0, 'random', 'verifier', new Rng(1, 's'))).toEqual([]);
  });

  it('is uniform: each of 8 candidates is picked about k/8 of the time', () => {
    const rng = new Rng(3, 'uniform');
    const hits = new Array<number>(8).fill(0);
    const draws = 4000;
    for (let i = 0; i < draws; i++) for (const s of selectInputs(solutions(2), 2, 'random', 'verifier', rng)) hits[s.id]++;
    for (const h of hits) expect(Math.abs(h / draws - 2 / 8)).toBeLessThan(0.03);
  });
});

describe('selectInputs: balanced', () => {
  it('takes half right and half wrong solutions when both are plentiful', () => {
    for (let seed = 0; seed < 50; seed++) {
      const chosen = selectInputs(solutions(4), 4, 'balanced', 'verifier', new Rng(seed, 'b'));
      expect(chosen.filter((s) => s.correct)).toHaveLength(2);
      expect(chosen.filter((s) => !s.correct)).toHaveLength(2);
    }
  });

  it('gives the odd slot to wrong solutions for a Verifier', () => {
    const chosen = selectInputs(solutions(4), 3, 'balanced', 'verifier', new Rng(5, 'b'));
    expect(chosen.filter((s) => !s.correct)).toHaveLength(2);
  });

  it('fills from the other class when one is short', () => {
    const oneWrong = selectInputs(solutions(7), 4, 'balanced', 'verifier', new Rng(5, 'b'));
    expect(oneWrong.filter((s) => !s.correct)).toHaveLength(1);
    expect(oneWrong).toHaveLength(4);
    const allRight = selectInputs(solutions(8), 2, 'balanced', 'verifier', new Rng(5, 'b'));
    expect(allRight).toHaveLength(2);
  });

  it('for a Corrector, balances correct and false rejections among rejections only', () => {
    const pool = reports([
      ['reject', true],
      ['reject', true],
      ['reject', false],
      ['reject', false],
      ['approve', true],
      [null, false],
    ]);
    for (let seed = 0; seed < 20; seed++) {
      const chosen = selectInputs(pool, 2, 'balanced', 'corrector', new Rng(seed, 'c'));
      expect(chosen.every((r) => r.verdict === 'reject')).toBe(true);
      expect(chosen.filter((r) => r.correct)).toHaveLength(1);
    }
  });
});

describe('selectInputs: adaptive', () => {
  it('a Verifier prefers incorrect solutions', () => {
    for (let seed = 0; seed < 30; seed++) {
      const chosen = selectInputs(solutions(6), 2, 'adaptive', 'verifier', new Rng(seed, 'a'));
      expect(ids(chosen)).toEqual([6, 7]);
    }
    // Only one wrong solution: it is always taken, the rest comes from the right ones.
    const chosen = selectInputs(solutions(7), 3, 'adaptive', 'verifier', new Rng(2, 'a'));
    expect(chosen.filter((s) => !s.correct)).toHaveLength(1);
    expect(chosen).toHaveLength(3);
  });

  it('a Corrector prefers correct bug reports (rejections of wrong solutions)', () => {
    const pool = reports([
      ['reject', false], // false rejection of a right solution
      ['approve', true],
      ['reject', true],
      ['reject', false],
      ['reject', true],
      ['approve', false],
    ]);
    for (let seed = 0; seed < 30; seed++) {
      expect(ids(selectInputs(pool, 2, 'adaptive', 'corrector', new Rng(seed, 'a')))).toEqual([2, 4]);
    }
    const three = selectInputs(pool, 3, 'adaptive', 'corrector', new Rng(9, 'a'));
    expect(three.filter((r) => r.correct)).toHaveLength(2);
    expect(three.every((r) => r.verdict === 'reject')).toBe(true);
  });
});

describe('selectInputs: rules shared by every strategy', () => {
  it('Correctors only receive rejections; with none the selection is empty', () => {
    const noRejections = reports([
      ['approve', true],
      ['approve', false],
      [null, false],
    ]);
    for (const strategy of ['random', 'balanced', 'adaptive'] as const) {
      expect(selectInputs(noRejections, 2, strategy, 'corrector', new Rng(1, 'x'))).toEqual([]);
    }
  });

  it('rejects the solver role, a negative k and an unknown strategy', () => {
    expect(() => selectInputs(solutions(2), 1, 'random', 'solver', new Rng(1))).toThrow(/verifier or corrector/);
    expect(() => selectInputs(solutions(2), -1, 'random', 'verifier', new Rng(1))).toThrow(/non-negative/);
    // @ts-expect-error: an unknown strategy from an untyped caller
    expect(() => selectInputs(solutions(2), 1, 'greedy', 'verifier', new Rng(1))).toThrow(/unknown selection strategy "greedy"; known strategies: random, balanced, adaptive/);
  });
});
