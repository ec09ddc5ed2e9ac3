/**
 * Agents that have collapsed to one output (issue 35): a Verifier that approves, or rejects,
 * nearly everything whatever it is shown, and a Corrector that hands back the answer it was
 * given. Such an agent earns its reward without doing its job (a Verifier that rejects everything
 * has recall 1.0 and a precision equal to the share of wrong answers), so a comparison that ranks
 * runs by accuracy alone hides it. Flagged on the run page, in Compare and in a study report.
 *
 * Rule, over the run's last WINDOW_STEPS training steps (the live attempt's turns):
 * - rejects-everything: at least NEARLY_ALL of a Verifier's readable verdicts reject, and so do
 *   at least NEARLY_ALL of its verdicts on right solutions (at least MIN_CLASS of them) — rejecting
 *   only wrong answers is the job, so the right ones decide.
 * - approves-everything: the mirror image, decided by the wrong solutions it judged.
 * - returns-input: at least NEARLY_ALL of a Corrector's repairs return its input's answer, and so
 *   do at least NEARLY_ALL of its repairs of wrong inputs (at least MIN_CLASS of them).
 * Each needs MIN_OUTPUTS outputs in the window: fewer say too little to call a collapse.
 */
import type { CollapseFlag } from '#shared/contract';
import type { AgentOutputCounts, Store } from '../store';

export const WINDOW_STEPS = 10;
export const NEARLY_ALL = 0.95;
export const MIN_OUTPUTS = 20;
export const MIN_CLASS = 5;

/** An agent collapsed to one output, with the numbers: the StudioApi's shape (one definition). */
export type { CollapseFlag };

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(3) : 'undefined');

/** The flags the rule above raises on a run's output counts (pure: tested against hand tables). */
export function collapseFromCounts(counts: AgentOutputCounts): CollapseFlag[] {
  const steps = counts.steps;
  if (steps === null) return [];
  const where = steps[0] === steps[1] ? `at step ${steps[0]}` : `in steps ${steps[0]}–${steps[1]}`;
  const flags: CollapseFlag[] = [];
  for (const v of counts.verifiers) {
    const verdicts = v.approvals + v.rejections;
    if (verdicts < MIN_OUTPUTS) continue;
    const right = v.rightApproved + v.rightRejected;
    const wrong = v.wrongApproved + v.wrongRejected;
    // Precision and recall of rejection, the numbers the Compare table reads (summary.ts).
    const quality = `precision ${ratio(v.wrongRejected, v.rejections)}, recall ${ratio(v.wrongRejected, wrong)}`;
    // One rule read both ways: nearly every verdict is one verdict, and it is given to nearly every
    // solution it is wrong for (a rejection of a right one, an approval of a wrong one).
    const sides = [
      { kind: 'rejects-everything', verb: 'rejects', given: v.rejections, class: 'right', of: right, mistaken: v.rightRejected },
      { kind: 'approves-everything', verb: 'approves', given: v.approvals, class: 'wrong', of: wrong, mistaken: v.wrongApproved },
    ] as const;
    const side = sides.find((s) => s.given / verdicts >= NEARLY_ALL && s.of >= MIN_CLASS && s.mistaken / s.of >= NEARLY_ALL);
    if (side) {
      flags.push({
        agent: v.agent,
        kind: side.kind,
        share: side.given / verdicts,
        count: verdicts,
        steps,
        message: `${v.agent} ${side.verb} nearly everything: ${side.given} of ${verdicts} verdicts (${pct(side.given / verdicts)}) ${where}, ${side.mistaken} of the ${side.of} ${side.class} solutions among them; ${quality}`,
      });
    }
  }
  for (const c of counts.correctors) {
    if (c.repairs < MIN_OUTPUTS || c.wrongInputs < MIN_CLASS) continue;
    if (c.unchanged / c.repairs >= NEARLY_ALL && c.wrongUnchanged / c.wrongInputs >= NEARLY_ALL) {
      flags.push({
        agent: c.agent,
        kind: 'returns-input',
        share: c.unchanged / c.repairs,
        count: c.repairs,
        steps,
        message: `${c.agent} returns its input: ${c.unchanged} of ${c.repairs} repairs (${pct(c.unchanged / c.repairs)}) ${where} give back the answer they were given, ${c.wrongUnchanged} of the ${c.wrongInputs} wrong ones among them`,
      });
    }
  }
  return flags;
}

/** The collapse flags of one run, read from its stored turns. */
export function collapseFlags(store: Store, runId: number): CollapseFlag[] {
  return collapseFromCounts(store.diagnostics.agentOutputCounts(runId, WINDOW_STEPS));
}
