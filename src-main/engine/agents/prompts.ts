/**
 * Prompts as templates, and the strict parsing of what language-model agents write (issue #14).
 * The template syntax, the variables and the defaults are vocabulary/templates.ts's (re-exported
 * here); this file renders them into chat messages and parses verdict lines. The math family joins
 * them with its boxed answers into its text format (tasks/math-format.ts).
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
import type { ChatMessage, ParsedVerdict, TaskFamily, AgentTextFormat, Verdict } from '../vocabulary';
import { parseTemplate, type PromptTemplates } from '../vocabulary/templates';
import { correctorPrompt, parseSolution, parseVerdict, solverPrompt, verdictText, verifierPrompt } from './formats';

export { PROMPT_VARIABLES, DEFAULT_PROMPTS, parseTemplate, templateVariables, checkTemplate, type PromptTemplates } from '../vocabulary/templates';
export type { AgentTextFormat } from '../vocabulary';

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

/** Flattens a templated prompt's messages into its text, and records them for `chatMessagesOf`. */
export function recordChat(messages: ChatMessage[]): string {
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

/** The character tasks' format (`agents/formats`), unchanged. */
export const CHARACTER_FORMAT: AgentTextFormat = { solverPrompt, verifierPrompt, correctorPrompt, parseSolution, parseVerdict, verdictText };

/** The format a family's agents use: its own, or the character format. */
export function textFormatOf(family: Pick<TaskFamily, 'format'>): AgentTextFormat {
  return family.format ?? CHARACTER_FORMAT;
}
