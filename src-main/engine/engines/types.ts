/**
 * Outside engines (issue 38, DESIGN.md "Beyond one machine"): the Studio is the control plane and
 * the store; veRL and DrMAS (a veRL fork) train on Ray. An engine is an adapter in one folder
 * behind one small interface, registered by kind like a task family:
 *
 *   plan    the Studio's config → the engine's exact command line, environment and files,
 *           refusing what the engine would refuse with the field named (pure: no I/O but reads);
 *   submit  Ray Jobs REST, `POST /api/jobs/` with a submission id the Studio chooses, so a second
 *           submission of the same attempt attaches instead of starting a second job;
 *   follow  status, the job log and the files the engine writes, as normalized records with source
 *           positions and a resume cursor (the same readers import a finished folder, issue 39);
 *   stop    `POST /api/jobs/{id}/stop`.
 *
 * No Python runs inside the Studio: it talks HTTP to Ray and reads files.
 */
import type { RunConfig } from '../config/schema';
import type { ConfigIssue } from '../config/load';
import type { EngineConfig } from '../config/engine';
import type { RayEngineKind } from '../vocabulary';
import type { AttemptLayout } from './attempt';
import type { RayJobsClient } from './ray/client';
import type { JobDetails } from './ray/types';
import type { FollowSpec } from './follow/spec';
import type { FollowOptions } from './follow/follower';
import type { JobFollower } from './follow/live';

export { ENGINE_KINDS, type EngineKind, type RayEngineKind } from '../vocabulary';

/**
 * What is installed where the job runs, as `python -c …` reports it (ray/probe.ts): a local
 * interpreter run directly, or a one-line probe job on the cluster. Null: not importable.
 */
export interface EngineProbe {
  python: string;
  /** `verl.__version__` (DrMAS reports its bundled 0.3.1.dev). */
  verl: string | null;
  /** DrMAS: `agent_system/` beside the `verl` package (editable install of langfengQ/DrMAS). */
  drmas: boolean;
  /** The DrMAS checkout (the folder holding `verl/` and `agent_system/`), when found. */
  drmasRoot: string | null;
  ray: string | null;
  torch: string | null;
  vllm: string | null;
  sglang: string | null;
  tensorboard: string | null;
}

export type { AttemptLayout } from './attempt';

/** A file the job reads, written by `materialize` before submission. */
export type PlannedFile =
  | { path: string; kind: 'dataset'; format: 'verl' | 'drmas'; split: 'train' | 'test'; rows: number }
  /** A file shipped in the Studio's resources folder (its own Python: reward function, DrMAS hook). */
  | { path: string; kind: 'resource'; resource: string };

export interface EnginePlan {
  kind: RayEngineKind;
  /** The engine version the plan was made for (key names differ between veRL releases). */
  engineVersion: string;
  layout: AttemptLayout;
  /** Deterministic per store, run and attempt: a restarted Studio resubmits the same id and attaches. */
  submissionId: string;
  /** The engine command as argv: interpreter, `-m`, module, Hydra overrides. */
  argv: string[];
  /** The shell line Ray runs (`/bin/sh -c`): folder creation, `cd` for DrMAS, then the quoted argv. */
  entrypoint: string;
  /** Hydra overrides as the engine receives them (argv without the interpreter and module). */
  overrides: string[];
  runtimeEnv: { env_vars: Record<string, string>; worker_process_setup_hook?: string };
  /** Ray requires string values (`metadata values must be strings`). */
  metadata: Record<string, string>;
  files: PlannedFile[];
  /** Everything a follower (live or import) needs to read this attempt's files. */
  follow: FollowSpec;
  /** Settings the engine cannot honour and ignores, said once at plan time. */
  warnings: string[];
}

/** Refusals of a plan, each naming the config field and the fix (ConfigIssue's shape). */
export class EnginePlanError extends Error {
  constructor(readonly issues: ConfigIssue[]) {
    super(`The engine would refuse this run: ${issues.length} problem${issues.length === 1 ? '' : 's'}\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`);
    this.name = 'EnginePlanError';
  }
}

/** The run's folders and identity, from the store (the integration phase fills them). */
export interface PlanContext {
  runId: number;
  /** The run's display name (becomes `trainer.experiment_name`). */
  runName: string;
  /** 1 for the first submission, one more per `marsrl resume`. */
  attempt: number;
  /** A short digest that tells this store's runs from another Studio's on the same cluster. */
  storeTag: string;
  /** Default parent of run folders when `engine.run_root` is not set (a local head). */
  defaultRunRoot: string;
  probe: EngineProbe;
}

export interface SubmitResult {
  submissionId: string;
  /** True when Ray already had a job with this id (a restarted Studio): the Studio attaches to it. */
  attached: boolean;
  job: JobDetails;
}

/** An engine adapter (DESIGN.md: plan / submit / follow / stop). */
export interface EngineAdapter {
  kind: RayEngineKind;
  /** One line for the UI. */
  description: string;
  /** The plan, or `EnginePlanError` listing every refusal. */
  plan(config: RunConfig, engine: EngineConfig, context: PlanContext): EnginePlan;
  /** Writes the planned files (dataset, code, submission record) and submits, attaching on a duplicate id. */
  submit(plan: EnginePlan, config: RunConfig, client: RayJobsClient): Promise<SubmitResult>;
  /** The follower of one submitted attempt: each `poll(cursor)` gives the new records and the next cursor. */
  follow(spec: FollowSpec, client: RayJobsClient, submissionId: string, options?: FollowOptions): JobFollower;
  stop(submissionId: string, client: RayJobsClient): Promise<boolean>;
}
