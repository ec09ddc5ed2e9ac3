/**
 * Prompts as templates, and the strict parsing of what language-model agents write (issue #14).
 *
 * Each role has a system and a user template (config `prompts.<role>.system` / `.user`). Defaults
 * are modelled on MarsRL's public prompts (github.com/liushulinle/MarsRL, prompts.py), written
 * afresh and shortened: a Solver that reasons step by step and ends with a boxed answer; a
 * Verifier that checks step by step, classifies what it finds (critical error / justification
 * gap), does not correct, and ends with a verdict line; a Corrector that reads the problem, the
 * solution and the bug report, fixes what it agrees with and defends what it does not (MarsRL: "the
 * evaluator who generates the bug report can misunderstand your solution").
 *
 * Template syntax: `{name}` inserts a variable. Braces that belong to LaTeX stay literal: a `{`
 * right after a command (`\boxed{answer}`) or after `^` / `_` is never a variable, and `{{` / `}}`
 * write a literal brace anywhere else. Variables by role (`PROMPT_VARIABLES`):
 *   solver     {question}
 *   verifier   {question} {solution} {answer}   (answer: the final answer extracted from the solution)
 *   corrector  {question} {solution} {report}   (report: the Verifier's whole output)
 * A template naming any other variable is refused at config validation, naming the field and the
 * known variables.
 *
 * Verdicts: MarsRL's public code approves when `"correct" in text`, which reads "Incorrect" and
 * "not correct" as approvals. Here only an explicit verdict line counts: `Verdict: correct` or
 * `Verdict: incorrect` (case-insensitive; `**Verdict:** incorrect` and a trailing period allowed),
 * and the last such line wins. Anything else — no verdict line, `Verdict: not correct`,
 * `Verdict: wrong` — is no verdict: the turn's `formatValid` is false (so `reward.format_penalty`
 * applies, as a `format_penalty` reward component) and a verdict that neither approves nor
 * rejects is never rewarded as right. A verdict line followed by more text still gives its verdict
 * but is not well formed (the verdict must be the final line).
 */
import type { Role } from '#shared/agents';
import type { ChatMessage } from '../model/policy-model';
import type { Problem } from '../tasks/types';
import { extractFinalAnswer } from '../tasks/math-answer';
import type { TaskFamily } from '../tasks/types';
import { correctorPrompt, parseSolution, parseVerdict, solverPrompt, verdictText, verifierPrompt, type ParsedSolution, type ParsedVerdict, type Verdict } from './formats';

export const PROMPT_VARIABLES: Readonly<Record<Role, readonly string[]>> = {
  solver: ['question'],
  verifier: ['question', 'solution', 'answer'],
  corrector: ['question', 'solution', 'report'],
};

export interface PromptTemplates {
  system: string;
  user: string;
}

export const DEFAULT_PROMPTS: Readonly<Record<Role, PromptTemplates>> = {
  solver: {
    system:
      'You are a careful mathematician. Solve the problem step by step, justifying every step; check your arithmetic as you go. ' +
      'End your response with the final answer alone in \\boxed{answer}.',
    user: '{question}',
  },
  verifier: {
    system:
      'You are a meticulous grader of mathematical solutions. Your task is to check the solution, not to solve the problem or to repair the solution. ' +
      'Go through it step by step. For each step that is right, say so briefly; for each issue, quote the step and say whether it is a critical error ' +
      '(a false calculation or an invalid inference, which breaks every step that depends on it) or a justification gap (a step that may be true but is not shown). ' +
      'A solution is correct only when every step holds and the final answer is right.\n' +
      'Write your findings first. Then end with one final line that is exactly "Verdict: correct" or "Verdict: incorrect".',
    user: 'Problem:\n{question}\n\nSolution:\n{solution}',
  },
  corrector: {
    system:
      'You are a careful mathematician revising a solution after a grader reviewed it. Read the problem, the solution and the bug report. ' +
      'Where you agree with an item of the report, fix the solution; where you do not, keep the step and explain it in more detail, since the grader can misread a solution. ' +
      'Write the complete revised solution, step by step, and end it with the final answer alone in \\boxed{answer}.',
    user: 'Problem:\n{question}\n\nSolution:\n{solution}\n\nBug report:\n{report}',
  },
};

type TemplatePart = { text: string } | { variable: string };

