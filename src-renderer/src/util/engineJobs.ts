/**
 * A veRL or DrMAS run's Ray jobs on the run page (issue 38), their pure parts: which runs have
 * them, the attempts latest first, a Ray status's tone, and the traceback to put at the top.
 */
import type { EngineJobInfo } from '#shared/contract';

/** Ray's job states (JobStatus); the last three never change once reached. */
export const RAY_TERMINAL = new Set(['STOPPED', 'SUCCEEDED', 'FAILED']);

/** The engine of a run's config when it trains on Ray (verl, drmas), else null. */
export function rayEngineOfConfig(config: unknown): 'verl' | 'drmas' | null {
  if (config === null || typeof config !== 'object') return null;
  const engine = (config as Record<string, unknown>).engine;
  const kind = engine !== null && typeof engine === 'object' ? (engine as Record<string, unknown>).kind : undefined;
  return kind === 'verl' || kind === 'drmas' ? kind : null;
}

/** The attempts, latest first. */
export function latestFirst(jobs: readonly EngineJobInfo[]): EngineJobInfo[] {
  return [...jobs].sort((a, b) => b.attempt - a.attempt);
}

export type RayTone = 'pending' | 'running' | 'done' | 'failed' | 'stopped' | 'unknown';

/** How a Ray status is drawn (the run list's colours: running blue, done green, failed red, stopped amber). */
export function rayTone(status: string | null): RayTone {
  switch (status) {
    case 'PENDING':
      return 'pending';
    case 'RUNNING':
      return 'running';
    case 'SUCCEEDED':
      return 'done';
    case 'FAILED':
      return 'failed';
    case 'STOPPED':
      return 'stopped';
    default:
      return 'unknown';
  }
}

/** The failure to show first: the latest attempt's, when it FAILED (its traceback, else Ray's message). */
export function latestFailure(jobs: readonly EngineJobInfo[]): { attempt: number; submissionId: string; message: string | null; traceback: string | null } | null {
  const latest = latestFirst(jobs)[0];
  if (!latest || latest.status !== 'FAILED') return null;
  return { attempt: latest.attempt, submissionId: latest.submissionId, message: latest.message, traceback: latest.traceback };
}

const ESC = String.fromCharCode(27);
const BEL = String.fromCharCode(7);
/** CSI sequences (colours, cursor moves: ESC [ … final byte) and OSC ones (ESC ] … BEL or ESC \). */
const ANSI = new RegExp(`${ESC}\\[[0-?]*[ -/]*[@-~]|${ESC}\\][^${BEL}${ESC}]*(?:${BEL}|${ESC}\\\\)|${ESC}[@-Z\\\\-_]`, 'g');

/**
 * A job's log as a terminal would leave it on screen: Ray's colour codes (`(TaskRunner pid=…)`
 * is drawn in cyan) taken out, and of a line rewritten with carriage returns (a tqdm bar) only
 * what was written last.
 */
export function terminalText(log: string): string {
  return log
    .replace(ANSI, '')
    .split('\n')
    .map((line) => {
      const parts = line.replace(/\r+$/, '').split('\r');
      return parts[parts.length - 1];
    })
    .join('\n');
}
