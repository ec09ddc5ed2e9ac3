/**
 * Advice that is true and resumes that say what they do (issue 35).
 * - A run killed before its first checkpoint is offered "run again with this config"
 *   (`marsrl run --like RUN`), never a resume; a resume of it is refused with the same advice, and
 *   `marsrl run --like` starts a run with its config.
 * - A run recorded running whose every process died is resumed, not refused as "already running".
 * - With the newest checkpoint corrupted, `marsrl resume` says, as it happens, that it skipped it
 *   and why, which checkpoint it used and how many turns the redo supersedes; the run page's
 *   `lastResume` says the same.
 * - A stop of a run whose owner is gone marks it interrupted at once.
 * The commands that run or resume training are `marsrl` processes; `show` and the refusals run
 * through the CLI's `main` in this process (the same output and exit code, no Node start-up each).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createStudioService } from '../../src-main/api/service';
import { StudioError } from '#shared/errors';
import type { RunConfig } from '../../src-main/engine/config/schema';
import type { Store } from '../../src-main/engine/store';
import { runActions } from '../../src-main/engine/training/advice';
import { createRunManager } from '../../src-main/runner/manager';
import { requestRunStop } from '../../src-main/runner/stop';
import { marsrl, marsrlMain } from '../helpers/cli';
import { runsDatabase } from '../helpers/runs-db';
import { tinyConfig } from '../training/tiny';

let store: Store;
let databasePath: string;
const database = runsDatabase();
beforeAll(() => {
  ({ store, databasePath } = database);
});

/** A pid no process has (above Linux's default pid_max). */
const DEAD_PID = 2 ** 22 + 4321;

function recordedRun(config: RunConfig, name: string): number {
  return store.runs.create({ name, preset: null, config: config as unknown as Record<string, unknown>, codeVersion: 't', seed: config.seed });
}

describe('advice', () => {
  it('a run that stopped before its first checkpoint: run again, never resume', async () => {
    const id = recordedRun(tinyConfig({ optimization: { steps: 3 } }), 'killed early');
    // Killed (every process at once) during its warm start: recorded running, owner gone.
    store.runs.setStatus(id, 'running');
    store.runs.heartbeat(id, DEAD_PID);
    const service = createStudioService({ store, databasePath, transport: 'direct', runs: createRunManager({ store, databasePath }) });
    const detail = await service.getRun(id);
    expect(detail.status).toBe('interrupted');
    expect(detail.statusReason).toBe(`its worker process (pid ${DEAD_PID}) is gone`);
    expect(detail.actions).toEqual([{ kind: 'run-again', command: `marsrl run --like ${id}`, text: expect.stringMatching(/no checkpoint was saved before it stopped, so it cannot be resumed/) }]);

    const shown = await marsrlMain(['show', String(id), '--db', databasePath]);
    expect(shown.stdout).toMatch(new RegExp(`next\\s+no checkpoint was saved.*: marsrl run --like ${id}`));
    expect(shown.stdout).not.toMatch(/marsrl resume/);

    // Resume says the same thing, not "already running" and then "no checkpoint yet".
    const refused = await marsrlMain(['resume', String(id), '--db', databasePath]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`run ${id} has no checkpoint .* cannot be resumed; run it again with the same config: \`marsrl run --like ${id}\``));
    expect(refused.stderr).not.toMatch(/already running/);
    expect(store.runs.get(id)!.status).toBe('interrupted');
  });

  it('marsrl run --like starts a new run with the stored config (and --set changes it)', async () => {
    const config = tinyConfig({ optimization: { steps: 1, checkpoint_every: 1 }, rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 32 }, pretrain: { steps: 1, batch_size: 4, warmup_steps: 0 } });
    const id = recordedRun(config, 'model run');
    const again = marsrl(['run', '--like', String(id), '--set', 'seed=7', '--db', databasePath, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const out = JSON.parse(again.stdout) as { runId: number; status: string };
    expect(out.status).toBe('done');
    const made = store.runs.get(out.runId)!;
    expect(made.name).toBe(`model run (like #${id})`);
    expect(made.seed).toBe(7);
    const { seed: _a, name: _b, ...madeRest } = made.config;
    const { seed: _c, name: _d, ...modelRest } = store.runs.get(id)!.config;
    expect(madeRest).toEqual(modelRest);
    // Unknown runs and two sources are refused before anything is created.
    const before = store.runs.list({ limit: 500 }).items.length;
    expect((await marsrlMain(['run', '--like', '9999', '--db', databasePath])).stderr).toMatch(/--like 9999: no such run/);
    expect((await marsrlMain(['run', '--like', String(id), '--preset', 'quick', '--db', databasePath])).stderr).toMatch(/one of --preset NAME, --config FILE or --like RUN \(not several\)/);
    expect(store.runs.list({ limit: 500 }).items.length).toBe(before);
  });

  it('each status gets only what can be done: stop a live run, nothing for a finished one, resume with a checkpoint on disk', () => {
    const id = recordedRun(tinyConfig(), 'states');
    store.runs.setStatus(id, 'running');
    store.runs.heartbeat(id, process.pid);
    expect(runActions(store, store.runs.get(id)!).map((a) => a.command)).toEqual([`marsrl stop ${id}`]);
    store.runs.setStatus(id, 'done');
    expect(runActions(store, store.runs.get(id)!)).toEqual([]);
    store.runs.setStatus(id, 'failed', 'NaN');
    const dir = fs.mkdtempSync(path.join(path.dirname(databasePath), 'ckpt-'));
    store.events.addCheckpoint({ runId: id, step: 6, policyId: 'solver', path: path.join(dir, 'gone'), createdAt: Date.now(), metrics: null });
    store.events.addCheckpoint({ runId: id, step: 4, policyId: 'solver', path: dir, createdAt: Date.now(), metrics: null });
    // Step 6's folder was pruned: the resume loads step 4, so that is what is offered; a failed
    // run is also offered a fresh one.
    expect(runActions(store, store.runs.get(id)!)).toEqual([
      expect.objectContaining({ kind: 'resume', checkpointStep: 4, command: `marsrl resume ${id}` }),
      expect.objectContaining({ kind: 'run-again', command: `marsrl run --like ${id}` }),
    ]);
  });
});

