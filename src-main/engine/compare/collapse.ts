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
    if (v.rejections / verdicts >= NEARLY_ALL && right >= MIN_CLASS && v.rightRejected / right >= NEARLY_ALL) {
      flags.push({
        agent: v.agent,
        kind: 'rejects-everything',
        share: v.rejections / verdicts,
        count: verdicts,
        steps,
        message: `${v.agent} rejects nearly everything: ${v.rejections} of ${verdicts} verdicts (${pct(v.rejections / verdicts)}) ${where}, ${v.rightRejected} of the ${right} right solutions among them; ${quality}`,
      });
    } else if (v.approvals / verdicts >= NEARLY_ALL && wrong >= MIN_CLASS && v.wrongApproved / wrong >= NEARLY_ALL) {
      flags.push({
        agent: v.agent,
        kind: 'approves-everything',
        share: v.approvals / verdicts,
        count: verdicts,
        steps,
        message: `${v.agent} approves nearly everything: ${v.approvals} of ${verdicts} verdicts (${pct(v.approvals / verdicts)}) ${where}, ${v.wrongApproved} of the ${wrong} wrong solutions among them; ${quality}`,
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
