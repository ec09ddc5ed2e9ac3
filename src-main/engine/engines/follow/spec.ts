/**
 * What a follower needs to read one attempt's files (issue 38 live, issue 39 import of a finished
 * folder): where the engine writes, in which order, and who the agents are. A plan makes it; an
 * importer builds one from a folder it found (`.hydra/overrides.yaml`, the file names).
 */
import type { Role } from '#shared/agents';

/**
 * Which writer made the dumps, which decides when a step's file is complete (follow/dumps.ts):
 *  - `legacy`: veRL ≤ 0.8 (and 0.9 with `trainer.use_v1=false`): val-before-train, then per step
 *    `rollout/N` then `validation/N` (v0.7.1 ray_trainer.py:1539-1544);
 *  - `v1`: veRL 0.9's V1 trainer: val-before-train, then per step `validation/N` then `rollout/N`
 *    (v0.9.0 ppo/v1/trainer_base.py:466-485);
 *  - `drmas`: DrMAS writes `rollout/N` only (its `_validate` never dumps).
 */
export type DumpOrder = 'legacy' | 'v1' | 'drmas';

/** Where the authoritative metrics come from. */
export type MetricSource = 'file' | 'console' | 'tensorboard';

/** One agent of the engine, as the follower names it in the Studio. */
export interface EngineAgent {
  /** The engine's own id: `Solver Agent` (DrMAS) or `solver` (veRL's single policy). */
  engineId: string;
  /** DrMAS worker group (`{model}_{agent}` or, with model sharing, `{model}_{A}_{B}`); may contain spaces. */
  wgId: string;
  /** The Studio role it plays; null when it plays none the Studio knows. */
  role: Role | null;
}

export interface FollowSpec {
  engine: 'verl' | 'drmas';
  /** The engine's version string (`0.7.1`, `0.3.1.dev`). */
  engineVersion: string;
  dumpOrder: DumpOrder;
  /** Whether dump lines carry veRL's `uid` (`{prompt_uuid}_{session}_{index}`, v0.9 / main_ppo_sync). */
  uid: boolean;
  metricSource: MetricSource;
  /** The name of the Ray actor whose lines carry the metrics (`TaskRunner`, or `TaskRunnerV1` in veRL 0.9). */
  consoleActor: string;
  /** Cluster paths (absolute) of this attempt's files. */
  files: {
    attemptDir: string;
    metricsFile: string | null;
    rolloutDir: string;
    validationDir: string | null;
    tensorboardDir: string | null;
    checkpointsDir: string;
  };
  /** The run folder as the cluster sees it and as this machine sees it (paths above are under `runDir`). */
  runDir: string;
  localRunDir: string;
  attempt: number;
  agents: EngineAgent[];
  /** Data sources of the validation set (`val-core/{data_source}/…` keys; a source may contain `/`). */
  dataSources: string[];
  /** Validation samples per problem (`mean@N`). */
  valN: number;
  /** DrMAS: whether the Studio's hook writes agent ids into the dumps. */
  hook: boolean;
}
