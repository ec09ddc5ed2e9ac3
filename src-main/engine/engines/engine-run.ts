/**
 * A run that veRL or DrMAS trains on Ray (issue 38), inside the same run shell as the Studio's own
 * runs (training/run-shell.ts): the worker process runs it, it reports progress the same way, and
 * it ends done, interrupted or failed.
 *
 *   1. The cluster: `engine.address` local starts (or finds) a Ray head on this machine; otherwise
 *      the dashboard URL, with the token named by `engine.token_env` sent only where approved.
 *   2. The job: the run's latest attempt whose Ray job still runs is re-attached (a restarted
 *      Studio, `marsrl resume`); a finished one is read to its end; otherwise a new attempt is
 *      planned against what the engine's interpreter reports (probe) and submitted with the
 *      attempt's own submission id. A resumed attempt starts where the engine resumes (its last
 *      checkpoint, `trainer.resume_mode=auto`), and the store supersedes the rows it redoes.
 *   3. Following: every poll's records and the cursor are stored in one transaction (ingest.ts).
 *
 * Stopping: a stop asked for by a person (the run page, `marsrl stop`, Ctrl-C) stops the Ray job
 * and reads what it wrote; the Studio closing or its manager going away only detaches — the job
 * goes on on Ray, and the next start of the app or `marsrl resume` re-attaches to it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import type { EngineConfig } from '../config/engine';
import { loadKeyApprovals } from '../served/key-approvals';
import type { Store } from '../store';
import { finishDone, finishInterrupted, runShell, type RunShell, type TrainOutcome, type TrainProgress } from '../training/run-shell';
import { storeTagOf } from './attempt';
import { jobLogFile } from './job-log';
import { initialFollowState, type FollowState } from './follow/follower';
import { JobFollower } from './follow/live';
import type { FollowSpec } from './follow/spec';
import { EngineIngest, stripAnsi } from './ingest';
import { RayError, RayJobsClient, lastTracebackLine } from './ray/client';
import { ensureLocalHead, stopLocalHead } from './ray/local-head';
import { probeLocal, probeOnCluster } from './ray/probe';
import { isTerminal, type JobStatus } from './ray/types';
import { getEngine } from './registry';
import { rayEngineOf } from './run-config';
import type { EngineProbe } from './types';

export interface EngineRunOptions {
  store: Store;
  runId: number;
  config: RunConfig;
  /** The Studio's folder of this run (runner/worker.ts); engine run folders default to beside it. */
  runDir: string;
  resume: boolean;
  signal?: AbortSignal;
  /** True when the stop only detaches (the Studio closing): the Ray job is left running. */
  detaching?: () => boolean;
  onProgress?: (progress: TrainProgress) => void;
  env?: NodeJS.ProcessEnv;
  /** Milliseconds between polls (default 2 s, or MARSRL_ENGINE_POLL_MS: see pollIntervals). */
  pollMs?: number;
}

/**
 * Milliseconds between the follower's polls (the options' pollMs, else MARSRL_ENGINE_POLL_MS, else
 * 2 s) and between the probe job's status reads (MARSRL_ENGINE_POLL_MS, else the probe's 1 s). The
 * variable is a test knob: the run worker (runner/worker.ts) starts engineRun with no pollMs, and
 * the tests' stand-in engine ends its job in a second or two, so a CLI or browser test of a run
 * would spend much of its time waiting for the next poll. Unset, nothing changes.
 */
function pollIntervals(options: EngineRunOptions): { follow: number; probe: number | undefined } {
  const fromEnv = Number((options.env ?? process.env).MARSRL_ENGINE_POLL_MS);
  const knob = Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : undefined;
  return { follow: options.pollMs ?? knob ?? 2000, probe: knob };
}

/** The job being followed: where, which attempt, what to read. */
interface FollowedJob {
  client: RayJobsClient;
  submissionId: string;
  attempt: number;
  spec: FollowSpec;
  cursor: FollowState;
  /** The Studio started the local head this job runs on (and so stops it when the run ends). */
  ownHead: boolean;
}

