import path from 'node:path';
import type { RunConfig } from '../../src-main/engine/config/schema';
import type { Store } from '../../src-main/engine/store';
import { trainRun, type TrainOutcome } from '../../src-main/engine/training/trainer';
import { perFile } from './per-file';
import { storeInTemp } from './runs-db';

export interface TrainedRun {
  readonly store: Store;
  readonly runId: number;
  readonly outcome: TrainOutcome;
  /** The temp folder: the database and the run's folder (`run/`) are in it. */
  readonly dir: string;
}

/**
 * A run of `config` trained in this process, as `marsrl run` trains it, into a database in a
 * fresh temp folder: before the tests of the file (or describe block), within `timeoutMs`;
 * closed and removed after them.
 */
export function trainedRun(name: string, config: () => RunConfig, timeoutMs?: number): TrainedRun {
  const db = storeInTemp('runs.db');
  const trained = perFile(
    'trainedRun',
    async () => {
      const resolved = config();
      const runId = db.store.runs.create({ name, config: resolved as unknown as Record<string, unknown>, codeVersion: 'test', seed: resolved.seed });
      db.store.runs.setStatus(runId, 'running');
      const outcome = await trainRun({ store: db.store, runId, config: resolved, runDir: path.join(db.dir, 'run') });
      return { runId, outcome };
    },
    () => {},
    timeoutMs,
  );
  return {
    get store() {
      return db.store;
    },
    get runId() {
      return trained().runId;
    },
    get outcome() {
      return trained().outcome;
    },
    get dir() {
      return db.dir;
    },
  };
}