/** Splits a template into literal text and variables (see the file comment for the syntax). */
export function parseTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let text = '';
  for (let i = 0; i < template.length; i++) {
    const ch = template[i];
    if ((ch === '{' || ch === '}') && template[i + 1] === ch) {
      text += ch;
      i++;
      continue;
    }
    if (ch === '{') {
      const name = /^\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(template.slice(i));
      const before = template.slice(0, i);
      const latexArgument = /\\[A-Za-z]+\s*$/.test(before) || /[\^_]\s*$/.test(before);
      if (name && !latexArgument) {
        if (text !== '') parts.push({ text });
        text = '';
        parts.push({ variable: name[1] });
        i += name[0].length - 1;
        continue;
      }
    }
    text += ch;
  }
  if (text !== '') parts.push({ text });
  return parts;
}

/** The variables a template names, in order of first use. */
export function templateVariables(template: string): string[] {
  const names: string[] = [];
  for (const part of parseTemplate(template)) if ('variable' in part && !names.includes(part.variable)) names.push(part.variable);
  return names;
}

/** Why a role's template cannot be used (an unknown variable), or null. */
export function checkTemplate(role: Role, template: string): string | null {
  const known = PROMPT_VARIABLES[role];
  const unknown = templateVariables(template).filter((name) => !known.includes(name));
  if (unknown.length === 0) return null;
  const list = unknown.map((n) => `{${n}}`).join(', ');
  return `unknown template variable${unknown.length === 1 ? '' : 's'} ${list}; the ${role} knows ${known.map((n) => `{${n}}`).join(', ')} (write {{ and }} for literal braces)`;
}

/** Fills a template's variables; an unknown one throws (validation refuses it earlier). */
export function renderTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return parseTemplate(template)
    .map((part) => {
      if ('text' in part) return part.text;
      const value = values[part.variable];
      if (value === undefined) throw new Error(`prompt template names {${part.variable}}, which has no value; known: ${Object.keys(values).join(', ')}`);
      return value;
    })
    .join('');
}

/** The chat messages of one role's prompt; an empty system template sends no system message. */
export function chatPrompt(templates: PromptTemplates, values: Readonly<Record<string, string>>): ChatMessage[] {
  const system = renderTemplate(templates.system, values);
  const user = renderTemplate(templates.user, values);
  return system.trim() === '' ? [{ role: 'user', content: user }] : [{ role: 'system', content: system }, { role: 'user', content: user }];
}

/**
 * One text for a policy that reads plain text (the character GPT): the system message, a blank
 * line, the user message. A policy with a chat template renders `chatPrompt`'s messages instead.
 */
export function flattenMessages(messages: readonly ChatMessage[]): string {
  return messages.map((m) => m.content).join('\n\n');
}

/**
 * The chat messages behind a templated prompt's flattened text. Prompts travel through rollout,
 * evaluation and warm start as one text (what a text policy reads, what a turn stores); a policy
 * that renders a chat template (the Hugging Face family, a served model) asks for the messages
 * back with `chatMessagesOf`, so its system message is the template's system message and not
 * part of the user message. Every templated prompt is recorded when it is made and read right
 * after, in the same batch; the record keeps the newest RECENT_CHATS_LIMIT prompts, far more than
 * one batch of any run makes. Text that no templated format made (the character tasks) has none.
 */
const RECENT_CHATS_LIMIT = 32_768;
const recentChats = new Map<string, ChatMessage[]>();

function recordChat(messages: ChatMessage[]): string {
  const text = flattenMessages(messages);
  recentChats.delete(text);
  recentChats.set(text, messages);
  if (recentChats.size > RECENT_CHATS_LIMIT) recentChats.delete(recentChats.keys().next().value!);
  return text;
}

/** The messages a templated format flattened into `promptText`, or null for any other text. */
export function chatMessagesOf(promptText: string): ChatMessage[] | null {
  return recentChats.get(promptText) ?? null;
}

export const VERDICT_APPROVE = 'correct';
export const VERDICT_REJECT = 'incorrect';

