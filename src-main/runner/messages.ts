/**
 * Typed messages between a run's worker processes and the process that manages them (the
 * Electron main process, `marsrl run`, `marsrl serve`).
 *
 * A `sync` run has one worker, the trainer. A `pipeline` run has two: the trainer and the rollout
 * worker. The two talk through the manager, which forwards `peer` messages from one to the other
 * without reading them (pipeline-protocol.ts types their payloads).
 */
import type { RolloutToTrainer, TrainerToRollout } from '../engine/training/pipeline-protocol';
import type { TrainProgress } from '../engine/training/trainer';

export type WorkerRole = 'trainer' | 'rollout';

export type ManagerToWorker =
  /** `detach`: the managing process is closing; an engine run leaves its Ray job running (issue 38). */
  | { type: 'stop'; reason: string; detach?: boolean }
  /** A message from the run's other worker. */
  | { type: 'peer'; payload: TrainerToRollout | RolloutToTrainer };

export type WorkerToManager =
  | { type: 'started'; runId: number; pid: number; role?: WorkerRole }
  | { type: 'progress'; runId: number; progress: TrainProgress }
  /** The trainer read a stop request another process recorded (runner/stop.ts) and is stopping. */
  | { type: 'stopping'; runId: number; reason: string }
  | { type: 'finished'; runId: number; status: 'done' | 'failed' | 'interrupted'; step: number; reason: string | null }
  /** For the run's other worker; the manager forwards it as is. */
  | { type: 'peer'; runId: number; payload: TrainerToRollout | RolloutToTrainer };

export interface WorkerArgs {
  databasePath: string;
  runId: number;
  resume: boolean;
  runDir: string;
  /** Which worker of the run this process is; absent means the trainer (the only worker of a sync run). */
  role?: WorkerRole;
}

export function isWorkerMessage(value: unknown): value is WorkerToManager {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string' && typeof (value as { runId?: unknown }).runId === 'number';
}

/** The ArrayBuffers of a peer message that can be transferred rather than copied (weights, gradients). */
export function transferables(payload: TrainerToRollout | RolloutToTrainer): ArrayBuffer[] {
  if (payload.type === 'weights') return [payload.weights.buffer as ArrayBuffer];
  if (payload.type === 'init' || payload.type === 'evaluate') return payload.policies.map((p) => p.weights.buffer as ArrayBuffer);
  if (payload.type === 'gradients') return [payload.policy.weights.buffer as ArrayBuffer];
  if (payload.type === 'gradients-done') return [payload.flatGrads.buffer as ArrayBuffer];
  return [];
}
