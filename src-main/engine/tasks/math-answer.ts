/**
 * The math answer checker: every Solver and Corrector reward and every Verifier's truth in a math
 * run comes from here (issues #14, #34). Its rules, checked against the judged cases of nine public
 * graders' own test suites (test/fixtures/math-answer-*.jsonl, test/tasks/math-answer-corpus.test.ts):
 *
 * EXTRACTION (math-answer/extract.ts), first rule that finds something wins:
 *  1. the last group of boxes (`\boxed{…}`, `\fbox{…}`, `\boxed 5`; braces balanced, a box that
 *     never closes is skipped) or the last "final answer is …" statement (Minerva's "Final Answer:
 *     The final answer is $x$. I hope it is correct."), whichever comes later: Math-Verify ranks
 *     them alike and takes the rightmost. Boxes form a group when only connectives stand between
 *     them (`,`, `;`, "and", "or", `\quad`, a short label such as "for part (a) and"): the group is
 *     a list (`\boxed{1} and \boxed{2}` is 1, 2). "\boxed{3} is wrong, the answer is \boxed{5}" is 5;
 *  2. the last `#### …` (GSM8K);
 *  3. the last "Answer: …", "the answer is …", or "Answer" followed at once by math; after a
 *     marker the answer is the math that follows (several math spans joined by "and"/","), else the
 *     words after the sentence's last "is" ("The largest $n$ is 34."), up to the sentence's end,
 *     and of words with exactly one number, that number ("Jane started 3 hours ago" is 3; never
 *     after a negation: "not 5" is no 5);
 *  4. the last math environment (`$…$` and `\(…\)` on one line, `$$…$$` and `\[…\]` on any), with
 *     a percent sign or word written just after it;
 *  5. the whole response, when it is one short line of one word, or of at most two words beside a
 *     number or math ("28 percent", "Evelyn"; not "no idea").
 *  Never: the last number of free prose ("so the number is 10 which is 1,000.99"), a decimal
 *  comma (`2,74`). A reference that is a worked solution gives its answer by rules 1 and 2;
 *  otherwise the reference is the answer.
 *
 * READING (math-answer/normalize.ts, read.ts): notation that does not change a value goes first —
 * math delimiters, `\left`/`\right`, `\dfrac`/`\tfrac`/`\cfrac` (= `\frac`), LaTeX spacing, `\$`,
 * degree signs (`90^\circ` is 90), unit words after a number (`5 \text{ cm}`, `12 dollars`, the MATH
 * normaliser's list), a remark in words after a number (`17 \text{ any text}`, NeMo-Skills), a
 * trailing period, thousands separators (`7,425,000`, `14{,}916`, `32,\! 349`, `1 000`: every group
 * after the first three digits, no space after the comma — `32, 349` is the list 32; 349, never
 * 32349). Then the answer is read as one of:
 *  - a list: items separated by `,` within solution groups separated by `;`, "and", "or";
 *  - a tuple `(a, b)` (ordered; a pair is also the open interval it writes), a set `\{a, b\}`, an
 *    interval `[a, b)` or a union with `\cup`, a matrix (`pmatrix`, `bmatrix`, `array`, …);
 *  - named values `x = 5`, `a_3 = 2, a_{37} = 19`, `(p, q) = (3, 2)`, `n = 1, 2, 3`, when the left
 *    side names the quantity (a name, `f(x)`, `A:B`, `\frac{NO}{BO}`, a tuple of names);
 *  - a relation (`2x + 4y - 3 = 0`, `x < 1`, `0 < f(x) < 1`): any other equation or inequality. A
 *    chain of equalities is a calculation: `x = 5+5+1 = 11` names 11; `1 + 1 = 2` is 2;
 *  - `a \pm b` is the list a − b, a + b; `x \approx 11` names 11; after anything else an
 *    approximation is a remark (`\frac{\sqrt3}{3} \approx 0.577` is the exact value); `x \in S` is S;
 *  - the empty set (`\emptyset`, `\varnothing`, `\{\}`), the real line (`\mathbb{R}`), text (a
 *    choice letter, compared without case; words; a numeral in a base `204_5`; a time `12:00`),
 *    or a value (a number or an expression). An item written twice in a list is one item.
 *
 * COMPARISON (math-answer/compare.ts, values.ts):
 *  - values: numbers written exactly (integers, fractions, radicals, π) must be equal exactly; a
 *    decimal within a relative 1e-9 (float noise, nothing more: 0.333 is not 1/3, 3.14 is not π);
 *    expressions with free variables must agree at four generic points (complex values included),
 *    else `simplify(a − b) = 0`. Percentages are their value (`10\%` = 0.1); a reference `28\%`
 *    accepts a bare 28 (Math-Verify) and a bare reference of 1 or more accepts the figure with a
 *    percent sign (`20` against `20\%`: MATH's boxes omit the sign); 0.28 never accepts 28;
 *  - named values: the reference's `x = 5` is answered by `5` or `x = 5`, not `y = 5`; several names
 *    by the same names with equal values in any order, or by the values alone in the reference's
 *    order. An answer `x = 5` against a reference 5 is its value;
 *  - relations: only a relation answers an equation. Equations are the same when one is a nonzero
 *    multiple of the other (`x - (y+2) = 0` is `x = y + 2`); inequalities when one is a positive
 *    multiple (`x < 1` is `-x > -1`), link by link in a chain. An inequality of one term with
 *    constant ends is answered by its interval (`0 < f(x) < 1` by `(0, 1)`); one in one variable by
 *    the set where it holds (checked at every end of the answer's set and 1e-10 beside it, at the
 *    reference's constants, and on a grid, so an end rounded to 7 digits is caught);
 *  - an interval or set reference is not answered by an inequality (interval notation was asked:
 *    Math-Verify's default); intervals are the same pieces with the same ends and brackets;
 *  - tuples are ordered; lists and sets hold the same items in any order ("find all solutions");
 *    a list against a tuple is the tuple without its parentheses (same order); a set is no tuple;
 *  - matrices: the same shape, cell by cell, whatever the environment; a matrix expression in the
 *    answer (`A + B`) is its value;
 *  - text: the same words, without case.
 *
 * NEVER ACCEPTED: an empty or missing answer; one side of the reference's equation (`1` for
 * `2x + z = 1`, `0` for `a + 3z = 0`); a different equation that shares a side; a list for one of
 * its items or an item for a list; a rounded decimal for an exact value; a value with a different
 * unit-free number; text that differs by a letter.
 *
 * PURITY AND TIME: the verdict is a function of (reference, response) alone. Plain numbers are
 * decided here; anything else is compared in the checker's thread (math-answer/thread.ts), whose
 * compute-engine is rewound to a checkpoint after every comparison (math-answer/engine.ts), within
 * a budget of DEFAULT_BUDGET_MS per comparison: past it the answer is wrong, the thread is
 * replaced, and the timeout is reported to `onCheckerIncident` listeners (a run logs it as an event).
 *
 * MATH_CHECKER_VERSION names these rules; a run stores it, and `marsrl rejudge` re-judges a run's
 * turns when it has changed. Any change that can change a verdict bumps it (the corpus test's
 * fingerprint fails until it is bumped).
 */
