/**
 * A faithful fake of Ray's Jobs REST API for tests (issue 38): a loopback Node HTTP server with the
 * routes, bodies, status codes, error texts and state rules of Ray 2.58.0's dashboard
 * (ray/dashboard/modules/job/job_head.py, job_agent.py, job_manager.py, job_supervisor.py,
 * common.py, pydantic_models.py; the token middleware of _private/authentication/
 * http_token_authentication.py), that runs each job's entrypoint as a real `/bin/sh -c` subprocess
 * in a session of its own, its stdout and stderr appended to the job's log, as the supervisor does.
 *
 * What it reproduces, with the source it follows:
 *  - routes: POST /api/jobs/ (the trailing slash is the route; aiohttp answers "404: Not Found"
 *    without it), GET /api/jobs/, GET/DELETE /api/jobs/{id}, GET /api/jobs/{id}/logs,
 *    POST /api/jobs/{id}/stop, the /logs/tail websocket, GET /api/version;
 *  - bodies serialized as Python's json.dumps (", " and ": " separators, ASCII escapes), error
 *    bodies text/plain: a traceback for 400/500, `Job {id} does not exist` for 404;
 *  - submit validation (`parse_and_validate_request`: null keys stripped, `JobSubmitRequest.__post_init__`
 *    TypeErrors, unknown keys), a duplicate submission_id refused by the agent (400 ValueError) and
 *    relayed by the head as 500 (`_raise_error`'s "Request failed with status code 400: ….");
 *  - PENDING → RUNNING → SUCCEEDED | FAILED | STOPPED with `JobInfo.__post_init__`'s default
 *    messages, terminal states final (`put_status` raises on a change), `end_time` at the end,
 *    FAILED's message with the last 10 log lines (`get_last_n_log_lines`, ≤ 20,000 chars);
 *  - stop: {"stopped": true} while the supervisor lives (SIGTERM to the process group, SIGKILL
 *    after RAY_JOB_STOP_WAIT_TIME_S), {"stopped": false} on a finished job;
 *  - logs: {"logs": ""} before a driver exists, the whole file after;
 *  - a token mode (401 "Unauthorized: Missing authentication token", 403 "Forbidden: Invalid
 *    authentication token"), and faults: the server down (connection refused), logs failing with 500.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { WebSocketServer } from 'ws';
import { pythonFloatRepr } from '../../src-main/engine/engines/hydra';

export type FakeStatus = 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED';

interface FakeJob {
  submissionId: string;
  driverId: string | null;
  entrypoint: string;
  status: FakeStatus;
  message: string | null;
  errorType: string | null;
  startTime: number;
  endTime: number | null;
  metadata: Record<string, string> | null;
  runtimeEnv: Record<string, unknown> | null;
  entrypointNumCpus: number;
  entrypointNumGpus: number;
  entrypointMemory: number;
  entrypointResources: Record<string, number> | null;
  driverAgentHttpAddress: string | null;
  driverNodeId: string | null;
  driverExitCode: number | null;
  logFile: string;
  child: ChildProcess | null;
  stopping: boolean;
}

export interface FakeRayOptions {
  /** Port to listen on (0: any free port). */
  port?: number;
  /** A cluster token: requests need `Authorization: Bearer <token>`. */
  token?: string;
  /** Milliseconds a job stays PENDING before its driver starts (default 50). */
  pendingMs?: number;
  /** RAY_JOB_STOP_WAIT_TIME_S in milliseconds (default 3000, Ray's DEFAULT_RAY_JOB_STOP_WAIT_TIME_S). */
  stopWaitMs?: number;
  /** Status of a duplicate submission: 500 through the head (Ray's behaviour), 400 straight from an agent. */
  duplicateStatus?: 400 | 500;
  /** Extra environment for every entrypoint (e.g. PATH for a stand-in interpreter). */
  env?: Record<string, string>;
  /** Seconds between websocket tail reads (Ray sleeps 1 s at EOF). */
  tailIntervalMs?: number;
}

