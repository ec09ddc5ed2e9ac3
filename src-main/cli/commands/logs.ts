/**
 * `marsrl logs RUN` (issue 38): the log of an engine run's Ray job, as the Studio copied it while
 * following the job (`<run folder>/attempt-N/job.log`), or straight from Ray when no Studio process
 * follows the job now. `--follow` prints what the follower appends until the run ends.
 */
import fs from 'node:fs';
import { parseRunConfig } from '../../engine/config/load';
import { rayEngineOf } from '../../engine/engines/run-config';
import { jobClient } from '../../engine/engines/detached';
import { jobLogFile, readLogTail } from '../../engine/engines/job-log';
import type { EngineJobRow, Store } from '../../engine/store';
import { isLive } from '../../runner/stop';
import { intFlag } from '../args';
import { defineCommand, runArgument, withCliRun, type CommandContext } from '../context';

const usage = `Usage: marsrl logs RUN [--attempt N] [--lines N] [--follow] [--db PATH]

Prints the log of the Ray job of an engine run (engine.kind verl or drmas): the last --lines lines
(default 200; 0 for all) of its latest attempt, or of --attempt N. With --follow, goes on printing
as the job writes, until the run ends. A job no Studio process follows now (the app closed while
it ran) is read from Ray itself.`;

const FOLLOW_POLL_MS = 1000;

export const logsCommand = defineCommand({
  name: 'logs',
  summary: "print an engine run's Ray job log (--follow to keep printing)",
  usage,
  options: { attempt: { type: 'string' }, lines: { type: 'string' }, follow: { type: 'boolean', default: false } },
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    const ref = runArgument(positionals, 'logs', usage);
    const attempt = intFlag('attempt', values.attempt, 1, 1_000_000, usage);
    const lines = intFlag('lines', values.lines, 0, 10_000_000, usage) ?? 200;
    return withCliRun(values.db, ctx, ref, async ({ store, run }) => {
      const jobs = store.engineJobs.list(run.id);
      if (jobs.length === 0) {
        ctx.err(`marsrl logs: run ${run.id} has no Ray job (it is ${rayEngineOf(parseRunConfig(run.config)) ? 'an engine run that was never submitted' : "trained by the Studio's own trainer: see marsrl show"} ${run.id})`);
        return 1;
      }
      const job = attempt === undefined ? jobs[jobs.length - 1] : jobs.find((j) => j.attempt === attempt);
      if (!job) {
        ctx.err(`marsrl logs: run ${run.id} has attempts ${jobs.map((j) => j.attempt).join(', ')}; there is no attempt ${attempt}`);
        return 1;
      }
      const file = jobLogFile(job.localRunDir, job.attempt);
      const copy = readLogTail(file, lines);
      // A job no Studio process follows now: its log as Ray has it (the copy stopped when the Studio detached).
      const unfollowed = !isLive(run) && store.engineJobs.unfinishedJob(run.id)?.attempt === job.attempt;
      ctx.out(unfollowed ? lastLines(await fromRay(store, job, ctx), lines) : copy.text);
      if (values.follow) await follow(store, run.id, file, copy.size, ctx);
      return 0;
    });
  },
});

function lastLines(text: string, lines: number): string {
  const whole = text.replace(/\n$/, '');
  return lines === 0 ? whole : whole.split('\n').slice(-lines).join('\n');
}

async function fromRay(store: Store, job: EngineJobRow, ctx: CommandContext): Promise<string> {
  ctx.err(`(no Studio process follows job ${job.submissionId} now: its log as Ray has it at ${job.address})`);
  return jobClient(store, job, ctx.env).logs(job.submissionId);
}

/** Prints what is appended to `file` while the run is live, then what came last. */
async function follow(store: Store, runId: number, file: string, from: number, ctx: CommandContext): Promise<void> {
  let offset = from;
  for (;;) {
    const live = isLive(store.runs.get(runId)!);
    const size = fs.existsSync(file) ? fs.statSync(file).size : 0;
    if (size > offset) {
      const fd = fs.openSync(file, 'r');
      const buffer = Buffer.alloc(size - offset);
      fs.readSync(fd, buffer, 0, buffer.length, offset);
      fs.closeSync(fd);
      offset = size;
      ctx.out(buffer.toString('utf8').replace(/\n$/, ''));
    }
    if (!live) return;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
  }
}
