/**
 * No shipped function over 150 lines (issue 37: 17 before the restructure, none after); a longer
 * one fails the test with its file, line and length.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionsOf, longFunctions } from './function-length';

const ROOT = path.join(import.meta.dirname, '..', '..');
const BUDGET = 150;

describe(`shipped functions stay under ${BUDGET} lines (issue 37)`, () => {
  const long = longFunctions(ROOT, BUDGET);

  it('has no function over the budget', () => {
    expect(long.map((f) => `${f.file}:${f.line} ${f.name} is ${f.lines} lines (budget ${BUDGET}): split it into functions that read top to bottom`)).toEqual([]);
  });

  it('measures every function form by its first and last line, nested ones on their own', () => {
    const code = ['function outer() {', '  const inner = () => {', '    return 1;', '  };', '  return inner();', '}', 'class A { method() {', '  return 2;', '} }'].join('\n');
    expect(functionsOf('x.ts', code, 10, 2)).toEqual([
      { file: 'x.ts', name: 'outer', line: 11, lines: 6 },
      { file: 'x.ts', name: 'inner', line: 12, lines: 3 },
      { file: 'x.ts', name: 'method', line: 17, lines: 3 },
    ]);
    expect(functionsOf('x.ts', code, 0, 6)).toEqual([]);
  });
});
