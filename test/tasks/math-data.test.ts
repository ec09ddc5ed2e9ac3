/**
 * Math problem files (issue #14): JSONL and Parquet records, the reference answer taken from
 * GSM8K's `#### n` and MATH's `\boxed{}`, and files refused with the columns they have. Parquet
 * fixtures are written here with hyparquet-writer; the synchronous reader is checked against
 * hyparquet's own asynchronous reader on the same bytes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, describe, expect, it } from 'vitest';
import { checkMathFile, parseMathJsonl, readMathFile, readParquetColumnsSync, referenceAnswer } from '../../src-main/engine/tasks/math-data';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-math-data-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeFile(name: string, contents: string | ArrayBuffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof contents === 'string' ? contents : Buffer.from(contents));
  return file;
}

const GSM8K_ANSWER = 'Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether.\n#### 72';

describe('referenceAnswer', () => {
  it('reads GSM8K, MATH and bare answers', () => {
    expect(referenceAnswer(GSM8K_ANSWER)).toEqual({
      answer: '72',
      solution: 'Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether.',
    });
    expect(referenceAnswer('We get $x = \\boxed{\\frac{1}{2}}$.')).toEqual({ answer: '\\frac{1}{2}', solution: 'We get $x = \\boxed{\\frac{1}{2}}$.' });
    expect(referenceAnswer('$\\boxed{204}$')).toEqual({ answer: '204', solution: null });
    expect(referenceAnswer(' 336^\\circ ')).toEqual({ answer: '336^\\circ', solution: null });
  });
});

describe('JSONL', () => {
  it('reads question/problem/query with answer, numbers and solutions', () => {
    const text = [
      JSON.stringify({ question: 'Natalia sold clips …', answer: GSM8K_ANSWER }),
      '',
      JSON.stringify({ problem: 'What is 1/2 of 1?', answer: '\\frac12', solution: 'Half of one is $\\boxed{\\frac12}$.' }),
      JSON.stringify({ query: 'AIME-style', ans_box: 204, qid: 0 }),
    ].join('\n');
    expect(parseMathJsonl(text, 'x.jsonl')).toEqual([
      { row: 1, question: 'Natalia sold clips …', answer: '72', solution: referenceAnswer(GSM8K_ANSWER).solution },
      { row: 3, question: 'What is 1/2 of 1?', answer: '\\frac12', solution: 'Half of one is $\\boxed{\\frac12}$.' },
      { row: 4, question: 'AIME-style', answer: '204', solution: null },
    ]);
  });

  it('refuses a file without question/answer columns, naming the columns it found', () => {
    const file = writeFile('wrong.jsonl', `${JSON.stringify({ prompt: 'hi', response: 'there' })}\n`);
    expect(() => readMathFile(file)).toThrow(/no question column \(one of question, problem, query\) and no answer column \(one of answer, ans_box\); the file's columns are "prompt", "response"/);
    expect(checkMathFile(file)).toMatch(/wrong\.jsonl \(line 1\).*"prompt", "response"/);
  });

  it('names every bad line', () => {
    const text = [JSON.stringify({ question: 'q1', answer: '1' }), '{oops', JSON.stringify({ question: '', answer: '2' }), JSON.stringify({ question: 'q4', answer: '#### ' })].join('\n');
    const error = (() => {
      try {
        parseMathJsonl(text, 'bad.jsonl');
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    })();
    expect(error).toMatch(/^bad\.jsonl: 3 bad lines:/);
    expect(error).toMatch(/line 2: not valid JSON/);
    expect(error).toMatch(/line 3: question must be a non-empty string/);
    expect(error).toMatch(/line 4: answer has no final answer/);
  });

  it('checks only the first record at config time', () => {
    const file = writeFile('first-ok.jsonl', `${JSON.stringify({ question: 'q', answer: '1' })}\n{broken\n`);
    expect(checkMathFile(file)).toBeNull();
    expect(() => readMathFile(file)).toThrow(/line 2: not valid JSON/);
    expect(checkMathFile(path.join(dir, 'absent.jsonl'))).toMatch(/absent\.jsonl: no such file/);
    expect(checkMathFile(dir)).toMatch(/is a folder, not a file/);
  });
});

describe('Parquet', () => {
  const questions = Array.from({ length: 250 }, (_, i) => `Problem ${i}: what is ${i} + ${i}?`);
  const answers = questions.map((_, i) => (i % 7 === 0 ? `Double it. #### ${2 * i}` : String(2 * i)));
  const solutions = questions.map((_, i) => (i % 3 === 0 ? null : `${i} + ${i} = \\boxed{${2 * i}}`));

  function fixture(options: { codec?: 'SNAPPY' | 'UNCOMPRESSED' | 'GZIP'; rowGroupSize?: number; pageSize?: number }): ArrayBuffer {
    return parquetWriteBuffer({
      columnData: [
        { name: 'problem', data: questions, type: 'STRING' },
        { name: 'answer', data: answers, type: 'STRING' },
        { name: 'solution', data: solutions, type: 'STRING', nullable: true },
        { name: 'level', data: Int32Array.from(questions, (_, i) => i % 5), type: 'INT32' },
      ],
      codec: options.codec ?? 'SNAPPY',
      compressors: { GZIP: (input: Uint8Array) => new Uint8Array(zlib.gzipSync(input)) },
      rowGroupSize: options.rowGroupSize,
      pageSize: options.pageSize,
    });
  }

  for (const options of [{}, { codec: 'UNCOMPRESSED' as const, rowGroupSize: 64, pageSize: 512 }, { codec: 'GZIP' as const, rowGroupSize: 100 }]) {
    it(`reads what hyparquet's own reader reads (${JSON.stringify(options)})`, async () => {
      const buffer = fixture(options);
      const expected = await parquetReadObjects({
        file: buffer,
        columns: ['problem', 'answer', 'solution'],
        compressors: { GZIP: (input: Uint8Array) => new Uint8Array(zlib.gunzipSync(input)) },
      });
      const actual = readParquetColumnsSync(buffer, ['problem', 'answer', 'solution']);
      expect(actual.length).toBe(250);
      expect(actual).toEqual(expected.map((row) => ({ problem: row.problem, answer: row.answer, solution: row.solution ?? null })));
      expect(readParquetColumnsSync(buffer, ['problem'], 70)).toEqual(expected.slice(0, 70).map((row) => ({ problem: row.problem })));
    });
  }

  it('reads dictionary-encoded columns as hyparquet does', async () => {
    const repeated = Array.from({ length: 300 }, (_, i) => `answer ${i % 4}`);
    const buffer = parquetWriteBuffer({ columnData: [{ name: 'answer', data: repeated, type: 'STRING' }], rowGroupSize: 120 });
    const expected = await parquetReadObjects({ file: buffer });
    expect(expected.map((r) => r.answer)).toEqual(repeated);
    expect(readParquetColumnsSync(buffer, ['answer']).map((r) => r.answer)).toEqual(repeated);
  });

  it('turns rows into records with the reference answer extracted', () => {
    const file = writeFile('train.parquet', fixture({ rowGroupSize: 100 }));
    const records = readMathFile(file);
    expect(records).toHaveLength(250);
    expect(records[7]).toEqual({ row: 8, question: 'Problem 7: what is 7 + 7?', answer: '14', solution: '7 + 7 = \\boxed{14}' });
    expect(records[0]).toEqual({ row: 1, question: 'Problem 0: what is 0 + 0?', answer: '0', solution: 'Double it.' });
    expect(records[3].solution).toBeNull();
    expect(checkMathFile(file)).toBeNull();
  });

  it('checks a Parquet file from its footer and first row group, not the whole file', () => {
    const bytes = new Uint8Array(fixture({ rowGroupSize: 100 }));
    const metadata = parquetMetadata(bytes.buffer);
    expect(metadata.row_groups).toHaveLength(3);
    const second = Number(metadata.row_groups[1].columns[0].meta_data!.data_page_offset);
    bytes.fill(0xff, second, second + 24); // a broken page in the second row group
    const file = writeFile('broken-later.parquet', bytes.buffer);
    expect(checkMathFile(file)).toBeNull();
    expect(readMathFile(file, 100)).toHaveLength(100);
    expect(() => readMathFile(file)).toThrow(/broken-later\.parquet: cannot decode the Parquet data/);
  });

  it('refuses a Parquet file without question/answer columns, naming the columns it found', () => {
    const file = writeFile(
      'chat.parquet',
      parquetWriteBuffer({
        columnData: [
          { name: 'prompt', data: ['a', 'b'], type: 'STRING' },
          { name: 'completion', data: ['c', 'd'], type: 'STRING' },
        ],
      }),
    );
    expect(checkMathFile(file)).toBe(
      `${file}: no question column (one of question, problem, query) and no answer column (one of answer, ans_box); the file's columns are "prompt", "completion". Rename the columns or pick another file`,
    );
    const onlyQuestion = writeFile('q.parquet', parquetWriteBuffer({ columnData: [{ name: 'question', data: ['a'], type: 'STRING' }] }));
    expect(checkMathFile(onlyQuestion)).toMatch(/no answer column \(one of answer, ans_box\); the file's columns are "question"/);
  });

  it('refuses bytes that are not Parquet', () => {
    const file = writeFile('fake.parquet', 'question,answer\n1,2\n');
    expect(checkMathFile(file)).toMatch(/fake\.parquet: not a readable Parquet file/);
  });
});