import { extractFinalAnswer, lastBoxed, referenceAnswer, type AnswerSource, type ExtractedAnswer } from './math-answer/extract';
import { COMPUTE_ENGINE_VERSION, type RewoundEngine } from './math-answer/engine';
import { judgeAnswers, type AnswerVerdict } from './math-answer/judge';
import { normalizeNotation } from './math-answer/normalize';
import { JudgeThread, type Incident } from './math-answer/thread';
import { NeedsEngine, quickOracle } from './math-answer/values';

export { extractFinalAnswer, lastBoxed, referenceAnswer, type AnswerSource, type ExtractedAnswer };

/** The checker's rules, versioned: bump on any change that can change a verdict. */
export const MATH_CHECKER_VERSION = 'math-answer/2';
/** The version a run records: the rules and the computer algebra they run on. */
export const MATH_CHECKER_FULL_VERSION = `${MATH_CHECKER_VERSION} (compute-engine ${COMPUTE_ENGINE_VERSION})`;

/** Wall-clock budget of one comparison; past it the answer is wrong (and the timeout reported). */
export const DEFAULT_BUDGET_MS = 2000;

export interface MathJudgement {
  correct: boolean;
  /** The reference's answer as extracted (the reference itself when it is one). */
  reference: string | null;
  /** The response's answer as extracted; null when it has none. */
  answer: string | null;
  /** Which extraction rule found the answer. */
  source: AnswerSource | null;
  /** Why, in one line. */
  reason: string;
  /** How both answers were read (the forms compared). */
  readReference: string | null;
  readAnswer: string | null;
  /** Whether the comparison ran out of its budget (then `correct` is false). */
  timedOut: boolean;
  /** Whether compute-engine was needed (false: plain numbers or text, decided without it). */
  usedEngine: boolean;
}

