/**
 * Engine runs end to end (issue 38): a plan submitted to the fake Ray Jobs server, which runs the
 * stand-in engine as the job's real entrypoint; the job followed to its end through the REST API
 * and the files it writes. Faults: a FAILED job, a stop, the Studio restarted mid-job, the cluster
 * unreachable at launch and mid-run, a resumed attempt.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deepMerge } from '../../src-main/engine/config/load';
import { localPath } from '../../src-main/engine/engines/attempt';
import { datasetRows } from '../../src-main/engine/engines/dataset';
import { followAttempt, initialFollowState, type FollowState } from '../../src-main/engine/engines/follow/follower';
import { JobFollower } from '../../src-main/engine/engines/follow/live';
import type { FollowRecord, MetricRecord, TurnRecord } from '../../src-main/engine/engines/follow/records';
import { RayJobsClient } from '../../src-main/engine/engines/ray/client';
import { getEngine } from '../../src-main/engine/engines/registry';
import { parseEngineRun } from '../../src-main/engine/engines/run-config';
import type { EnginePlan } from '../../src-main/engine/engines/types';
import { FakeRay } from '../helpers/fake-ray';
import { STANDIN_PYTHON, contextOf, fakeDrmasCheckout, presetDoc, probeOf, smallRun } from '../helpers/engines';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-engine-runs-');
const fakes: FakeRay[] = [];
afterAll(async () => {
  for (const f of fakes) await f.close();
  tmp.cleanup();
});

interface Launch {
  fake: FakeRay;
  client: RayJobsClient;
  plan: EnginePlan;
  config: ReturnType<typeof parseEngineRun>['config'];
  root: string;
}

let runIds = 100;

async function launch(preset: 'verl-grpo' | 'drmas-marsrl', options: { env?: Record<string, string>; over?: Record<string, unknown>; version?: string; fake?: FakeRay; root?: string; attempt?: number; runId?: number } = {}): Promise<Launch> {
  const fake = options.fake ?? (await new FakeRay({ pendingMs: 20, stopWaitMs: 1000, env: { STANDIN_STEP_MS: '10', STANDIN_LINE_MS: '0', ...options.env } }).start());
  if (!options.fake) fakes.push(fake);
  const root = options.root ?? fs.mkdtempSync(path.join(tmp.dir, 'run-'));
  const engine = { address: fake.address, python: STANDIN_PYTHON, model: '/models/Qwen3-4B', ...(preset === 'drmas-marsrl' ? { working_dir: fakeDrmasCheckout(root) } : {}) };
  const doc = presetDoc(preset, smallRun(deepMerge({ engine, ...(preset === 'verl-grpo' ? { optimization: { minibatch_size: 32 } } : {}) }, options.over ?? {})));
  const { config, engine: e } = parseEngineRun(doc);
  const probe = preset === 'drmas-marsrl' ? probeOf({ verl: '0.3.1.dev', drmas: true, drmasRoot: engine.working_dir, tensorboard: '2.20.0' }) : probeOf({ verl: options.version ?? '0.7.1' });
  const plan = getEngine(e.kind).plan(config, e, contextOf(root, { runId: options.runId ?? runIds++, attempt: options.attempt ?? 1, probe }));
  return { fake, client: new RayJobsClient({ address: fake.address }), plan, config, root };
}

async function submit(l: Launch): Promise<void> {
  const result = await getEngine(l.plan.kind).submit(l.plan, l.config, l.client);
  expect(result.attached).toBe(false);
}

/** Polls until the job ended and everything it wrote was read (or `until` says stop). */
async function follow(l: Launch, state: FollowState = initialFollowState(), until?: (records: FollowRecord[]) => boolean, onPoll?: () => void): Promise<{ records: FollowRecord[]; state: FollowState; polls: number }> {
  const follower = new JobFollower(l.plan.follow, l.client, l.plan.submissionId, { now: () => 0 });
  const records: FollowRecord[] = [];
  for (let polls = 1; polls < 2000; polls++) {
    onPoll?.();
    const r = await follower.poll(state);
    state = r.state;
    records.push(...r.records);
    if (r.done || until?.(records)) return { records, state, polls };
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('the job did not end');
}

const turnsOf = (records: FollowRecord[]) => records.filter((r): r is TurnRecord => r.kind === 'turn');
const metricsOf = (records: FollowRecord[]) => records.filter((r): r is MetricRecord => r.kind === 'metric');
const kinds = (records: FollowRecord[], kind: string) => records.filter((r) => r.kind === kind);

describe('veRL runs', () => {
  it('follows a veRL 0.7.1 run to the end: metrics mapped, every generation a turn, checkpoints with weights', async () => {
    const l = await launch('verl-grpo');
    await submit(l);
    const { records } = await follow(l);
    // Statuses only move forward (a poll may miss PENDING on a busy machine), and end SUCCEEDED.
    const statuses = kinds(records, 'status').map((s) => (s as { status: string }).status);
    expect(statuses[statuses.length - 1]).toBe('SUCCEEDED');
    expect(statuses.map((s) => ['PENDING', 'RUNNING', 'SUCCEEDED'].indexOf(s))).toEqual([...statuses.map((s) => ['PENDING', 'RUNNING', 'SUCCEEDED'].indexOf(s))].sort());
    const turns = turnsOf(records);
    // val-before-train (4 problems × 1), 3 steps × 4 problems × 8 samples, validation at steps 2 and 3.
    expect(turns.filter((t) => t.split === 'test').map((t) => t.step)).toEqual([0, 0, 0, 0, 2, 2, 2, 2, 3, 3, 3, 3]);
    expect(turns.filter((t) => t.split === 'train').length).toBe(96);
    expect(new Set(turns.map((t) => `${t.source.file}:${t.source.line}`)).size).toBe(turns.length);
    expect(turns.every((t) => t.agent === 'solver' && t.groundTruth !== null && typeof t.correct === 'boolean' && t.reward !== null)).toBe(true);
    // The stand-in read the Studio's dataset: the first validation prompt is the first test problem's chat prompt.
    const firstTest = datasetRows(l.config, { format: 'verl', split: 'test', rows: 1, runId: 0 })[0];
    expect(turns[0].prompt).toContain((firstTest.extra_info as { question: string }).question);
    expect(turns[0].groundTruth).toBe((firstTest.reward_model as { ground_truth: string }).ground_truth);
    const metrics = metricsOf(records);
    const steps = (key: string) => metrics.filter((m) => m.key === key).map((m) => m.step);
    expect(steps('solver/grad_norm')).toEqual([1, 2, 3]);
    expect(steps('eval/system/accuracy')).toEqual([0, 2, 3]);
    expect(steps('verl/actor/pg_loss')).toEqual([1, 2, 3]);
    expect(metrics.find((m) => m.key === 'solver/grad_norm')).toMatchObject({ engineKey: 'actor/grad_norm', via: 'mapped', source: { file: 'metrics.jsonl', line: 2 } });
    const checkpoints = kinds(records, 'checkpoint') as { step: number; policies: { hfDir: string | null; roles: string[] }[] }[];
    expect(checkpoints.map((c) => c.step)).toEqual([2, 3]);
    expect(checkpoints.every((c) => c.policies.length === 1 && c.policies[0].hfDir?.endsWith(path.join('actor', 'huggingface')) && c.policies[0].roles[0] === 'solver')).toBe(true);
    // The Studio's copy of the job log is the whole log, in order, once.
    expect(kinds(records, 'log').map((r) => (r as { text: string }).text).join('')).toBe(l.fake.logOf(l.plan.submissionId));
    const submission = JSON.parse(fs.readFileSync(localPath(l.plan.layout, l.plan.layout.submissionFile), 'utf8'));
    expect([submission.submission_id, submission.entrypoint]).toEqual([l.plan.submissionId, l.plan.entrypoint]);
  });

  it('follows veRL 0.9 (uid, dumps written line by line in the background) without taking a file before it is whole', async () => {
    const l = await launch('verl-grpo', { version: '0.9.0', env: { STANDIN_VERL_VERSION: '0.9.0', STANDIN_LINE_MS: '4', STANDIN_TQDM: '1' } });
    await submit(l);
    const rolloutDir = localPath(l.plan.layout, l.plan.layout.rolloutDir);
    let seenUnfinished = 0;
    let taken = new Set<string>();
    const { records } = await follow(l, initialFollowState(), undefined, () => {
      for (const name of fs.existsSync(rolloutDir) ? fs.readdirSync(rolloutDir) : []) if (!taken.has(`train/${name.replace('.jsonl', '')}`)) seenUnfinished++;
    });
    taken = new Set();
    expect(seenUnfinished).toBeGreaterThan(0);
    const turns = turnsOf(records);
    for (const step of [1, 2, 3]) {
      const train = turns.filter((t) => t.split === 'train' && t.step === step);
      expect(train.length).toBe(32);
      // uid `{prompt uuid}_{session}_{index}`: 4 groups of the 8 samples 0..7.
      expect(new Set(train.map((t) => t.group)).size).toBe(4);
      expect(train.map((t) => t.sampleIndex).sort()).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7]);
    }
    expect(kinds(records, 'warning')).toEqual([]);
    // numpy 2's reprs on the console do not matter: veRL's metrics come from the file logger.
    expect(metricsOf(records).filter((m) => m.key === 'solver/grad_norm').map((m) => m.step)).toEqual([1, 2, 3]);
  });

  it('shows why a job FAILED: status, the traceback from the log, what was dumped before', async () => {
    const l = await launch('verl-grpo', { env: { STANDIN_FAIL_AT_STEP: '2' } });
    await submit(l);
    const { records } = await follow(l);
    const status = kinds(records, 'status').pop() as { status: string; message: string; errorType: string; exitCode: number };
    expect([status.status, status.errorType, status.exitCode]).toEqual(['FAILED', 'JOB_ENTRYPOINT_COMMAND_ERROR', 1]);
    expect(status.message).toMatch(/^Job entrypoint command failed with exit code 1, last available logs \(truncated to 20,000 chars\):\n/);
    const tracebacks = kinds(records, 'traceback') as { error: string; actor: string | null }[];
    expect(tracebacks.map((t) => [t.actor, t.error])).toEqual([
      ['TaskRunner', 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)'],
      [null, 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity) [step 2]'],
    ]);
    const partial = kinds(records, 'warning').find((w) => (w as { code: string }).code === 'partial_dump');
    expect(partial).toMatchObject({ source: { file: 'rollout/2.jsonl' } });
    expect(turnsOf(records).filter((t) => t.split === 'train' && t.step === 2)).toHaveLength(16);
  });

  it('stops a job from the Studio: STOPPED, followed to the end, no half line taken', async () => {
    const l = await launch('verl-grpo', { env: { STANDIN_STEP_MS: '400' }, over: { optimization: { steps: 20 } } });
    await submit(l);
    const first = await follow(l, initialFollowState(), (r) => turnsOf(r).some((t) => t.split === 'train'));
    expect(await getEngine('verl').stop(l.plan.submissionId, l.client)).toBe(true);
    const rest = await follow(l, first.state);
    const records = [...first.records, ...rest.records];
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'STOPPED', message: 'Job was intentionally stopped.' });
    const train = turnsOf(records).filter((t) => t.split === 'train');
    expect(train.length % 32).toBe(0);
    expect(train.length).toBeLessThan(20 * 32);
    expect(await getEngine('verl').stop(l.plan.submissionId, l.client)).toBe(false);
  });
});

