/**
 * One comparison of two extracted answers, end to end (issue #34): read both, compare the forms
 * with an oracle. The same function runs in the main thread with the quick oracle (plain numbers)
 * and in the checker's thread with compute-engine; it reads no state but its arguments.
 */
import { compareForms, type ValueOracle, type Verdict } from './compare';
import { describe, readAnswer } from './read';
import { NeedsEngine, TooCostly } from './values';

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