export async function engineRun(options: EngineRunOptions): Promise<TrainOutcome> {
  const engine = rayEngineOf(options.config);
  if (!engine) throw new Error('engineRun: the config has no Ray engine (engine.kind studio runs on the Studio\'s trainer)');
  return runShell(
    {
      store: options.store,
      runId: options.runId,
      config: options.config,
      signal: options.signal,
      onProgress: options.onProgress,
      writer: { maxPending: 2000, flushIntervalMs: 500 },
      failure: () => ({ kind: 'engine_failed', withStack: false }),
      throwAfterStopIsStop: true,
    },
    async (shell) => {
      const job = await startOrAttach(shell, engine, options);
      return followJob(shell, job, engine, options);
    },
  );
}

async function connect(engine: EngineConfig, options: EngineRunOptions, shell: RunShell): Promise<{ client: RayJobsClient; ownHead: boolean }> {
  let address = engine.address;
  let ownHead = false;
  if (address === 'local') {
    shell.progress({ phase: 'setup', step: 0, totalSteps: options.config.optimization.steps, metrics: {}, message: 'starting a local Ray head' });
    const head = await ensureLocalHead({ python: engine.python, dataDir: path.dirname(options.store.path), numGpus: engine.gpus_per_node });
    address = head.address;
    ownHead = head.startedByStudio;
  }
  const client = new RayJobsClient({ address, tokenEnv: engine.token_env, approvals: loadKeyApprovals(options.env), env: options.env, field: 'engine.address' });
  return { client, ownHead };
}

async function startOrAttach(shell: RunShell, engine: EngineConfig, options: EngineRunOptions): Promise<FollowedJob> {
  const { store, runId } = options;
  const { client, ownHead } = await connect(engine, options, shell);
  const latest = store.engineJobs.latest(runId);
  if (latest) {
    const status = await jobStatus(client, latest.submissionId);
    const cursor = (latest.cursor as FollowState | null) ?? initialFollowState();
    // Until its end has been read, the latest job is followed (re-attached), never submitted again:
    // a job that ended while the Studio was closed is read to its end and the run marked by it.
    // One whose end was read (stopped, failed) is resumed by a new attempt.
    const endRead = cursor.status !== null && isTerminal(cursor.status);
    if (status !== null && !endRead) {
      store.events.log(runId, 'info', 'engine_attached', `following Ray job ${latest.submissionId} (attempt ${latest.attempt}, ${status}) from where the store stands`);
      return { client, submissionId: latest.submissionId, attempt: latest.attempt, spec: latest.spec as FollowSpec, cursor, ownHead };
    }
  }
  return submitAttempt(shell, engine, options, client, ownHead, latest?.attempt ?? null);
}

/** Ray's status of a job, or null when Ray no longer knows it (a restarted head forgets its jobs). */
async function jobStatus(client: RayJobsClient, submissionId: string): Promise<JobStatus | null> {
  try {
    return (await client.status(submissionId)).status;
  } catch (error) {
    if (error instanceof RayError && error.code === 'not_found') return null;
    throw error;
  }
}

async function submitAttempt(shell: RunShell, engine: EngineConfig, options: EngineRunOptions, client: RayJobsClient, ownHead: boolean, previous: number | null): Promise<FollowedJob> {
  const { store, runId, config } = options;
  const steps = config.optimization.steps;
  shell.progress({ phase: 'setup', step: 0, totalSteps: steps, metrics: {}, message: `asking ${engine.python} what it has installed` });
  const probe: EngineProbe = engine.address === 'local' ? await probeLocal(engine.python) : await probeOnCluster(client, engine.python, { cwd: engine.working_dir, pollMs: pollIntervals(options).probe });
  let attempt = store.runs.get(runId)?.attempt ?? 1;
  if (previous !== null) {
    // The engine resumes from its last checkpoint (trainer.resume_mode=auto): the steps after it are redone.
    const fromStep = store.engineJobs.lastCheckpointStep(runId) + 1;
    attempt = store.runs.beginAttempt(runId, fromStep).attempt;
  }
  const adapter = getEngine(engine.kind);
  const plan = adapter.plan(config, engine, {
    runId,
    runName: store.runs.get(runId)?.name ?? `run ${runId}`,
    attempt,
    storeTag: storeTagOf(store.path),
    defaultRunRoot: path.dirname(options.runDir),
    probe,
  });
  for (const warning of plan.warnings) store.events.log(runId, 'warning', 'engine_plan', warning);
  const cursor = initialFollowState();
  store.engineJobs.add({ runId, attempt, engine: plan.kind, submissionId: plan.submissionId, address: client.address, localRunDir: plan.layout.localRunDir, entrypoint: plan.entrypoint, spec: plan.follow, cursor });
  shell.progress({ phase: 'setup', step: 0, totalSteps: steps, metrics: {}, message: `submitting ${plan.submissionId} to ${client.address}` });
  const result = await adapter.submit(plan, config, client);
  store.events.log(runId, 'info', 'engine_submitted', `${result.attached ? 'attached to' : 'submitted'} Ray job ${plan.submissionId} (${plan.kind} ${plan.engineVersion}, attempt ${attempt}) at ${client.address}`, { entrypoint: plan.entrypoint, runDir: plan.layout.localRunDir });
  return { client, submissionId: plan.submissionId, attempt, spec: plan.follow, cursor, ownHead };
}