describe('the Studio and the cluster failing', () => {
  it('re-attaches after a restart mid-job: no turn duplicated or lost', async () => {
    const l = await launch('verl-grpo', { env: { STANDIN_STEP_MS: '150' }, over: { optimization: { steps: 5 } } });
    await submit(l);
    const before = await follow(l, initialFollowState(), (r) => turnsOf(r).some((t) => t.split === 'train'));
    // The Studio dies; what survives is the committed cursor (JSON in the store).
    const saved = JSON.parse(JSON.stringify(before.state)) as FollowState;
    const again = await getEngine('verl').submit(l.plan, l.config, l.client);
    expect([again.attached, again.submissionId]).toEqual([true, l.plan.submissionId]);
    expect(l.fake.jobs.size).toBe(1);
    const after = await follow(l, saved);
    const turns = [...turnsOf(before.records), ...turnsOf(after.records)];
    // Everything the attempt wrote, read once from scratch, is exactly what the two followers read.
    const whole = turnsOf(followAttempt(l.plan.follow, initialFollowState(), { job: null, log: null, finished: true, now: 0 }).records);
    const key = (t: TurnRecord) => `${t.source.file}:${t.source.line}`;
    expect(turns.map(key).sort()).toEqual(whole.map(key).sort());
    expect(new Set(turns.map(key)).size).toBe(turns.length);
    expect(turns.length).toBe(4 + 5 * 32 + 3 * 4);
  });

  it('says the cluster is unreachable at launch, and submits the same attempt once it is back', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    const down = new FakeRay({ port, pendingMs: 20, env: { STANDIN_STEP_MS: '10' } });
    fakes.push(down);
    const l = await launch('verl-grpo', { fake: down });
    const error = await getEngine('verl').submit(l.plan, l.config, l.client).catch((e) => e);
    expect(error.code).toBe('unreachable');
    expect(error.message).toMatch(/^engine.address: cannot reach the Ray dashboard at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    await down.start();
    const result = await getEngine('verl').submit(l.plan, l.config, l.client);
    expect(result.attached).toBe(false);
    const { records } = await follow(l);
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('keeps reading the files while the cluster is unreachable mid-run, and finishes when it is back', async () => {
    const l = await launch('verl-grpo', { env: { STANDIN_STEP_MS: '150' }, over: { optimization: { steps: 5 } } });
    await submit(l);
    const before = await follow(l, initialFollowState(), (r) => kinds(r, 'status').some((s) => (s as { status: string }).status === 'RUNNING'));
    await l.fake.goDown();
    const during: FollowRecord[] = [];
    const follower = new JobFollower(l.plan.follow, l.client, l.plan.submissionId);
    let state = before.state;
    // Polls while Ray cannot be reached, until turns arrive from the files alone.
    for (let i = 0; i < 300 && turnsOf(during).length === 0; i++) {
      const r = await follower.poll(state);
      state = r.state;
      during.push(...r.records);
      await new Promise((res) => setTimeout(res, 30));
    }
    const unreachable = kinds(during, 'warning').filter((w) => (w as { code: string }).code === 'cluster_unreachable');
    expect(unreachable).toHaveLength(1);
    expect(turnsOf(during).length).toBeGreaterThan(0);
    await l.fake.comeBack();
    const after = await follow(l, state);
    const all = [...before.records, ...during, ...after.records];
    expect(kinds(all, 'status').pop()).toMatchObject({ status: 'SUCCEEDED' });
    expect(turnsOf(all).length).toBe(4 + 5 * 32 + 3 * 4);
  });

  it('finishes a job whose log Ray can no longer serve (its driver\'s node is gone), saying so once', async () => {
    const l = await launch('verl-grpo');
    await submit(l);
    await l.fake.waitFor(l.plan.submissionId, ['SUCCEEDED']);
    l.fake.failLogs = true;
    const { records } = await follow(l);
    expect(kinds(records, 'warning').map((w) => (w as { code: string }).code)).toEqual(['log_unavailable']);
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'SUCCEEDED' });
    expect(turnsOf(records).length).toBe(4 + 3 * 32 + 2 * 4);
  });

  it('resumes in a new attempt folder: nothing of the first attempt is rewritten', async () => {
    const first = await launch('verl-grpo', { env: { STANDIN_FAIL_AT_STEP: '3', STANDIN_FAIL_ONLY: 'marsrl-900-1a2b3c4d-a1' }, over: { optimization: { steps: 4 } }, runId: 900 });
    expect(first.plan.submissionId).toBe('marsrl-900-1a2b3c4d-a1');
    await submit(first);
    await follow(first);
    const attempt1 = localPath(first.plan.layout, first.plan.layout.attemptDir);
    const digest = () =>
      fs
        .readdirSync(attempt1, { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => `${path.relative(attempt1, path.join(d.parentPath, d.name))}:${crypto.createHash('sha256').update(fs.readFileSync(path.join(d.parentPath, d.name))).digest('hex')}`)
        .sort()
        .join('\n');
    const before = digest();
    const second = await launch('verl-grpo', { fake: first.fake, root: first.root, attempt: 2, runId: 900, over: { optimization: { steps: 4 } } });
    first.fake.jobs.get(first.plan.submissionId); // the first job stays recorded in Ray
    expect(second.plan.submissionId).toBe(first.plan.submissionId.replace(/-a1$/, '-a2'));
    await submit(second);
    const { records } = await follow(second);
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'SUCCEEDED' });
    expect(digest()).toBe(before);
    const log = first.fake.logOf(second.plan.submissionId);
    expect(log).toContain(`Resuming from ${second.plan.layout.checkpointsDir}/global_step_2`);
    // val-before-train at the resumed step, in the new attempt's own metrics file.
    expect(metricsOf(records).filter((m) => m.key === 'eval/system/accuracy').map((m) => m.step)).toEqual([2, 4]);
    expect(turnsOf(records).filter((t) => t.split === 'train').map((t) => t.step).filter((s, i, a) => a.indexOf(s) === i)).toEqual([3, 4]);
  });
});

