/**
 * Engine runs as a user launches them (issue 38): `marsrl run --preset verl-grpo|drmas-marsrl` with
 * only engine.address, engine.python and engine.model set, against the fake Ray Jobs server
 * (test/helpers/fake-ray.ts, written from Ray's job REST module) running the stand-in engine
 * (test/helpers/standin, the files veRL and DrMAS write). The run's worker plans, submits and
 * follows the job into the store; these tests read the store, `marsrl show`, `marsrl export` and
 * the StudioApi as every surface does. Faults: the CLI killed mid-job and the run resumed
 * (re-attached, no turn lost or doubled), a stop, a FAILED job's traceback, the cluster unreachable
 * at launch. The runs, and every command that meets the fake Ray or a running job, are `marsrl`
 * processes; the reading commands after a run (logs, inspect, export, doctor) run through the CLI's
 * `main` in this process, without a Node start-up each.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStudioService } from '../../src-main/api/service';
import { openStore, type Store } from '../../src-main/engine/store';
import { marsrl, marsrlAsync, marsrlMain, type CliResult } from '../helpers/cli';
import { STANDIN_PYTHON, fakeDrmasCheckout } from '../helpers/engines';
import { closedPortUrl } from '../helpers/env';
import { FakeRay } from '../helpers/fake-ray';
import { seedStudio } from '../helpers/seed';
import { startServe } from '../helpers/serve-process';
import { writeTinyQwen3Model } from '../training/hf-tiny';
import { tempFolder } from '../helpers/tmp';
import { until } from '../helpers/until';

const tmp = tempFolder('marsrl-engine-cli-');
const fakes: FakeRay[] = [];
afterAll(async () => {
  for (const f of fakes) await f.close();
});

async function fakeRay(env: Record<string, string> = {}): Promise<FakeRay> {
  const fake = await new FakeRay({ pendingMs: 20, stopWaitMs: 1000, env: { STANDIN_STEP_MS: '30', STANDIN_LINE_MS: '0', ...env } }).start();
  fakes.push(fake);
  return fake;
}

const SMALL = ['task.train_size=64', 'task.test_size=20', 'rollout.problems_per_step=4', 'optimization.checkpoint_every=2', 'eval.every=2', 'eval.problems=4'];
const sets = (values: string[]) => values.flatMap((v) => ['--set', v]);

function runArgs(preset: 'verl-grpo' | 'drmas-marsrl', db: string, address: string, extra: string[] = []): string[] {
  const minibatch = preset === 'verl-grpo' ? ['optimization.minibatch_size=32'] : [];
  return ['run', '--preset', preset, '--db', db, ...sets([`engine.address=${address}`, `engine.python=${STANDIN_PYTHON}`, 'engine.model=/models/Qwen3-4B', ...SMALL, ...minibatch, ...extra])];
}

/**
 * The environment of every `marsrl` this file starts: its own MARSRL_HOME, and the engine run's
 * polls every 200 ms instead of 2 s (engine-run.ts's test knob), since the stand-in's jobs last a
 * second or two.
 */
const home = (name: string) => ({ MARSRL_HOME: path.join(tmp.dir, name), MARSRL_ENGINE_POLL_MS: '200' });

/** A run launched from the CLI against a fresh fake Ray (`env` for its stand-in), with its own database and MARSRL_HOME named `name`. */
async function launch(preset: 'verl-grpo' | 'drmas-marsrl', name: string, env: Record<string, string>, extra: string[]): Promise<{ db: string; fake: FakeRay; launched: ReturnType<typeof marsrlAsync> }> {
  const db = path.join(tmp.dir, `${name}.db`);
  const fake = await fakeRay(env);
  return { db, fake, launched: marsrlAsync(runArgs(preset, db, fake.address, extra), home(name)) };
}

/** Opens the run's database for `read` and closes it after, whatever `read` does. */
async function withStore<T>(db: string, read: (store: Store) => T | Promise<T>): Promise<T> {
  const store = openStore(db);
  try {
    return await read(store);
  } finally {
    store.close();
  }
}

function turnCount(store: Store, runId: number, where = '1'): number {
  return (store.db.prepare(`SELECT COUNT(*) AS n FROM turns WHERE run_id = ? AND superseded_by IS NULL AND ${where}`).get(runId) as { n: number }).n;
}