async function followJob(shell: RunShell, job: FollowedJob, engine: EngineConfig, options: EngineRunOptions): Promise<TrainOutcome> {
  const { store, runId, config, signal } = options;
  const steps = config.optimization.steps;
  const ingest = new EngineIngest(store, runId, config, job.spec);
  const follower = new JobFollower(job.spec, job.client, job.submissionId);
  const logFile = jobLogFile(job.spec.localRunDir, job.attempt);
  let cursor = job.cursor;
  let stopSent = false;
  let step = store.engineJobs.lastMetricStep(runId);
  for (;;) {
    if (signal?.aborted) {
      if (options.detaching?.()) {
        return finishInterrupted(shell, step, String(signal.reason ?? 'detached'), `detached from Ray job ${job.submissionId}, which goes on running; the app's next start or marsrl resume ${runId} follows it again`);
      }
      if (!stopSent) stopSent = await stopJob(store, runId, job);
    }
    const poll = await follower.poll(cursor);
    const summary = ingest.write(poll.records, job.attempt, poll.state);
    cursor = poll.state;
    if (summary.logText) fs.appendFileSync(logFile, summary.logText);
    if (summary.step !== null) step = Math.max(step, summary.step);
    shell.cursor.step = step;
    shell.progress({ phase: 'rl', step, totalSteps: steps, metrics: {}, message: `Ray job ${poll.job?.status ?? 'status unknown'}` });
    if (poll.done) return ended(shell, job, engine, options, cursor.status, step, stopSent);
    await sleep(pollIntervals(options).follow, signal);
  }
}

/** The end of the job: done, stopped or failed, and the local head the Studio started is stopped with the run. */
async function ended(shell: RunShell, job: FollowedJob, engine: EngineConfig, options: EngineRunOptions, status: JobStatus | null, step: number, stopSent: boolean): Promise<TrainOutcome> {
  if (job.ownHead && engine.address === 'local' && !options.store.engineJobs.othersRunningOn(job.client.address, options.runId)) await stopLocalHead(path.dirname(options.store.path));
  if (status === 'SUCCEEDED') return finishDone(shell, step, options.config.optimization.steps);
  if (status === 'STOPPED') return finishInterrupted(shell, step, stopSent ? String(options.signal?.reason ?? 'stopped') : 'the Ray job was stopped outside the Studio');
  // The error line a person reads first: the traceback's, else the last line of Ray's message
  // (whose driver lines carry terminal colours, e.g. `\x1b[36m(TaskRunner pid=…)\x1b[0m`).
  const why = options.store.engineJobs.lastTraceback(options.runId)?.error ?? lastTracebackLine(stripAnsi(options.store.engineJobs.latest(options.runId)?.message ?? ''));
  throw new Error(`the ${engine.kind} job ${job.submissionId} failed${why ? `: ${stripAnsi(why)}` : ''}`);
}

async function stopJob(store: Store, runId: number, job: FollowedJob): Promise<boolean> {
  try {
    await job.client.stop(job.submissionId);
    store.events.log(runId, 'info', 'engine_stop', `asked Ray to stop job ${job.submissionId}`);
    return true;
  } catch (error) {
    // Unreachable now: try again at the next poll.
    store.events.log(runId, 'warning', 'engine_stop_failed', `could not ask Ray to stop job ${job.submissionId}: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
}


function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