describe('stopping a run whose owner is gone', () => {
  it('marks it interrupted at once, and refuses a run that has ended', () => {
    const id = recordedRun(tinyConfig(), 'orphan to stop');
    store.runs.setStatus(id, 'running');
    store.runs.heartbeat(id, DEAD_PID);
    const outcome = requestRunStop(store, id, 'the app');
    expect(outcome).toEqual({ kind: 'marked', reason: `stopped by the user from the app; its worker process (pid ${DEAD_PID}) is gone, so it was marked interrupted at once` });
    expect(store.runs.get(id)).toMatchObject({ status: 'interrupted', workerPid: null, stopRequest: null });
    expect(() => requestRunStop(store, id, 'the app')).toThrow(StudioError);
    expect(() => requestRunStop(store, id, 'the app')).toThrow(/is not running \(it is interrupted/);
  });

  it('a live owner gets a request it reads; it is cleared when the run ends', () => {
    const id = recordedRun(tinyConfig(), 'live to stop');
    store.runs.setStatus(id, 'running');
    store.runs.heartbeat(id, process.pid);
    expect(requestRunStop(store, id, 'marsrl stop')).toMatchObject({ kind: 'requested', ownerPid: process.pid });
    // A second request keeps the first one's time and reason.
    const first = store.runs.stopRequest(id)!;
    requestRunStop(store, id, 'the app');
    expect(store.runs.stopRequest(id)).toEqual(first);
    store.runs.setStatus(id, 'interrupted', first.reason);
    expect(store.runs.stopRequest(id)).toBeNull();
  });
});

describe('a resume past a corrupted checkpoint', () => {
  it('says which checkpoint it used, which it skipped and why, and what it superseded — in the terminal and on the run page', async () => {
    const config = tinyConfig({ optimization: { steps: 8, checkpoint_every: 1, minibatch_size: 16 } });
    const manager = createRunManager({
      store,
      databasePath,
      onWorkerMessage: (m) => {
        if (m.type === 'progress' && m.progress.phase === 'rl' && m.progress.step >= 4) void manager.stop(m.runId);
      },
    });
    const { runId } = await manager.start({ config: config as unknown as Record<string, unknown> });
    await manager.waitForExit(runId);
    expect(store.runs.get(runId)!.status).toBe('interrupted');
    const steps = [...new Set(store.events.checkpoints(runId).map((c) => c.step))].sort((a, b) => b - a);
    const [newest, previous] = steps;
    // Bytes flipped in one policy's optimizer state of the newest checkpoint.
    const victim = store.events.checkpoints(runId).find((c) => c.step === newest)!.path;
    const file = path.join(victim, 'optimizer.bin');
    const bytes = fs.readFileSync(file);
    for (let i = 0; i < 16; i++) bytes[Math.floor(bytes.length / 2) + i] ^= 0xff;
    fs.writeFileSync(file, bytes);
    const later = (store.db.prepare("SELECT COUNT(*) AS n FROM turns WHERE run_id = ? AND step > ? AND superseded_by IS NULL AND episode_id IN (SELECT id FROM episodes WHERE split = 'train')").get(runId, previous) as { n: number }).n;
    expect(later).toBeGreaterThan(0);

    const resumed = marsrl(['resume', String(runId), '--db', databasePath]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const said = resumed.stderr;
    expect(said).not.toMatch(new RegExp(`from its checkpoint of step ${newest}`));
    expect(said).toMatch(new RegExp(`the checkpoint of step ${newest} cannot be loaded \\(.*checksum.*\\); trying the one before it`));
    expect(said).toMatch(new RegExp(`resumed from the checkpoint of step ${previous} \\(1 newer checkpoint skipped, see above\\) as attempt 2: steps from ${previous + 1} on are redone; the ${later} turns stored after it are kept as superseded`));
    // Said before the run went on: the lines come before the first RL step of the resume.
    expect(said.indexOf('cannot be loaded')).toBeLessThan(said.indexOf(`resumed from the checkpoint of step ${previous}`));

    const detail = await createStudioService({ store, databasePath, transport: 'direct' }).getRun(runId);
    expect(detail.lastResume).toMatchObject({ attempt: 2, checkpointStep: previous, superseded: { turns: later } });
    expect(detail.lastResume!.skipped).toEqual([{ step: newest, dir: path.dirname(victim), error: expect.stringMatching(/checksum/) }]);
    expect(detail.status).toBe('done');
  });
});
