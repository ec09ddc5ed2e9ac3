/**
 * math: word problems for language-model agents (issue #14), from a user's JSONL/Parquet file
 * (`task.math_path`, GSM8K / MATH / AIME layouts, see math-data.ts) or from the shipped generator
 * of multi-step arithmetic word problems (math-generator.ts).
 *
 * Unlike the character tasks, the agents' texts are chat-style (agents/prompts.ts): prompts come
 * from the `prompts.<role>` templates, a Solver or Corrector ends with `\boxed{answer}`, a
 * Verifier writes findings and ends with `Verdict: correct` / `Verdict: incorrect`, parsed
 * strictly. Answers are compared with `mathAnswersEqual` (math-answer.ts, whose rules issue #34 wrote down).
 *
 * Targets for the warm start:
 *  - Solver: generated problems write one `a op b = c` line per step, then `\boxed{answer}`; file
 *    problems write the file's solution (ending with a box of the reference answer when it has
 *    none), or `\boxed{answer}` alone when the file has no solution.
 *  - Verifier (generated): the reference chain worked again — in words (`Step 2: 10 minus 4 gives
 *    6.`) when its prompt shows the solution, else as the Solver writes it (`10 - 4 = 6`) — the
 *    reference answer beside the solution's (`Answer: 6. The solution has 5.`), their difference
 *    (`Difference: 5 - 6 gives -1.`), then the verdict line (see verifierTarget). Files: the
 *    answer check and the verdict line (a free-form solution has no checkable steps).
 *  - Corrector: the given solution when it is right and boxed, else the reference solution. The
 *    report it reads is the Verifier's target, or with `pretrain.corrector_mistaken_reports` one
 *    from a mistaken working (mistakenReport).
 *
 * Splits: by a hash of the canonical problem (generated: person, thing, start, operations; files:
 * the question), 10% held out, as for every family; a file's split returns its problems in a
 * seeded order, at most `count` of them.
 *
 * charset: the characters of every question, answer, solution and prompt template, plus the
 * fixed words of the targets, so the character GPT can be used with this family. Its context
 * must hold a whole prompt: with the shipped (MarsRL-style) system prompts that is over a thousand
 * characters, so a GPT run sets short templates (e.g. `prompts.solver.system: ""`); the shipped
 * defaults are meant for Hugging Face chat models.
 */
import type { Role } from '#shared/agents';
import { DEFAULT_PROMPTS, verdictLine, type PromptTemplates } from '../agents/prompts';
import { parseBoxedSolution, templatedFormat } from './math-format';
import { uniqueChars } from '../agents/formats';
import { Rng } from '../util/rng';
import { firstWrong, generateDistinct, problemsFromRecords, splitOf, DIGITS } from './common';
import { mathAnswersEqual } from './math-answer';
import { readMathFile, type MathRecord } from './math-data';
import {
  GENERATOR_PUNCTUATION,
  runSteps,
  sampleWordProblem,
  stepText,
  wordProblemSettings,
  type Operation,
  type WordProblemOverrides,
  type WordProblemStep,
} from './math-generator';
import type { GenerateOptions, Problem, Split, TaskFamily, TaskNotation } from './types';

const FAMILY = 'math';

export interface MathFamilyOptions {
  /** A JSONL or Parquet file of problems; without it (and without `records`) the generator is used. */
  mathPath?: string;
  /** Records instead of a file (tests, previews). */
  records?: MathRecord[];
  /** The generator's knobs beyond the difficulty (`task.math_generator`). */
  generator?: WordProblemOverrides;
  /** The prompt templates by role (`prompts`); absent roles use the shipped defaults. */
  prompts?: Partial<Record<Role, PromptTemplates>>;
}

/** Words and symbols the targets add to what the problems and templates contain. */
const TARGET_TEXT = `Step: gives right. The solution has Answer is wrong no boxed answer ${verdictLine('approve')} ${verdictLine('reject')} \\boxed{} +-*/= \n`;
const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** How the Verifier's target names each operation (see verifierTarget). */
const OPERATION_WORDS: Readonly<Record<Operation, string>> = { '+': 'plus', '-': 'minus', '*': 'times', '/': 'divided by' };

function boxed(answer: string): string {
  return `\\boxed{${answer}}`;
}

interface GeneratedMeta {
  start: number;
  steps: WordProblemStep[];
  source: 'generator';
}

function generatedMeta(problem: Problem): GeneratedMeta | null {
  return problem.meta.source === 'generator' ? (problem.meta as unknown as GeneratedMeta) : null;
}

