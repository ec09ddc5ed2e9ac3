/**
 * Prompt templates (issue #14): their syntax, the variables each role knows, and the defaults.
 * The config schema checks templates against these and fills in the defaults; agents/prompts.ts
 * renders them. Pure (issue 37, the vocabulary leaf): the schema reads it without reading agents.
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
 */
import type { Role } from '#shared/agents';

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
