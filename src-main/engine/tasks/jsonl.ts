/**
 * jsonl: a user's own problems, one `{"question": "...", "answer": "..."}` object per line.
 *
 * - Blank lines are skipped. A line that is not a JSON object, or whose `question` is not a
 *   non-empty string, or whose `answer` is neither a non-empty string nor a finite number (nor, with
 *   the numeric checker, a parseable number), is an error naming the line number and the field;
 *   every bad line is reported at once (up to 20).
 * - A question that appears twice keeps its first line (both copies would land in one split).
 * - Split: by a hash of the question, like the generated families (10% held out), so the split of
 *   a line does not depend on the seed or on the other lines. `generate` returns the split's
 *   problems in a seeded order, at most `count` of them: a file holds what it holds, so a split
 *   smaller than `count` is returned whole rather than failing.
 * - Checkers: `exact` compares the answers after trimming and collapsing runs of whitespace
 *   (case-sensitive); `numeric` parses both as numbers (`1,234.5`, `-3`, `1e3`, `3/4`) and accepts
 *   a relative difference ≤ 1e-6 (absolute 1e-9 near zero); an answer that does not parse is wrong.
 * - Targets: the Solver's is `A:<answer>` (the file has no working-out); the Verifier's is the bare
 *   verdict, since a free-form answer has no checkable working-out; the Corrector's is the Solver's.
 * - charset: the characters of every question and answer, plus the format characters.
 */
import { Rng } from '../util/rng';
import { answerText, parseSolution, verdictText } from '../agents/formats';
import { characterFamily, firstWrong, problemsFromRecords, solves, splitOf, DIGITS } from './common';
import type { GenerateOptions, Problem, Split, TaskFamily, TaskNotation } from './types';
import { FileRefusedError, LIMITS, readRegularFile } from '../util/bounded-read';

const FAMILY = 'jsonl';
export type JsonlChecker = 'exact' | 'numeric';
export const JSONL_CHECKERS: readonly JsonlChecker[] = ['exact', 'numeric'];

export interface JsonlRecord {
  /** 1-based line number in the file. */
  line: number;
  question: string;
  answer: string;
}

const MAX_REPORTED_ERRORS = 20;

/** A user's file has no working-out: only the shared marks appear (see `SHARED_NOTATION`). */
export const JSONL_NOTATION: readonly TaskNotation[] = [];

/**
 * Parses JSONL text; throws one error listing every bad line (`source` names the file in messages).
 * With the `numeric` checker an answer that does not parse as a number is a bad line too: no answer
 * could ever match it.
 */
export function parseJsonlRecords(text: string, source = 'JSONL input', checker: JsonlChecker = 'exact'): JsonlRecord[] {
  const records: JsonlRecord[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      errors.push(`line ${line}: not valid JSON (${(error as Error).message})`);
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push(`line ${line}: expected an object with fields "question" and "answer"`);
      return;
    }
    const { question, answer } = value as Record<string, unknown>;
    let ok = true;
    if (typeof question !== 'string' || question.trim() === '') {
      errors.push(`line ${line}: field "question" ${question === undefined ? 'is missing' : 'must be a non-empty string'}`);
      ok = false;
    }
    const answerOk = (typeof answer === 'string' && answer.trim() !== '') || (typeof answer === 'number' && Number.isFinite(answer));
    if (!answerOk) {
      errors.push(`line ${line}: field "answer" ${answer === undefined ? 'is missing' : 'must be a non-empty string or a number'}`);
      ok = false;
    }
    if (ok && checker === 'numeric' && !Number.isFinite(parseNumber(String(answer)))) {
      errors.push(`line ${line}: field "answer" is not a number (${JSON.stringify(answer)}), which the numeric checker needs`);
      ok = false;
    }
    if (!ok) return;
    const q = (question as string).trim();
    if (seen.has(q)) return;
    seen.add(q);
    records.push({ line, question: q, answer: String(answer).trim() });
  });
  if (errors.length > 0) {
    const shown = errors.slice(0, MAX_REPORTED_ERRORS).join('\n  ');
    const more = errors.length > MAX_REPORTED_ERRORS ? `\n  … and ${errors.length - MAX_REPORTED_ERRORS} more` : '';
    throw new Error(`${source}: ${errors.length} bad line${errors.length === 1 ? '' : 's'}:\n  ${shown}${more}`);
  }
  if (records.length === 0) throw new Error(`${source}: no problems (every line is blank)`);
  return records;
}

function normalizeText(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

/** Parses `1,234.5`, `-3`, `1e3`, `3/4`; NaN otherwise. */
export function parseNumber(text: string): number {
  const cleaned = text.trim().replace(/,(?=\d{3}(\D|$))/g, '');
  const fraction = /^([-+]?\d+)\s*\/\s*(\d+)$/.exec(cleaned);
  if (fraction) return Number(fraction[2]) === 0 ? NaN : Number(fraction[1]) / Number(fraction[2]);
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(cleaned)) return NaN;
  return Number(cleaned);
}

