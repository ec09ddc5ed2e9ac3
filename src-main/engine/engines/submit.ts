/**
 * Submission shared by the Ray engines (issue 38): the attempt's folder is created exclusively,
 * the planned files are written (dataset, the Studio's Python), the submission is recorded, then
 * `POST /api/jobs/` with the attempt's own submission id. A second submission of the same attempt
 * (a Studio restarted between writing the record and hearing Ray's answer) finds its folder and
 * record, skips the writes and attaches to the job Ray already has.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RunConfig } from '../config/schema';
import { resourcesDir } from '../resources';
import { createAttemptFolder, localPath, writeNewFile } from './attempt';
import { writeDataset } from './dataset';
import type { RayJobsClient } from './ray/client';
import type { EnginePlan, SubmitResult } from './types';

/** What `submission.json` records: the submission as sent, and the plan it came from. */
export function submissionRecord(plan: EnginePlan, config: RunConfig): Record<string, unknown> {
  return {
    format: 'marsrl-engine-submission',
    submission_id: plan.submissionId,
    engine: plan.kind,
    engine_version: plan.engineVersion,
    entrypoint: plan.entrypoint,
    argv: plan.argv,
    runtime_env: plan.runtimeEnv,
    metadata: plan.metadata,
    follow: plan.follow,
    warnings: plan.warnings,
    config,
    written_at: new Date().toISOString(),
  };
}

/** Writes every planned file (this machine's paths under the run folder). */
export function materialize(plan: EnginePlan, config: RunConfig): void {
  const runId = Number(plan.metadata.marsrl_run);
  for (const file of plan.files) {
    const target = localPath(plan.layout, file.path);
    if (file.kind === 'dataset') {
      writeDataset(config, { format: file.format, split: file.split, rows: file.rows, runId }, target);
    } else {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.copyFileSync(path.join(resourcesDir(), ...file.resource.split('/')), target, fs.constants.COPYFILE_EXCL);
    }
  }
  writeNewFile(localPath(plan.layout, plan.layout.submissionFile), `${JSON.stringify(submissionRecord(plan, config), null, 2)}\n`);
}

export async function submitPlan(plan: EnginePlan, config: RunConfig, client: RayJobsClient): Promise<SubmitResult> {
  const { created } = createAttemptFolder(plan.layout, plan.submissionId);
  if (created) materialize(plan, config);
  const { submissionId, attached } = await client.submit({
    entrypoint: plan.entrypoint,
    submission_id: plan.submissionId,
    runtime_env: plan.runtimeEnv,
    metadata: plan.metadata,
    // The driver only launches actors; GPUs reserved for it would be unavailable to training (spec §7.1).
    entrypoint_num_cpus: 1,
  });
  return { submissionId, attached, job: await client.status(submissionId) };
}
