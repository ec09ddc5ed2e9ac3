import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src-main/engine/store';
import { createRunManager } from '../../src-main/runner/manager';
import type { WorkerToManager } from '../../src-main/runner/messages';
import { runsDatabase } from '../helpers/runs-db';
import { tinyConfig } from '../training/tiny';

let store: Store;
let databasePath: string;
const database = runsDatabase();
beforeAll(() => {
  ({ store, databasePath } = database);
});

describe('run worker processes', () => {
  it.each([
    { share: 0.4, rolloutUpdates: true },
    { share: 0, rolloutUpdates: false },
  ])('a pipeline run with gradient_share $share: the rollout process computes gradient shares while it waits', async ({ share, rolloutUpdates }) => {
    // max_staleness 0: the rollout waits for every update of a policy it decodes with next.
    const config = tinyConfig({ optimization: { steps: 4, checkpoint_every: 0, minibatch_size: 16 }, pipeline: { mode: 'pipeline', segment_tokens: 16, max_segments: 2, max_staleness: 0, gradient_share: share } });
    const manager = createRunManager({ store, databasePath });
    const { runId } = await manager.start({ config: config as unknown as Record<string, unknown>, name: `offload ${share}` });
    await manager.waitForExit(runId);
    expect(store.runs.get(runId)!.status).toBe('done');
    const updates = store.events.timeline(runId).filter((s) => s.kind === 'update');
    const workers = new Set(updates.map((s) => s.worker));
    expect(workers.size).toBe(rolloutUpdates ? 2 : 1);
    const rolloutSeconds = store.metrics.series(runId, 'pipeline/rollout_gradient_s').items.reduce((a, p) => a + p.value, 0);
    if (rolloutUpdates) expect(rolloutSeconds).toBeGreaterThan(0);
    else expect(rolloutSeconds).toBe(0);
  });

  // Kill for real, mid-run, right after step 2 reported (its checkpoint is on disk). A sync run
  // has one worker; a pipeline run has two, and killing either must leave the run resumable.
  it.each([
    { mode: 'sync', victim: 'trainer', reason: 'worker process killed by SIGKILL' },
    { mode: 'pipeline', victim: 'trainer', reason: 'trainer worker process killed by SIGKILL' },
    { mode: 'pipeline', victim: 'rollout', reason: 'rollout worker process killed by SIGKILL' },
  ] as const)('survives a SIGKILLed $victim ($mode): run marked, database intact, rows kept, resume finishes it', async ({ mode, victim, reason }) => {
    const config = tinyConfig({ optimization: { steps: 5, checkpoint_every: 1, minibatch_size: 16 }, pipeline: { mode, segment_tokens: 16, max_segments: 2, max_staleness: 1 } });
    let killedAtStep = -1;
    let rolloutPid: number | null = null;
    const manager = createRunManager({
      store,
      databasePath,
      onWorkerMessage: (message: WorkerToManager) => {
        if (message.type === 'started' && message.role === 'rollout') rolloutPid = message.pid;
        if (message.type === 'progress' && message.progress.phase === 'rl' && message.progress.step === 3 && killedAtStep < 0) {
          killedAtStep = message.progress.step;
          process.kill(victim === 'rollout' ? rolloutPid! : store.runs.get(message.runId)!.workerPid!, 'SIGKILL');
        }
      },
    });
    const { runId } = await manager.start({ config: config as unknown as Record<string, unknown>, name: `killed ${mode} ${victim}` });
    await manager.waitForExit(runId);
    expect(killedAtStep).toBe(3);

    const run = store.runs.get(runId)!;
    expect(run.status).toBe('interrupted');
    expect(run.statusReason).toBe(reason);
    const check = new Database(databasePath, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    check.close();
    const turnsBefore = store.runs.counts(runId).turns;
    expect(turnsBefore).toBeGreaterThan(0);
    // Every committed step's rows are complete: each turn has its reward.
    const orphans = store.db.prepare('SELECT COUNT(*) AS n FROM turns t LEFT JOIN rewards r ON r.turn_id = t.id WHERE t.run_id = ? AND r.turn_id IS NULL AND t.episode_id IN (SELECT id FROM episodes WHERE split = ?)').get(runId, 'train') as { n: number };
    expect(orphans.n).toBe(0);
    // Steps 0–2 reported before the kill, so their rows were committed and are all there.
    const trainedSteps = store.db.prepare("SELECT DISTINCT step FROM episodes WHERE run_id = ? AND split = 'train' ORDER BY step").all(runId) as { step: number }[];
    expect(trainedSteps.map((r) => r.step).slice(0, 3)).toEqual([0, 1, 2]);
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
    // The resumed run judged the fixed answer set of the first evaluation, not a new one.
    expect(store.events.events(runId, 0, 1000).items.filter((e) => e.kind === 'eval_fixed_set')).toHaveLength(1);
    expect(store.metrics.series(runId, 'eval/fixed/answers').items.length).toBeGreaterThanOrEqual(2);
    const final = new Database(databasePath, { readonly: true });
    expect(final.pragma('integrity_check', { simple: true })).toBe('ok');
    final.close();
  });

  it.each(['sync', 'pipeline'] as const)('stops a run on request and marks it interrupted with the reason (%s)', async (mode) => {
    const exits: string[] = [];
    const manager = createRunManager({
      store,
      databasePath,
      onWorkerMessage: (message) => {
        if (message.type === 'progress' && message.progress.phase === 'rl' && message.progress.step === 1) void manager.stop(message.runId);
        if (message.type === 'finished') exits.push(message.status);
      },
    });
    const { runId } = await manager.start({ config: tinyConfig({ optimization: { steps: 50, checkpoint_every: 1 }, pipeline: { mode, segment_tokens: 16, max_segments: 2 } }) as unknown as Record<string, unknown> });
    await manager.waitForExit(runId);
    const run = store.runs.get(runId)!;
    expect(run.status).toBe('interrupted');
    expect(run.statusReason).toBe('stopped by the user');
    expect(store.metrics.lastStep(runId)).toBeLessThan(49);
    // The trainer marked the run itself (a clean stop, not a death).
    expect(exits).toEqual(['interrupted']);
    expect(store.events.events(runId).items.some((e) => e.kind === 'worker_exit')).toBe(false);
  });

  it('marks a run left running by a dead process as interrupted', () => {
    const id = store.runs.create({ name: 'orphan', config: {}, codeVersion: 't', seed: 1 });
    store.runs.setStatus(id, 'running');
    store.runs.heartbeat(id, 2 ** 22 + 12345);
    const manager = createRunManager({ store, databasePath });
    expect(manager.recoverStaleRuns()).toContain(id);
    // It has no checkpoint: the reason must not advise a resume the manager refuses (issue 35).
    expect(store.runs.get(id)).toMatchObject({ status: 'interrupted', statusReason: expect.stringMatching(/worker process \(pid \d+\) is gone/) });
    expect(store.runs.get(id)!.statusReason).not.toMatch(/resume/);
  });

  it('rejects a bad launch request with the field path and writes nothing', async () => {
    const manager = createRunManager({ store, databasePath });
    const before = store.runs.list({ limit: 500 }).items.length;
    await expect(manager.start({ config: { rollout: { solver_group: 0 } } })).rejects.toMatchObject({ code: 'invalid_request', issues: [{ path: 'rollout.solver_group' }] });
    expect(store.runs.list({ limit: 500 }).items.length).toBe(before);
  });
});
