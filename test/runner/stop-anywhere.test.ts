/**
 * Stop from everywhere (issue 35): a run started by `marsrl run` in one terminal is stopped from
 * `marsrl serve`'s API, then (resumed by `marsrl resume` in another) from `marsrl stop` in a
 * third; each time its worker stops at its next safe point, the owning process exits and the run
 * reads interrupted, and a last `marsrl resume` takes it to done with every step trained exactly
 * once (no turn lost, none repeated). Real processes throughout, as a user starts them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configToYaml } from '../../src-main/engine/config/load';
import { openStore, type Store } from '../../src-main/engine/store';
import { loadTaskData, stepProblems } from '../../src-main/engine/training/task-data';
import { startServe, type ServeProcess } from '../helpers/serve-process';
import { MARSRL_BIN, marsrl, REPO_ROOT } from '../helpers/cli';
import { tempDir } from '../helpers/tmp';
import { api } from '../server/http';
import { tinyConfig } from '../training/tiny';

const STEPS = 40;
const config = tinyConfig({ optimization: { steps: STEPS, checkpoint_every: 1, minibatch_size: 16 } });

interface Owner {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

/** `marsrl ARGS` as a terminal runs it, in the background. */
function startCli(args: string[]): Owner {
  const child = spawn(process.execPath, [MARSRL_BIN, ...args], { cwd: REPO_ROOT, env: { ...process.env, MARSRL_DB: undefined }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

async function until<T>(what: string, read: () => T | null | undefined | false, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a run owned by a terminal is stopped from elsewhere', () => {
  let tmp: ReturnType<typeof tempDir>;
  let databasePath: string;
  let store: Store;
  let served: ServeProcess;
  let runId = -1;

  beforeAll(async () => {
    tmp = tempDir('marsrl-stop-');
    databasePath = path.join(tmp.dir, 'runs.db');
    store = openStore(databasePath);
    const rendererDir = path.join(tmp.dir, 'renderer');
    fs.mkdirSync(rendererDir);
    fs.writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>served</title>');
    served = await startServe(['--db', databasePath, '--port', '0', '--renderer', rendererDir]);
  });
  afterAll(async () => {
    await served?.stop();
    store?.close();
    tmp?.cleanup();
  });

  const lastStep = () => store.metrics.lastStep(runId);
  const trainedSteps = () => store.metrics.series(runId, 'solver/reward/mean').items.map((p) => p.step);

  it("from marsrl serve's API: the owner stops at a safe point and exits", async () => {
    const file = path.join(tmp.dir, 'tiny.yaml');
    fs.writeFileSync(file, configToYaml(config));
    const owner = startCli(['run', '--config', file, '--db', databasePath]);
    runId = await until('the run to exist', () => store.runs.list({ limit: 1 }).items[0]?.id);
    await until('step 1', () => (lastStep() ?? -1) >= 1 && store.runs.get(runId)!.status === 'running');
    const reply = await api(served.port, 'stopRun', [runId]);
    expect(reply.status, reply.body).toBe(200);
    // Recorded with the run at once, for every surface to show.
    expect(store.runs.get(runId)!.stopRequest?.reason).toBe('stopped by the user from marsrl serve');
    expect(await owner.exited).toBe(130);
    const run = store.runs.get(runId)!;
    expect(run).toMatchObject({ status: 'interrupted', statusReason: 'stopped by the user from marsrl serve', workerPid: null, stopRequest: null });
    // The terminal heard it from its worker as it happened, and says what can be done next.
    expect(owner.output()).toMatch(/Stop requested \(stopped by the user from marsrl serve\): stopping at the next safe point/);
    expect(owner.output()).toMatch(new RegExp(`continue: marsrl resume ${runId}`));
    expect(store.events.events(runId, 0, 1000).items.some((e) => e.kind === 'interrupted' && e.message.includes('from marsrl serve'))).toBe(true);
    expect(lastStep()).toBeLessThan(STEPS - 1);
  });

  it('from marsrl stop in another terminal, after a resume', async () => {
    const stoppedAt = lastStep()!;
    const owner = startCli(['resume', String(runId), '--db', databasePath]);
    await until('a step after the resume', () => (lastStep() ?? -1) > stoppedAt && store.runs.get(runId)!.status === 'running');
    const stop = marsrl(['stop', String(runId), '--db', databasePath]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(new RegExp(`Stop requested for run ${runId} \\(worker pid \\d+\\): it stops at its next safe point`));
    expect(stop.stdout).toMatch(new RegExp(`Run ${runId} interrupted \\(stopped by the user from marsrl stop \\(pid \\d+\\)\\) after step \\d+`));
    expect(stop.stdout).toMatch(new RegExp(`Resume from its checkpoint of step \\d+ \\(the steps after it are redone\\): marsrl resume ${runId}`));
    expect(await owner.exited).toBe(130);
    expect(store.runs.get(runId)!.status).toBe('interrupted');
    // A run that is not running any more is refused, by name.
    const again = marsrl(['stop', String(runId), '--db', databasePath]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`run ${runId} is not running \\(it is interrupted`));
  });

  it('resumes to done with every step trained exactly once', async () => {
    const resumed = marsrl(['resume', String(runId), '--db', databasePath]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    // The terminal said which checkpoint it used and what the redo superseded.
    expect(resumed.stderr + resumed.stdout).toMatch(/resumed from the checkpoint of step \d+ as attempt 3: steps from \d+ on are redone/);
    expect(store.runs.get(runId)!.status).toBe('done');
    expect(trainedSteps()).toEqual(Array.from({ length: STEPS }, (_, i) => i));
    // Each step's live episodes are the problems that step draws, once each, all of one attempt,
    // and every live turn has its reward and advantage: nothing lost, nothing repeated.
    const data = loadTaskData(config);
    const rows = store.db
      .prepare("SELECT e.step, e.attempt, p.problem_key AS problem FROM episodes e JOIN problems p ON p.id = e.problem_id WHERE e.run_id = ? AND e.split = 'train' AND e.superseded_by IS NULL ORDER BY e.id")
      .all(runId) as { step: number; attempt: number; problem: string }[];
    for (let step = 0; step < STEPS; step++) {
      const ofStep = rows.filter((r) => r.step === step);
      expect(ofStep.map((r) => r.problem), `step ${step}`).toEqual(stepProblems(config, data, step).problems.map((p) => p.key));
      expect(new Set(ofStep.map((r) => r.attempt)).size, `step ${step}`).toBe(1);
    }
    const orphans = store.db
      .prepare('SELECT COUNT(*) AS n FROM turns t LEFT JOIN rewards r ON r.turn_id = t.id LEFT JOIN advantages a ON a.turn_id = t.id WHERE t.run_id = ? AND t.superseded_by IS NULL AND t.episode_id IN (SELECT id FROM episodes WHERE split = ?) AND (r.turn_id IS NULL OR a.turn_id IS NULL)')
      .get(runId, 'train') as { n: number };
    expect(orphans.n).toBe(0);
    expect(store.runs.attempts(runId).map((a) => a.attempt)).toEqual([1, 2, 3]);
  });
});
