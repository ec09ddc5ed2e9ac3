import { rejudgeRun, RejudgeError, type RejudgeReport } from '../../engine/rejudge';
import { stopCheckerThread } from '../../engine/tasks/math-answer';
import { runArgument, defineCommand, withCliRun } from '../context';
import { printJson, table } from '../format';

const usage = `Usage: marsrl rejudge RUN [--dry-run] [--db PATH] [--json]

Judges a finished math run's turns again with today's answer checker and lists every verdict that
changed: turn, step, agent, the old and new verdict, the reference and the answer read. A Verifier
turn changes when the solution it judged does. Then the share of right turns per agent under the
stored verdicts and under today's checker.

Without --dry-run the re-judgement is recorded beside the run (tables rejudges and rejudged_turns,
an info event): the run's stored verdicts and rewards are never rewritten, since they are what it
trained on. --dry-run writes nothing.`;

const verdict = (v: boolean | null) => (v === null ? '—' : v ? 'right' : 'wrong');
const clip = (text: string | null, width = 40) => (text === null ? '(none)' : text.length > width ? `${text.slice(0, width - 1)}…` : text);

function describe(report: RejudgeReport, dryRun: boolean): string {
  const judged = report.judgedVersions.map((v) => v ?? 'unrecorded (made before checker versions were stored)').join('; ');
  const lines = [
    `Run ${report.runId} (${report.runName}): judged by ${judged}`,
    `Today's checker: ${report.checkerVersion}`,
    `Re-judged ${report.turnsChecked} turns: ${report.changed.length} verdict${report.changed.length === 1 ? '' : 's'} changed.`,
  ];
  if (report.changed.length > 0) {
    lines.push(
      '',
      table(
        ['turn', 'split', 'step', 'agent', 'old', 'new', 'reference', 'answer', 'why'],
        report.changed.map((c) => [c.turnId, c.split, c.step, c.agent, verdict(c.oldCorrect), verdict(c.newCorrect), clip(c.reference, 24), clip(c.answer, 28), clip(c.reason, 60)]),
      ),
    );
  }
  const keys = Object.keys(report.tallies).sort();
  if (keys.length > 0) {
    const share = (n: number, d: number) => (d === 0 ? '' : (n / d).toFixed(3));
    lines.push('', 'Right turns, stored → today:', table(['split/agent', 'turns', 'stored', 'today'], keys.map((k) => [k, report.tallies[k].turns, share(report.tallies[k].before, report.tallies[k].turns), share(report.tallies[k].after, report.tallies[k].turns)])));
  }
  lines.push('', dryRun ? 'Dry run: nothing was written.' : `Recorded as re-judgement #${report.rejudgeId} (the run's stored verdicts and rewards are unchanged).`);
  return lines.join('\n');
}

export const rejudgeCommand = defineCommand({
  name: 'rejudge',
  summary: "judge a finished math run's turns again with today's answer checker and list what changed",
  usage,
  options: { 'dry-run': { type: 'boolean', default: false } },
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    const ref = runArgument(positionals, 'rejudge', usage);
    return withCliRun(values.db, ctx, ref, async ({ store, run }) => {
      try {
        const dryRun = values['dry-run'] === true;
        const report = rejudgeRun(store, run.id, { write: !dryRun });
        if (values.json) printJson(ctx.out, { ...report, dryRun });
        else ctx.out(describe(report, dryRun));
        return 0;
      } catch (error) {
        if (error instanceof RejudgeError) {
          ctx.err(`marsrl rejudge: ${error.message}`);
          return 1;
        }
        throw error;
      } finally {
        stopCheckerThread();
      }
    });
  },
});