const RAY_VERSION = '2.58.0';
const RAY_COMMIT = 'cec0a091b12675bbf101cf8a350c8706107baee1';
const NODE_ID = 'a3f0c1d2e4b5968778695a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f';

// ── Python's json.dumps ────────────────────────────────────────────────────────────────────────

/** `json.dumps(value)` with Python's defaults: ", " / ": " separators, ensure_ascii=True. */
export function pyDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pyFloat(value);
  if (typeof value === 'string') return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (Array.isArray(value)) return `[${value.map(pyDumps).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${pyDumps(k)}: ${pyDumps(v)}`)
    .join(', ')}}`;
}

/** Python's float repr, as json.dumps writes floats (NaN/Infinity as its bare tokens). */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  return pythonFloatRepr(x);
}

/** Python's `type(v)` as `<class 'int'>`. */
function pyType(v: unknown): string {
  if (v === null) return "<class 'NoneType'>";
  if (typeof v === 'boolean') return "<class 'bool'>";
  if (typeof v === 'number') return Number.isInteger(v) ? "<class 'int'>" : "<class 'float'>";
  if (typeof v === 'string') return "<class 'str'>";
  if (Array.isArray(v)) return "<class 'list'>";
  return "<class 'dict'>";
}

// ── Tracebacks as Ray's handlers format them ────────────────────────────────────────────────────

const SITE = '/home/ray/anaconda3/lib/python3.11/site-packages/ray/dashboard/modules/job';

/** A frame of a traceback: where, the source line, and the line of carets Python 3.11 prints under it. */
interface PyFrame {
  file: string;
  line: number;
  fn: string;
  code?: string;
  carets?: string;
}

/** A traceback as Python prints it: the frames, innermost last, then the exception's line. */
function pyTraceback(frames: PyFrame[], error: string): string {
  const lines = ['Traceback (most recent call last):'];
  for (const f of frames) {
    lines.push(`  File "${f.file}", line ${f.line}, in ${f.fn}`);
    if (f.code !== undefined) lines.push(`    ${f.code}`);
    if (f.carets !== undefined) lines.push(f.carets);
  }
  return [...lines, error, ''].join('\n');
}

function validationTraceback(error: string): string {
  const frames: PyFrame[] = [
    { file: `${SITE}/utils.py`, line: 128, fn: 'parse_and_validate_request', code: 'return validate_request_type(json_data, request_type)', carets: '           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^' },
    { file: `${SITE}/common.py`, line: 412, fn: 'validate_request_type', code: 'return request_type(**json_data)', carets: '           ^^^^^^^^^^^^^^^^^^^^^^^^^' },
  ];
  if (!error.startsWith('TypeError: JobSubmitRequest.__init__()')) frames.push({ file: '<string>', line: 13, fn: '__init__' }, { file: `${SITE}/common.py`, line: 466, fn: '__post_init__', code: 'raise TypeError(' });
  return pyTraceback(frames, error);
}

function duplicateTraceback(id: string, status: 400 | 500): string {
  const agent = pyTraceback(
    [
      { file: `${SITE}/job_agent.py`, line: 45, fn: 'submit_job', code: 'submission_id = await self.get_job_manager().submit_job(', carets: '                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^' },
      { file: `${SITE}/job_manager.py`, line: 555, fn: 'submit_job', code: 'raise ValueError(' },
    ],
    `ValueError: Job with submission_id ${id} already exists. Please use a different submission_id.`,
  );
  if (status === 400) return agent;
  return pyTraceback(
    [
      { file: `${SITE}/job_head.py`, line: 406, fn: 'submit_job', code: 'resp = await job_agent_client.submit_job_internal(submit_request)', carets: '           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^' },
      { file: `${SITE}/job_head.py`, line: 138, fn: 'submit_job_internal', code: 'await self._raise_error(resp)' },
      { file: `${SITE}/job_head.py`, line: 127, fn: '_raise_error', code: 'raise RuntimeError(f"Request failed with status code {status}: {error_text}.")' },
    ],
    `RuntimeError: Request failed with status code 400: ${agent}.`,
  );
}

const SUBMIT_FIELDS = ['entrypoint', 'submission_id', 'job_id', 'runtime_env', 'metadata', 'entrypoint_num_cpus', 'entrypoint_num_gpus', 'entrypoint_memory', 'entrypoint_resources', 'entrypoint_label_selector'];

/** `JobSubmitRequest(**json)` and its `__post_init__` checks: the TypeError line, or null. */
function submitRequestError(body: Record<string, unknown>): string | null {
  for (const key of Object.keys(body)) if (!SUBMIT_FIELDS.includes(key)) return `TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument '${key}'`;
  if (!('entrypoint' in body)) return "TypeError: JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'";
  const isDict = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (typeof body.entrypoint !== 'string') return `TypeError: entrypoint must be a string, got ${pyType(body.entrypoint)}`;
  if ('submission_id' in body && typeof body.submission_id !== 'string') return `TypeError: submission_id must be a string if provided, got ${pyType(body.submission_id)}`;
  if ('job_id' in body && typeof body.job_id !== 'string') return `TypeError: job_id must be a string if provided, got ${pyType(body.job_id)}`;
  if ('runtime_env' in body && !isDict(body.runtime_env)) return `TypeError: runtime_env must be a dict, got ${pyType(body.runtime_env)}`;
  if ('metadata' in body) {
    if (!isDict(body.metadata)) return `TypeError: metadata must be a dict, got ${pyType(body.metadata)}`;
    for (const v of Object.values(body.metadata as Record<string, unknown>)) if (typeof v !== 'string') return `TypeError: metadata values must be strings, got ${pyType(v)}`;
  }
  for (const k of ['entrypoint_num_cpus', 'entrypoint_num_gpus']) {
    if (k in body && (typeof body[k] !== 'number' || typeof body[k] === 'boolean')) return `TypeError: ${k} must be a number, got ${pyType(body[k])}`;
  }
  if ('entrypoint_memory' in body && !Number.isInteger(body.entrypoint_memory)) return `TypeError: entrypoint_memory must be an integer, got ${pyType(body.entrypoint_memory)}`;
  if ('entrypoint_resources' in body) {
    if (!isDict(body.entrypoint_resources)) return `TypeError: entrypoint_resources must be a dict, got ${pyType(body.entrypoint_resources)}`;
    for (const v of Object.values(body.entrypoint_resources as Record<string, unknown>)) if (typeof v !== 'number') return `TypeError: entrypoint_resources values must be numbers, got ${pyType(v)}`;
  }
  return null;
}

/** `JobInfo.__post_init__`'s message for a status without one. */
function defaultMessage(job: FakeJob): string {
  switch (job.status) {
    case 'PENDING': {
      let m = 'Job has not started yet.';
      if (job.entrypointNumCpus > 0 || job.entrypointNumGpus > 0 || job.entrypointMemory > 0 || (job.entrypointResources && Object.keys(job.entrypointResources).length > 0)) {
        m += ' It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available.';
      }
      if (job.runtimeEnv && Object.keys(job.runtimeEnv).length > 0) m += ' It may be waiting for the runtime environment to be set up.';
      return m;
    }
    case 'RUNNING':
      return 'Job is currently running.';
    case 'STOPPED':
      return 'Job was intentionally stopped.';
    case 'SUCCEEDED':
      return 'Job finished successfully.';
    case 'FAILED':
      return 'Job failed.';
  }
}

function isTerminal(s: FakeStatus): boolean {
  return s === 'STOPPED' || s === 'SUCCEEDED' || s === 'FAILED';
}

/** Ray's runtime_env env_vars may reference existing variables as ${VAR}. */
function expandEnv(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? '');
}

/** `LOGGER_FORMAT` (ray_constants.py): "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s". */
function loggerLine(message: string): string {
  const d = new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())},${p(d.getMilliseconds(), 3)}`;
  return `${stamp}\tINFO job_manager.py:568 -- ${message}\n`;
}

