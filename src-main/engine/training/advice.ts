/**
 * What can really be done with a run next (issue 35, "Advice that is false"): every surface (the
 * run page, `marsrl show`, the end of `marsrl run`, the events of a run whose worker died) words
 * its advice from here, so none of them offers a resume the run manager would refuse.
 *
 * - A run still going (queued, or running with a live owner): stop it (`marsrl stop RUN`).
 * - An interrupted or failed run with a checkpoint on disk: resume from that checkpoint (the
 *   newest whose policy folders all exist; one that exists but fails its checksum is found, and
 *   reported, when the resume loads it: engine/training/resume.ts).
 * - A reasoning-system run (issue #16) resumes from its stored turns, checkpoint or not.
 * - An engine run (issue 38) is resumed by following its Ray job again when that job had not
 *   ended, else by a new attempt that the engine starts from its own last checkpoint.
 * - No checkpoint: a resume is impossible (the run manager refuses it); run again with the same
 *   config (`marsrl run --like RUN`, the page's "Run again with this config").
 * - A failed run is also offered a fresh run: resuming repeats whatever made it fail unless the
 *   cause was outside the run (a full disk, a served endpoint that went away).
 * - A finished run has nothing to continue.
 */
import fs from 'node:fs';
import { listPresets } from '../config/load';
import type { RunRow, Store } from '../store';
import { staleRunReason } from '../store/liveness';
import { isRayEngineRun } from '../vocabulary';

export type RunAction =
  | { kind: 'stop'; command: string; text: string }
  /** `checkpointStep` null: a reasoning-system run, resumed from its stored turns. */
  | { kind: 'resume'; checkpointStep: number | null; command: string; text: string }
  | { kind: 'run-again'; command: string; text: string };

/** The newest checkpoint step of a run whose every policy folder is still on disk, or null. */
export function resumableCheckpointStep(store: Store, runId: number): number | null {
  const byStep = new Map<number, string[]>();
  for (const c of store.events.checkpoints(runId)) byStep.set(c.step, [...(byStep.get(c.step) ?? []), c.path]);
  const steps = [...byStep.keys()].sort((a, b) => b - a);
  return steps.find((step) => byStep.get(step)!.every((p) => fs.existsSync(p))) ?? null;
}

function isSystemRun(config: Record<string, unknown>): boolean {
  return typeof config.system === 'object' && config.system !== null;
}

/** The status a reader should show: a `running` run without a live owner reads as interrupted (store/liveness.ts). */
export function effectiveStatus(run: RunRow): RunRow['status'] {
  return run.status === 'running' && staleRunReason(run) !== null ? 'interrupted' : run.status;
}

export function runActions(store: Store, run: RunRow): RunAction[] {
  const status = effectiveStatus(run);
  if (status === 'running' || status === 'queued') {
    return [{ kind: 'stop', command: `marsrl stop ${run.id}`, text: run.stopRequest ? 'stopping at its next safe point' : 'stop it at its next safe point (it stays resumable from its last checkpoint)' }];
  }
  if (status === 'done') return [];
  const again: RunAction = { kind: 'run-again', command: `marsrl run --like ${run.id}`, text: 'run again with this config (a new run)' };
  if (isSystemRun(run.config)) {
    return [{ kind: 'resume', checkpointStep: null, command: `marsrl resume ${run.id}`, text: 'resume it: finished calls are kept and not repeated' }];
  }
  if (isRayEngineRun(run.config)) {
    const job = store.engineJobs.unfinishedJob(run.id);
    const text = job ? `follow its Ray job ${job.submissionId} again (it was ${job.status ?? 'submitted'} when last seen)` : 'resume it: a new attempt of the Ray job, which the engine starts from its last checkpoint (trainer.resume_mode=auto)';
    return [{ kind: 'resume', checkpointStep: null, command: `marsrl resume ${run.id}`, text }];
  }
  const step = resumableCheckpointStep(store, run.id);
  if (step === null) {
    return [{ ...again, text: 'no checkpoint was saved before it stopped, so it cannot be resumed: run again with this config (a new run)' }];
  }
  const resume: RunAction = { kind: 'resume', checkpointStep: step, command: `marsrl resume ${run.id}`, text: `resume from its checkpoint of step ${step} (the steps after it are redone)` };
  return status === 'failed' ? [resume, again] : [resume];
}

/** One line of advice for messages and event texts: "resume it with `marsrl resume 3` (…)". */
export function adviceSentence(actions: readonly RunAction[]): string {
  return actions.map((a) => `${a.text}: \`${a.command}\``).join('; or ');
}

/**
 * A new run with an existing run's config (issue 35: "run again with this config", `marsrl run
 * --like RUN`): the stored snapshot, whose defaults were resolved when it started, under a name
 * that says where it came from.
 */
export function runAgainRequest(run: Pick<RunRow, 'id' | 'name' | 'preset' | 'config'>): { config: Record<string, unknown>; preset?: string; name: string } {
  const { name: _name, ...config } = run.config;
  const base = run.name.replace(/ \(like #\d+\)$/, '');
  // The preset only names where the config came from (the snapshot is complete); one removed since is left out.
  const preset = run.preset && listPresets().some((p) => p.name === run.preset) ? run.preset : null;
  return { config, ...(preset ? { preset } : {}), name: `${base} (like #${run.id})` };
}
