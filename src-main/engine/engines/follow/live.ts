/**
 * Following a running job (issue 38): each poll asks Ray for the job's status and log, then reads
 * the attempt's files. The cluster can be unreachable for a while (a restart of its head, a
 * network cut): the files on the shared filesystem are still read, the status is reported
 * unknown, and the next poll that reaches Ray catches up — the cursor does not move past anything
 * not read.
 */
import { RayError, type RayJobsClient } from '../ray/client';
import { followAttempt, type FollowOptions, type FollowState, type JobView } from './follower';
import type { FollowRecord } from './records';
import type { FollowSpec } from './spec';
import { tensorBoardReader } from './tensorboard-slot';

export interface PollResult {
  records: FollowRecord[];
  state: FollowState;
  job: JobView | null;
  /** The job reached a terminal state and everything it wrote was read. */
  done: boolean;
}

const LOG_FAILURES_BEFORE_GIVING_UP = 3;

export class JobFollower {
  private pollsSinceLogs = 0;
  /** Said once per outage, not once per poll. */
  private unreachable = false;
  /** Polls in a row whose log request failed while the status answered (Ray issue #65402: the driver's node is gone). */
  private logFailures = 0;

  constructor(
    private readonly spec: FollowSpec,
    private readonly client: RayJobsClient,
    private readonly submissionId: string,
    private readonly options: FollowOptions & { now?: () => number; logEvery?: number } = {},
  ) {}

  async poll(state: FollowState): Promise<PollResult> {
    const extra: FollowRecord[] = [];
    let job: JobView | null = null;
    let log: string | null = null;
    try {
      job = await this.client.status(this.submissionId);
      // The log endpoint returns the whole log every time (Ray has no offset): fetch it every
      // `logEvery` polls while running, and always once the job has ended.
      const ended = job.status === 'SUCCEEDED' || job.status === 'FAILED' || job.status === 'STOPPED';
      if (ended || this.pollsSinceLogs % (this.options.logEvery ?? 1) === 0) log = await this.client.logs(this.submissionId);
      this.pollsSinceLogs++;
      this.unreachable = false;
      if (log !== null) this.logFailures = 0;
    } catch (error) {
      if (!(error instanceof RayError)) throw error;
      if (job !== null && log === null) {
        if (this.logFailures++ === 0) extra.push({ kind: 'warning', code: 'log_unavailable', message: `the job's log could not be read: ${error.message}`, source: null });
      } else if (!this.unreachable) {
        this.unreachable = true;
        extra.push({ kind: 'warning', code: 'cluster_unreachable', message: `${error.message}; following the files only until Ray answers again`, source: null });
      }
    }
    // A terminal status read before the log is only trusted with that log: otherwise the job is
    // treated as running this time, so no dump is taken on the strength of an unread log — unless
    // the log has failed several polls in a row (it may never come back): then the files are
    // finished without it.
    const ended = job !== null && (job.status === 'SUCCEEDED' || job.status === 'FAILED' || job.status === 'STOPPED');
    const view = ended && log === null && this.logFailures < LOG_FAILURES_BEFORE_GIVING_UP ? null : job;
    const { records, state: next, pendingDumps } = followAttempt(this.spec, state, { job: view, log, now: (this.options.now ?? Date.now)() }, { tensorboard: tensorBoardReader, ...this.options });
    const done = view !== null && (view.status === 'SUCCEEDED' || view.status === 'FAILED' || view.status === 'STOPPED') && pendingDumps === 0;
    return { records: [...extra, ...records], state: next, job: view, done };
  }
}
