/**
 * Whether a run recorded as `running` still has a process behind it (issue #17). A worker writes
 * its pid and a heartbeat (runs.worker_pid, runs.heartbeat_at) while it runs; when every process
 * of a run is SIGKILLed at once (power loss, the OOM killer) nothing marks the run, so readers ask
 * here and show such a run as interrupted, with why, until the app or `marsrl serve` marks it.
 */
import fs from 'node:fs';
import type { RunRow } from './types';

/**
 * A live worker reports at least once per RL step and every 30 s between (runner/worker.ts); a
 * run silent for this long has no working process even if its pid was reused. Override with
 * MARSRL_STALE_AFTER_MS (e.g. for models whose single step takes longer).
 */
export const DEFAULT_STALE_AFTER_MS = 15 * 60_000;

export function staleAfterMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = Number(env.MARSRL_STALE_AFTER_MS);
  return Number.isFinite(raw) && raw > 0 ? raw : DEFAULT_STALE_AFTER_MS;
}

/**
 * Signal 0 probes a pid without touching it; EPERM means it exists but belongs to another user.
 * A killed worker whose parent died with it stays a zombie until someone reaps it, and in a
 * container whose init does not reap, that is for good: signal 0 still succeeds on a zombie, so
 * on Linux its state in /proc (proc(5): field 3, `Z`) decides.
 */
export function isProcessAlive(pid: number | null): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces; the state follows it.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

export interface LivenessOptions {
  now?: number;
  staleAfterMs?: number;
  isAlive?: (pid: number) => boolean;
}

/** Why a `running` run has no live process behind it, or null when it does (or is not running). */
export function staleRunReason(run: Pick<RunRow, 'status' | 'workerPid' | 'heartbeatAt' | 'startedAt'>, options: LivenessOptions = {}): string | null {
  if (run.status !== 'running') return null;
  const now = options.now ?? Date.now();
  const bound = options.staleAfterMs ?? staleAfterMs();
  const alive = options.isAlive ?? isProcessAlive;
  const minutes = (ms: number) => `${Math.round(ms / 60_000)} min`;
  const last = run.heartbeatAt ?? run.startedAt;
  if (run.workerPid === null) {
    if (last !== null && now - last <= bound) return null;
    return `no worker process has reported for ${last === null ? 'ever' : `over ${minutes(now - last)}`}`;
  }
  if (!alive(run.workerPid)) return `its worker process (pid ${run.workerPid}) is gone`;
  if (last !== null && now - last > bound) {
    return `its worker process (pid ${run.workerPid}) has not reported for ${minutes(now - last)} (last at ${new Date(last).toISOString()})`;
  }
  return null;
}