describe('a veRL run launched from the CLI', () => {
  let db: string;
  let store: Store;
  let run: CliResult;
  let studioRunId: number;
  let model: string;
  const steps = 3;

  beforeAll(async () => {
    db = path.join(tmp.dir, 'verl.db');
    store = openStore(db);
    studioRunId = seedStudio(store).done.id;
    const fake = await fakeRay();
    // A real (tiny) Qwen3 folder as the starting model: the checkpoints' Hugging Face weights are its layout.
    model = writeTinyQwen3Model(path.join(tmp.dir, 'tiny-qwen3'));
    run = await marsrlAsync(runArgs('verl-grpo', db, fake.address, [`optimization.steps=${steps}`, `engine.model=${model}`]), home('verl')).done;
  }, 120_000);
  afterAll(() => store.close());

  it('is followed to done, and `marsrl run` says so', () => {
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Run \d+ done\./);
  });

  it('keeps every dumped generation as a turn of its step, with its reward', () => {
    const runId = store.runs.list({ limit: 1 }).items[0].id;
    expect(store.runs.get(runId)?.status).toBe('done');
    // 4 problems × 8 samples (the GRPO group) per training step; validation of 4 problems before
    // training, at every eval.every and at the end (veRL's val_before_train and test_freq).
    expect(turnCount(store, runId, "step >= 1 AND episode_id IN (SELECT id FROM episodes WHERE split = 'train')")).toBe(steps * 4 * 8);
    expect(turnCount(store, runId, "episode_id IN (SELECT id FROM episodes WHERE split = 'test')")).toBe(3 * 4);
    expect((store.db.prepare('SELECT DISTINCT agent FROM turns WHERE run_id = ?').all(runId) as { agent: string }[]).map((r) => r.agent)).toEqual(['solver']);
    const rewards = store.db.prepare('SELECT COUNT(*) AS n FROM rewards WHERE run_id = ?').get(runId) as { n: number };
    expect(rewards.n).toBe(turnCount(store, runId));
    // The same prompt sampled at two steps is one problem.
    const problems = store.db.prepare('SELECT COUNT(*) AS n FROM problems WHERE run_id = ?').get(runId) as { n: number };
    expect(problems.n).toBeLessThan(turnCount(store, runId));
  });

  it('draws its metrics under the catalog keys, per step, and its checkpoints open as Hugging Face folders', () => {
    const runId = store.runs.list({ limit: 1 }).items[0].id;
    const service = createStudioService({ store, databasePath: db, transport: 'direct' });
    return Promise.all([service.listMetricKeys(runId), service.getSeries({ runId, keys: ['solver/grad_norm'] })]).then(([keys, [series]]) => {
      expect(keys).toEqual(expect.arrayContaining(['eval/solver/accuracy', 'solver/grad_norm', 'solver/reward/mean']));
      expect(keys.some((k) => k.startsWith('verl/'))).toBe(true);
      expect(series.points.map(([x]) => x)).toEqual([1, 2, 3]);
      const checkpoints = store.events.checkpoints(runId);
      expect(checkpoints.map((c) => c.step)).toEqual([2, 3]);
      for (const c of checkpoints) expect(fs.existsSync(path.join(c.path, 'config.json'))).toBe(true);
    });
  });

  it('shows its Ray job, command and log through the API', async () => {
    const runId = store.runs.list({ limit: 1 }).items[0].id;
    const service = createStudioService({ store, databasePath: db, transport: 'direct' });
    const [job] = await service.getEngineJobs(runId);
    expect(job).toMatchObject({ attempt: 1, engine: 'verl', status: 'SUCCEEDED', traceback: null });
    expect(job.entrypoint).toContain('-m verl.trainer.main_ppo');
    expect(job.entrypoint).toContain(`trainer.total_training_steps=${steps}`);
    expect(job.logTail).toMatch(/step:3 - /);
  });

  it('prints its job log with `marsrl logs`, and refuses an attempt it does not have', async () => {
    const runId = store.runs.list({ limit: 1 }).items[0].id;
    const logs = await marsrlMain(['logs', String(runId), '--lines', '3', '--db', db], home('verl'));
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout.trim().split('\n')).toHaveLength(3);
    expect(logs.stdout).toMatch(/Final validation metrics/);
    const none = await marsrlMain(['logs', String(runId), '--attempt', '2', '--db', db], home('verl'));
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/has attempts 1; there is no attempt 2/);
    const studio = await marsrlMain(['logs', String(studioRunId), '--db', db], home('verl'));
    expect(studio.stderr).toMatch(/has no Ray job .*Studio's own trainer/);
  });

  it('leaves checkpoints the model tools open: inspect, generate, export from the run', async () => {
    const runId = store.runs.list({ limit: 1 }).items[0].id;
    const latest = store.events.checkpoints(runId).pop()!;
    const inspect = await marsrlMain(['model', 'inspect', latest.path]);
    expect(inspect.code, inspect.stdout + inspect.stderr).toBe(0);
    expect(inspect.stdout).toMatch(/Qwen3ForCausalLM/);
    const generated = marsrl(['model', 'generate', latest.path, '--prompt', 'hello', '--max-tokens', '3', '--greedy', '--json']);
    expect(generated.code, generated.stderr).toBe(0);
    // The run page's "Export model" (the API's exportModel) takes the run's newest checkpoint.
    const service = createStudioService({ store, databasePath: db, transport: 'direct' });
    const hf = path.join(tmp.dir, 'engine-export-hf');
    const exported = await service.exportModel({ runId, format: 'hf', out: hf });
    expect(exported).toMatchObject({ format: 'hf', checkpoint: latest.path, step: latest.step, lora: false });
    expect(JSON.parse(fs.readFileSync(path.join(hf, 'config.json'), 'utf8')).architectures).toEqual(['Qwen3ForCausalLM']);
    await expect(service.exportModel({ runId, format: 'peft', out: path.join(tmp.dir, 'never') })).rejects.toThrow(/full fine-tuned weights, not LoRA adapters; use --format hf/);
  });

  it('is compared beside a Studio run and exported as trajectories', async () => {
    const runId = store.runs.list({ limit: 1 }).items[0].id;
    const service = createStudioService({ store, databasePath: db, transport: 'direct' });
    const compared = await service.compareRuns({ runIds: [studioRunId, runId] });
    expect(compared.runs.map((r) => r.runId)).toEqual([studioRunId, runId]);
    const out = path.join(tmp.dir, 'verl-trajectories.jsonl');
    const exported = await marsrlMain(['export', String(runId), '--format', 'trajectories', '--jsonl', '--out', out, '--db', db]);
    expect(exported.code, exported.stderr).toBe(0);
    const lines = fs.readFileSync(out, 'utf8').trim().split('\n');
    expect(lines.length).toBe(turnCount(store, runId));
    expect(JSON.parse(lines[0])).toMatchObject({ agent: 'solver', reward_scheme: 'verl:score' });
  });
});

