import { expect } from 'vitest';
import type { Problem, TaskFamily } from '../../src-main/engine/tasks';
import { Rng } from '../../src-main/engine/util/rng';

/**
 * A family's constructed mistakes, three per problem from its own Solver target: each must be
 * well formed (as `parse` reads the Solver's format) and judged wrong by the family's checker.
 * Returns the shapes they came in (the Verifier's target with `shape` masked), for the caller to
 * require several kinds, not one.
 */
export function mistakeShapes(
  family: TaskFamily,
  problems: readonly Problem[],
  parse: (text: string) => { answer: string | null; formatValid: boolean },
  options: { shape: RegExp; label: (p: Problem, wrong: string) => string },
): Set<string> {
  const rng = new Rng(4, 'corrupt');
  const kinds = new Set<string>();
  for (const p of problems) {
    for (let i = 0; i < 3; i++) {
      const wrong = family.corruptSolution(p, family.solverTarget(p), rng);
      const parsed = parse(wrong);
      expect(parsed.formatValid, wrong).toBe(true);
      expect(family.checkAnswer(p, parsed.answer), options.label(p, wrong)).toBe(false);
      kinds.add(family.verifierTarget(p, wrong).replace(options.shape, '#'));
    }
  }
  return kinds;
}