export interface CheckOptions {
  budgetMs?: number;
  /**
   * An engine to compare on in this thread instead of the checker's thread (the corpus test's
   * "each case alone" runs every case on a freshly built engine this way). No hard time bound.
   */
  engine?: RewoundEngine;
}

const listeners = new Set<(incident: Incident) => void>();
const stats = { comparisons: 0, engineComparisons: 0, timeouts: 0 };

/** Listens to timeouts and thread restarts (a run logs them as events); returns the unsubscribe. */
export function onCheckerIncident(listener: (incident: Incident) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Counts since the process started: comparisons, those that needed the engine, timeouts. */
export function checkerStats(): Readonly<typeof stats> {
  return { ...stats };
}

let thread: JudgeThread | null = null;
function judgeThread(): JudgeThread {
  thread ??= new JudgeThread((incident) => {
    if (incident.kind === 'timeout') stats.timeouts++;
    if (listeners.size === 0 && incident.kind !== 'thread-restart') console.warn(`math-answer: ${incident.message}`);
    for (const listener of listeners) listener(incident);
  });
  return thread;
}

/** Ends the checker's thread (tests and benchmarks; a process exits without it). */
export function stopCheckerThread(): void {
  thread?.stop();
}

type Compared = AnswerVerdict & { timedOut: boolean; usedEngine: boolean };

/** Compares two extracted answers: plain numbers here, anything else in the checker's thread. */
export function compareMathAnswers(reference: string, answer: string, options: CheckOptions = {}): Compared {
  stats.comparisons++;
  try {
    return { ...judgeAnswers(reference, answer, quickOracle), timedOut: false, usedEngine: false };
  } catch (error) {
    // A checker bug must cost one verdict, never the rollout that asked.
    if (!(error instanceof NeedsEngine)) return { equal: false, reason: `the checker failed: ${(error as Error)?.message ?? String(error)}`, readReference: reference, readAnswer: answer, timedOut: false, usedEngine: false };
  }
  stats.engineComparisons++;
  const budget = options.budgetMs ?? DEFAULT_BUDGET_MS;
  if (options.engine) return { ...options.engine.judge(reference, answer, budget), usedEngine: true };
  return { ...judgeThread().judge(reference, answer, budget), usedEngine: true };
}

/**
 * Whether `candidate` (an extracted answer) states the same answer as `reference` (see the file
 * comment for every rule); a null or empty candidate is wrong.
 */
export function mathAnswersEqual(reference: string, candidate: string | null, options: CheckOptions = {}): boolean {
  if (candidate === null || candidate.trim() === '') return false;
  return compareMathAnswers(reference, candidate, options).equal;
}

/** Judges a whole response against a reference: extraction, reading and comparison, with the reason. */
export function judgeMathAnswer(reference: string, response: string, options: CheckOptions = {}): MathJudgement {
  const ref = referenceAnswer(reference);
  const { answer, source } = extractFinalAnswer(response);
  const base = { reference: ref, answer, source, readReference: null, readAnswer: null, timedOut: false, usedEngine: false };
  if (ref === null) return { ...base, correct: false, reason: 'the reference has no answer' };
  if (answer === null) return { ...base, correct: false, reason: 'the response has no final answer (no box, no "####", no "Answer:" line, no math)' };
  const verdict = compareMathAnswers(ref, answer, options);
  return { ...base, correct: verdict.equal, reason: verdict.reason, readReference: verdict.readReference, readAnswer: verdict.readAnswer, timedOut: verdict.timedOut, usedEngine: verdict.usedEngine };
}

/** An answer's notation normalised (delimiters, spacing, LaTeX variants, separators); the value is left alone. */
export function normalizeAnswer(raw: string): string {
  return normalizeNotation(raw);
}
