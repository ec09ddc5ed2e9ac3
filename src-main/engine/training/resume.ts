/**
 * Which checkpoint a resume loads (issue #17). Checkpoints carry a SHA-256 of every file
 * (checkpoint/checkpoint.ts); a file that was truncated or corrupted (a disk that filled up, a copy that
 * stopped half-way) fails that check when loaded. The newest checkpoint that loads wins; each one
 * that does not is named, with why, in the run's events, so the user learns which file was bad.
 * When none loads the resume is refused with the fix, rather than training on from bad weights.
 */
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import type { Store } from '../store';
import { loadPolicies } from './policies';

export class NoUsableCheckpointError extends Error {
  constructor(
    readonly runId: number,
    readonly tried: { dir: string; error: string }[],
  ) {
    super(
      `run ${runId} cannot be resumed: ${tried.length === 0 ? 'it has no checkpoint' : `no checkpoint loads (${tried.map((t) => `${t.dir}: ${t.error}`).join('; ')})`}. ` +
        `Restore the checkpoint folder from a backup, or run again with the same config: marsrl run --like ${runId}.`,
    );
    this.name = 'NoUsableCheckpointError';
  }
}

export interface SkippedCheckpoint {
  step: number;
  dir: string;
  error: string;
}

export type ResumedPolicies = ReturnType<typeof loadPolicies> & { dir: string; skipped: SkippedCheckpoint[] };

/**
 * The newest loadable checkpoint of `runId`, newest first by step; unusable ones are logged, and
 * told to `onSkip` as they are found (the terminal says so as it happens, issue 35).
 */
export function loadNewestUsableCheckpoint(store: Store, runId: number, config: RunConfig, onSkip?: (skipped: SkippedCheckpoint) => void): ResumedPolicies {
  const dirs: { dir: string; step: number }[] = [];
  for (const c of store.events.checkpoints(runId).slice().sort((a, b) => b.step - a.step || b.id - a.id)) {
    const dir = path.dirname(c.path);
    if (!dirs.some((d) => d.dir === dir)) dirs.push({ dir, step: c.step });
  }
  const skipped: SkippedCheckpoint[] = [];
  for (const { dir, step } of dirs) {
    try {
      return { ...loadPolicies(dir, config), dir, skipped };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      skipped.push({ step, dir, error: message });
      onSkip?.({ step, dir, error: message });
      store.events.log(runId, 'warning', 'checkpoint_unusable', `the checkpoint of step ${step} in ${dir} cannot be loaded (${message}); trying the one before it`, { dir, step, error: message }, step);
    }
  }
  throw new NoUsableCheckpointError(runId, skipped);
}
