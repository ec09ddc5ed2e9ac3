/**
 * Stopping a run from any process (issue 35): the app, `marsrl serve`'s API or `marsrl stop` in a
 * second terminal, whichever process owns the run.
 *
 * Mechanism: a stop request recorded with the run (runs.stop_requested_at, stop_reason), which
 * the owning worker reads every second and at every step (worker.ts) and honours at its next
 * safe point, marking the run interrupted as Ctrl-C does. Chosen over a signal to the recorded
 * owner pid because:
 * - a signal is not a safe-point stop everywhere: on Windows `process.kill(pid, 'SIGTERM')`
 *   terminates the process outright (no handler runs, the run is left half-written);
 * - a recorded pid can be reused by an unrelated process after the owner died; signalling it
 *   would kill a stranger, while a row in the run's own database can only reach the run;
 * - the request is data every surface can show ("stopping at the next safe point") and it
 *   outlives the process that asked (a browser tab closed, `marsrl stop --no-wait`);
 * - it needs no permission over the owner's process (another user's, a container's), only the
 *   database every surface already opens, and a run owned by something other than a local worker
 *   (an engine's job on Ray, DESIGN.md's third wave) can be stopped the same way by its follower.
 * Its cost is one primary-key read per second per running worker.
 *
 * A run recorded `running` whose owner is gone (store/liveness.ts) has nobody to read the
 * request: it is marked interrupted at once instead.
 */
import { StudioError } from '#shared/errors';
import type { RunRow, Store } from '../engine/store';
import { staleRunReason } from '../engine/store/liveness';

export type StopOutcome =
  /** The owner will stop at its next safe point; `ownerPid` is the worker recorded with the run. */
  | { kind: 'requested'; ownerPid: number | null; reason: string }
  /** Nothing owned the run any more: it was marked interrupted now, with `reason`. */
  | { kind: 'marked'; reason: string };

/** The reason a stop from `origin` is recorded with: Ctrl-C's words, and where it came from. */
export function stopReason(origin: string): string {
  return `stopped by the user from ${origin}`;
}

/** Whether a run reads as still going: queued or running with a live owner. */
export function isLive(run: RunRow): boolean {
  return run.status === 'queued' || (run.status === 'running' && staleRunReason(run) === null);
}

/**
 * Ask run `runId` to stop. Refuses (conflict) a run that has ended, naming its status; marks a run
 * whose owner is dead interrupted at once; records the request otherwise.
 */
export function requestRunStop(store: Store, runId: number, origin: string): StopOutcome {
  const run = store.runs.get(runId);
  if (!run) throw new StudioError('not_found', `run ${runId} does not exist`);
  const reason = stopReason(origin);
  const dead = run.status === 'running' ? staleRunReason(run) : null;
  if (dead !== null) {
    const marked = `${reason}; ${dead}, so it was marked interrupted at once`;
    // Only if it is still `running`: its worker may have finished it meanwhile.
    const changed = store.runs.markStale((candidate) => (candidate.id === runId ? marked : null));
    if (changed.includes(runId)) {
      store.events.log(runId, 'warning', 'interrupted', marked, { origin, ownerPid: run.workerPid });
      return { kind: 'marked', reason: marked };
    }
    return requestRunStop(store, runId, origin);
  }
  if (run.status !== 'running' && run.status !== 'queued') {
    throw new StudioError('conflict', `run ${runId} is not running (it is ${run.status}${run.statusReason ? `: ${run.statusReason}` : ''}); there is nothing to stop`);
  }
  if (!store.runs.requestStop(runId, reason)) {
    // It ended between the read and the write.
    const now = store.runs.get(runId);
    throw new StudioError('conflict', `run ${runId} is not running (it is ${now?.status ?? 'gone'}); there is nothing to stop`);
  }
  store.events.log(runId, 'info', 'stop_requested', `stop requested from ${origin}; the run stops at its next safe point`, { origin, ownerPid: run.workerPid });
  return { kind: 'requested', ownerPid: run.workerPid, reason: store.runs.stopRequest(runId)?.reason ?? reason };
}

/**
 * Wait until run `runId` has left queued/running (its owner honoured the request, or died, in
 * which case it is marked here as any reader would). Resolves with the run as it ended, or null
 * after `timeoutMs`.
 */
export async function waitUntilStopped(store: Store, runId: number, { timeoutMs = Infinity, pollMs = 250 }: { timeoutMs?: number; pollMs?: number } = {}): Promise<RunRow | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = store.runs.get(runId);
    if (!run) throw new StudioError('not_found', `run ${runId} was deleted while it stopped`);
    if (run.status === 'running' && staleRunReason(run) !== null) {
      store.runs.markStale((candidate) => (candidate.id === runId ? `${run.stopRequest?.reason ?? 'stopped by the user'}; ${staleRunReason(run)}` : null));
      continue;
    }
    if (run.status !== 'running' && run.status !== 'queued') return run;
    if (Date.now() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
