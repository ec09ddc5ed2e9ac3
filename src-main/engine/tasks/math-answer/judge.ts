/**
 * One comparison of two extracted answers, end to end (issue #34): read both, compare the forms
 * with an oracle. The same function runs in the main thread with the quick oracle (plain numbers)
 * and in the checker's thread with compute-engine; it reads no state but its arguments.
 */
import { compareForms, type ValueOracle, type Verdict } from './compare';
import { describe, readAnswer } from './read';
import { NeedsEngine, TooCostly } from './values';

/** Longest answer read (a final answer is a line, not a page); deepest bracket nesting read (the reader recurses on it). */
export const MAX_ANSWER_LENGTH = 2000;
export const MAX_DEPTH = 40;

function tooLarge(text: string): boolean {
  if (text.length > MAX_ANSWER_LENGTH) return true;
  let depth = 0;
  for (const ch of text) {
    if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') depth--;
    if (depth > MAX_DEPTH) return true;
  }
  return false;
}

export interface AnswerVerdict extends Verdict {
  /** How the two answers were read (for `--explain`). */
  readReference: string;
  readAnswer: string;
}

/**
 * Compares two extracted answers. A NeedsEngine error from the quick oracle propagates (the caller
 * hands the pair to the thread); an input too costly to evaluate is compared as text.
 */
export function judgeAnswers(reference: string, answer: string, oracle: ValueOracle): AnswerVerdict {
  if (tooLarge(reference) || tooLarge(answer)) {
    const same = reference.replace(/\s+/g, '') === answer.replace(/\s+/g, '');
    const reason = same ? 'written the same way (too large to read)' : `not read: over ${MAX_ANSWER_LENGTH} characters or ${MAX_DEPTH} levels of brackets`;
    return { equal: same, reason, readReference: reference.slice(0, 200), readAnswer: answer.slice(0, 200) };
  }
  const ref = readAnswer(reference);
  const ans = readAnswer(answer);
  const read = { readReference: describe(ref), readAnswer: describe(ans) };
  try {
    return { ...compareForms(ref, ans, oracle), ...read };
  } catch (error) {
    if (error instanceof NeedsEngine) throw error;
    if (error instanceof TooCostly) {
      const same = read.readReference.replace(/\s+/g, '') === read.readAnswer.replace(/\s+/g, '');
      return { equal: same, reason: same ? 'written the same way (too costly to evaluate)' : `not evaluated: ${error.message}`, ...read };
    }
    throw error;
  }
}
