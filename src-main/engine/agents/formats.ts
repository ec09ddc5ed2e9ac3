/**
 * What each agent of the MarsRL chain reads and writes (MarsRL, arXiv 2511.11373), and how
 * its output is parsed.
 *
 * The chain is unrolled into agents: Solver (round 0) → Verifier1 → Corrector1 → Verifier2 →
 * Corrector2 … Verifier r and Corrector r are separate agents for rewards and statistics because
 * their inputs differ, even when they share one policy.
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
import type { Role } from '../config/schema';
import type { Problem } from '../tasks/types';

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

export type Verdict = 'approve' | 'reject';

export interface ParsedSolution {
  /** The text after the last answer marker, trimmed; null when there is no marker or nothing after it. */
  answer: string | null;
  /** True when the text has exactly one answer marker followed by a non-empty answer. */
  formatValid: boolean;
}

export interface ParsedVerdict {
  /** The word after the last verdict marker; null when there is none or it is neither `ok` nor `no`. */
  verdict: Verdict | null;
  /** True when the text has exactly one verdict marker, followed by `ok`/`no` and nothing else. */
  formatValid: boolean;
}

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

/**
 * The agent name of a role in a round: `agentName('solver', 0)` = `solver`,
 * `agentName('verifier', 2)` = `verifier2`, `agentName('corrector', 1)` = `corrector1`.
 * The Solver only acts in round 0; Verifiers and Correctors in rounds 1, 2, …
 */
export function agentName(role: Role, round: number): string {
  if (!Number.isInteger(round) || round < 0) throw new Error(`agentName: round must be a non-negative integer, got ${round}`);
  if (role === 'solver') {
    if (round !== 0) throw new Error(`agentName: the solver only acts in round 0, got round ${round}`);
    return 'solver';
  }
  if (round === 0) throw new Error(`agentName: a ${role} acts in rounds 1, 2, …, got round 0`);
  return `${role}${round}`;
}

const AGENT_PATTERN = /^(solver|verifier|corrector)(\d*)$/;

/** Splits an agent name into its role and round; throws on a name `agentName` cannot produce. */
export function parseAgentName(agent: string): { role: Role; round: number } {
  const match = AGENT_PATTERN.exec(agent);
  if (match) {
    const role = match[1] as Role;
    const round = match[2] === '' ? 0 : Number(match[2]);
    const canonicalRound = role === 'solver' ? round === 0 && match[2] === '' : round >= 1 && String(round) === match[2];
    if (canonicalRound) return { role, round };
  }
  throw new Error(`unknown agent name "${agent}": expected solver, verifier<r> or corrector<r> with r = 1, 2, …`);
}

/** The role of an agent: `roleOf('verifier2')` = `verifier`. */
export function roleOf(agent: string): Role {
  return parseAgentName(agent).role;
}

/** The round of an agent: 0 for the solver, r for verifier<r> and corrector<r>. */
export function roundOf(agent: string): number {
  return parseAgentName(agent).round;
}

/** The unrolled chain for `rounds` verify/correct rounds: solver, verifier1, corrector1, …. */
export function agentChain(rounds: number): string[] {
  const chain = ['solver'];
  for (let round = 1; round <= rounds; round++) chain.push(agentName('verifier', round), agentName('corrector', round));
  return chain;
}