const VERDICT_LINE = /^[\s>*_#-]*verdict[\s*_]*:[\s*_]*(correct|incorrect)[\s*_]*\.?[\s*_]*$/i;

/** The line a Verifier ends with: `Verdict: correct` / `Verdict: incorrect`. */
export function verdictLine(verdict: Verdict): string {
  return `Verdict: ${verdict === 'approve' ? VERDICT_APPROVE : VERDICT_REJECT}`;
}

export interface StrictVerdict extends ParsedVerdict {
  /** How many verdict lines the text has (the last one counts). */
  verdictLines: number;
}

/** The verdict of a language-model Verifier's output (see the file comment). */
export function parseStrictVerdict(text: string): StrictVerdict {
  const lines = text.split(/\r?\n/);
  let verdict: Verdict | null = null;
  let lastVerdictLine = -1;
  let verdictLines = 0;
  lines.forEach((line, index) => {
    const match = VERDICT_LINE.exec(line);
    if (!match) return;
    verdictLines++;
    verdict = match[1].toLowerCase() === VERDICT_APPROVE ? 'approve' : 'reject';
    lastVerdictLine = index;
  });
  if (verdict === null) return { verdict: null, formatValid: false, verdictLines: 0 };
  const trailing = lines.slice(lastVerdictLine + 1).some((line) => line.trim() !== '');
  return { verdict, formatValid: !trailing, verdictLines };
}

/**
 * The final answer of a language-model Solver or Corrector output: extracted by `extractFinalAnswer`
 * (box, then `####`, then `Answer:`), well formed only when it is boxed, as the prompts ask.
 */
export function parseBoxedSolution(text: string): ParsedSolution {
  const { answer, source } = extractFinalAnswer(text);
  return { answer, formatValid: answer !== null && source === 'boxed' };
}

/**
 * What a task family's agents read and how their outputs are parsed. The character tasks use
 * `agents/formats` (`A:` / `V:` markers, tiny prompts); the math family uses the templates above.
 * Prompts are plain text for the policy seam's `promptTokens(role, text)`.
 */
export interface AgentTextFormat {
  solverPrompt(problem: Pick<Problem, 'question'>): string;
  verifierPrompt(problem: Pick<Problem, 'question'>, solution: string): string;
  correctorPrompt(problem: Pick<Problem, 'question'>, solution: string, report: string | null): string;
  parseSolution(text: string): ParsedSolution;
  parseVerdict(text: string): ParsedVerdict;
  /** A bare verdict as this format writes it (the oracle Verifier's report, the warm-start report). */
  verdictText(verdict: Verdict): string;
  /**
   * The same prompts as chat messages (system, user), for policies that render a chat template
   * (the Hugging Face family); the string prompts above are these messages flattened.
   */
  chat?: {
    solver(problem: Pick<Problem, 'question'>): ChatMessage[];
    verifier(problem: Pick<Problem, 'question'>, solution: string): ChatMessage[];
    corrector(problem: Pick<Problem, 'question'>, solution: string, report: string | null): ChatMessage[];
  };
}

/**
 * The templated format: prompts rendered from `templates` and flattened for text policies,
 * answers parsed by `parseBoxedSolution`, verdicts by `parseStrictVerdict`. A Corrector run without
 * a Verifier (the control) is handed the report `Verdict: incorrect`.
 */
export function templatedFormat(templates: Readonly<Record<Role, PromptTemplates>>): AgentTextFormat {
  const chat = {
    solver: (problem: Pick<Problem, 'question'>) => chatPrompt(templates.solver, { question: problem.question }),
    verifier: (problem: Pick<Problem, 'question'>, solution: string) =>
      chatPrompt(templates.verifier, { question: problem.question, solution: solution.trim(), answer: parseBoxedSolution(solution).answer ?? '' }),
    corrector: (problem: Pick<Problem, 'question'>, solution: string, report: string | null) =>
      chatPrompt(templates.corrector, { question: problem.question, solution: solution.trim(), report: (report ?? verdictLine('reject')).trim() }),
  };
  return {
    solverPrompt: (problem) => recordChat(chat.solver(problem)),
    verifierPrompt: (problem, solution) => recordChat(chat.verifier(problem, solution)),
    correctorPrompt: (problem, solution, report) => recordChat(chat.corrector(problem, solution, report)),
    parseSolution: parseBoxedSolution,
    parseVerdict: parseStrictVerdict,
    verdictText: verdictLine,
    chat,
  };
}

/** The character tasks' format (`agents/formats`), unchanged. */
export const CHARACTER_FORMAT: AgentTextFormat = { solverPrompt, verifierPrompt, correctorPrompt, parseSolution, parseVerdict, verdictText };

/** The format a family's agents use: its own, or the character format. */
export function textFormatOf(family: Pick<TaskFamily, 'format'>): AgentTextFormat {
  return family.format ?? CHARACTER_FORMAT;
}