function solutionFromSteps(steps: readonly WordProblemStep[], answer: string | number): string {
  return [...steps.map(stepText), boxed(String(answer))].join('\n');
}

/** What the math family's texts mark (issue 18: explained next to each turn in the browser). */
export const MATH_NOTATION: readonly TaskNotation[] = [
  { roles: ['solver', 'corrector'], marker: '\\boxed{…}', meaning: 'The final answer: the last \\boxed{…} (boxes joined by "and" or commas are one list) or "final answer is …", whichever comes later (then #### n, "Answer: …", the last math) is what is checked: as a value, a list or set, a tuple, an interval, an equation (never by one of its sides) or a matrix.' },
  { roles: ['verifier'], marker: 'Verdict: correct / Verdict: incorrect', meaning: 'The verdict line; the last one counts, and a response without one is a format failure (it neither approves nor rejects).' },
];

/**
 * The math family for a config: its problems come from a file (`mathPath`, or `records`) or from
 * the generator, its prompts from the templates; the targets are the same for both sources.
 */
export function createMathFamily(options: MathFamilyOptions = {}): TaskFamily {
  const templates: Record<Role, PromptTemplates> = {
    solver: options.prompts?.solver ?? DEFAULT_PROMPTS.solver,
    verifier: options.prompts?.verifier ?? DEFAULT_PROMPTS.verifier,
    corrector: options.prompts?.corrector ?? DEFAULT_PROMPTS.corrector,
  };
  const records = options.records ?? (options.mathPath !== undefined ? readMathFile(options.mathPath) : null);
  const source = records === null ? generatedSource(options.generator ?? {}) : fileSource(records, options.mathPath);
  const templateChars = Object.values(templates).map((t) => t.system + t.user).join('');
  // Whether the Verifier is shown the solution's steps, which its target must not invite it to copy (verifierTarget).
  const verifierSeesSteps = /\{solution\}/.test(templates.verifier.system + templates.verifier.user);
  return {
    name: FAMILY,
    checkAnswer,
    solverTarget,
    verifierTarget: (problem, solutionText) => verifierTarget(problem, solutionText, verifierSeesSteps),
    correctorTarget,
    corruptSolution,
    mistakenReport: (problem, solutionText, rng) => mistakenReport(problem, solutionText, rng, verifierSeesSteps),
    format: templatedFormat(templates),
    notation: MATH_NOTATION,
    description: source.description,
    charset: uniqueChars(`${source.chars}${DIGITS}${TARGET_TEXT}${templateChars}`),
    generate: source.generate,
  };
}

/** Where a math family's problems come from: its description, their characters, and how a split is drawn. */
interface ProblemSource {
  description: string;
  chars: string;
  generate(options: GenerateOptions): Problem[];
}

/** The shipped generator's word problems (math-generator.ts), tuned by the difficulty and `task.math_generator`. */
function generatedSource(overrides: WordProblemOverrides): ProblemSource {
  return {
    description: 'Multi-step arithmetic word problems (shipped generator), chat-style prompts and boxed answers.',
    chars: `${LETTERS}${GENERATOR_PUNCTUATION}`,
    generate(generateOptions: GenerateOptions): Problem[] {
      const settings = wordProblemSettings(generateOptions.difficulty, overrides);
      return generateDistinct(FAMILY, generateOptions, (rng) => {
        const drawn = sampleWordProblem(rng, settings);
        if (drawn === null) return null;
        return {
          canonical: drawn.canonical,
          question: drawn.question,
          answer: String(drawn.answer),
          meta: { source: 'generator', start: drawn.start, steps: drawn.steps, difficulty: generateOptions.difficulty },
        };
      });
    },
  };
}

/** A file's records, each question once, split by a hash of the question. */
function fileSource(records: readonly MathRecord[], mathPath: string | undefined): ProblemSource {
  const seen = new Set<string>();
  const unique = records.filter((r) => (seen.has(r.question) ? false : (seen.add(r.question), true)));
  const splitRecords: Record<Split, MathRecord[]> = { train: [], test: [] };
  for (const record of unique) splitRecords[splitOf(FAMILY, record.question)].push(record);
  return {
    description: `Math problems from ${mathPath ?? 'a file'} (${unique.length} problems), chat-style prompts and boxed answers.`,
    chars: unique.map((r) => r.question + r.answer + (r.solution ?? '')).join(''),
    generate(generateOptions: GenerateOptions): Problem[] {
      return problemsFromRecords(FAMILY, splitRecords, generateOptions, (record) => ({ source: 'file', row: record.row, solution: record.solution }));
    },
  };
}

