/**
 * A Ray head on this machine for `engine.address: local` (issue 38), started and stopped only by
 * the Studio.
 *
 * `ray stop` has no port scope: it kills every Ray process of the machine, a head the user started
 * included (ray/scripts/scripts.py `stop`). So the Studio never runs it. It starts the head as
 * `ray start --head --block` in a process group of its own and records that process; `--block`
 * makes the process a group leader with Ray's reaper beside it, which kills the rest of the group
 * when the leader dies (ray/_private/ray_process_reaper.py). Stopping signals that group — the
 * processes this head started, and nothing else. A head found running that the Studio did not
 * start (no record, or a record of another session) is used if asked, and never stopped.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isProcessAlive } from '../../store/liveness';
import { RayError, RayJobsClient } from './client';

export const LOCAL_HEAD_FILE = 'ray-head.json';

export interface LocalHeadRecord {
  format: 'marsrl-ray-head';
  /** The `ray start --head --block` process, leader of the head's process group. */
  pid: number;
  python: string;
  address: string;
  /** `/api/version`'s session_name: a head restarted since is another session. */
  sessionName: string;
  startedAt: number;
  logFile: string;
}

export interface LocalHeadOptions {
  python: string;
  /** The Studio's data folder: the record and the head's output log live there. */
  dataDir: string;
  dashboardPort?: number;
  gcsPort?: number;
  numGpus?: number;
  timeoutMs?: number;
}

export interface LocalHead {
  address: string;
  /** Whether this Studio started it (and so may stop it). */
  startedByStudio: boolean;
  sessionName: string;
}

function recordFile(dataDir: string): string {
  return path.join(dataDir, LOCAL_HEAD_FILE);
}

export function readHeadRecord(dataDir: string): LocalHeadRecord | null {
  try {
    const json = JSON.parse(fs.readFileSync(recordFile(dataDir), 'utf8')) as LocalHeadRecord;
    return json.format === 'marsrl-ray-head' && Number.isInteger(json.pid) ? json : null;
  } catch {
    return null;
  }
}

/** Starts a head unless one answers on the dashboard port; a running head is reported, with whether the Studio started it. */
export async function ensureLocalHead(options: LocalHeadOptions): Promise<LocalHead> {
  const dashboardPort = options.dashboardPort ?? 8265;
  const address = `http://127.0.0.1:${dashboardPort}`;
  const client = new RayJobsClient({ address, timeoutMs: 5000, field: 'engine.address' });
  const record = readHeadRecord(options.dataDir);
  try {
    const v = await client.version();
    const ours = record !== null && record.sessionName === v.session_name && isProcessAlive(record.pid);
    return { address, startedByStudio: ours, sessionName: v.session_name };
  } catch (error) {
    if (!(error instanceof RayError) || error.code !== 'unreachable') throw error;
  }
  fs.mkdirSync(options.dataDir, { recursive: true });
  const logFile = path.join(options.dataDir, 'ray-head.log');
  const log = fs.openSync(logFile, 'a');
  const args = [
    '-m', 'ray.scripts.scripts', 'start', '--head', '--block',
    `--port=${options.gcsPort ?? 6379}`, '--dashboard-host=127.0.0.1', `--dashboard-port=${dashboardPort}`, '--disable-usage-stats',
    ...(options.numGpus !== undefined ? [`--num-gpus=${options.numGpus}`] : []),
  ];
  const start = fs.statSync(logFile).size;
  const child = spawn(options.python, args, { detached: true, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  let exited: number | null = null;
  child.on('exit', (code) => (exited = code ?? -1));
  child.on('error', () => (exited = -1));
  child.unref();
  const output = () => fs.readFileSync(logFile, 'utf8').slice(start);
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    try {
      const v = await client.version();
      const rec: LocalHeadRecord = { format: 'marsrl-ray-head', pid: child.pid!, python: options.python, address, sessionName: v.session_name, startedAt: Date.now(), logFile };
      fs.writeFileSync(recordFile(options.dataDir), `${JSON.stringify(rec, null, 2)}\n`);
      return { address, startedByStudio: true, sessionName: v.session_name };
    } catch (error) {
      if (!(error instanceof RayError) || (error.code !== 'unreachable' && error.code !== 'timeout')) throw error;
    }
    if (exited !== null) {
      const text = output();
      if (text.includes('already running at')) {
        throw new Error(`engine.address: a Ray head started outside the Studio already runs on this machine (${lastLine(text)}); use it with --set engine.address=http://127.0.0.1:${dashboardPort} if its dashboard is on, or stop it yourself`);
      }
      throw new Error(`engine.address: ray start --head failed (exit ${exited}): ${lastLine(text)} (whole output in ${logFile})`);
    }
    if (Date.now() > deadline) {
      stopGroup(child.pid!);
      throw new Error(`engine.address: the local Ray head did not answer on ${address} within ${Math.round((options.timeoutMs ?? 120_000) / 1000)} s; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter((l) => l.trim()).slice(-1)[0] ?? '(no output)';
}

function stopGroup(pid: number, signal: NodeJS.Signals = 'SIGTERM'): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/**
 * Stops the head this Studio started: its process group, SIGTERM then SIGKILL after `graceMs`.
 * A head it did not start, or one restarted since (another session), is left alone.
 */
export async function stopLocalHead(dataDir: string, graceMs = 15_000): Promise<'stopped' | 'not_ours' | 'not_running'> {
  const record = readHeadRecord(dataDir);
  if (record === null) return 'not_ours';
  if (!isProcessAlive(record.pid)) {
    fs.rmSync(recordFile(dataDir), { force: true });
    return 'not_running';
  }
  try {
    const v = await new RayJobsClient({ address: record.address, timeoutMs: 5000 }).version();
    if (v.session_name !== record.sessionName) return 'not_ours';
  } catch {
    // The dashboard is down but our process lives: still ours to stop.
  }
  stopGroup(record.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isProcessAlive(record.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (isProcessAlive(record.pid)) stopGroup(record.pid, 'SIGKILL');
  fs.rmSync(recordFile(dataDir), { force: true });
  return 'stopped';
}
