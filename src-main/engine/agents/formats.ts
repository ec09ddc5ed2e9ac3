/**
 * What each agent of the MarsRL chain reads and writes (MarsRL, arXiv 2511.11373), and how
 * its output is parsed.
 *
 * The chain is unrolled into agents: Solver (round 0) → Verifier1 → Corrector1 → Verifier2 →
 * Corrector2 … Verifier r and Corrector r are separate agents for rewards and statistics because
 * their inputs differ, even when they share one policy. Their names are src-shared/agents.ts's.
 *
 * | role      | reads                                  | writes                                         |
 * |-----------|----------------------------------------|------------------------------------------------|
 * | solver    | `question`                             | working-out, then `A:<final answer>`           |
 * | verifier  | `question|A:<final answer>`            | working-out, then `V:ok` (approve) / `V:no`    |
 * | corrector | `question|solution|V:no`               | a repaired solution, same format as the Solver |
 *
 * Sequences are tiny (character-level policies with a 128-character context), so the Corrector
 * reads the verdict rather than the Verifier's whole report: at the default difficulty the report
 * alone would fill the prompt budget. Role and special tokens (BOS, role, EOS) are added by the
 * tokenizer, never written into these texts. Every character used here is in `FORMAT_CHARSET`, and
 * every task family adds it to its own `charset`.
 */
import type { ParsedSolution, ParsedVerdict, Problem, Verdict } from '../vocabulary';

export type { ParsedSolution, ParsedVerdict, Verdict } from '../vocabulary';

/** Marks the final answer of a Solver or Corrector output: `…working-out… A:<answer>`. */
export const ANSWER_MARKER = 'A:';
/** Marks the verdict of a Verifier output: `…working-out… V:ok` or `V:no`. */
export const VERDICT_MARKER = 'V:';
export const APPROVE_WORD = 'ok';
export const REJECT_WORD = 'no';
/** Separates the parts of a prompt (question, solution, verdict). */
export const PROMPT_SEPARATOR = '|';
/** Every character the formats themselves add to a text. */
export const FORMAT_CHARSET = uniqueChars(` ${PROMPT_SEPARATOR}${ANSWER_MARKER}${VERDICT_MARKER}${APPROVE_WORD}${REJECT_WORD}`);

/** Sorted, de-duplicated characters of `text` (charsets are compared and unioned as strings). */
export function uniqueChars(text: string): string {
  return [...new Set(text)].sort().join('');
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** The Solver reads the question alone. */
export function solverPrompt(problem: Pick<Problem, 'question'>): string {
  return problem.question;
}

/**
 * A Verifier reads the question and the final answer of the solution it judges (a Solver's or the
 * previous Corrector's): `question|A:<answer>`, or the whole trimmed text when it has no answer.
 * Every family's verdict is about the final answer, and with the working-out left out the answer
 * always sits at the same place after the question, which is what lets a small character model
 * look each of its characters up (see sort.ts); with it, the Verifier copied the Solver's
 * working-out instead of checking the answer.
 */
export function verifierPrompt(problem: Pick<Problem, 'question'>, solution: string): string {
  const { answer } = parseSolution(solution);
  return `${problem.question}${PROMPT_SEPARATOR}${answer === null ? solution.trim() : answerText(answer)}`;
}

/**
 * A Corrector reads the question, the solution and the verdict on it. Only the verdict of the report
 * is carried (see the file comment). Correctors only receive rejections; `report` may be null for
 * the "Corrector on every answer, no Verifier" control, which is told `V:no` as well. An approving
 * report is carried as `V:ok` so that a caller that breaks the rule can see it in the trajectory.
 */
export function correctorPrompt(problem: Pick<Problem, 'question'>, solution: string, report: string | null): string {
  const verdict = report === null ? 'reject' : parseVerdict(report).verdict;
  const word = verdict === 'approve' ? APPROVE_WORD : REJECT_WORD;
  return `${problem.question}${PROMPT_SEPARATOR}${solution.trim()}${PROMPT_SEPARATOR}${VERDICT_MARKER}${word}`;
}

/**
 * Extracts the final answer of a Solver or Corrector output. Lenient about extraction (the last
 * marker wins, so a reward can still be computed) and strict about the format flag, which feeds
 * the optional format penalty.
 */
export function parseSolution(text: string): ParsedSolution {
  const at = text.lastIndexOf(ANSWER_MARKER);
  if (at === -1) return { answer: null, formatValid: false };
  const answer = text.slice(at + ANSWER_MARKER.length).trim();
  if (answer === '') return { answer: null, formatValid: false };
  return { answer, formatValid: countOccurrences(text, ANSWER_MARKER) === 1 };
}

/** Extracts the verdict of a Verifier output (the last `V:` marker wins; see `ParsedVerdict`). */
export function parseVerdict(text: string): ParsedVerdict {
  const at = text.lastIndexOf(VERDICT_MARKER);
  if (at === -1) return { verdict: null, formatValid: false };
  const rest = text.slice(at + VERDICT_MARKER.length);
  const verdict: Verdict | null = rest.startsWith(APPROVE_WORD) ? 'approve' : rest.startsWith(REJECT_WORD) ? 'reject' : null;
  if (verdict === null) return { verdict: null, formatValid: false };
  const trailing = rest.slice(APPROVE_WORD.length).trim(); // both words have two letters
  return { verdict, formatValid: trailing === '' && countOccurrences(text, VERDICT_MARKER) === 1 };
}

/** Renders a verdict the way a Verifier writes it: `V:ok` / `V:no`. */
export function verdictText(verdict: Verdict): string {
  return `${VERDICT_MARKER}${verdict === 'approve' ? APPROVE_WORD : REJECT_WORD}`;
}

/** Renders a final answer the way a Solver writes it: `A:<answer>`. */
export function answerText(answer: string): string {
  return `${ANSWER_MARKER}${answer}`;
}