export class FakeRay {
  readonly jobs = new Map<string, FakeJob>();
  readonly requests: { method: string; path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  private server: http.Server | null = null;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly logDir: string;
  private driverCounter = 1;
  private port = 0;
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Make GET /logs fail with a 500 traceback (the driver's node is gone). */
  failLogs = false;

  constructor(private readonly options: FakeRayOptions = {}) {
    this.port = options.port ?? 0;
    this.logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-ray-logs-'));
  }

  get address(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port || this.options.port || 0, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** The dashboard goes away (connection refused); jobs keep running. */
  async goDown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The dashboard answers again on the same port. */
  async comeBack(): Promise<void> {
    await this.start();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    for (const job of this.jobs.values()) if (job.child && job.child.exitCode === null) killGroup(job.child, 'SIGKILL');
    await this.goDown();
    this.wss.close();
    fs.rmSync(this.logDir, { recursive: true, force: true });
  }

  /** Starts a PENDING job's driver now (tests that look at PENDING hold jobs with a long pendingMs). */
  release(id: string): void {
    const job = this.jobs.get(id);
    if (job) this.run(job);
  }

  /** Waits until a job reaches one of `statuses`. */
  async waitFor(id: string, statuses: FakeStatus[], timeoutMs = 30_000): Promise<FakeStatus> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = this.jobs.get(id)?.status;
      if (s && statuses.includes(s)) return s;
      if (Date.now() > deadline) throw new Error(`fake ray: job ${id} still ${s} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  logOf(id: string): string {
    const job = this.jobs.get(id);
    return job && fs.existsSync(job.logFile) ? fs.readFileSync(job.logFile, 'utf8') : '';
  }

  // ── HTTP ──────────────────────────────────────────────────────────────────────────────────────

  private send(res: http.ServerResponse, status: number, body: string, json: boolean): void {
    res.writeHead(status, { 'Content-Type': `${json ? 'application/json' : 'text/plain'}; charset=utf-8`, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }

  /** The token middleware (http_token_authentication.py): Authorization, X-Ray-Authorization, then the cookie. */
  private authRefusal(req: http.IncomingMessage): [number, string] | null {
    const token = this.options.token;
    if (token === undefined || req.url === '/api/healthz') return null;
    let header = (req.headers.authorization as string | undefined) ?? (req.headers['x-ray-authorization'] as string | undefined) ?? '';
    if (!header) {
      const cookie = /(?:^|;\s*)ray-authentication-token=([^;]+)/.exec(req.headers.cookie ?? '');
      if (cookie) header = `Bearer ${cookie[1]}`;
    }
    if (!header) return [401, 'Unauthorized: Missing authentication token'];
    if (header !== `Bearer ${token}`) return [403, 'Forbidden: Invalid authentication token'];
    return null;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    this.requests.push({ method: req.method ?? '', path: url.pathname, headers: req.headers, body });
    const refused = this.authRefusal(req);
    if (refused) return this.send(res, refused[0], refused[1], false);
    const p = url.pathname;
    const method = req.method ?? 'GET';
    const job = /^\/api\/jobs\/([^/]+)$/.exec(p);
    const logs = /^\/api\/jobs\/([^/]+)\/logs$/.exec(p);
    const stop = /^\/api\/jobs\/([^/]+)\/stop$/.exec(p);
    const route = (allowed: string[], fn: () => void) => (allowed.includes(method) ? fn() : this.send(res, 405, '405: Method Not Allowed', false));
    if (p === '/api/version') return route(['GET'], () => this.send(res, 200, pyDumps({ version: '4', ray_version: RAY_VERSION, ray_commit: RAY_COMMIT, session_name: `session_fake_${this.logDir.slice(-6)}` }), true));
    if (p === '/api/jobs/') return route(['GET', 'POST'], () => (method === 'POST' ? this.submit(res, body) : this.send(res, 200, pyDumps([...this.jobs.values()].map((j) => this.details(j))), true)));
    if (job) return route(['GET', 'DELETE'], () => (method === 'GET' ? this.getJob(res, decodeURIComponent(job[1])) : this.deleteJob(res, decodeURIComponent(job[1]))));
    if (logs) return route(['GET'], () => this.getLogs(res, decodeURIComponent(logs[1])));
    if (stop) return route(['POST'], () => this.stopJob(res, decodeURIComponent(stop[1])));
    this.send(res, 404, '404: Not Found', false);
  }

  private find(id: string): FakeJob | null {
    const direct = this.jobs.get(id);
    if (direct) return direct;
    return [...this.jobs.values()].find((j) => j.driverId === id) ?? null;
  }

  details(job: FakeJob): Record<string, unknown> {
    return {
      type: 'SUBMISSION',
      job_id: job.driverId,
      submission_id: job.submissionId,
      driver_info: job.driverId && job.child ? { id: job.driverId, node_ip_address: '127.0.0.1', pid: String(job.child.pid) } : null,
      status: job.status,
      entrypoint: job.entrypoint,
      message: job.message ?? defaultMessage(job),
      error_type: job.errorType,
      start_time: job.startTime,
      end_time: job.endTime,
      metadata: job.metadata,
      runtime_env: job.runtimeEnv,
      driver_agent_http_address: job.driverAgentHttpAddress,
      driver_node_id: job.driverNodeId,
      driver_exit_code: job.driverExitCode,
    };
  }

  private submit(res: http.ServerResponse, text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // `await req.json()` raises outside the handler's try: aiohttp's own 500.
      return this.send(res, 500, '500 Internal Server Error\n\nServer got itself in trouble', false);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return this.send(res, 500, '500 Internal Server Error\n\nServer got itself in trouble', false);
    }
    const bodyObj = Object.fromEntries(Object.entries(parsed as Record<string, unknown>).filter(([, v]) => v !== null));
    const error = submitRequestError(bodyObj);
    if (error) return this.send(res, 400, validationTraceback(error), false);
    const id = (bodyObj.submission_id as string | undefined) ?? (bodyObj.job_id as string | undefined) ?? `raysubmit_${randomId()}`;
    if (this.jobs.has(id)) return this.send(res, this.options.duplicateStatus ?? 500, duplicateTraceback(id, this.options.duplicateStatus ?? 500), false);
    const job: FakeJob = {
      submissionId: id,
      driverId: null,
      entrypoint: bodyObj.entrypoint as string,
      status: 'PENDING',
      message: null,
      errorType: null,
      startTime: Date.now(),
      endTime: null,
      metadata: (bodyObj.metadata as Record<string, string> | undefined) ?? null,
      runtimeEnv: (bodyObj.runtime_env as Record<string, unknown> | undefined) ?? null,
      entrypointNumCpus: (bodyObj.entrypoint_num_cpus as number | undefined) ?? 0,
      entrypointNumGpus: (bodyObj.entrypoint_num_gpus as number | undefined) ?? 0,
      entrypointMemory: (bodyObj.entrypoint_memory as number | undefined) ?? 0,
      entrypointResources: (bodyObj.entrypoint_resources as Record<string, number> | undefined) ?? null,
      driverAgentHttpAddress: null,
      driverNodeId: null,
      driverExitCode: null,
      logFile: path.join(this.logDir, `job-driver-${id}.log`),
      child: null,
      stopping: false,
    };
    this.jobs.set(id, job);
    fs.writeFileSync(job.logFile, loggerLine('Runtime env is setting up.'));
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.run(job);
    }, this.options.pendingMs ?? 50);
    this.timers.add(timer);
    this.send(res, 200, pyDumps({ job_id: id, submission_id: id }), true);
  }

  /** `put_status`: a terminal state never changes. */
  private setStatus(job: FakeJob, status: FakeStatus, fields: Partial<FakeJob> = {}): void {
    if (isTerminal(job.status) && status !== job.status) throw new Error(`Attempted to change job status from a terminal state: ${job.status} -> ${status}`);
    Object.assign(job, { message: null, errorType: null, driverExitCode: null }, fields, { status });
    if (isTerminal(status)) job.endTime = Date.now();
  }

  private run(job: FakeJob): void {
    if (job.status !== 'PENDING' || this.closed) return;
    const runtimeEnv = (job.runtimeEnv ?? {}) as { env_vars?: Record<string, string>; worker_process_setup_hook?: string };
    const env: NodeJS.ProcessEnv = { ...process.env, ...this.options.env };
    for (const [k, v] of Object.entries(runtimeEnv.env_vars ?? {})) env[k] = expandEnv(String(v), env);
    // What the supervisor sets (job_supervisor.py): the cluster address, unbuffered Python, and
    // the setup hook's module for the workers (ray_constants.WORKER_PROCESS_SETUP_HOOK_ENV_VAR).
    env.RAY_ADDRESS = '127.0.0.1:6379';
    env.PYTHONUNBUFFERED = '1';
    env.RAY_JOB_SUBMISSION_ID = job.submissionId;
    if (runtimeEnv.worker_process_setup_hook) env.__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR = runtimeEnv.worker_process_setup_hook;
    fs.appendFileSync(job.logFile, `Running entrypoint for job ${job.submissionId}: ${job.entrypoint}\n`);
    const out = fs.openSync(job.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', job.entrypoint], { env, stdio: ['ignore', out, out], detached: true });
    } catch (error) {
      fs.closeSync(out);
      this.setStatus(job, 'FAILED', { message: pyTraceback([{ file: `${SITE}/job_supervisor.py`, line: 380, fn: 'run' }], (error as Error).message), errorType: 'JOB_ENTRYPOINT_COMMAND_START_ERROR' });
      return;
    }
    fs.closeSync(out);
    job.child = child;
    job.driverId = `0${this.driverCounter++}000000`.slice(-8);
    this.setStatus(job, 'RUNNING', { driverAgentHttpAddress: 'http://127.0.0.1:52365', driverNodeId: NODE_ID });
    child.on('exit', (code, signal) => this.exited(job, code, signal));
  }

  private exited(job: FakeJob, code: number | null, signal: NodeJS.Signals | null): void {
    if (job.stopping) {
      this.setStatus(job, 'STOPPED');
      return;
    }
    // A shell killed by a signal reports 128+n; Popen.wait() gives -n.
    const rc = code ?? (signal ? -(os.constants.signals[signal] ?? 1) : 1);
    if (rc === 0) {
      this.setStatus(job, 'SUCCEEDED', { driverExitCode: 0 });
      return;
    }
    const tail = lastLines(this.logOf(job.submissionId), 10, 20_000);
    const message = tail !== '' ? `Job entrypoint command failed with exit code ${rc}, last available logs (truncated to 20,000 chars):\n${tail}` : `Job entrypoint command failed with exit code ${rc}. No logs available.`;
    this.setStatus(job, 'FAILED', { message, driverExitCode: rc, errorType: 'JOB_ENTRYPOINT_COMMAND_ERROR' });
  }

  private getJob(res: http.ServerResponse, id: string): void {
    const job = this.find(id);
    if (!job) return this.send(res, 404, `Job ${id} does not exist`, false);
    this.send(res, 200, pyDumps(this.details(job)), true);
  }

  private getLogs(res: http.ServerResponse, id: string): void {
    const job = this.find(id);
    if (!job) return this.send(res, 404, `Job ${id} does not exist`, false);
    if (this.failLogs) {
      return this.send(res, 500, pyTraceback([{ file: `${SITE}/job_head.py`, line: 594, fn: 'get_job_logs', code: 'await job_agent_client.get_job_logs_internal(job.submission_id)' }], "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 127.0.0.1:52365 ssl:default [Connect call failed ('127.0.0.1', 52365)]"), false);
    }
    const logs = job.driverAgentHttpAddress === null ? '' : this.logOf(job.submissionId);
    this.send(res, 200, pyDumps({ logs }), true);
  }

  private stopJob(res: http.ServerResponse, id: string): void {
    const job = this.find(id);
    if (!job) return this.send(res, 404, `Job ${id} does not exist`, false);
    // The supervisor actor lives until the job is terminal (it exits in run()'s finally).
    if (isTerminal(job.status)) return this.send(res, 200, pyDumps({ stopped: false }), true);
    job.stopping = true;
    if (job.status === 'PENDING' || !job.child) {
      this.setStatus(job, 'STOPPED');
    } else {
      const child = job.child;
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) killGroup(child, 'SIGKILL');
      }, this.options.stopWaitMs ?? 3000);
      child.once('exit', () => clearTimeout(timer));
    }
    this.send(res, 200, pyDumps({ stopped: true }), true);
  }

  private deleteJob(res: http.ServerResponse, id: string): void {
    const job = this.find(id);
    if (!job) return this.send(res, 404, `Job ${id} does not exist`, false);
    if (!isTerminal(job.status)) {
      return this.send(res, 500, pyTraceback([{ file: `${SITE}/job_manager.py`, line: 660, fn: 'delete_job', code: 'raise RuntimeError(' }], `RuntimeError: Attempted to delete job '${job.submissionId}', but it is in a non-terminal state ${job.status}.`), false);
    }
    this.jobs.delete(job.submissionId);
    this.send(res, 200, pyDumps({ deleted: true }), true);
  }

  // ── The logs/tail websocket ─────────────────────────────────────────────────────────────────

  private upgrade(req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer): void {
    const m = /^\/api\/jobs\/([^/]+)\/logs\/tail$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    const job = m ? this.find(decodeURIComponent(m[1])) : null;
    if (!job) {
      const text = m ? `Job ${decodeURIComponent(m[1])} does not exist` : '404: Not Found';
      socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      let offset = 0;
      let finished = false;
      const interval = this.options.tailIntervalMs ?? 1000;
      const tick = () => {
        if (ws.readyState !== ws.OPEN) return;
        if (job.driverAgentHttpAddress === null && isTerminal(job.status)) return ws.close();
        const text = this.logOf(job.submissionId);
        const lines = text.slice(offset).split(/(?<=\n)/).filter((l) => l.endsWith('\n'));
        // file_tail_iterator: chunks of at most 10 lines.
        for (let i = 0; i < lines.length; i += 10) ws.send(lines.slice(i, i + 10).join(''));
        offset += lines.join('').length;
        if (lines.length === 0) {
          if (finished) return ws.close();
          if (isTerminal(job.status)) finished = true;
        }
        setTimeout(tick, lines.length === 0 ? interval : 0);
      };
      tick();
    });
  }
}

function randomId(): string {
  const chars = 'ABCDEFGHJKMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz123456789';
  return Array.from(crypto.randomBytes(16), (b) => chars[b % chars.length]).join('');
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Gone.
    }
  }
}

/** `fast_tail_last_n_lines`: the last n lines, at most max_chars of them. */
function lastLines(text: string, n: number, maxChars: number): string {
  const lines = text.split(/(?<=\n)/);
  return lines.slice(-n).join('').slice(-maxChars);
}