function checkAnswer(problem: Problem, answer: string | null): boolean {
  return answer !== null && mathAnswersEqual(problem.answer, answer);
}

function isRight(problem: Problem, text: string): boolean {
  return checkAnswer(problem, parseBoxedSolution(text).answer);
}

function solverTarget(problem: Problem): string {
  const meta = generatedMeta(problem);
  if (meta) return solutionFromSteps(meta.steps, problem.answer);
  const solution = typeof problem.meta.solution === 'string' ? problem.meta.solution : null;
  if (solution === null) return boxed(problem.answer);
  return parseBoxedSolution(solution).formatValid ? solution : `${solution}\n${boxed(problem.answer)}`;
}

function answerFinding(problem: Problem, solutionText: string): string {
  const { answer } = parseBoxedSolution(solutionText);
  if (answer === null) return 'Answer: no boxed answer.';
  return checkAnswer(problem, answer) ? `Answer: ${answer} is right.` : `Answer: ${answer} is wrong.`;
}

/**
 * A generated problem's Verifier works the problem again and then compares: its own steps, its
 * answer beside the solution's, their difference, the verdict. Each choice keeps a tiny model
 * from a shortcut it took on the tiny-qwen warm start (resources/checkpoints/README.md):
 *  - when its prompt shows the solution (`{solution}`), its steps are in words, "a minus b
 *    gives c", not the solution's "a - b = c": after the same tokens the solution wrote, copying
 *    the solution's next number is the easiest thing to learn, and it is right exactly when the
 *    solution is (with "a - b gives c" it copied the solution's slips, "4 - 1 gives 2"). Words
 *    make the copy less literal, not impossible. A prompt that shows only the final answer
 *    (`{answer}`, the tiny-qwen preset) leaves no steps to copy, so the steps are the Solver's
 *    own "a - b = c": a Verifier warm-started from the Solver (pretrain.start_from_solver)
 *    then reuses the working-out it already knows;
 *  - the two answers stand side by side just before the verdict, so deciding compares two nearby
 *    numbers, not one against a number far back in the prompt;
 *  - the difference of the two turns that comparison into the subtraction the model learns
 *    anyway: without it the Verifier wrote both numbers right and "Verdict: correct" regardless
 *    (4 of 19 wrong solutions caught), with it the verdict follows the difference.
 * Problems from files (no steps) keep the one-line finding.
 */
function verifierTarget(problem: Problem, solutionText: string, verifierSeesSteps: boolean): string {
  const meta = generatedMeta(problem);
  if (!meta) return [answerFinding(problem, solutionText), verdictLine(isRight(problem, solutionText) ? 'approve' : 'reject')].join('\n');
  return workedReport(meta.steps, problem.answer, solutionText, verifierSeesSteps);
}

/**
 * A generated problem's report from a working that ends in `believed`: the working, the two
 * answers side by side, their difference, and the verdict that comparison gives. With the
 * reference working this is the Verifier's target; with a mistaken one it is what a Verifier
 * that slipped writes (mistakenReport).
 */
function workedReport(steps: readonly WordProblemStep[], believed: string, solutionText: string, verifierSeesSteps: boolean): string {
  const { answer } = parseBoxedSolution(solutionText);
  const agrees = answer !== null && mathAnswersEqual(believed, answer);
  const lines = verifierSeesSteps ? steps.map((step, i) => `Step ${i + 1}: ${step.left} ${OPERATION_WORDS[step.op]} ${step.operand} gives ${step.result}.`) : steps.map(stepText);
  lines.push(`Answer: ${believed}. The solution has ${answer === null ? 'no boxed answer' : answer}.`);
  const theirs = answer === null ? NaN : Number(answer);
  if (Number.isFinite(theirs)) lines.push(`Difference: ${answer} - ${believed} gives ${theirs - Number(believed)}.`);
  lines.push(verdictLine(agrees ? 'approve' : 'reject'));
  return lines.join('\n');
}

/**
 * The mistaken workings a generated problem admits, each drawn with `rng`: a slip in one step's
 * result carried through the rest, one operation swapped, one step dropped. Each gives null
 * when its chain reaches a fraction or a negative count, which no word problem here has. The
 * Solver's and Verifier's own slips in a run are of these kinds ("8 + 7 = 16", a step left out).
 */
