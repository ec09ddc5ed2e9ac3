/**
 * Outside engines (issue 38): veRL and DrMAS on Ray. The integration phase (the run config's
 * `engine` block, the runner, the store, the API, the CLI) uses these; issue 39's importer uses
 * the follow/ readers on finished folders (`followAttempt` with `finished: true`).
 */
export { EngineSchema, type EngineConfig, type EngineConfigInput } from '../config/engine';
export { parseEngineRun } from './run-config';
export { engineKinds, getEngine, registerEngine } from './registry';
export { ENGINE_KINDS, EnginePlanError, type AttemptLayout, type EngineAdapter, type EngineKind, type EnginePlan, type EngineProbe, type PlanContext, type PlannedFile, type RayEngineKind, type SubmitResult } from './types';
export { attemptLayout, existingAttempts, localPath, runFolderName, storeTagOf, submissionIdOf } from './attempt';
export { RayError, RayJobsClient, type RayClientOptions, type RayErrorCode } from './ray/client';
export { ensureLocalHead, readHeadRecord, stopLocalHead, type LocalHead } from './ray/local-head';
export { probeLocal, probeOnCluster, parseProbe } from './ray/probe';
export { isTerminal, type JobDetails, type JobStatus } from './ray/types';
export { followAttempt, initialFollowState, type FollowInput, type FollowOptions, type FollowState, type JobView } from './follow/follower';
export { JobFollower, type PollResult } from './follow/live';
export type { FollowRecord, MetricRecord, TurnRecord, CheckpointRecord, StatusRecord, TracebackRecord, WarningRecord, SourcePos } from './follow/records';
export type { FollowSpec, EngineAgent, DumpOrder, MetricSource } from './follow/spec';
export type { TensorBoardReader, TensorBoardScalar } from './follow/tensorboard-slot';
