/**
 * Task families by name. The generated families are fixed objects; `jsonl` and `math` are built
 * from a config (a user's file, the generator's knobs, the prompt templates), so they take options.
 */
import { TASK_FAMILIES, type TaskFamilyName } from '../vocabulary';
import { additionFamily } from './addition';
import { countdownFamily } from './countdown';
import { factorFamily } from './factor';
import { createJsonlFamily, JSONL_NOTATION, type JsonlFamilyOptions } from './jsonl';
import { createMathFamily, MATH_NOTATION, type MathFamilyOptions } from './math';
import { MATH_CHECKER_FULL_VERSION } from './math-answer';
import { sortFamily } from './sort';
import type { TaskFamily, TaskNotation } from './types';

export type { TaskFamilyName } from '../vocabulary';

const GENERATED: Record<Exclude<TaskFamilyName, 'jsonl' | 'math'>, TaskFamily> = {
  sort: sortFamily,
  countdown: countdownFamily,
  factor: factorFamily,
  addition: additionFamily,
};

/** Every family name `getTaskFamily` knows, in the config schema's order. */
export const TASK_FAMILY_NAMES: readonly TaskFamilyName[] = TASK_FAMILIES;

/** Options of the families built from a config: `jsonl`'s file and checker, `math`'s file, generator and prompts. */
export type TaskFamilyOptions = JsonlFamilyOptions & MathFamilyOptions;

/**
 * The family called `name`. `jsonl` needs `{ path | text, checker }`; `math` takes `{ mathPath,
 * generator, prompts }` (none needed: the shipped generator and prompts); the others ignore
 * options. An unknown name fails with the list of known ones.
 */
export function getTaskFamily(name: string, options: TaskFamilyOptions = {}): TaskFamily {
  if (name === 'jsonl') return createJsonlFamily(options);
  if (name === 'math') return createMathFamily(options);
  const family = (GENERATED as Record<string, TaskFamily | undefined>)[name];
  if (family === undefined) throw new Error(`unknown task family "${name}"; known families: ${TASK_FAMILY_NAMES.join(', ')}`);
  return family;
}

/** The marks every family's texts share (agents/formats.ts). */
export const SHARED_NOTATION: readonly TaskNotation[] = [
  { roles: ['solver', 'corrector'], marker: 'A:', meaning: 'The final answer follows; only it is checked against the reference.' },
  { roles: ['verifier'], marker: 'V:ok / V:no', meaning: 'The verdict: approve (ok) or reject (no) the solution judged. Only V:no passes the solution to the Corrector.' },
];

/**
 * What the notation in a family's texts means, for the trajectory browser: the family's own
 * entries, then the shared marks. Needs no options (a jsonl family is not opened for it); an
 * unknown family gets the shared marks only. math's chat-style texts have none of the shared
 * marks (no `A:`, no `V:ok`), only its boxed answers and verdict lines.
 */
export function familyNotation(name: string): readonly TaskNotation[] {
  if (name === 'math') return MATH_NOTATION;
  const own = name === 'jsonl' ? JSONL_NOTATION : ((GENERATED as Record<string, TaskFamily | undefined>)[name]?.notation ?? []);
  return [...own, ...SHARED_NOTATION];
}

/**
 * The version of the answer checker a family's runs are judged by, stored with each run (issue
 * #34): the math checker's rules and its computer algebra. The other families compare exact
 * strings or integers by fixed rules and have no versions (null).
 */
export function answerCheckerVersion(family: string): string | null {
  return family === 'math' ? MATH_CHECKER_FULL_VERSION : null;
}
