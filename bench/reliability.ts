/**
 * `npm run bench -- reliability [--trials N] [--seed S] [--clients N] [--quick] [--no-load] [--no-faults] [--json] [--keep]`
 *
 * The fault suite of issue #17, in figures. Everything runs as a user runs it: `marsrl run`,
 * `marsrl resume` and `marsrl export` are separate processes started through bin/marsrl.js, each
 * in its own process group, on a fresh database per trial.
 *
 * Kill trials (N, default 10): a small sync run (6 steps, checkpoints after steps 1, 3 and 5,
 * evaluations at 2 and 4) is SIGKILLed at a random moment of one phase — during a step's rollout,
 * its update, the evaluation after it, the checkpoint write (the kill fires when the checkpoint's
 * folder appears), or an export of the finished run (when its temporary file appears) — and the
 * victim is the trainer worker, the managing `marsrl run`, or the whole process group (rotating,
 * so each moment's repeats hit different victims; a killed export's victim is the export process
 * itself, or its group). Moments
 * within a phase come from the run's own figures (perf/rollout_s, perf/update_s, eval spans) and
 * a seeded random fraction. Then `marsrl resume` (or the export again). Per trial: SQLite's
 * integrity_check, turns committed before the kill that are missing after it (all attempts, and
 * those of the live attempt: must be 0), one attempt per step and split among live rows, resumed
 * to done.
 *
 * Faults: the disk filling up under a run (a small tmpfs mounted here; skipped with the reason
 * when mount is not permitted), a truncated newest checkpoint (resume falls back to the previous
 * one, naming the file) and every checkpoint corrupted (resume refuses, naming files and fix), a
 * database write-locked by another process (shorter than the busy timeout: the run waits; longer:
 * a clear error, nothing written), two `marsrl resume` of the same run at once (one is refused).
 *
 * Bad inputs: a corpus of bad configs, CLI flags, HTTP bodies and headers, IPC payloads, study
 * matrices, task files, model folders and export paths; each must fail with an error naming the
 * field (or file) and write nothing (the database and the sandbox folder are compared before and
 * after).
 *
 * Load (--clients, default 50): `marsrl serve`'s server in this process with that many WebSocket
 * clients and a stream of API page requests while two `marsrl run` processes write to its
 * database: p50/p99 page latency, and whether every pushed event reached every client, in order
 * (the events' sequence numbers).
 *
 * `--quick` is the short form the tests run (2 kill trials, the faults, the corpus, 8 clients).
 * `--json` prints {"bad_inputs": [{"input", "error", …}], "trials": […], "faults": […], "load": {…}}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { request as httpRequest } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import YAML from 'yaml';
import { WebSocket } from 'ws';
import { callStudio } from '../src-main/api/dispatch';
import { openStudio } from '../src-main/app/studio';
import { main as cliMain } from '../src-main/cli/main';
import { runExport } from '../src-main/engine/export';
import { runDir } from '../src-main/engine/paths';
import { projectRoot } from '../src-main/engine/resources';
import { openStore, type Store } from '../src-main/engine/store';
import { isProcessAlive } from '../src-main/engine/store/liveness';
import { Rng } from '../src-main/engine/util/rng';
import { createStudioServer } from '../src-main/server/server';

// ── shared helpers ─────────────────────────────────────────────────────────────────────────────

const tinyPolicy = { model: { d_model: 16, n_layers: 1, n_heads: 2, context: 128, mlp_ratio: 2 }, optimizer: { lr: 1e-3 } };
const STEPS = 6;
const PROBLEMS_PER_STEP = 2;

/** The run every trial kills: small enough for 2 cores, with every phase present. */
function trialConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    seed: 3,
    task: { family: 'sort', difficulty: 2, train_size: 40, test_size: 20 },
    policies: { solver: tinyPolicy, verifier: tinyPolicy, corrector: tinyPolicy },
    rollout: { problems_per_step: PROBLEMS_PER_STEP, solver_group: 3, select_k: 2, verifier_group: 2, corrector_group: 2, rounds: 2, max_response_tokens: 48, selection: 'adaptive' },
    optimization: { steps: STEPS, minibatch_size: 16, checkpoint_every: 2 },
    pretrain: { steps: 4, batch_size: 8, warmup_steps: 1 },
    eval: { every: 2, k: 2, problems: 3 },
    pipeline: { mode: 'sync' },
    ...overrides,
  };
}

