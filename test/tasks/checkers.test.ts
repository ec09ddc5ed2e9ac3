/**
 * Hand-built problems for each family: exact texts of the targets, and checkers that accept what
 * they should and reject what they should. Problems are built directly (not generated) so each case
 * is readable on its own.
 */
import { describe, expect, it } from 'vitest';
import {
  additionFamily,
  checkAdditionAnswer,
  checkCountdownAnswer,
  checkFactorAnswer,
  checkSortAnswer,
  countdownFamily,
  factorFamily,
  isPrime,
  sortFamily,
  type Problem,
} from '../../src-main/engine/tasks';
import { correctorPrompt, verifierPrompt } from '../../src-main/engine/agents/formats';

function problem(family: string, question: string, answer: string, meta: Record<string, unknown>): Problem {
  return { key: `${family}:${question}`, family, split: 'train', question, answer, meta };
}

describe('sort', () => {
  const p = problem('sort', 'sort 53819072', '01235789', { digits: '53819072' });

  it('checks by order and by permutation', () => {
    expect(checkSortAnswer(p, '01235789')).toBe(true);
    expect(checkSortAnswer(p, ' 01235789 ')).toBe(true);
    expect(checkSortAnswer(p, '01325789')).toBe(false); // a permutation, out of order
    expect(checkSortAnswer(p, '01235788')).toBe(false); // in order, not a permutation
    expect(checkSortAnswer(p, '0123579')).toBe(false); // a digit dropped
    expect(checkSortAnswer(p, '012357899')).toBe(false); // a digit added
    expect(checkSortAnswer(p, '0123578a')).toBe(false);
  });

  it('writes the counting solution and the re-sort/compare working-out', () => {
    // Digits 0…9 of 53819072 occur 1,1,1,1,0,1,0,1,1,1 times; sorted they are 01235789.
    expect(sortFamily.solverTarget(p)).toBe('c:1111010111 A:01235789');
    expect(sortFamily.verifierTarget(p, 'c:1111010111 A:01235789')).toBe('s:0=1=2=3=5=7=8=9= V:ok');
    // Two digits swapped: positions 2 and 3 differ from the re-sorted digits.
    expect(sortFamily.verifierTarget(p, 'A:01325789')).toBe('s:0=1=2x3x5=7=8=9= V:no');
    // A digit written twice: everything after it is shifted, and the extra digit is one more mark.
    expect(sortFamily.verifierTarget(p, 'A:012335789')).toBe('s:0=1=2=3=5x7x8x9xx V:no');
    // A digit dropped: the 9 moves one place left, and the last re-sorted digit has nothing to match.
    expect(sortFamily.verifierTarget(p, 'A:0123579')).toBe('s:0=1=2=3=5=7=8x9x V:no');
    expect(sortFamily.verifierTarget(p, 'A:0123x')).toBe('x V:no');
    expect(sortFamily.verifierTarget(p, 'no answer')).toBe('x V:no');
  });

  it('shows the Verifier the final answer only, and fits the prompts in a few dozen characters', () => {
    expect(verifierPrompt(p, sortFamily.solverTarget(p))).toBe('sort 53819072|A:01235789');
    expect(verifierPrompt(p, 'garbage without an answer ')).toBe('sort 53819072|garbage without an answer');
    expect(correctorPrompt(p, 'A:01325789', 's:0=1=2x3x5=7=8=9= V:no')).toBe('sort 53819072|A:01325789|V:no');
  });
});

