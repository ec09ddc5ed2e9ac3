/**
 * The math family's text format (issue #14): prompts rendered from the config's templates
 * (agents/prompts.ts) and answers read by the math checker's extraction (math-answer.ts), boxed
 * as the prompts ask; verdicts are verdict lines (`parseStrictVerdict`).
 */
import type { Role } from '#shared/agents';
import { chatPrompt, parseStrictVerdict, recordChat, verdictLine, type PromptTemplates } from '../agents/prompts';
import type { AgentTextFormat, ParsedSolution, Problem } from '../vocabulary';
import { extractFinalAnswer } from './math-answer';

/**
 * The final answer of a language-model Solver or Corrector output: extracted by `extractFinalAnswer`
 * (box, then `####`, then `Answer:`), well formed only when it is boxed, as the prompts ask.
 */
export function parseBoxedSolution(text: string): ParsedSolution {
  const { answer, source } = extractFinalAnswer(text);
  return { answer, formatValid: answer !== null && source === 'boxed' };
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