interface Proc {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function marsrl(args: string[], options: { detached?: boolean; env?: NodeJS.ProcessEnv } = {}): Proc {
  const child = spawn(process.execPath, [path.join(projectRoot(), 'bin', 'marsrl.js'), ...args], {
    cwd: projectRoot(),
    env: { ...process.env, MARSRL_DB: undefined, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(probe: () => T | null | undefined | false, timeoutMs: number, what: string, everyMs = 10): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A read-only look at a database another process writes; null until its schema exists. */
function peek<T>(databasePath: string, read: (db: Database.Database) => T): T | null {
  if (!fs.existsSync(databasePath)) return null;
  let db: Database.Database | null = null;
  try {
    db = new Database(databasePath, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 2000');
    return read(db);
  } catch {
    return null;
  } finally {
    db?.close();
  }
}

function integrity(databasePath: string): string {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true });
  try {
    return (db.pragma('integrity_check') as { integrity_check: string }[]).map((r) => r.integrity_check).join('; ');
  } finally {
    db.close();
  }
}

function metricAt(db: Database.Database, runId: number, key: string, step: number): number | null {
  const row = db.prepare('SELECT m.value FROM metrics m JOIN metric_keys k ON k.id = m.key_id WHERE m.run_id = ? AND k.key = ? AND m.step = ?').get(runId, key, step) as { value: number } | undefined;
  return row ? row.value : null;
}

interface CommittedTurn {
  id: number;
  step: number;
  split: string;
}

function committedTurns(db: Database.Database, runId: number): CommittedTurn[] {
  return db
    .prepare("SELECT t.id, t.step, COALESCE(e.split, 'train') AS split FROM turns t LEFT JOIN episodes e ON e.id = t.episode_id WHERE t.run_id = ?")
    .all(runId) as CommittedTurn[];
}

function processGone(pid: number | null): boolean {
  return pid === null || !isProcessAlive(pid);
}

// ── kill trials ────────────────────────────────────────────────────────────────────────────────

export const MOMENTS = ['rollout', 'update', 'evaluation', 'checkpoint', 'export'] as const;
export type Moment = (typeof MOMENTS)[number];
export const VICTIMS = ['worker', 'manager', 'group'] as const;
export type Victim = (typeof VICTIMS)[number];

export interface TrialResult {
  trial: number;
  moment: Moment;
  victim: Victim;
  /** When the kill fired, after the phase began (ms), and what was observed about it. */
  killAfterMs: number;
  landed: string;
  integrity: string;
  /** Turns seen committed just before the kill. */
  committedBefore: number;
  /** Of those, how many are gone from the store afterwards (any attempt). */
  lostAny: number;
  /** Of those whose step the resume did not redo, how many are not live afterwards: must be 0. */
  lostLive: number;
  /** Live rows hold exactly one attempt per (step, split), and every step its training episodes. */
  oneAttemptPerStep: boolean;
  resumedToDone: boolean;
  attempts: number;
  seconds: number;
  note: string;
}

async function killTrial(dir: string, trial: number, moment: Moment, victim: Victim, rng: Rng): Promise<TrialResult> {
  const started = Date.now();
  fs.mkdirSync(dir, { recursive: true });
  const databasePath = path.join(dir, 'runs.db');
  const configPath = path.join(dir, 'run.yaml');
  fs.writeFileSync(configPath, YAML.stringify(trialConfig({ name: `trial ${trial} ${moment} ${victim}` })));
  const result: TrialResult = {
    trial, moment, victim, killAfterMs: 0, landed: '', integrity: '', committedBefore: 0, lostAny: 0, lostLive: 0,
    oneAttemptPerStep: false, resumedToDone: false, attempts: 0, seconds: 0, note: '',
  };
  const run = marsrl(['run', '--config', configPath, '--db', databasePath]);
  const runId = await until(() => peek(databasePath, (db) => (db.prepare('SELECT id FROM runs ORDER BY id LIMIT 1').get() as { id: number } | undefined)?.id), 60_000, 'the run to be created');
  const workerPid = () => peek(databasePath, (db) => (db.prepare('SELECT worker_pid AS pid FROM runs WHERE id = ?').get(runId) as { pid: number | null }).pid) ?? null;
  const stepDone = (step: number) => peek(databasePath, (db) => metricAt(db, runId, 'perf/update_s', step) !== null);
  let before: CommittedTurn[] = [];
  let pids: number[] = [];
  const snapshot = () => {
    before = peek(databasePath, (db) => committedTurns(db, runId)) ?? before;
    const w = workerPid();
    pids = [run.child.pid!, ...(w ? [w] : [])];
  };
  const kill = (pid: number | null) => {
    const target = victim === 'group' ? -run.child.pid! : victim === 'manager' ? run.child.pid! : pid!;
    try {
      process.kill(target, 'SIGKILL');
    } catch (error) {
      result.note = `kill failed: ${(error as Error).message}`;
    }
  };

  if (moment === 'export') {
    // The run finishes; the export of it is what is killed.
    const end = await run.done;
    if (end.code !== 0) throw new Error(`trial ${trial}: the run failed before its export: ${end.stderr}`);
    const outDir = path.join(dir, 'exports');
    fs.mkdirSync(outDir);
    const out = path.join(outDir, 'run.parquet');
    snapshot();
    const exporter = marsrl(['export', String(runId), '--format', 'trajectories', '--out', out, '--db', databasePath]);
    const t0 = Date.now();
    const seen = await until(() => fs.readdirSync(outDir).find((f) => f.endsWith('.tmp')) ?? (exporter.child.exitCode !== null ? 'exited' : null), 60_000, 'the export to start writing', 1);
    await sleep(rng.next() * 20);
    result.killAfterMs = Date.now() - t0;
    const target = victim === 'worker' || victim === 'manager' ? exporter.child.pid! : -exporter.child.pid!;
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // Already gone: the export finished first.
    }
    const exit = await exporter.done;
    result.landed = seen === 'exited' ? `export finished before the kill (code ${exit.code})` : `while writing ${seen} (exit ${exit.signal ?? exit.code})`;
    const leftovers = fs.readdirSync(outDir);
    const published = fs.existsSync(out);
    result.integrity = integrity(databasePath);
    const again = marsrl(['export', String(runId), '--format', 'trajectories', '--out', out, '--db', databasePath, ...(published ? ['--force'] : [])]);
    const second = await again.done;
    const after = openStore(databasePath, { readonly: true });
    try {
      result.lostAny = countMissing(after, before);
      result.lostLive = result.lostAny;
      result.oneAttemptPerStep = oneAttemptPerStep(after, runId);
      result.attempts = after.runs.get(runId)!.attempt;
    } finally {
      after.close();
    }
    result.resumedToDone = second.code === 0 && fs.existsSync(out);
    result.committedBefore = before.length;
    result.note = `${published ? 'a complete file was published before the kill' : 'nothing published by the killed export'}; ${leftovers.filter((f) => f.endsWith('.tmp')).length} temporary file(s) left (cleaned by the next export: ${fs.readdirSync(outDir).filter((f) => f.endsWith('.tmp')).length} remain)`;
    result.seconds = (Date.now() - started) / 1000;
    return result;
  }

  // Steps 1, 3 and 5 end with a checkpoint (and an evaluation at 2 and 4 before it); the step
  // after an even step starts right away with its rollout.
  const afterStep = moment === 'rollout' || moment === 'update' ? 2 : 3;
  await until(() => stepDone(afterStep) || run.child.exitCode !== null, 120_000, `step ${afterStep} to finish`, 5);
  if (run.child.exitCode !== null) throw new Error(`trial ${trial}: the run ended before the kill: ${(await run.done).stderr}`);
  const t0 = Date.now();
  const figures = peek(databasePath, (db) => ({
    rollout: metricAt(db, runId, 'perf/rollout_s', afterStep) ?? 0.5,
    update: metricAt(db, runId, 'perf/update_s', afterStep) ?? 0.5,
    evaluation: ((db.prepare("SELECT MAX(ended_at - started_at) AS ms FROM timeline WHERE run_id = ? AND kind = 'eval'").get(runId) as { ms: number | null }).ms ?? 500) / 1000,
  }))!;
  const fraction = 0.1 + 0.6 * rng.next();
  if (moment === 'checkpoint') {
    const ckpt = path.join(runDir(databasePath, runId), 'checkpoints', `step-${String(afterStep).padStart(6, '0')}`);
    // Poll as fast as the event loop allows: the write of these small policies takes milliseconds.
    for (const deadline = Date.now() + 60_000; !fs.existsSync(ckpt) && Date.now() < deadline; ) await new Promise((resolve) => setImmediate(resolve));
    snapshot();
    kill(pids[1] ?? null);
    result.killAfterMs = Date.now() - t0;
    await run.done;
    const manifests = fs.existsSync(ckpt) ? fs.readdirSync(ckpt).filter((p) => fs.existsSync(path.join(ckpt, p, 'checkpoint.json'))).length : 0;
    const policies = fs.existsSync(ckpt) ? fs.readdirSync(ckpt).length : 0;
    result.landed = `checkpoint folder of step ${afterStep} had ${manifests} of its policies' manifests (${policies} policy folders) at the kill`;
  } else if (moment === 'update') {
    // Timed from the killed step's own update, not from step afterStep's figures: under load one
    // step's time says little about the next's. One update span per agent is committed as each
    // agent's update ends; once the first of step afterStep + 1 is in, the other agents' updates
    // are still to come.
    const updateSpans = (step: number) => peek(databasePath, (db) => (db.prepare("SELECT COUNT(*) AS n FROM timeline WHERE run_id = ? AND step = ? AND kind = 'update'").get(runId, step) as { n: number }).n) ?? 0;
    const agents = Math.max(1, updateSpans(afterStep));
    await until(() => updateSpans(afterStep + 1) > 0 || run.child.exitCode !== null, 120_000, `the first update of step ${afterStep + 1}`, 2);
    const delayS = fraction * (figures.update / agents);
    await sleep(delayS * 1000);
    snapshot();
    kill(pids[1] ?? null);
    result.killAfterMs = Date.now() - t0;
    await run.done;
    result.landed = `${delayS.toFixed(2)} s after the first of step ${afterStep + 1}'s ${agents} agent updates ended (an agent's update ≈ ${(figures.update / agents).toFixed(2)} s at step ${afterStep})`;
  } else {
    const phaseS = moment === 'rollout' ? figures.rollout : figures.evaluation;
    const delayS = fraction * phaseS;
    await sleep(delayS * 1000);
    snapshot();
    kill(pids[1] ?? null);
    result.killAfterMs = Date.now() - t0;
    await run.done;
    result.landed = `${delayS.toFixed(2)} s after step ${afterStep} ended (${moment} ≈ ${phaseS.toFixed(2)} s there)`;
  }
  // A killed manager's worker notices the closed channel and stops itself; a killed group leaves
  // nobody; wait until every process of the run is gone.
  await until(() => pids.every((pid) => processGone(pid)), 60_000, 'the run\'s processes to exit');
  result.integrity = integrity(databasePath);
  const statusAfterKill = peek(databasePath, (db) => db.prepare('SELECT status, status_reason AS reason FROM runs WHERE id = ?').get(runId) as { status: string; reason: string | null });
  const resume = marsrl(['resume', String(runId), '--db', databasePath]);
  const resumed = await resume.done;
  const store = openStore(databasePath, { readonly: true });
  try {
    const final = store.runs.get(runId)!;
    result.resumedToDone = resumed.code === 0 && final.status === 'done';
    result.attempts = final.attempt;
    result.lostAny = countMissing(store, before);
    const attempts = store.runs.attempts(runId);
    // Rows of steps no resume redid must still be live: training steps before the earliest
    // resumed-from step, evaluations at or before it.
    const firstRedo = Math.min(...attempts.filter((a) => a.resumedFromStep !== null).map((a) => a.resumedFromStep!), Infinity);
    const live = new Set((store.db.prepare('SELECT id FROM turns WHERE run_id = ? AND superseded_by IS NULL').all(runId) as { id: number }[]).map((r) => r.id));
    result.lostLive = before.filter((t) => (t.split === 'train' ? t.step < firstRedo : t.step <= firstRedo) && !live.has(t.id)).length;
    result.oneAttemptPerStep = oneAttemptPerStep(store, runId);
    if (!result.resumedToDone) result.note = `resume: code ${resumed.code}: ${resumed.stderr.trim().split('\n').slice(-2).join(' ')}`;
    else result.note = `after the kill: ${statusAfterKill?.status} (${statusAfterKill?.reason ?? 'no reason'})`;
  } finally {
    store.close();
  }
  result.committedBefore = before.length;
  result.seconds = (Date.now() - started) / 1000;
  return result;
}

function countMissing(store: Store, before: CommittedTurn[]): number {
  if (before.length === 0) return 0;
  const present = store.db.prepare('SELECT 1 FROM turns WHERE id = ?');
  return before.filter((t) => present.get(t.id) === undefined).length;
}

function oneAttemptPerStep(store: Store, runId: number): boolean {
  const groups = store.db
    .prepare(
      `SELECT t.step, COALESCE(e.split, 'train') AS split, COUNT(DISTINCT t.attempt) AS attempts FROM turns t LEFT JOIN episodes e ON e.id = t.episode_id
       WHERE t.run_id = ? AND t.superseded_by IS NULL GROUP BY 1, 2`,
    )
    .all(runId) as { attempts: number }[];
  const perStep = store.db.prepare("SELECT step, COUNT(*) AS n FROM episodes WHERE run_id = ? AND split = 'train' AND superseded_by IS NULL GROUP BY step").all(runId) as { step: number; n: number }[];
  return groups.length > 0 && groups.every((g) => g.attempts === 1) && perStep.length === STEPS && perStep.every((s) => s.n === PROBLEMS_PER_STEP);
}

// ── faults ─────────────────────────────────────────────────────────────────────────────────────

export interface FaultResult {
  fault: string;
  outcome: 'ok' | 'failed' | 'skipped';
  detail: string;
  integrity: string | null;
}

/** A run killed after step 3 (checkpoints 2 and 3 kept on disk), for the resume faults. */
async function interruptedRun(dir: string, config: Record<string, unknown> = {}): Promise<{ databasePath: string; runId: number }> {
  fs.mkdirSync(dir, { recursive: true });
  const databasePath = path.join(dir, 'runs.db');
  const configPath = path.join(dir, 'run.yaml');
  fs.writeFileSync(configPath, YAML.stringify(trialConfig({ optimization: { steps: STEPS, minibatch_size: 16, checkpoint_every: 1 }, eval: { every: 0, k: 2, problems: 3 }, ...config })));
  const run = marsrl(['run', '--config', configPath, '--db', databasePath]);
  const runId = await until(() => peek(databasePath, (db) => (db.prepare('SELECT id FROM runs LIMIT 1').get() as { id: number } | undefined)?.id), 60_000, 'the run');
  await until(() => peek(databasePath, (db) => (db.prepare('SELECT COUNT(DISTINCT step) AS n FROM checkpoints WHERE run_id = ?').get(runId) as { n: number }).n >= 4), 120_000, 'four checkpoints');
  process.kill(-run.child.pid!, 'SIGKILL');
  await run.done;
  await sleep(200);
  return { databasePath, runId };
}

async function diskFull(dir: string): Promise<FaultResult> {
  const mountPoint = path.join(dir, 'small-disk');
  fs.mkdirSync(mountPoint, { recursive: true });
  const mount = (args: string[]) => new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn('mount', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', (error) => resolve({ code: -1, stderr: error.message }));
    child.once('close', (code) => resolve({ code, stderr }));
  });
  const mounted = await mount(['-t', 'tmpfs', '-o', 'size=1200k', 'tmpfs', mountPoint]);
  if (mounted.code !== 0) {
    return { fault: 'disk full under a run (1.2 MB tmpfs)', outcome: 'skipped', detail: `cannot mount a tmpfs here (${mounted.stderr.trim() || `mount exited ${mounted.code}`}); run as root to include this trial`, integrity: null };
  }
  try {
    const databasePath = path.join(mountPoint, 'runs.db');
    const configPath = path.join(dir, 'disk-full.yaml');
    // A checkpoint every 2 steps: how many steps fit in 1.2 MB varies with the pages SQLite's WAL
    // holds at the moment (under load the disk filled at step 4, before a checkpoint every 5), and
    // the trial is about resuming after the disk fills, so one must exist by then. 120 steps: the
    // disk fills at step 2 to 4, and even with no WAL at all the run's folder and database pass
    // 1.2 MB by about step 60 (measured on a roomy disk: 1.07 MB after 40 steps, 1.65 MB after
    // 120); more steps only lengthen the resume.
    fs.writeFileSync(configPath, YAML.stringify(trialConfig({ optimization: { steps: 120, minibatch_size: 16, checkpoint_every: 2 }, eval: { every: 0, k: 2, problems: 3 } })));
    const run = marsrl(['run', '--config', configPath, '--db', databasePath]);
    const first = await run.done;
    const check = integrity(databasePath);
    const status = peek(databasePath, (db) => db.prepare('SELECT id, status, status_reason AS reason FROM runs LIMIT 1').get() as { id: number; status: string; reason: string | null });
    const lastStep = peek(databasePath, (db) => (db.prepare("SELECT MAX(step) AS s FROM metrics m JOIN metric_keys k ON k.id = m.key_id WHERE k.key = 'perf/update_s'").get() as { s: number | null }).s);
    const message = first.stderr.trim().split('\n').filter((l) => l.trim() !== '').slice(-1)[0] ?? '';
    // Free space, then resume.
    const grown = await mount(['-o', 'remount,size=256m', mountPoint]);
    let resumedTo = 'not tried';
    if (grown.code === 0 && status) {
      const resume = await marsrl(['resume', String(status.id), '--db', databasePath]).done;
      const final = peek(databasePath, (db) => db.prepare('SELECT status FROM runs WHERE id = ?').get(status.id) as { status: string });
      resumedTo = `${final?.status ?? '?'} (resume exit ${resume.code}${resume.code === 0 ? '' : `: ${resume.stderr.trim().split('\n').slice(-1)[0]}`})`;
    }
    const ok = first.code !== 0 && check === 'ok' && resumedTo.startsWith('done');
    return {
      fault: 'disk full under a run (1.2 MB tmpfs)',
      outcome: ok ? 'ok' : 'failed',
      detail: `the run stopped at step ${lastStep ?? '?'}: ${status?.status} (${status?.reason ?? 'no reason'}); CLI said: ${message}; after freeing space, resumed: ${resumedTo}`,
      integrity: check,
    };
  } finally {
    await mount(['-l', mountPoint]).then(() => undefined);
    await new Promise<void>((resolve) => spawn('umount', ['-l', mountPoint]).once('close', () => resolve()).once('error', () => resolve()));
  }
}

async function corruptCheckpoint(dir: string, all: boolean): Promise<FaultResult> {
  const fault = all ? 'every checkpoint corrupted' : 'newest checkpoint truncated';
  const { databasePath, runId } = await interruptedRun(dir);
  const root = path.join(runDir(databasePath, runId), 'checkpoints');
  // The kill may land while an old checkpoint is being removed or a new one written: damage only
  // complete ones.
  const steps = fs.readdirSync(root).filter((d) => d.startsWith('step-') && fs.existsSync(path.join(root, d, 'solver', 'checkpoint.json'))).sort();
  const damaged: string[] = [];
  for (const step of all ? steps : steps.slice(-1)) {
    const weights = path.join(root, step, 'solver', fs.readdirSync(path.join(root, step, 'solver')).find((f) => f.endsWith('.bin')) ?? 'weights.bin');
    const size = fs.statSync(weights).size;
    if (all) {
      // Same length, flipped bytes: only the checksum can tell.
      const fd = fs.openSync(weights, 'r+');
      fs.writeSync(fd, Buffer.from([0xde, 0xad, 0xbe, 0xef]), 0, 4, Math.floor(size / 2));
      fs.closeSync(fd);
    } else fs.truncateSync(weights, Math.floor(size / 3));
    damaged.push(path.relative(dir, weights));
  }
  const resume = await marsrl(['resume', String(runId), '--db', databasePath]).done;
  const store = openStore(databasePath, { readonly: true });
  try {
    const run = store.runs.get(runId)!;
    const events = store.events.events(runId, 0, 1000).items;
    const unusable = events.filter((e) => e.kind === 'checkpoint_unusable').map((e) => e.message);
    const resumed = events.filter((e) => e.kind === 'resumed').at(-1);
    const ok = all ? run.status === 'failed' && /cannot be resumed/.test(run.statusReason ?? '') && /Restore the checkpoint folder/.test(run.statusReason ?? '') : run.status === 'done' && unusable.length > 0 && resumed !== undefined;
    return {
      fault,
      outcome: ok ? 'ok' : 'failed',
      detail: all
        ? `damaged ${damaged.length} checkpoint(s); resume ${resume.code === 0 ? 'exited 0' : `exited ${resume.code}`}, run ${run.status}: ${run.statusReason}`
        : `damaged ${damaged[0]}; ${unusable[0] ?? 'no checkpoint was reported unusable'}; then ${resumed?.message ?? 'no resume'}; run ${run.status}`,
      integrity: store.integrityCheck().join('; '),
    };
  } finally {
    store.close();
  }
}

/** A process holds SQLite's write lock for `holdMs` (BEGIN EXCLUSIVE), as a stuck tool would. */
function holdWriteLock(databasePath: string, holdMs: number): Promise<{ locked: Promise<void>; released: Promise<void> }> {
  const script = `const D=require(${JSON.stringify(require_('better-sqlite3'))});const db=new D(${JSON.stringify(databasePath)});db.pragma('journal_mode = WAL');db.exec('BEGIN EXCLUSIVE');db.prepare("INSERT INTO metric_keys(key) VALUES ('lock/holder')").run();process.stdout.write('locked\\n');setTimeout(()=>{db.exec('ROLLBACK');db.close();process.exit(0)},${holdMs});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const locked = new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve()));
  const released = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return Promise.resolve({ locked, released });
}

function require_(name: string): string {
  return path.join(projectRoot(), 'node_modules', name);
}

async function lockedDatabase(dir: string): Promise<FaultResult[]> {
  fs.mkdirSync(dir, { recursive: true });
  const databasePath = path.join(dir, 'runs.db');
  openStore(databasePath).close();
  const configPath = path.join(dir, 'run.yaml');
  fs.writeFileSync(configPath, YAML.stringify(trialConfig({ optimization: { steps: 3, minibatch_size: 16, checkpoint_every: 0 }, eval: { every: 0, k: 2, problems: 3 } })));
  const out: FaultResult[] = [];
  // Shorter than the busy timeout (10 s): writers wait for it and the run carries on.
  {
    const lock = await holdWriteLock(databasePath, 3000);
    await lock.locked;
    const t0 = Date.now();
    const run = await marsrl(['run', '--config', configPath, '--db', databasePath]).done;
    await lock.released;
    const status = peek(databasePath, (db) => db.prepare('SELECT status FROM runs ORDER BY id DESC LIMIT 1').get() as { status: string } | undefined);
    out.push({
      fault: 'database write-locked by another process for 3 s',
      outcome: run.code === 0 && status?.status === 'done' ? 'ok' : 'failed',
      detail: `the run waited for the lock and ended ${status?.status ?? 'unrecorded'} after ${((Date.now() - t0) / 1000).toFixed(1)} s (exit ${run.code})`,
      integrity: integrity(databasePath),
    });
  }
  // Longer than the busy timeout: a clear error, and no run row half made.
  {
    const runsBefore = peek(databasePath, (db) => (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n);
    const lock = await holdWriteLock(databasePath, 14_000);
    await lock.locked;
    const run = await marsrl(['run', '--config', configPath, '--db', databasePath]).done;
    await lock.released;
    const runsAfter = peek(databasePath, (db) => (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n);
    const message = run.stderr.trim().split('\n').slice(-1)[0] ?? '';
    out.push({
      fault: 'database write-locked by another process for 14 s',
      outcome: run.code !== 0 && runsAfter === runsBefore && /locked/i.test(message) && message.includes(databasePath) ? 'ok' : 'failed',
      detail: `marsrl run exited ${run.code}: ${message}; runs before/after: ${runsBefore}/${runsAfter}`,
      integrity: integrity(databasePath),
    });
  }
  return out;
}

async function doubleResume(dir: string): Promise<FaultResult> {
  const { databasePath, runId } = await interruptedRun(dir);
  const [a, b] = await Promise.all([marsrl(['resume', String(runId), '--db', databasePath]).done, marsrl(['resume', String(runId), '--db', databasePath]).done]);
  const codes = [a.code, b.code].sort();
  const refused = [a, b].find((r) => r.code !== 0);
  const status = peek(databasePath, (db) => db.prepare('SELECT status, attempt FROM runs WHERE id = ?').get(runId) as { status: string; attempt: number });
  return {
    fault: 'two marsrl resume of one run at once',
    outcome: codes[0] === 0 && codes[1] !== 0 && status?.status === 'done' && status.attempt === 2 ? 'ok' : 'failed',
    detail: `exit codes ${a.code} and ${b.code}; the refused one said: ${refused?.stderr.trim().split('\n').slice(-1)[0] ?? '(none refused)'}; run ${status?.status}, attempts ${status?.attempt}`,
    integrity: integrity(databasePath),
  };
}

// ── bad inputs ─────────────────────────────────────────────────────────────────────────────────

export interface BadInput {
  category: string;
  input: string;
  error: string;
  /** What the message must name (the field, flag, file or key). */
  names: string;
  namesIt: boolean;
  nothingWritten: boolean;
}

function snapshotWrites(databasePath: string, sandbox: string): string {
  const counts = peek(databasePath, (db) =>
    ['runs', 'studies', 'turns', 'events', 'metrics', 'checkpoints'].map((t) => (db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n).join(','),
  );
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && !e.isSymbolicLink()) walk(p);
      else files.push(`${path.relative(sandbox, p)}:${e.isSymbolicLink() ? 'link' : fs.statSync(p).size}`);
    }
  };
  walk(sandbox);
  return `${counts}|${files.sort().join(',')}`;
}

async function badInputs(dir: string): Promise<BadInput[]> {
  const sandbox = path.join(dir, 'sandbox');
  fs.mkdirSync(sandbox, { recursive: true });
  const databasePath = path.join(sandbox, 'bad.db');
  // The Studio `marsrl serve` opens, without a run manager (no case may start a run).
  const studio = openStudio({ databasePath, transport: 'http' });
  const { store, service } = studio;
  const runId = store.runs.create({ name: 'target', config: trialConfig(), codeVersion: 'bench', seed: 3, status: 'done' });
  const server = await createStudioServer({ service, hub: studio.hub, port: 0, rendererDir: null, log: () => undefined, maxBodyBytes: 64 * 1024 });
  const write = (name: string, text: string | Buffer) => {
    const p = path.join(sandbox, name);
    fs.writeFileSync(p, text);
    return p;
  };
  // Fixtures the cases read (made before the first snapshot, so they do not count as writes).
  const files = {
    badYaml: write('bad-yaml.yaml', 'optimization: {steps: 3\n'),
    unknownField: write('unknown-field.yaml', 'optimization:\n  stepz: 3\n'),
    negSteps: write('neg-steps.yaml', 'optimization:\n  steps: -1\n'),
    badScheme: write('bad-scheme.yaml', 'reward:\n  scheme: everyone\n'),
    badFamily: write('bad-family.yaml', 'task:\n  family: chess\n'),
    zeroGroup: write('zero-group.yaml', 'rollout:\n  solver_group: 0\n'),
    heads: write('heads.yaml', 'policies:\n  solver:\n    model: {d_model: 30, n_heads: 4}\n'),
    notMapping: write('list.yaml', '- 1\n- 2\n'),
    jsonlNoPath: write('jsonl-no-path.yaml', 'task:\n  family: jsonl\n'),
    lrString: write('lr.yaml', 'policies:\n  solver:\n    optimizer: {lr: fast}\n'),
    tasksBadJson: write('tasks-bad.jsonl', '{"question": "1+1", "answer": "2"}\n{"question": "2+2", "answer": \n'),
    tasksNoAnswer: write('tasks-no-answer.jsonl', '{"question": "1+1"}\n'),
    tasksEmpty: write('tasks-empty.jsonl', '\n\n'),
    tasksParquet: write('tasks.parquet', Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(64), Buffer.from('PAR1')])),
    matrixEmpty: write('matrix-empty.yaml', 'name: s\npreset: quick\nseeds: [1]\naxes: {}\n'),
    matrixBadPath: write('matrix-bad-path.yaml', 'name: s\npreset: quick\nseeds: [1]\naxes:\n  reward.shceme: [shared, decoupled]\n'),
    matrixNotList: write('matrix-not-list.yaml', 'name: s\npreset: quick\nseeds: [1]\naxes:\n  reward.scheme: shared\n'),
    matrixSeeds: write('matrix-seeds.yaml', 'name: s\npreset: quick\nseeds: [1, one]\naxes:\n  reward.scheme: [shared, decoupled]\n'),
    existing: write('existing.parquet', 'already here'),
  };
  const modelNoManifest = path.join(sandbox, 'model-empty');
  fs.mkdirSync(modelNoManifest);
  const modelBadManifest = path.join(sandbox, 'model-bad');
  fs.mkdirSync(modelBadManifest);
  fs.writeFileSync(path.join(modelBadManifest, 'checkpoint.json'), '{"format": "something-else", "version": 9}');
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-outside-'));
  fs.symlinkSync(outside, path.join(sandbox, 'link-out'));
  const readOnlyMount = fs.existsSync('/proc/self') ? '/proc/self/marsrl-export.parquet' : '/nonexistent-root/x.parquet';
  const modelConfig = (dirPath: string) => write(`model-${path.basename(dirPath)}.yaml`, `policies:\n  solver:\n    init: ${dirPath}\n`);
  const modelConfigs = { empty: modelConfig(modelNoManifest), bad: modelConfig(modelBadManifest), missing: modelConfig(path.join(sandbox, 'no-such-model')) };
  const jsonlConfig = (file: string) => write(`task-${path.basename(file)}.yaml`, `task:\n  family: jsonl\n  jsonl_path: ${file}\n`);
  const taskConfigs = { bad: jsonlConfig(files.tasksBadJson), noAnswer: jsonlConfig(files.tasksNoAnswer), empty: jsonlConfig(files.tasksEmpty), parquet: jsonlConfig(files.tasksParquet), missing: jsonlConfig(path.join(sandbox, 'no-such-tasks.jsonl')) };

  const cli = async (argv: string[]): Promise<string> => {
    let err = '';
    const code = await cliMain(argv, { env: { ...process.env, MARSRL_DB: databasePath }, out: () => undefined, err: (t) => (err += `${t}\n`) });
    return code === 0 ? `(accepted, exit 0) ${err}` : err.trim();
  };
  // node:http rather than fetch, which may not set Host or Origin itself.
  const http = (init: { path?: string; method?: string; headers?: Record<string, string>; body?: string }): Promise<string> =>
    new Promise((resolve, reject) => {
      const request = httpRequest(new URL(init.path ?? '/api/listRuns', server.url), { method: init.method ?? 'POST', headers: { 'Content-Type': 'application/json', ...init.headers } }, (response) => {
        let text = '';
        response.on('data', (d: Buffer) => (text += d.toString()));
        response.on('end', () => resolve(response.statusCode! < 300 ? `(accepted, ${response.statusCode})` : `HTTP ${response.statusCode}: ${text.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()}`));
      });
      request.on('error', reject);
      request.end(init.body);
    });
  const ipc = async (method: string, args: unknown): Promise<string> => {
    try {
      await callStudio(service, method, args);
      return '(accepted)';
    } catch (error) {
      return (error as Error).message;
    }
  };
  const exportTo = async (out: string, extra: Record<string, unknown> = {}): Promise<string> => {
    try {
      await runExport(store, { runs: [runId], format: 'trajectories', out, ...extra });
      return '(accepted)';
    } catch (error) {
      return (error as Error).message;
    }
  };
  const run = (file: string) => cli(['config', 'validate', file]);
  const start = (file: string) => cli(['run', '--config', file, '--db', databasePath]);

  const cases: { category: string; input: string; names: string; run: () => Promise<string> }[] = [
    // configs
    { category: 'config', input: 'YAML with an unclosed brace', names: 'bad-yaml.yaml', run: () => run(files.badYaml) },
    { category: 'config', input: 'unknown key optimization.stepz', names: 'optimization.stepz', run: () => run(files.unknownField) },
    { category: 'config', input: 'optimization.steps: -1', names: 'optimization.steps', run: () => run(files.negSteps) },
    { category: 'config', input: 'reward.scheme: everyone', names: 'reward.scheme', run: () => run(files.badScheme) },
    { category: 'config', input: 'task.family: chess', names: 'task.family', run: () => run(files.badFamily) },
    { category: 'config', input: 'rollout.solver_group: 0', names: 'rollout.solver_group', run: () => run(files.zeroGroup) },
    { category: 'config', input: 'd_model 30 with 4 heads', names: 'n_heads', run: () => run(files.heads) },
    { category: 'config', input: 'a YAML list instead of a mapping', names: 'list.yaml', run: () => run(files.notMapping) },
    { category: 'config', input: 'task.family jsonl without jsonl_path', names: 'task.jsonl_path', run: () => run(files.jsonlNoPath) },
    { category: 'config', input: 'optimizer.lr: "fast"', names: 'lr', run: () => run(files.lrString) },
    { category: 'config', input: 'a config file that does not exist', names: 'missing.yaml', run: () => run(path.join(sandbox, 'missing.yaml')) },
    { category: 'config', input: 'marsrl run --config with unknown key', names: 'optimization.stepz', run: () => start(files.unknownField) },
    // CLI flags
    { category: 'cli', input: 'marsrl run with neither --preset nor --config', names: '--preset', run: () => cli(['run', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl run --preset nosuch', names: 'nosuch', run: () => cli(['run', '--preset', 'nosuch', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl run --set without =', names: 'reward.scheme', run: () => cli(['run', '--preset', 'quick', '--set', 'reward.scheme', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl run --set rollout.rounds=-2', names: 'rollout.rounds', run: () => cli(['run', '--preset', 'quick', '--set', 'rollout.rounds=-2', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl runs --status bogus', names: '--status', run: () => cli(['runs', '--status', 'bogus', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl runs --limit 0', names: '--limit', run: () => cli(['runs', '--limit', '0', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl show 999', names: '999', run: () => cli(['show', '999', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl resume 999', names: '999', run: () => cli(['resume', '999', '--db', databasePath]) },
    { category: 'cli', input: 'marsrl resume of a finished run', names: `run ${runId}`, run: () => cli(['resume', String(runId), '--db', databasePath]) },
    { category: 'cli', input: 'marsrl export --format nope', names: 'format', run: () => cli(['export', String(runId), '--format', 'nope', '--out', path.join(sandbox, 'x.jsonl'), '--db', databasePath]) },
    { category: 'cli', input: 'marsrl export --steps 5..2', names: 'stepTo', run: () => cli(['export', String(runId), '--format', 'sft', '--steps', '5..2', '--out', path.join(sandbox, 'x.jsonl'), '--db', databasePath]) },
    { category: 'cli', input: 'marsrl export --correct maybe', names: '--correct', run: () => cli(['export', String(runId), '--format', 'sft', '--correct', 'maybe', '--out', path.join(sandbox, 'x.jsonl'), '--db', databasePath]) },
    { category: 'cli', input: 'marsrl bench nosuch', names: 'nosuch', run: () => cli(['bench', 'nosuch']) },
    { category: 'cli', input: 'marsrl nosuch (unknown command)', names: 'nosuch', run: () => cli(['nosuch']) },
    // HTTP bodies and headers
    { category: 'http', input: 'body that is not JSON', names: 'JSON', run: () => http({ body: '{not json' }) },
    { category: 'http', input: 'Content-Type: text/plain', names: 'Content-Type', run: () => http({ headers: { 'Content-Type': 'text/plain' }, body: '[]' }) },
    { category: 'http', input: 'GET on an API method', names: 'POST', run: () => http({ method: 'GET' }) },
    { category: 'http', input: 'unknown API method', names: 'nosuch', run: () => http({ path: '/api/nosuch', body: '[]' }) },
    { category: 'http', input: 'arguments that are an object, not an array', names: 'array', run: () => http({ path: '/api/getRun', body: '{"runId": 1}' }) },
    { category: 'http', input: 'body over the size limit', names: 'bytes', run: () => http({ path: '/api/updateRun', body: JSON.stringify([runId, { notes: 'x'.repeat(100_000) }]) }) },
    { category: 'http', input: 'Host: evil.example (DNS rebinding)', names: 'Host', run: () => http({ headers: { Host: 'evil.example' }, body: '[]' }) },
    { category: 'http', input: 'Origin: https://evil.example (cross-site)', names: 'Origin', run: () => http({ headers: { Origin: 'https://evil.example' }, body: '[]' }) },
    { category: 'http', input: 'updateRun with an empty name', names: 'name', run: () => http({ path: '/api/updateRun', body: JSON.stringify([runId, { name: '   ' }]) }) },
    // IPC payloads (the same validation the preload bridge's calls go through)
    { category: 'ipc', input: 'listTurns runId "7"', names: 'listTurns.0.runId', run: () => ipc('listTurns', [{ runId: '7' }]) },
    { category: 'ipc', input: 'listTurns limit 5000', names: 'listTurns.0.limit', run: () => ipc('listTurns', [{ runId, limit: 5000 }]) },
    { category: 'ipc', input: 'listTurns agent "Solver!"', names: 'listTurns.0.agent', run: () => ipc('listTurns', [{ runId, agent: 'Solver!' }]) },
    { category: 'ipc', input: 'listTurns with an unknown key', names: 'listTurns.0', run: () => ipc('listTurns', [{ runId, sort: 'reward' }]) },
    { category: 'ipc', input: 'listTurns includeSuperseded "yes"', names: 'listTurns.0.includeSuperseded', run: () => ipc('listTurns', [{ runId, includeSuperseded: 'yes' }]) },
    { category: 'ipc', input: 'getSeries with no keys', names: 'getSeries.0.keys', run: () => ipc('getSeries', [{ runId, keys: [] }]) },
    { category: 'ipc', input: 'startExport format "csv"', names: 'startExport.0.format', run: () => ipc('startExport', [{ runs: [runId], format: 'csv', out: path.join(sandbox, 'x.csv') }]) },
    { category: 'ipc', input: 'compareRuns with no runs', names: 'compareRuns.0.runIds', run: () => ipc('compareRuns', [{ runIds: [] }]) },
    { category: 'ipc', input: 'compareRuns spikeThreshold 0.5', names: 'spikeThreshold', run: () => ipc('compareRuns', [{ runIds: [runId], spikeThreshold: 0.5 }]) },
    { category: 'ipc', input: 'getRun of a run that does not exist', names: 'run 424242', run: () => ipc('getRun', [424242]) },
    { category: 'ipc', input: 'startStudy concurrency 0', names: 'startStudy.0.concurrency', run: () => ipc('startStudy', [{ matrix: {}, concurrency: 0 }]) },
    // study matrices
    { category: 'study', input: 'a matrix with no axes', names: 'axes', run: () => cli(['study', '--dry-run', '--db', databasePath, '--matrix', files.matrixEmpty]) },
    { category: 'study', input: 'an axis on an unknown config path', names: 'reward.shceme', run: () => cli(['study', '--dry-run', '--db', databasePath, '--matrix', files.matrixBadPath]) },
    { category: 'study', input: 'an axis that is not a list', names: 'reward.scheme', run: () => cli(['study', '--dry-run', '--db', databasePath, '--matrix', files.matrixNotList]) },
    { category: 'study', input: 'seeds with a word in it', names: 'seeds', run: () => cli(['study', '--dry-run', '--db', databasePath, '--matrix', files.matrixSeeds]) },
    // task files
    { category: 'task file', input: 'JSONL with a broken second line', names: 'line 2', run: () => start(taskConfigs.bad) },
    { category: 'task file', input: 'JSONL line without an answer', names: 'answer', run: () => start(taskConfigs.noAnswer) },
    { category: 'task file', input: 'JSONL file with no problems', names: 'tasks-empty.jsonl', run: () => start(taskConfigs.empty) },
    { category: 'task file', input: 'a Parquet file given as the task file', names: 'tasks.parquet', run: () => start(taskConfigs.parquet) },
    { category: 'task file', input: 'a task file that does not exist', names: 'no-such-tasks.jsonl', run: () => start(taskConfigs.missing) },
    // model folders
    { category: 'model folder', input: 'policies.solver.init: a folder without checkpoint.json', names: 'model-empty', run: () => start(modelConfigs.empty) },
    { category: 'model folder', input: 'policies.solver.init: a manifest of another format', names: 'model-bad', run: () => start(modelConfigs.bad) },
    { category: 'model folder', input: 'policies.solver.init: a folder that does not exist', names: 'no-such-model', run: () => start(modelConfigs.missing) },
    // export paths
    { category: 'export path', input: 'an existing file without --force', names: 'existing.parquet', run: () => exportTo(files.existing) },
    { category: 'export path', input: 'a folder that does not exist', names: 'no-such-folder', run: () => exportTo(path.join(sandbox, 'no-such-folder', 'x.parquet')) },
    { category: 'export path', input: 'a path that is a folder', names: 'folder', run: () => exportTo(path.join(sandbox, 'model-empty')) },
    { category: 'export path', input: '`..` out of the chosen folder (to a missing place)', names: 'out', run: () => exportTo(path.join(sandbox, 'model-empty', '..', '..', 'nowhere', 'x.parquet')) },
    { category: 'export path', input: 'a symlink out of the chosen folder, onto an existing file', names: 'out', run: () => (fs.writeFileSync(path.join(outside, 'taken.parquet'), 'x'), exportTo(path.join(sandbox, 'link-out', 'taken.parquet'))) },
    { category: 'export path', input: 'an unwritable place (/proc)', names: 'out', run: () => exportTo(readOnlyMount) },
    { category: 'export path', input: 'the experiment database itself', names: 'database', run: () => exportTo(databasePath, { force: true }) },
  ];
  const results: BadInput[] = [];
  try {
    for (const c of cases) {
      const before = snapshotWrites(databasePath, sandbox);
      let error: string;
      try {
        error = (await c.run()).trim();
      } catch (thrown) {
        error = `(threw) ${(thrown as Error).message}`;
      }
      const after = snapshotWrites(databasePath, sandbox);
      results.push({ category: c.category, input: c.input, error, names: c.names, namesIt: error.includes(c.names) && !error.startsWith('(accepted'), nothingWritten: before === after });
    }
  } finally {
    await studio.close({ edges: [server] });
    fs.rmSync(outside, { recursive: true, force: true });
  }
  return results;
}

// ── load ───────────────────────────────────────────────────────────────────────────────────────

export interface LoadResult {
  clients: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  events: number;
  /** Every client received every event, in sequence order, with no gap. */
  allInOrder: boolean;
  clientsWithGaps: number;
  runsDone: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function load(dir: string, clients: number, steps: number): Promise<LoadResult> {
  fs.mkdirSync(dir, { recursive: true });
  const databasePath = path.join(dir, 'load.db');
  // As `marsrl serve` opens it, watching the database for the runs that `marsrl run` processes write.
  const studio = openStudio({ databasePath, transport: 'http', watch: { intervalMs: 200 } });
  const { store } = studio;
  const server = await createStudioServer({ service: studio.service, hub: studio.hub, port: 0, rendererDir: null, log: () => undefined });
  const received: number[][] = [];
  const sockets: WebSocket[] = [];
  try {
    await Promise.all(
      Array.from({ length: clients }, (_, i) =>
        new Promise<void>((resolve, reject) => {
          const ws = new WebSocket(`${server.url.replace('http', 'ws')}ws`);
          received[i] = [];
          ws.on('message', (data) => received[i].push((JSON.parse(data.toString()) as { seq: number }).seq));
          ws.once('open', () => resolve());
          ws.once('error', reject);
          sockets.push(ws);
        }),
      ),
    );
    const configPath = path.join(dir, 'run.yaml');
    fs.writeFileSync(configPath, YAML.stringify(trialConfig({ optimization: { steps, minibatch_size: 16, checkpoint_every: 0 }, eval: { every: 0, k: 2, problems: 3 } })));
    const runs = [marsrl(['run', '--config', configPath, '--db', databasePath]), marsrl(['run', '--config', configPath, '--db', databasePath])];
    let finished = 0;
    for (const r of runs) void r.done.then(() => finished++);
    const latencies: number[] = [];
    // The pages the UI loads while runs go: the runs table, then turn and episode pages of a run.
    let ids: number[] = [];
    const page = async (i: number) => {
      const method = i % 3 === 0 || ids.length === 0 ? 'listRuns' : i % 3 === 1 ? 'listTurns' : 'listEpisodes';
      const args = method === 'listRuns' ? [] : [{ runId: ids[i % ids.length], limit: 100 }];
      const t0 = performance.now();
      const response = await fetch(new URL(`/api/${method}`, server.url), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(args) });
      const body = (await response.json()) as { result?: { items?: { id: number }[] } };
      latencies.push(performance.now() - t0);
      if (method === 'listRuns') ids = (body.result?.items ?? []).map((r) => r.id);
    };
    // Four page requests in flight at a time, for as long as the runs write.
    let i = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (finished < runs.length) {
          await page(i++);
          await sleep(20);
        }
      }),
    );
    await sleep(1000);
    const total = Math.max(0, ...received.flat());
    const inOrder = (seqs: number[]) => seqs.length === total && seqs.every((s, k) => s === k + 1);
    const gaps = received.filter((r) => !inOrder(r)).length;
    const sorted = latencies.slice().sort((a, b) => a - b);
    const done = (store.db.prepare("SELECT COUNT(*) AS n FROM runs WHERE status = 'done'").get() as { n: number }).n;
    return { clients, requests: latencies.length, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? NaN, events: total, allInOrder: gaps === 0 && total > 0, clientsWithGaps: gaps, runsDone: done };
  } finally {
    for (const ws of sockets) ws.terminate();
    await studio.close({ edges: [server] });
  }
}

// ── the suite ──────────────────────────────────────────────────────────────────────────────────

export interface ReliabilityOptions {
  trials: number;
  seed: number;
  clients: number;
  loadSteps: number;
  faults: boolean;
  load: boolean;
  dir: string;
  log?: (line: string) => void;
}

export interface ReliabilityReport {
  bad_inputs: BadInput[];
  trials: TrialResult[];
  faults: FaultResult[];
  load: LoadResult | null;
}

/**
 * The (moment, victim) of trial i: every moment in turn, and the victims rotating so that each
 * moment's repeats hit another victim (10 trials: each moment with two different victims). The
 * seed decides where within each phase the kill lands.
 */
export function trialPlan(trials: number): { moment: Moment; victim: Victim }[] {
  return Array.from({ length: trials }, (_, i) => ({
    moment: MOMENTS[i % MOMENTS.length],
    victim: VICTIMS[((i % MOMENTS.length) + Math.floor(i / MOMENTS.length)) % VICTIMS.length],
  }));
}

export async function runReliability(options: ReliabilityOptions): Promise<ReliabilityReport> {
  const log = options.log ?? (() => undefined);
  const report: ReliabilityReport = { bad_inputs: [], trials: [], faults: [], load: null };
  const rng = new Rng(options.seed, 'reliability-moments');
  for (const [i, { moment, victim }] of trialPlan(options.trials).entries()) {
    const trial = await killTrial(path.join(options.dir, `trial-${i + 1}`), i + 1, moment, victim, rng);
    log(`trial ${i + 1}: kill ${victim} during ${moment}: ${trial.landed}; lost ${trial.lostLive} live / ${trial.lostAny} any; resumed ${trial.resumedToDone ? 'to done' : 'NOT to done'} (${trial.seconds.toFixed(1)} s)`);
    report.trials.push(trial);
  }
  if (options.faults) {
    const add = (f: FaultResult | FaultResult[]) => {
      for (const one of Array.isArray(f) ? f : [f]) {
        log(`${one.fault}: ${one.outcome}: ${one.detail}`);
        report.faults.push(one);
      }
    };
    add(await diskFull(path.join(options.dir, 'disk-full')));
    add(await corruptCheckpoint(path.join(options.dir, 'corrupt-one'), false));
    add(await corruptCheckpoint(path.join(options.dir, 'corrupt-all'), true));
    add(await lockedDatabase(path.join(options.dir, 'locked')));
    add(await doubleResume(path.join(options.dir, 'double-resume')));
  }
  report.bad_inputs = await badInputs(path.join(options.dir, 'bad-inputs'));
  log(`bad inputs: ${report.bad_inputs.length}, named ${report.bad_inputs.filter((b) => b.namesIt).length}, nothing written ${report.bad_inputs.filter((b) => b.nothingWritten).length}`);
  if (options.load) {
    report.load = await load(path.join(options.dir, 'load'), options.clients, options.loadSteps);
    log(`load: ${JSON.stringify(report.load)}`);
  }
  return report;
}

/** The tables the bench prints; also prints a report saved with --json. */
export function printTable(report: ReliabilityReport): void {
  const lines: string[] = [];
  lines.push('Kill trials (SIGKILL, then marsrl resume):');
  lines.push('| # | moment | victim | landed | integrity | committed | lost (live) | lost (any) | one attempt/step | resumed to done |');
  lines.push('|---|---|---|---|---|---:|---:|---:|---|---|');
  for (const t of report.trials) {
    lines.push(`| ${t.trial} | ${t.moment} | ${t.victim} | ${t.landed} | ${t.integrity} | ${t.committedBefore} | ${t.lostLive} | ${t.lostAny} | ${t.oneAttemptPerStep ? 'yes' : 'NO'} | ${t.resumedToDone ? 'yes' : 'NO'} |`);
  }
  const byMoment = new Map<string, TrialResult[]>();
  for (const t of report.trials) byMoment.set(`${t.moment}/${t.victim}`, [...(byMoment.get(`${t.moment}/${t.victim}`) ?? []), t]);
  lines.push('', '| moment/victim | trials | rows lost (live) | resumed to done |', '|---|---:|---:|---:|');
  for (const [key, list] of [...byMoment].sort()) lines.push(`| ${key} | ${list.length} | ${list.reduce((a, t) => a + t.lostLive, 0)} | ${list.filter((t) => t.resumedToDone).length}/${list.length} |`);
  if (report.faults.length) {
    lines.push('', 'Faults:', '| fault | outcome | integrity | detail |', '|---|---|---|---|');
    for (const f of report.faults) lines.push(`| ${f.fault} | ${f.outcome} | ${f.integrity ?? '—'} | ${f.detail.replace(/\|/g, '\\|')} |`);
  }
  const named = report.bad_inputs.filter((b) => b.namesIt).length;
  const clean = report.bad_inputs.filter((b) => b.nothingWritten).length;
  const cats = new Map<string, number>();
  for (const b of report.bad_inputs) cats.set(b.category, (cats.get(b.category) ?? 0) + 1);
  lines.push('', `Bad inputs: ${report.bad_inputs.length} (${[...cats].map(([c, n]) => `${c} ${n}`).join(', ')}); the error names the field/file: ${named}; nothing written: ${clean} (each message: --json)`);
  for (const b of report.bad_inputs.filter((x) => !x.namesIt || !x.nothingWritten)) lines.push(`  NOT OK: [${b.category}] ${b.input}: ${b.error.split('\n')[0]} (must name ${JSON.stringify(b.names)}${b.nothingWritten ? '' : '; something was written'})`);
  if (report.load) {
    const l = report.load;
    lines.push('', `Load: ${l.clients} WebSocket clients, ${l.requests} page requests while 2 runs wrote (${l.runsDone} done): p50 ${l.p50Ms.toFixed(1)} ms, p99 ${l.p99Ms.toFixed(1)} ms, max ${l.maxMs.toFixed(1)} ms; ${l.events} pushed events, every client got all in order: ${l.allInOrder ? 'yes' : `NO (${l.clientsWithGaps} clients with gaps)`}`);
  }
  console.log(lines.join('\n'));
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      trials: { type: 'string' },
      seed: { type: 'string', default: '17' },
      clients: { type: 'string' },
      quick: { type: 'boolean', default: false },
      'no-load': { type: 'boolean', default: false },
      'no-faults': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
    },
  });
  const whole = (name: string, raw: string | undefined, fallback: number, min: number) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number ≥ ${min} (got ${JSON.stringify(raw)})`);
    return n;
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-reliability-'));
  const options: ReliabilityOptions = {
    trials: whole('trials', values.trials, values.quick ? 2 : 10, 0),
    seed: whole('seed', values.seed, 17, 0),
    clients: whole('clients', values.clients, values.quick ? 8 : 50, 1),
    loadSteps: values.quick ? 2 : 4,
    faults: !values['no-faults'],
    load: !values['no-load'],
    dir,
    log: values.json ? undefined : (line) => console.log(line),
  };
  try {
    const report = await runReliability(options);
    if (values.json) console.log(JSON.stringify(report, null, 2));
    else printTable(report);
  } finally {
    if (values.keep) console.error(`kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}
