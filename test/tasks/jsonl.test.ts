import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { answersMatch, createJsonlFamily, getTaskFamily, parseJsonlRecords, parseNumber } from '../../src-main/engine/tasks';
import { parseSolution, parseVerdict } from '../../src-main/engine/agents/formats';
import { Rng } from '../../src-main/engine/util/rng';
import { tempDir } from '../helpers/tmp';

const lines = (records: object[]) => records.map((r) => JSON.stringify(r)).join('\n');

/** 400 arithmetic questions with numeric answers, plus a fraction. */
const bigFile = lines([
  ...Array.from({ length: 400 }, (_, i) => ({ question: `What is ${i} + ${i + 1}?`, answer: String(2 * i + 1) })),
  { question: 'Half as a fraction?', answer: '1/2' },
  { question: 'A thousand and a half?', answer: '1,000.5' },
]);

describe('parseJsonlRecords', () => {
  it('reads question/answer lines, skips blank lines, keeps line numbers and numeric answers as text', () => {
    const text = `{"question":"q1","answer":"a1"}\n\n{"question":" q2 ","answer":42}\r\n`;
    expect(parseJsonlRecords(text)).toEqual([
      { line: 1, question: 'q1', answer: 'a1' },
      { line: 3, question: 'q2', answer: '42' },
    ]);
  });

  it('keeps the first of two identical questions', () => {
    expect(parseJsonlRecords(lines([{ question: 'q', answer: '1' }, { question: 'q', answer: '2' }]))).toEqual([{ line: 1, question: 'q', answer: '1' }]);
  });

  it('names the line number and field of every bad line', () => {
    const text = [
      '{"question":"ok","answer":"1"}',
      '{"question":"no answer"}',
      'not json',
      '{"answer":"3"}',
      '[1,2]',
      '{"question":"","answer":"5"}',
      '{"question":"q","answer":null}',
    ].join('\n');
    let message = '';
    try {
      parseJsonlRecords(text, 'mine.jsonl');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('mine.jsonl: 6 bad lines');
    expect(message).toContain('line 2: field "answer" is missing');
    expect(message).toMatch(/line 3: not valid JSON/);
    expect(message).toContain('line 4: field "question" is missing');
    expect(message).toContain('line 5: expected an object');
    expect(message).toContain('line 6: field "question" must be a non-empty string');
    expect(message).toContain('line 7: field "answer" must be a non-empty string or a number');
    expect(message).not.toContain('line 1:');
  });

  it('with the numeric checker, names the lines whose answer is not a number', () => {
    const text = lines([{ question: 'q1', answer: '3' }, { question: 'Capital of France?', answer: 'Paris' }]);
    expect(parseJsonlRecords(text)).toHaveLength(2);
    expect(() => parseJsonlRecords(text, 'f.jsonl', 'numeric')).toThrow(/f\.jsonl: 1 bad line:\n {2}line 2: field "answer" is not a number \("Paris"\)/);
  });

  it('fails on a file with no problems', () => {
    expect(() => parseJsonlRecords('\n\n')).toThrow(/no problems/);
  });
});

describe('checkers', () => {
  it('exact: trims and collapses whitespace, case-sensitive', () => {
    expect(answersMatch('exact', 'New York', '  New   York ')).toBe(true);
    expect(answersMatch('exact', 'New York', 'new york')).toBe(false);
    expect(answersMatch('exact', '42', '42.0')).toBe(false);
  });

  it('numeric: parses numbers, thousands separators and fractions, relative tolerance 1e-6', () => {
    expect(parseNumber('1,234.5')).toBe(1234.5);
    expect(parseNumber('3/4')).toBe(0.75);
    expect(parseNumber('-2e3')).toBe(-2000);
    expect(parseNumber('12 apples')).toBeNaN();
    expect(parseNumber('1/0')).toBeNaN();
    expect(answersMatch('numeric', '42', '42.0')).toBe(true);
    expect(answersMatch('numeric', '1/2', '0.5')).toBe(true);
    expect(answersMatch('numeric', '1000000', '1000000.5')).toBe(true);
    expect(answersMatch('numeric', '1000000', '1000002')).toBe(false);
    expect(answersMatch('numeric', '0', '0.0000000001')).toBe(true);
    expect(answersMatch('numeric', '0', '0.001')).toBe(false);
    expect(answersMatch('numeric', '42', 'forty-two')).toBe(false);
  });
});

describe('jsonl family', () => {
  const numeric = createJsonlFamily({ text: bigFile, checker: 'numeric' });
  const train = numeric.generate({ seed: 1, difficulty: 3, count: 10_000, split: 'train' });
  const test = numeric.generate({ seed: 1, difficulty: 3, count: 10_000, split: 'test' });

  it('splits the file into disjoint train and test sets that cover it', () => {
    expect(train.length + test.length).toBe(402);
    expect(test.length).toBeGreaterThan(10);
    const trainKeys = new Set(train.map((p) => p.key));
    expect(test.filter((p) => trainKeys.has(p.key))).toEqual([]);
    expect(new Set([...train, ...test].map((p) => p.key)).size).toBe(402);
  });

  it('the split of a line does not depend on the seed; the order does', () => {
    const other = numeric.generate({ seed: 2, difficulty: 3, count: 10_000, split: 'test' });
    expect(new Set(other.map((p) => p.key))).toEqual(new Set(test.map((p) => p.key)));
    expect(other.map((p) => p.key)).not.toEqual(test.map((p) => p.key));
    expect(numeric.generate({ seed: 1, difficulty: 3, count: 5, split: 'train' })).toEqual(train.slice(0, 5));
  });

  it('checks with the chosen checker and builds targets', () => {
    const p = [...train, ...test].find((q) => q.question === 'Half as a fraction?')!;
    expect(numeric.checkAnswer(p, '0.5')).toBe(true);
    expect(numeric.checkAnswer(p, null)).toBe(false);
    expect(numeric.solverTarget(p)).toBe('A:1/2');
    expect(numeric.verifierTarget(p, 'A:0.50')).toBe('V:ok');
    expect(numeric.verifierTarget(p, 'A:2')).toBe('V:no');
    const exact = createJsonlFamily({ text: bigFile, checker: 'exact' });
    expect(exact.checkAnswer(p, '0.5')).toBe(false);
    expect(exact.checkAnswer(p, '1/2')).toBe(true);
  });

  it('constructs wrong answers and repairs them', () => {
    const rng = new Rng(3, 'jsonl');
    for (const p of [...train, ...test]) {
      const wrong = numeric.corruptSolution(p, numeric.solverTarget(p), rng);
      expect(numeric.checkAnswer(p, parseSolution(wrong).answer), wrong).toBe(false);
      expect(parseVerdict(numeric.verifierTarget(p, wrong)).verdict).toBe('reject');
      expect(numeric.checkAnswer(p, parseSolution(numeric.correctorTarget(p, wrong, 'V:no')).answer)).toBe(true);
    }
  });

  it('its charset covers the file and the formats', () => {
    for (const ch of 'What is+?Half,./AV:|okn') expect(numeric.charset).toContain(ch);
  });

  const { dir, cleanup } = tempDir();
  afterAll(cleanup);

  it('reads a file through the registry, naming the file in errors', () => {
    const good = path.join(dir, 'good.jsonl');
    writeFileSync(good, lines([{ question: 'q1', answer: '1' }]));
    const family = getTaskFamily('jsonl', { path: good, checker: 'numeric' });
    expect(family.name).toBe('jsonl');
    const bad = path.join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"question":"q1"}\n');
    expect(() => getTaskFamily('jsonl', { path: bad })).toThrow(/bad\.jsonl: 1 bad line:\n {2}line 1: field "answer" is missing/);
    expect(() => getTaskFamily('jsonl')).toThrow(/give the path/);
    // @ts-expect-error: an unknown checker from an untyped caller
    expect(() => getTaskFamily('jsonl', { path: good, checker: 'fuzzy' })).toThrow(/unknown checker "fuzzy"; known: exact, numeric/);
  });
});
