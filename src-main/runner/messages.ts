/**
 * Typed messages between a run's worker process and the process that manages it (the Electron
 * main process, `marsrl run`, `marsrl serve`).
 */
import type { TrainProgress } from '../engine/training/trainer';

export type ManagerToWorker = { type: 'stop'; reason: string };

export type WorkerToManager =
  | { type: 'started'; runId: number; pid: number }
  | { type: 'progress'; runId: number; progress: TrainProgress }
  | { type: 'finished'; runId: number; status: 'done' | 'failed' | 'interrupted'; step: number; reason: string | null };

export interface WorkerArgs {
  databasePath: string;
  runId: number;
  resume: boolean;
  runDir: string;
}

export function isWorkerMessage(value: unknown): value is WorkerToManager {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string' && typeof (value as { runId?: unknown }).runId === 'number';
}