describe('a DrMAS run launched from the CLI', () => {
  it('keeps Solver, Verifier and Corrector turns in their episodes with the Studio hook', async () => {
    const checkout = fakeDrmasCheckout(tmp.dir);
    const { db, launched } = await launch('drmas-marsrl', 'drmas', { STANDIN_PROBE: JSON.stringify({ verl: '0.3.1.dev', drmas: true, drmas_root: checkout }) }, ['optimization.steps=3', `engine.working_dir=${checkout}`]);
    const run = await launched.done;
    expect(run.code, run.stdout + run.stderr).toBe(0);
    await withStore(db, (store) => {
      const agents = (store.db.prepare('SELECT DISTINCT agent FROM turns ORDER BY agent').all() as { agent: string }[]).map((r) => r.agent);
      expect(agents).toEqual(expect.arrayContaining(['solver', 'verifier1', 'corrector1']));
      expect(agents).not.toContain('unknown');
      // One Solver turn per episode; the padding copies DrMAS adds are not turns.
      const perEpisode = store.db.prepare("SELECT episode_id, SUM(agent = 'solver') AS solvers, COUNT(*) AS n FROM turns GROUP BY episode_id").all() as { solvers: number; n: number }[];
      expect(perEpisode.every((e) => e.solvers === 1)).toBe(true);
      expect(perEpisode.some((e) => e.n > 1)).toBe(true);
      const keys = (store.db.prepare('SELECT key FROM metric_keys').all() as { key: string }[]).map((r) => r.key);
      expect(keys).toEqual(expect.arrayContaining(['solver/grad_norm', 'corrector/grad_norm']));
    });
  }, 120_000);

  it('marks every turn "agent unknown", with a warning, when the hook is off', async () => {
    const checkout = fakeDrmasCheckout(path.join(tmp.dir, 'nohook'));
    const { db, launched } = await launch('drmas-marsrl', 'nohook', { STANDIN_PROBE: JSON.stringify({ verl: '0.3.1.dev', drmas: true, drmas_root: checkout }) }, ['optimization.steps=2', `engine.working_dir=${checkout}`, 'engine.drmas.hook=false', 'engine.drmas.orchestra=math', 'rollout.rounds=1']);
    const run = await launched.done;
    expect(run.code, run.stdout + run.stderr).toBe(0);
    await withStore(db, (store) => {
      expect((store.db.prepare('SELECT DISTINCT agent FROM turns').all() as { agent: string }[]).map((r) => r.agent)).toEqual(['unknown']);
      expect(store.db.prepare("SELECT COUNT(*) AS n FROM events WHERE kind = 'engine_agent_unknown'").get()).toEqual({ n: 1 });
    });
  }, 120_000);
});

