/**
 * Input selection for grouped agentic rollouts (MarsRL, arXiv 2511.11373): the Solver samples
 * a group per problem; each later agent selects k outputs of the agent before it and samples a
 * group for each selected one.
 *
 * Strategies:
 * - `random`: k distinct candidates uniformly at random.
 * - `balanced`: half the slots for correct outputs, half for wrong ones; the odd slot goes to the
 *   class `adaptive` prefers (wrong solutions for a Verifier, correct bug reports for a Corrector).
 *   A class with too few members leaves its slots to the other.
 * - `adaptive` (best in MarsRL): a Verifier prefers incorrect solutions (it learns to reject from
 *   them, and they are rare once the Solver is good); a Corrector prefers correct bug reports,
 *   i.e. rejections of solutions that really are wrong (the only ones it can fix). The preferred
 *   class is taken first, in random order, then the rest fills the remaining slots.
 *
 * Correctors only receive rejections: for the Corrector role, candidates whose verdict is not
 * `reject` are removed before any strategy runs, so the result may be empty (the episode then stops
 * early; see `outcome.ts`).
 *
 * The result holds min(k, eligible candidates) items, in the candidates' original order, and
 * depends only on the inputs and the state of `rng`.
 */
import type { Role } from '#shared/agents';
import { SELECTION_STRATEGIES, type SelectionStrategy } from '../vocabulary';
import type { Rng } from '../util/rng';
import type { Verdict } from './formats';

export type { SelectionStrategy } from '../vocabulary';

export interface SelectionCandidate {
  /**
   * For a Verifier's inputs (solutions): the solution's final answer is right.
   * For a Corrector's inputs (Verifier reports): the verdict is right; for a rejection this means
   * the judged solution really is wrong, a "correct bug report".
   */
  correct: boolean;
  /** For a Corrector's inputs: the report's parsed verdict. Ignored for a Verifier's inputs. */
  verdict?: Verdict | null;
}

/** Whether a candidate belongs to the class adaptive selection prefers for this role. */
function isPreferred(candidate: SelectionCandidate, role: 'verifier' | 'corrector'): boolean {
  return role === 'verifier' ? !candidate.correct : candidate.correct;
}

export function selectInputs<T extends SelectionCandidate>(
  candidates: readonly T[],
  k: number,
  strategy: SelectionStrategy,
  role: Role,
  rng: Rng,
): T[] {
  if (role === 'solver') throw new Error('selectInputs: the solver reads problems, not outputs of another agent; role must be verifier or corrector');
  if (!Number.isInteger(k) || k < 0) throw new Error(`selectInputs: k must be a non-negative integer, got ${k}`);
  if (!SELECTION_STRATEGIES.includes(strategy)) {
    throw new Error(`unknown selection strategy "${String(strategy)}"; known strategies: ${SELECTION_STRATEGIES.join(', ')}`);
  }
  const eligible: number[] = [];
  candidates.forEach((candidate, index) => {
    if (role === 'verifier' || candidate.verdict === 'reject') eligible.push(index);
  });
  const take = Math.min(k, eligible.length);
  let chosen: number[];
  if (strategy === 'random') {
    chosen = rng.shuffle(eligible).slice(0, take);
  } else {
    const preferred = rng.shuffle(eligible.filter((i) => isPreferred(candidates[i], role)));
    const others = rng.shuffle(eligible.filter((i) => !isPreferred(candidates[i], role)));
    if (strategy === 'adaptive') {
      chosen = [...preferred, ...others].slice(0, take);
    } else {
      // balanced: ceil(k/2) preferred and floor(k/2) others, then whichever class has spares fills up.
      const preferredSlots = Math.min(preferred.length, Math.ceil(take / 2));
      const otherSlots = Math.min(others.length, take - preferredSlots);
      const extraPreferred = take - preferredSlots - otherSlots;
      chosen = [...preferred.slice(0, preferredSlots + extraPreferred), ...others.slice(0, otherSlots)];
    }
  }
  return chosen.sort((a, b) => a - b).map((index) => candidates[index]);
}
