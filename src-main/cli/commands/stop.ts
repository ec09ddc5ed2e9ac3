import { StudioError } from '#shared/errors';
import type { Store } from '../../engine/store';
import { runActions } from '../../engine/training/advice';
import { importedRunRefusal } from '../../engine/imports/read-only';
import { hasUnfinishedJob, stopDetachedJob } from '../../engine/engines/detached';
import { isLive, requestRunStop, waitUntilStopped } from '../../runner/stop';
import { intFlag } from '../args';
import { runArgument, defineCommand, withCliRun } from '../context';
import { printJson } from '../format';

const stopUsage = `Usage: marsrl stop RUN [--no-wait] [--timeout SECONDS] [--db PATH] [--json]

Stops a run, whichever process owns it (a \`marsrl run\` in another terminal, the app, \`marsrl
serve\`): the request is recorded with the run, and its worker stops at its next safe point and
marks it interrupted, as Ctrl-C does; it stays resumable from its last checkpoint. A run whose
owning process is gone is marked interrupted at once. Waits until the run has stopped (at most
--timeout seconds, default: as long as it takes) unless --no-wait.`;

export const stopCommand = defineCommand({
  name: 'stop',
  summary: 'stop a run at its next safe point, whichever process owns it',
  usage: stopUsage,
  options: { 'no-wait': { type: 'boolean', default: false }, timeout: { type: 'string' } },
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    const ref = runArgument(positionals, 'stop', stopUsage);
    const timeoutS = intFlag('timeout', values.timeout, 1, 7 * 24 * 3600, stopUsage);
    return withCliRun(values.db, ctx, ref, async ({ store, run }) => {
      const refusal = importedRunRefusal(run, 'stop');
      if (refusal !== null) {
        ctx.err(`marsrl stop: ${refusal}`);
        return 1;
      }
      // An engine run whose Ray job goes on with no Studio following it (issue 38): stop the job itself.
      if (!isLive(run) && hasUnfinishedJob(store, run.id)) {
        const said = await stopDetachedJob(store, run.id, `marsrl stop (pid ${process.pid})`);
        if (values.json) printJson(ctx.out, { runId: run.id, status: run.status, engineJob: said, waited: false });
        else ctx.out(`Run ${run.id}: ${said}.\n  ${nextStep(store, run.id)}`);
        return 0;
      }
      let outcome;
      try {
        outcome = requestRunStop(store, run.id, `marsrl stop (pid ${process.pid})`);
      } catch (error) {
        if (error instanceof StudioError && error.code === 'conflict') {
          ctx.err(`marsrl stop: ${error.message}`);
          return 1;
        }
        throw error;
      }
      if (outcome.kind === 'marked') {
        if (values.json) printJson(ctx.out, { runId: run.id, status: 'interrupted', reason: outcome.reason, waited: false });
        else ctx.out(`Run ${run.id} had no live worker: ${outcome.reason}.\n  ${nextStep(store, run.id)}`);
        return 0;
      }
      if (!values.json) ctx.out(`Stop requested for run ${run.id}${outcome.ownerPid ? ` (worker pid ${outcome.ownerPid})` : ''}: it stops at its next safe point.`);
      if (values['no-wait']) {
        if (values.json) printJson(ctx.out, { runId: run.id, status: 'stopping', reason: outcome.reason, waited: false });
        return 0;
      }
      const ended = await waitUntilStopped(store, run.id, { timeoutMs: timeoutS === undefined ? Infinity : timeoutS * 1000 });
      if (ended === null) {
        if (values.json) printJson(ctx.out, { runId: run.id, status: 'stopping', reason: outcome.reason, waited: true });
        else ctx.err(`Run ${run.id} has not reached a safe point within ${timeoutS} s; the request stands and it stops there (check with: marsrl show ${run.id}).`);
        return 1;
      }
      const step = store.metrics.lastStep(run.id);
      if (values.json) printJson(ctx.out, { runId: run.id, status: ended.status, reason: ended.statusReason, lastStep: step, waited: true });
      else {
        ctx.out(`Run ${run.id} ${ended.status}${ended.statusReason ? ` (${ended.statusReason})` : ''}${step !== null ? ` after step ${step}` : ''}.`);
        if (ended.status === 'interrupted') ctx.out(`  ${nextStep(store, run.id)}`);
      }
      return 0;
    });
  },
});

/** What can be done with the stopped run, in the CLI's words (training/advice.ts decides). */
function nextStep(store: Store, runId: number): string {
  const run = store.runs.get(runId);
  if (!run) return '';
  return runActions(store, run)
    .map((a) => `${a.text[0].toUpperCase()}${a.text.slice(1)}: ${a.command}`)
    .join('\n  ');
}