describe('DrMAS runs', () => {
  it('follows Solver, Verifier and Corrector with the Studio hook: agents, rounds, padding copies, advantages', async () => {
    const l = await launch('drmas-marsrl', { over: { rollout: { solver_group: 2 } } });
    await submit(l);
    const { records } = await follow(l);
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'SUCCEEDED' });
    expect(l.fake.logOf(l.plan.submissionId)).toContain('[marsrl hook] MarsRL orchestra (Solver → Verifier → Corrector) installed as the math orchestra');
    const turns = turnsOf(records);
    expect(turns.length).toBeGreaterThan(0);
    expect(turns.every((t) => t.agent !== null && t.group !== null && t.trajectory !== null && t.advantage !== null && t.duplicate !== null)).toBe(true);
    expect(new Set(turns.map((t) => t.agent))).toEqual(new Set(['solver', 'verifier1', 'corrector1', 'verifier2', 'corrector2'].filter((a) => turns.some((t) => t.agent === a))));
    expect(turns.some((t) => t.agent === 'verifier1')).toBe(true);
    expect(turns.some((t) => t.duplicate === true)).toBe(true);
    // Every real turn once: the copies DrMAS pads each worker group with are flagged.
    const real = turns.filter((t) => !t.duplicate);
    expect(new Set(real.map((t) => JSON.stringify([t.step, t.trajectory, t.agent, t.prompt, t.text]))).size).toBe(real.length);
    // Each trajectory starts with one Solver turn.
    const trajectories = new Set(real.map((t) => `${t.step}/${t.trajectory}`));
    expect(real.filter((t) => t.agent === 'solver').length).toBe(trajectories.size);
    const metrics = metricsOf(records);
    expect(metrics.filter((m) => m.key === 'solver/grad_norm').map((m) => m.step)).toEqual([1, 2, 3]);
    expect(metrics.find((m) => m.key === 'corrector/grad_norm')).toMatchObject({ engineKey: 'actor/Qwen3-4B_Corrector Agent/grad_norm', via: 'mapped' });
    expect(metrics.filter((m) => m.key === 'solver/reward/mean' && m.via === 'derived').map((m) => m.step)).toEqual([1, 2, 3]);
    expect(metrics.filter((m) => m.key === 'eval/system/accuracy').map((m) => m.step)).toEqual([0, 2, 3]);
    // DrMAS logs to TensorBoard here: its event files are read (issue 39's reader in the slot), not the rounded console lines.
    expect(kinds(records, 'warning').map((w) => (w as { code: string }).code)).toEqual([]);
    expect(metrics.find((m) => m.key === 'solver/grad_norm')?.source.file).toMatch(/events\.out\.tfevents\./);
    expect(fs.readdirSync(localPath(l.plan.layout, l.plan.layout.tensorboardDir)).some((n) => n.startsWith('events.out.tfevents.'))).toBe(true);
    const checkpoint = kinds(records, 'checkpoint')[0] as { policies: { wgId: string; roles: string[]; hfDir: string | null }[] };
    expect(checkpoint.policies.map((p) => [p.wgId, p.roles])).toEqual([
      ['Qwen3-4B_Solver Agent', ['solver']],
      ['Qwen3-4B_Verifier Agent', ['verifier']],
      ['Qwen3-4B_Corrector Agent', ['corrector']],
    ]);
    expect(checkpoint.policies.every((p) => p.hfDir !== null)).toBe(true);
  });

  it('marks turns "agent unknown" when DrMAS runs without the hook', async () => {
    const l = await launch('drmas-marsrl', { over: { rollout: { solver_group: 2 }, engine: { drmas: { orchestra: 'math', hook: false } } } });
    await submit(l);
    const { records } = await follow(l);
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'SUCCEEDED' });
    const turns = turnsOf(records);
    expect(turns.length).toBeGreaterThan(0);
    expect(turns.every((t) => t.agent === null && t.duplicate === null && t.advantage === null)).toBe(true);
    expect(kinds(records, 'warning').filter((w) => (w as { code: string }).code === 'agent_unknown')).toHaveLength(1);
    expect(metricsOf(records).some((m) => m.via === 'derived')).toBe(false);
  });

  it('fails as DrMAS would when the Corrector is asked for without the Studio hook', async () => {
    const l = await launch('drmas-marsrl', { over: { rollout: { solver_group: 2 } } });
    // The plan ships the hook; a cluster whose workers never ran it (another PYTHONPATH) gets DrMAS's KeyError.
    l.plan.runtimeEnv.env_vars.PYTHONPATH = '/nowhere';
    await submit(l);
    const { records } = await follow(l);
    expect(kinds(records, 'status').pop()).toMatchObject({ status: 'FAILED' });
    expect((kinds(records, 'traceback')[0] as { error: string }).error).toBe('KeyError: "Unknown agent \'Corrector Agent\'. Registered: [\'Solver Agent\', \'Verifier Agent\']"');
  });
});
