/**
 * Stopping the Ray job of an engine run that no Studio process follows (issue 38): the Studio
 * closed and detached from it, so no worker reads the run's stop request. The job is stopped on
 * Ray directly; the next follower of the run (the app's next start, `marsrl resume`) reads what
 * the job wrote up to its end and marks the run interrupted.
 */
import { parseRunConfig } from '../config/load';
import { loadKeyApprovals } from '../served/key-approvals';
import type { EngineJobRow, Store } from '../store';
import { RayJobsClient } from './ray/client';
import { rayEngineOf } from './run-config';

/** Whether run `runId` is an engine run whose latest Ray job had not ended when last seen. */
export function hasUnfinishedJob(store: Store, runId: number): boolean {
  return store.engineJobs.unfinishedJob(runId) !== null;
}

/** A client of the Ray dashboard a recorded job ran on, with the run's token variable (sent only where approved). */
export function jobClient(store: Store, job: EngineJobRow, env: NodeJS.ProcessEnv = process.env): RayJobsClient {
  const run = store.runs.get(job.runId);
  const engine = run ? rayEngineOf(parseRunConfig(run.config, `run ${job.runId}`)) : null;
  return new RayJobsClient({ address: job.address, tokenEnv: engine?.token_env, approvals: loadKeyApprovals(env), env, field: 'engine.address' });
}

/** Stops the run's unfinished Ray job; says what was done (null: the run has no such job). */
export async function stopDetachedJob(store: Store, runId: number, origin: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const job = store.engineJobs.unfinishedJob(runId);
  if (!job) return null;
  const stopped = await jobClient(store, job, env).stop(job.submissionId);
  const message = stopped ? `asked Ray to stop job ${job.submissionId} (no Studio process followed it; stopped from ${origin})` : `Ray job ${job.submissionId} had already ended`;
  store.events.log(runId, 'info', 'engine_stop', `${message}; the run's next follower (the app's start, marsrl resume ${runId}) reads what it wrote to its end`);
  return message;
}
