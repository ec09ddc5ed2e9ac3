/**
 * `marsrl check-answer` as a user runs it (issue #34): one pair with --explain, and a JSONL file
 * written back line by line with the verdict, the answer read and the reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { marsrl } from '../helpers/cli';
import { tempFolder } from '../helpers/tmp';

const tmp = tempFolder();

describe('marsrl check-answer (child process)', () => {
  it('explains how one pair is read and judged: one side of the reference equation is wrong', () => {
    const result = marsrl(['check-answer', '2x + z = 1', 'Hence $x = \\boxed{1}$.', '--explain']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/checker\s+math-answer\/\d+ \(compute-engine 0\.140\.0\)/);
    expect(result.stdout).toMatch(/answer\s+"1" \(found by the boxed rule\)/);
    expect(result.stdout).toMatch(/verdict\s+wrong: the reference is an equation \(2x \+ z = 1\)/);
  });

  it('writes a JSONL file back with correct, extracted and reason, and names a bad line by number and field', () => {
    const input = path.join(tmp.dir, 'pairs.jsonl');
    const output = path.join(tmp.dir, 'judged.jsonl');
    fs.writeFileSync(
      input,
      [
        JSON.stringify({ id: 'a', reference: '20', response: 'The loss is $\\boxed{20\\%}$.' }),
        JSON.stringify({ id: 'b', reference: '32349', response: 'is $\\boxed{32, 349}$' }),
        JSON.stringify({ id: 'c', reference: 42, response: 'Answer: 42' }),
        JSON.stringify({ id: 'd', reference: '1' }),
        '',
      ].join('\n'),
    );
    const result = marsrl(['check-answer', '--jsonl', input, '--out', output]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/line 4: "response" must be a string or a number \(got nothing\)/);
    expect(result.stderr).toMatch(/3 lines judged, 2 correct, 1 not judged/);
    const lines = fs.readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.id, l.correct, l.extracted])).toEqual([
      ['a', true, '20\\%'],
      ['b', false, '32, 349'],
      ['c', true, '42'],
      [undefined, undefined, undefined],
    ]);
    expect(lines[1].reason).toMatch(/list/);
    expect(lines[3]).toMatchObject({ line: 4 });
  });

  it('prints the JSONL lines on the terminal made inert: a bidi control in a response is an escape, and each line is still the same JSON', () => {
    const input = path.join(tmp.dir, 'hostile.jsonl');
    const response = 'Answer: \u202e42\u0085';
    fs.writeFileSync(input, `${JSON.stringify({ id: 'h', reference: '42', response })}\n`);
    const result = marsrl(['check-answer', '--jsonl', input]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/[\u202e\u0085]/);
    expect(result.stdout).toContain('\\u202e42\\u0085');
    const line = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ id: 'h', reference: '42', response });
  });
});