export function answersMatch(checker: JsonlChecker, reference: string, answer: string): boolean {
  if (checker === 'exact') return normalizeText(reference) === normalizeText(answer);
  const expected = parseNumber(reference);
  const actual = parseNumber(answer);
  if (!Number.isFinite(expected) || !Number.isFinite(actual)) return false;
  return Math.abs(expected - actual) <= Math.max(1e-9, 1e-6 * Math.abs(expected));
}

export interface JsonlFamilyOptions {
  /** Path of the file; read once, when the family is created. */
  path?: string;
  /** The file's contents, instead of a path (tests, the UI's import preview). */
  text?: string;
  checker?: JsonlChecker;
}

/** The task file's text, or an error that says what is wrong with the file and what it must be. */
function readTaskFile(file: string): string {
  let buf: Buffer;
  try {
    // A regular file no larger than a string can hold (issue #36): a FIFO here froze the process.
    buf = readRegularFile(file, { maxBytes: LIMITS.text, what: 'task file' });
  } catch (error) {
    const refused = error instanceof FileRefusedError ? error : null;
    if (refused?.code === 'ENOENT') throw new Error(`no file at ${file}: give the path of a {"question","answer"} JSONL file`, { cause: error });
    if (refused?.code === 'NOT_REGULAR' && refused.message.includes('a folder')) throw new Error(`${file} is a folder: give the path of a {"question","answer"} JSONL file`, { cause: error });
    if (refused) throw new Error(`${refused.message} (a {"question","answer"} JSONL file)`, { cause: error });
    throw new Error(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  // Parquet files start with the magic bytes PAR1 (Apache Parquet file format).
  if (buf.subarray(0, 4).toString('latin1') === 'PAR1') {
    throw new Error(`${file} is a Parquet file; task files are JSONL, one {"question": …, "answer": …} object a line (convert it, e.g. with pandas: df.to_json(path, orient="records", lines=True))`);
  }
  return buf.toString('utf8');
}

export function createJsonlFamily(options: JsonlFamilyOptions): TaskFamily {
  const checker = options.checker ?? 'exact';
  if (!JSONL_CHECKERS.includes(checker)) throw new Error(`jsonl: unknown checker "${String(checker)}"; known: ${JSONL_CHECKERS.join(', ')}`);
  let text: string;
  if (options.text !== undefined) text = options.text;
  else if (options.path !== undefined) text = readTaskFile(options.path);
  else throw new Error('jsonl: give the path of a {"question","answer"} JSONL file (task.jsonl_path)');
  const records = parseJsonlRecords(text, options.path ?? 'JSONL input', checker);
  const splitRecords: Record<Split, JsonlRecord[]> = { train: [], test: [] };
  for (const record of records) splitRecords[splitOf(FAMILY, record.question)].push(record);

  const check = (problem: Problem, answer: string | null) => answer !== null && answersMatch(checker, problem.answer, answer);
  const solverTarget = (problem: Problem) => answerText(problem.answer);

  const corruptSolution = (problem: Problem, _solutionText: string, rng: Rng): string => {
    const reference = problem.answer;
    const numeric = parseNumber(reference);
    const mutations = [
      () => (Number.isFinite(numeric) ? answerText(String(numeric + (rng.next() < 0.5 ? -1 : 1))) : null),
      () => {
        if (reference.length < 2) return null;
        const i = rng.int(0, reference.length - 2);
        return answerText(reference.slice(0, i) + reference[i + 1] + reference[i] + reference.slice(i + 2));
      },
      () => (reference.length < 2 ? null : answerText(reference.slice(0, -1))),
    ];
    const isCorrect = solves(check, problem);
    return firstWrong(rng, mutations, isCorrect, () => answerText(`${reference}${DIGITS[rng.int(1, 9)]}`));
  };

  return characterFamily({
    name: FAMILY,
    description: `Your own problems from ${options.path ?? 'a JSONL file'} (${records.length} lines, ${checker} checker).`,
    notation: JSONL_NOTATION,
    ownCharacters: records.map((r) => r.question + r.answer).join('') + DIGITS,
    generate(generateOptions: GenerateOptions): Problem[] {
      return problemsFromRecords(FAMILY, splitRecords, generateOptions, (record) => ({ line: record.line, checker }));
    },
    checkAnswer: check,
    solverTarget,
    verifierTarget: (problem, solutionText) => verdictText(check(problem, parseSolution(solutionText).answer) ? 'approve' : 'reject'),
    corruptSolution,
  });
}
