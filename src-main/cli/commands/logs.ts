/**
 * `marsrl logs RUN` (issue 38): the log of an engine run's Ray job, as the Studio copied it while
 * following the job (`<run folder>/attempt-N/job.log`), or straight from Ray when no Studio process
 * follows the job now. `--follow` prints what the follower appends until the run ends.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseRunConfig } from '../../engine/config/load';
import { RayJobsClient } from '../../engine/engines/ray/client';
import { rayEngineOf } from '../../engine/engines/run-config';
import { hasUnfinishedJob } from '../../engine/engines/detached';
import { loadKeyApprovals } from '../../engine/served/key-approvals';
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
      const file = path.join(job.localRunDir, `attempt-${job.attempt}`, 'job.log');
      const text = !isLive(run) && hasUnfinishedJob(store, run.id) && job === jobs[jobs.length - 1] ? await fromRay(store, run.id, job, ctx) : readText(file);
      ctx.out(lastLines(text, lines));
      if (values.follow) await follow(store, run.id, file, text.length, ctx);
      return 0;
    });
  },
});

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function lastLines(text: string, lines: number): string {
  if (lines === 0) return text.replace(/\n$/, '');
  return text.replace(/\n$/, '').split('\n').slice(-lines).join('\n');
}

async function fromRay(store: Store, runId: number, job: EngineJobRow, ctx: CommandContext): Promise<string> {
  const engine = rayEngineOf(parseRunConfig(store.runs.get(runId)!.config));
  const client = new RayJobsClient({ address: job.address, tokenEnv: engine?.token_env, approvals: loadKeyApprovals(ctx.env), env: ctx.env, field: 'engine.address' });
  ctx.err(`(no Studio process follows job ${job.submissionId} now: its log as Ray has it at ${job.address})`);
  return client.logs(job.submissionId);
}

/** Prints what is appended to `file` while the run is live, then what came last. */
async function follow(store: Store, runId: number, file: string, from: number, ctx: CommandContext): Promise<void> {
  let offset = Buffer.byteLength(readText(file).slice(0, from));
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