describe('faults', () => {
  it('re-attaches when the Studio opens again after it was killed mid-job: no turn lost or doubled', async () => {
    const steps = 8;
    const { db, launched } = await launch('verl-grpo', 'killed', { STANDIN_STEP_MS: '400' }, [`optimization.steps=${steps}`, 'optimization.checkpoint_every=4', 'eval.every=4']);
    await withStore(db, async (store) => {
      await until(() => turnCount(store, 1, "step >= 2 AND episode_id IN (SELECT id FROM episodes WHERE split = 'train')") > 0, 60_000);
      launched.child.kill('SIGKILL');
      await launched.done;
      await until(() => store.runs.get(1)?.status === 'interrupted', 20_000);
      expect(store.runs.get(1)?.statusReason).toMatch(/managing process exited/);
      // `marsrl serve` opening the store follows the job again, as the app does on start.
      // --no-build: the API is what re-attaches; without a built out/renderer, serve would build the interface first.
      const served = await startServe(['--db', db, '--port', '0', '--no-build'], home('killed'));
      try {
        await until(() => store.runs.get(1)?.status === 'done', 90_000);
      } finally {
        await served.stop();
      }
      expect(store.events.events(1, 0, 10_000).items.map((e) => e.kind)).toEqual(expect.arrayContaining(['engine_reattach', 'engine_attached']));
      expect(store.engineJobs.list(1).map((j) => j.attempt)).toEqual([1]);
      expect(turnCount(store, 1, "step >= 1 AND episode_id IN (SELECT id FROM episodes WHERE split = 'train')")).toBe(steps * 4 * 8);
      const distinct = store.db.prepare('SELECT COUNT(DISTINCT step || char(0) || sample_index || char(0) || prompt || char(0) || text) AS n FROM turns').get() as { n: number };
      expect(distinct.n).toBe(turnCount(store, 1));
    });
  }, 180_000);

  it('stops the Ray job on `marsrl stop`, then resumes it in a new attempt from the engine\'s checkpoint', async () => {
    // The first attempt waits before step 3 (after its checkpoint of step 2) until stopped, so the stop lands mid-job however loaded the machine.
    const { db, launched } = await launch('verl-grpo', 'stopped', { STANDIN_STEP_MS: '100', STANDIN_HOLD_AT_STEP: '3' }, ['optimization.steps=12', 'optimization.checkpoint_every=2']);
    await withStore(db, async (store) => {
      await until(() => store.events.checkpoints(1).length > 0, 60_000);
      const stopped = await marsrlAsync(['stop', '1', '--db', db, '--timeout', '60'], home('stopped')).done;
      expect(stopped.code, stopped.stdout + stopped.stderr).toBe(0);
      const first = await launched.done;
      expect(first.stdout + first.stderr).toMatch(/interrupted/);
      expect(store.engineJobs.latest(1)?.status).toBe('STOPPED');
      const resumed = await marsrlAsync(['resume', '1', '--db', db], home('stopped')).done;
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
      expect(store.engineJobs.list(1).map((j) => [j.attempt, j.status])).toEqual([
        [1, 'STOPPED'],
        [2, 'SUCCEEDED'],
      ]);
      // The second attempt wrote its own folder; the first's is left as it was.
      const runDir = store.engineJobs.latest(1)!.localRunDir;
      expect(fs.existsSync(path.join(runDir, 'attempt-1', 'submission.json'))).toBe(true);
      expect(fs.existsSync(path.join(runDir, 'attempt-2', 'submission.json'))).toBe(true);
      // Each live training step once.
      const perStep = store.db.prepare("SELECT step, COUNT(*) AS n FROM turns WHERE superseded_by IS NULL AND episode_id IN (SELECT id FROM episodes WHERE split = 'train') GROUP BY step").all() as { step: number; n: number }[];
      expect(perStep.map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
      expect(perStep.every((r) => r.n === 32)).toBe(true);
    });
  }, 180_000);

  it('stops with `marsrl stop` a job no Studio follows, on Ray itself; its log is read from Ray meanwhile', async () => {
    // The job waits before step 2 until it is stopped (the stand-in's hold knob), so it is still running when
    // `marsrl stop` reaches Ray however loaded the machine (30 steps of 0.7 s could end first).
    const { db, fake, launched } = await launch('verl-grpo', 'detached', { STANDIN_HOLD_AT_STEP: '2' }, ['optimization.steps=30']);
    await withStore(db, async (store) => {
      await until(() => turnCount(store, 1) > 0, 60_000);
      launched.child.kill('SIGKILL');
      await launched.done;
      await until(() => store.runs.get(1)?.status === 'interrupted', 20_000);
      const logs = await marsrlAsync(['logs', '1', '--db', db], home('detached')).done;
      expect(logs.stderr).toMatch(/no Studio process follows job .*: its log as Ray has it/);
      expect(logs.stdout).toMatch(/step:1 - /);
      const stopped = await marsrlAsync(['stop', '1', '--db', db], home('detached')).done;
      expect(stopped.code, stopped.stdout + stopped.stderr).toBe(0);
      expect(stopped.stdout).toMatch(/asked Ray to stop job marsrl-1-/);
      await until(() => fake.jobs.get(store.engineJobs.latest(1)!.submissionId)?.status === 'STOPPED', 20_000);
      // The next follower reads the job to its end: the run stays interrupted, nothing resubmitted.
      const resumed = await marsrlAsync(['resume', '1', '--db', db], home('detached')).done;
      expect(resumed.stdout + resumed.stderr).toMatch(/interrupted/);
      expect(store.engineJobs.list(1).map((j) => j.status)).toEqual(['STOPPED']);
    });
  }, 180_000);

  it('marks a FAILED job failed, with the traceback at the end of `marsrl run`', async () => {
    const { db, launched } = await launch('verl-grpo', 'failed', { STANDIN_FAIL_AT_STEP: '2' }, ['optimization.steps=4']);
    const run = await launched.done;
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toMatch(/RuntimeError/);
    expect(run.stdout + run.stderr).toMatch(/Traceback \(most recent call last\)/);
    await withStore(db, (store) => {
      expect(store.runs.get(1)).toMatchObject({ status: 'failed' });
      expect(store.runs.get(1)?.statusReason).toMatch(/^the verl job \S+ failed: RuntimeError: CUDA out of memory/);
    });
  }, 120_000);

  it('fails at launch when the cluster cannot be reached, naming engine.address', async () => {
    const db = path.join(tmp.dir, 'unreachable.db');
    const run = await marsrlAsync(runArgs('verl-grpo', db, (await closedPortUrl()).replace(/\/v1$/, ''), ['optimization.steps=2']), home('unreachable')).done;
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/engine\.address: cannot reach the Ray dashboard/);
  }, 60_000);
});

describe('marsrl doctor --python', () => {
  it('says which engines an interpreter can run, with versions, and names a missing interpreter', async () => {
    const ok = await marsrlMain(['doctor', '--python', STANDIN_PYTHON]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/ray +2\.58\.0/);
    expect(ok.stdout).toMatch(/verl +0\.7\.1/);
    expect(ok.stdout).toMatch(/engine\.kind it can run: verl/);
    const missing = await marsrlMain(['doctor', '--python', path.join(tmp.dir, 'no-such-python')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/engine\.python: .*no such interpreter/);
  });
});