function mistakenWorkings(meta: GeneratedMeta, rng: Rng): Array<() => WordProblemStep[] | null> {
  const ops = meta.steps.map((s) => ({ op: s.op, operand: s.operand }));
  const fromOps = (changed: { op: Operation; operand: number }[], slip?: { at: number; by: number }) => {
    let steps = runSteps(meta.start, changed);
    if (slip) {
      const head = steps.slice(0, slip.at);
      const wrong = { ...steps[slip.at], result: steps[slip.at].result + slip.by };
      steps = [...head, wrong, ...runSteps(wrong.result, changed.slice(slip.at + 1))];
    }
    if (steps.length === 0 || steps.some((s) => !Number.isInteger(s.result) || s.result < 0)) return null;
    return steps;
  };
  const swap: Record<Operation, Operation> = { '+': '-', '-': '+', '*': '+', '/': '*' };
  return [
    () => fromOps(ops, { at: rng.int(0, ops.length - 1), by: rng.pick([-2, -1, 1, 2, 10, -10]) }),
    () => {
      const at = rng.int(0, ops.length - 1);
      return fromOps(ops.map((o, i) => (i === at ? { ...o, op: swap[o.op] } : o)));
    },
    () => {
      if (ops.length < 2) return null;
      const dropped = rng.int(0, ops.length - 1);
      return fromOps(ops.filter((_, i) => i !== dropped));
    },
  ];
}

/**
 * A rejecting report on `solutionText` from a Verifier that got the problem wrong itself
 * (`pretrain.corrector_mistaken_reports`, issue #14). In a tiny-qwen run the Verifier's own
 * "Answer:" line was right on only 44% of its reports and the Corrector, warm-started on
 * truthful reports only, copied that line's number into its answer on 79–84% of its turns, so it
 * broke most right solutions the Verifier rejected (resources/checkpoints/README.md). Generated
 * problems: a mistaken working (mistakenWorkings) whose answer differs from the solution's, so
 * the report rejects. Files: a right solution called wrong (their reports have no working).
 * Null when no such report exists (a file's wrong solution; every mistaken working agreeing
 * with the solution).
 */
function mistakenReport(problem: Problem, solutionText: string, rng: Rng, verifierSeesSteps: boolean): string | null {
  const meta = generatedMeta(problem);
  const { answer } = parseBoxedSolution(solutionText);
  if (!meta) return checkAnswer(problem, answer) ? [`Answer: ${answer} is wrong.`, verdictLine('reject')].join('\n') : null;
  const workings = mistakenWorkings(meta, rng);
  for (let attempt = 0; attempt < 16; attempt++) {
    const steps = rng.pick(workings)();
    if (steps === null) continue;
    const believed = String(steps[steps.length - 1].result);
    if (mathAnswersEqual(believed, problem.answer) || (answer !== null && mathAnswersEqual(believed, answer))) continue;
    return workedReport(steps, believed, solutionText, verifierSeesSteps);
  }
  return null;
}

function correctorTarget(problem: Problem, solutionText: string): string {
  const parsed = parseBoxedSolution(solutionText);
  if (parsed.formatValid && checkAnswer(problem, parsed.answer)) return solutionText.trim();
  return solverTarget(problem);
}

function corruptSolution(problem: Problem, _solutionText: string, rng: Rng): string {
  const isCorrect = (text: string) => isRight(problem, text);
  const meta = generatedMeta(problem);
  if (meta) {
    const asSolution = (steps: WordProblemStep[] | null) => (steps === null ? null : solutionFromSteps(steps, steps[steps.length - 1].result));
    const mutations = [...mistakenWorkings(meta, rng).map((working) => () => asSolution(working())), () => solutionFromSteps(meta.steps, Number(problem.answer) + rng.pick([-1, 1]))];
    return firstWrong(rng, mutations, isCorrect, () => solutionFromSteps(meta.steps, `${problem.answer}1`));
  }
  const reference = solverTarget(problem);
  const number = Number(problem.answer);
  const replaceBox = (answer: string) => {
    const at = reference.lastIndexOf('\\boxed{');
    return at === -1 ? `${reference}\n${boxed(answer)}` : `${reference.slice(0, at)}${boxed(answer)}`;
  };
  const mutations = [
    () => (Number.isFinite(number) ? replaceBox(String(number + rng.pick([-1, 1, 2]))) : null),
    () => (Number.isFinite(number) && number !== 0 ? replaceBox(String(-number)) : null),
    () => replaceBox(`${problem.answer}+1`),
  ];
  return firstWrong(rng, mutations, isCorrect, () => replaceBox(`${problem.answer}${DIGITS[rng.int(1, 9)]}`));
}
