/**
 * A run stopped at a safe point and resumed, as a person does it from the Studio: the training
 * tests of each model family check what the resumed run kept (versions, optimizer steps).
 */
import type { Store } from '../../src-main/engine/store';
import { createRunManager } from '../../src-main/runner/manager';
import type { WorkerToManager } from '../../src-main/runner/messages';

/** Starts `config` as a worker and stops it once its first RL step is reported; resolves with the run's id when the worker has exited. */
export async function runStoppedAfterFirstStep(store: Store, databasePath: string, config: unknown, name: string): Promise<number> {
  let stopped = false;
  const manager = createRunManager({
    store,
    databasePath,
    onWorkerMessage: (message: WorkerToManager) => {
      if (!stopped && message.type === 'progress' && message.progress.phase === 'rl' && message.progress.step === 1) {
        stopped = true;
        void manager.stop(message.runId);
      }
    },
  });
  const { runId } = await manager.start({ config: config as Record<string, unknown>, name });
  await manager.waitForExit(runId);
  return runId;
}

/** Resumes `runId` with a fresh run manager and waits for its worker to exit. */
export async function resumeToExit(store: Store, databasePath: string, runId: number): Promise<void> {
  const resumed = createRunManager({ store, databasePath });
  await resumed.resume(runId);
  await resumed.waitForExit(runId);
}
