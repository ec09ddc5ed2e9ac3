import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src-main/engine/store';
import { createRunManager } from '../../src-main/runner/manager';
import type { WorkerToManager } from '../../src-main/runner/messages';
import { tempDir } from '../helpers/tmp';
import { tinyConfig } from '../training/tiny';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let databasePath: string;

beforeAll(() => {
  tmp = tempDir();
  databasePath = path.join(tmp.dir, 'runs.db');
  store = openStore(databasePath);
});
afterAll(() => {
  store.close();
  tmp.cleanup();
});

describe('run worker processes', () => {
  it('survives a SIGKILLed worker: run marked, database intact, rows kept, resume finishes it', async () => {
    const config = tinyConfig({ optimization: { steps: 5, checkpoint_every: 1, minibatch_size: 16 } });
    let killedAtStep = -1;
    const manager = createRunManager({
      store,
      databasePath,
      onWorkerMessage: (message: WorkerToManager) => {
        // Kill for real, mid-run, right after step 2 reported (its checkpoint is on disk).
        if (message.type === 'progress' && message.progress.phase === 'rl' && message.progress.step === 3 && killedAtStep < 0) {
          killedAtStep = message.progress.step;
          process.kill(store.runs.get(message.runId)!.workerPid!, 'SIGKILL');
        }
      },
    });
    const { runId } = await manager.start({ config: config as unknown as Record<string, unknown>, name: 'killed' });
    await manager.waitForExit(runId);
    expect(killedAtStep).toBe(3);

    const run = store.runs.get(runId)!;
    expect(run.status).toBe('interrupted');
    expect(run.statusReason).toBe('worker process killed by SIGKILL');
    const check = new Database(databasePath, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();
    const turnsBefore = store.runs.counts(runId).turns;
    expect(turnsBefore).toBeGreaterThan(0);
    // Every committed step's rows are complete: each turn has its reward.
    const orphans = store.db.prepare('SELECT COUNT(*) AS n FROM turns t LEFT JOIN rewards r ON r.turn_id = t.id WHERE t.run_id = ? AND r.turn_id IS NULL AND t.episode_id IN (SELECT id FROM episodes WHERE split = ?)').get(runId, 'train') as { n: number };
    expect(orphans.n).toBe(0);
    expect(store.events.events(runId).items.some((e) => e.kind === 'worker_exit' && e.message.includes(`marsrl resume ${runId}`))).toBe(true);

    const resumed = createRunManager({ store, databasePath });
    await resumed.resume(runId);
    await resumed.waitForExit(runId);
    const after = store.runs.get(runId)!;
    expect(after.status).toBe('done');
    expect(store.runs.counts(runId).turns).toBeGreaterThan(turnsBefore);
    const steps = store.metrics.series(runId, 'solver/reward/mean').items.map((p) => p.step);
    expect(steps.slice(-2)).toEqual([3, 4]);
    expect(store.events.events(runId).items.some((e) => e.kind === 'resumed')).toBe(true);
  });

  it('stops a run on request and marks it interrupted with the reason', async () => {
    const manager = createRunManager({
      store,
      databasePath,
      onWorkerMessage: (message) => {
        if (message.type === 'progress' && message.progress.phase === 'rl' && message.progress.step === 1) void manager.stop(message.runId);
      },
    });
    const { runId } = await manager.start({ config: tinyConfig({ optimization: { steps: 50, checkpoint_every: 1 } }) as unknown as Record<string, unknown> });
    await manager.waitForExit(runId);
    const run = store.runs.get(runId)!;
    expect(run.status).toBe('interrupted');
    expect(run.statusReason).toBe('stopped by the user');
    expect(store.metrics.lastStep(runId)).toBeLessThan(49);
  });

  it('marks a run left running by a dead process as interrupted', () => {
    const id = store.runs.create({ name: 'orphan', config: {}, codeVersion: 't', seed: 1 });
    store.runs.setStatus(id, 'running');
    store.runs.heartbeat(id, 2 ** 22 + 12345);
    const manager = createRunManager({ store, databasePath });
    expect(manager.recoverStaleRuns()).toContain(id);
    expect(store.runs.get(id)).toMatchObject({ status: 'interrupted', statusReason: expect.stringMatching(/worker process is gone/) });
  });

  it('rejects a bad launch request with the field path and writes nothing', async () => {
    const manager = createRunManager({ store, databasePath });
    const before = store.runs.list({ limit: 500 }).items.length;
    await expect(manager.start({ config: { rollout: { solver_group: 0 } } })).rejects.toMatchObject({ code: 'invalid_request', issues: [{ path: 'rollout.solver_group' }] });
    expect(store.runs.list({ limit: 500 }).items.length).toBe(before);
  });
});