describe('countdown', () => {
  const p = problem('countdown', 'make 54: 2 3 5 7', '3+5=8,8*7=56,56-2=54', {
    numbers: [2, 3, 5, 7],
    target: 54,
    steps: [
      { left: 3, operator: '+', right: 5, result: 8 },
      { left: 8, operator: '*', right: 7, result: 56 },
      { left: 56, operator: '-', right: 2, result: 54 },
    ],
  });

  it('accepts any valid derivation, not only the reference', () => {
    expect(checkCountdownAnswer(p, '3+5=8,8*7=56,56-2=54')).toBe(true);
    expect(checkCountdownAnswer(p, '7*5=35,35+3=38,38-2=36,36+18=54')).toBe(false); // 18 was never available
    expect(checkCountdownAnswer(p, '2*3=6,7+5=12,12*6=72,72-18=54')).toBe(false);
    expect(checkCountdownAnswer(p, '7+2=9,9*3=27,27*2=54')).toBe(false); // 2 used twice
    expect(checkCountdownAnswer(p, '7+2=9, 9*3=27, 27+5=32')).toBe(false); // does not reach 54
    expect(checkCountdownAnswer(p, '5+7-3=9')).toBe(false); // unreadable step
    expect(checkCountdownAnswer(p, '7-3=4,4+5=9,9*2=18,18*3=54')).toBe(false); // 3 used twice
    // The same route in another order and with spaces is a different, valid answer.
    expect(checkCountdownAnswer(p, '5+3=8,7*8=56,56-2=54')).toBe(true);
    expect(checkCountdownAnswer(p, ' 5+3=8 , 7*8=56 ,56-2=54 ')).toBe(true);
    // Not every number has to be used: 7 × 8 − 2 with 8 = 5 + 3 uses all; 2 × 3 × 9 would need a 9.
    const spare = problem('countdown', 'make 10: 2 3 5 7', '', { numbers: [2, 3, 5, 7], target: 10 });
    expect(checkCountdownAnswer(spare, '2*5=10')).toBe(true);
  });

  it('writes per-step recomputation, availability and target checks', () => {
    expect(countdownFamily.solverTarget(p)).toBe('A:3+5=8,8*7=56,56-2=54');
    expect(countdownFamily.verifierTarget(p, 'A:3+5=8,8*7=56,56-2=54')).toBe('8yy 56yy 54yy t:y V:ok');
    // Wrong arithmetic in step 1, whose written result is then used: availability still holds.
    expect(countdownFamily.verifierTarget(p, 'A:3+5=9,9*7=63,63-2=61')).toBe('8ny 63yy 61yy t:n V:no');
    // 2 used twice.
    expect(countdownFamily.verifierTarget(p, 'A:7+2=9,9*3=27,27*2=54')).toBe('9yy 27yy 54yn t:y V:no');
    expect(countdownFamily.verifierTarget(p, 'A:54')).toBe('x V:no');
  });
});

describe('factor', () => {
  const p = problem('factor', 'factor 462', '2*3*7*11', { n: 462, factors: [2, 3, 7, 11] });

  it('accepts primes in any order whose product is the number', () => {
    expect(checkFactorAnswer(p, '2*3*7*11')).toBe(true);
    expect(checkFactorAnswer(p, '11*7*3*2')).toBe(true);
    expect(checkFactorAnswer(p, '6*7*11')).toBe(false); // product right, 6 is not prime
    expect(checkFactorAnswer(p, '2*3*7*13')).toBe(false);
    expect(checkFactorAnswer(p, '2*3*7')).toBe(false);
    expect(checkFactorAnswer(p, '1*2*3*7*11')).toBe(false); // 1 is not prime
    expect(checkFactorAnswer(p, '02*3*7*11')).toBe(false);
    expect(checkFactorAnswer(p, '462')).toBe(false);
  });

  it('writes the division trail and the prime/product working-out', () => {
    expect(factorFamily.solverTarget(p)).toBe('2:231 3:77 7:11 A:2*3*7*11');
    expect(factorFamily.verifierTarget(p, 'A:2*3*7*11')).toBe('p:yyyy m:6,42,462 y V:ok');
    expect(factorFamily.verifierTarget(p, 'A:6*7*11')).toBe('p:nyy m:42,462 y V:no');
    expect(factorFamily.verifierTarget(p, 'A:2*3*7*13')).toBe('p:yyyy m:6,42,546 n V:no');
    // Running products stop once past the number.
    expect(factorFamily.verifierTarget(p, 'A:97*89*2')).toBe('p:yyy m:8633 n V:no');
    expect(factorFamily.verifierTarget(p, 'A:2*x')).toBe('x V:no');
  });

  it('tests primality', () => {
    const primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47];
    for (let n = -1; n <= 48; n++) expect(isPrime(n), String(n)).toBe(primes.includes(n));
    expect(isPrime(999_983)).toBe(true);
    expect(isPrime(999_983 * 3)).toBe(false);
  });
});

describe('addition (negative control)', () => {
  const p = problem('addition', '4821+3907', '8728', { a: '4821', b: '3907' });

  it('checks the exact sum', () => {
    expect(checkAdditionAnswer(p, '8728')).toBe(true);
    expect(checkAdditionAnswer(p, '08728')).toBe(false);
    expect(checkAdditionAnswer(p, '8718')).toBe(false);
  });

  it('writes column sums with carries, and the Verifier recomputes them', () => {
    expect(additionFamily.solverTarget(p)).toBe('8,2,17,8 A:8728');
    expect(additionFamily.verifierTarget(p, 'A:8728')).toBe('8,2,17,8 s:8728 V:ok');
    expect(additionFamily.verifierTarget(p, 'A:8628')).toBe('8,2,17,8 s:8728 V:no');
    const carryOut = problem('addition', '95+17', '112', { a: '95', b: '17' });
    // 5 + 7 = 12 (carry 1); 9 + 1 + 1 = 11 (carry 1); the final carry is its own column.
    expect(additionFamily.solverTarget(carryOut)).toBe('12,11,1 A:112');
  });
});
