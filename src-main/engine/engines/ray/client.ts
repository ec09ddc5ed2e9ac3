/**
 * A Ray Jobs REST client (issue 38): fetch only, no Ray SDK, no Python. Routes and answers as Ray
 * 2.58.0's job_head.py serves them:
 *
 *   GET  /api/version                 reachability probe
 *   POST /api/jobs/                   submit (the trailing slash is the route; without it aiohttp answers 404)
 *   GET  /api/jobs/                   list
 *   GET  /api/jobs/{id}               status (JobDetails); 404 "Job {id} does not exist"
 *   GET  /api/jobs/{id}/logs          {"logs": whole driver log}
 *   POST /api/jobs/{id}/stop          {"stopped": bool}
 *
 * Errors are text/plain (a Python traceback for 400/500). A duplicate submission id is refused by
 * the head's agent (`JobManager.submit_job`: "Job with submission_id … already exists") and relayed
 * by the head as a 500 wrapping the agent's 400 (`JobAgentSubmissionClient._raise_error`); the
 * client treats any refusal whose text says so as "already submitted" and attaches.
 *
 * A cluster token (Ray ≥ 2.52, `RAY_AUTH_MODE=token`) is read from the variable `engine.token_env`
 * names and sent as `Authorization: Bearer …` only to a host approved on this machine
 * (served/key-approvals.ts, `marsrl secrets allow VAR --host HOST:PORT`).
 */
import { WebSocket } from 'ws';
import { KeyApprovals } from '../../served/key-approvals';
import type { JobDetails, JobSubmitRequest, VersionInfo } from './types';
import { JOB_STATUSES } from './types';

export type RayErrorCode = 'unreachable' | 'timeout' | 'token_refused' | 'unauthorized' | 'forbidden' | 'not_found' | 'bad_request' | 'server_error' | 'bad_response';

export class RayError extends Error {
  constructor(
    readonly code: RayErrorCode,
    message: string,
    /** HTTP status when Ray answered. */
    readonly status: number | null = null,
    /** Ray's own text (a traceback for 400/500), whole. */
    readonly body: string | null = null,
  ) {
    super(message);
    this.name = 'RayError';
  }
}

export interface RayClientOptions {
  /** The dashboard URL, e.g. http://127.0.0.1:8265. */
  address: string;
  /** The name of the variable holding the cluster token (engine.token_env). */
  tokenEnv?: string;
  /** This machine's approvals (served/key-approvals.ts loadKeyApprovals()). */
  approvals?: KeyApprovals;
  env?: NodeJS.ProcessEnv;
  /** Milliseconds before a request is abandoned (default 30 s; logs get 4×). */
  timeoutMs?: number;
  /** The config field the address came from, named in errors. */
  field?: string;
}

/** The last line of a Python traceback (`ValueError: …`), the part a person reads first. */
export function lastTracebackLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trimEnd()).filter((l) => l.trim() !== '' && l.trim() !== '.');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (/^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*:/.test(lines[i]) || /^[A-Za-z_][\w.]*Error$/.test(lines[i])) return lines[i];
  }
  return lines[lines.length - 1] ?? '';
}

/** Whether a refused submission is Ray's duplicate-id refusal (500 via the head, 400 from an agent). */
export function isDuplicateSubmission(error: unknown): boolean {
  return error instanceof RayError && (error.code === 'server_error' || error.code === 'bad_request') && /Job with submission_id .* already exists/.test(error.body ?? '');
}

export class RayJobsClient {
  readonly address: string;
  private readonly timeoutMs: number;
  private readonly field: string;

  constructor(private readonly options: RayClientOptions) {
    this.address = options.address.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.field = options.field ?? 'engine.address';
  }

  private headers(): Record<string, string> {
    const { tokenEnv } = this.options;
    if (tokenEnv === undefined) return {};
    const approvals = this.options.approvals ?? KeyApprovals.of({});
    if (!approvals.allows(tokenEnv, this.address)) throw new RayError('token_refused', approvals.refusal(tokenEnv, this.address, 'engine.token_env'));
    const value = (this.options.env ?? process.env)[tokenEnv];
    if (value === undefined || value === '') {
      throw new RayError('token_refused', `engine.token_env: the variable ${tokenEnv} is not set in the Studio's environment; export it (ray get-auth-token prints the cluster's token) or remove engine.token_env`);
    }
    return { authorization: `Bearer ${value}` };
  }

  private async request(method: 'GET' | 'POST', route: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<{ status: number; text: string }> {
    const url = `${this.address}${route}`;
    const headers: Record<string, string> = { ...this.headers(), accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    } catch (error) {
      const e = error as Error & { cause?: { code?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError') {
        throw new RayError('timeout', `${this.field}: the Ray dashboard at ${this.address} did not answer ${method} ${route} within ${Math.round(timeoutMs / 1000)} s`);
      }
      const code = e.cause?.code ?? e.message;
      throw new RayError('unreachable', `${this.field}: cannot reach the Ray dashboard at ${this.address} (${code}); is the cluster up and its dashboard on this address? (ray status on the head; the dashboard listens on port 8265 by default)`);
    }
    return { status: response.status, text: await response.text() };
  }

  private fail(method: string, route: string, status: number, text: string): never {
    const said = text.trim() === '' ? '' : `: ${lastTracebackLine(text)}`;
    if (status === 401) throw new RayError('unauthorized', `${this.field}: the cluster at ${this.address} needs a token (${text.trim()}); set engine.token_env to the variable holding it and approve it with marsrl secrets allow VAR --host ${hostPort(this.address)}`, status, text);
    if (status === 403) throw new RayError('forbidden', `engine.token_env: the cluster at ${this.address} refused the token (${text.trim()})`, status, text);
    if (status === 404) throw new RayError('not_found', `Ray answered ${method} ${route} with 404${said}`, status, text);
    if (status >= 400 && status < 500) throw new RayError('bad_request', `Ray refused ${method} ${route} (${status})${said}`, status, text);
    throw new RayError('server_error', `Ray failed ${method} ${route} (${status})${said}`, status, text);
  }

  private async json<T>(method: 'GET' | 'POST', route: string, body?: unknown, timeoutMs?: number): Promise<T> {
    const { status, text } = await this.request(method, route, body, timeoutMs);
    if (status !== 200) this.fail(method, route, status, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new RayError('bad_response', `${this.field}: ${this.address} answered ${method} ${route} with something that is not JSON; is it a Ray dashboard?`, status, text.slice(0, 2000));
    }
  }

  /** `GET /api/version`: also the readiness probe of a head that is starting. */
  async version(): Promise<VersionInfo> {
    const v = await this.json<VersionInfo>('GET', '/api/version');
    if (typeof v?.ray_version !== 'string') throw new RayError('bad_response', `${this.field}: ${this.address}/api/version is not a Ray dashboard's answer`);
    return v;
  }

  /**
   * Submits; a second submission with the same id (a restarted Studio) attaches to the job Ray
   * already has instead of failing.
   */
  async submit(request: JobSubmitRequest): Promise<{ submissionId: string; attached: boolean }> {
    if (request.metadata) {
      for (const [k, v] of Object.entries(request.metadata)) if (typeof v !== 'string') throw new Error(`metadata.${k} must be a string (Ray refuses other types)`);
    }
    try {
      const answer = await this.json<{ submission_id?: string; job_id?: string }>('POST', '/api/jobs/', stripNulls(request));
      const id = answer.submission_id ?? answer.job_id;
      if (typeof id !== 'string') throw new RayError('bad_response', `Ray's answer to the submission has no submission_id`);
      return { submissionId: id, attached: false };
    } catch (error) {
      if (request.submission_id !== undefined && isDuplicateSubmission(error)) return { submissionId: request.submission_id, attached: true };
      throw error;
    }
  }

  async status(id: string): Promise<JobDetails> {
    const details = await this.json<JobDetails>('GET', `/api/jobs/${encodeURIComponent(id)}`);
    if (!(JOB_STATUSES as readonly string[]).includes(details?.status)) throw new RayError('bad_response', `Ray's job ${id} has an unknown status ${JSON.stringify(details?.status)}`);
    return details;
  }

  /** The whole driver log (Ray has no offset parameter); "" while the job has no driver yet. */
  async logs(id: string): Promise<string> {
    const { logs } = await this.json<{ logs: string }>('GET', `/api/jobs/${encodeURIComponent(id)}/logs`, undefined, this.timeoutMs * 4);
    if (typeof logs !== 'string') throw new RayError('bad_response', `Ray's logs of job ${id} are not a string`);
    return logs;
  }

  /** Asks Ray to stop; true when the job's supervisor was alive (then it becomes STOPPED within seconds). */
  async stop(id: string): Promise<boolean> {
    const { stopped } = await this.json<{ stopped: boolean }>('POST', `/api/jobs/${encodeURIComponent(id)}/stop`);
    return stopped === true;
  }

  async list(): Promise<JobDetails[]> {
    const jobs = await this.json<JobDetails[]>('GET', '/api/jobs/');
    if (!Array.isArray(jobs)) throw new RayError('bad_response', 'Ray\'s job list is not a list');
    return jobs;
  }

  /**
   * Follows the job's log through `GET /api/jobs/{id}/logs/tail`, the websocket Ray streams it on
   * (job_head.py `tail_job_logs`: text frames of up to 10 newline-terminated lines, the socket
   * closed when the job has ended and the log is read). Resolves when the socket closes; a reconnect
   * starts from the log's beginning again, so callers keep their own offset. Not documented in
   * Ray's OpenAPI file; the Studio's follower polls `/logs` and uses this only to show the log live.
   */
  tail(id: string, onText: (text: string) => void, signal?: AbortSignal): Promise<void> {
    const url = `${this.address.replace(/^http/, 'ws')}/api/jobs/${encodeURIComponent(id)}/logs/tail`;
    return new Promise((resolve, reject) => {
      let headers: Record<string, string>;
      try {
        headers = this.headers();
      } catch (error) {
        reject(error);
        return;
      }
      const ws = new WebSocket(url, { headers });
      const abort = () => ws.close();
      signal?.addEventListener('abort', abort, { once: true });
      ws.on('message', (data) => onText(data.toString()));
      ws.on('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            this.fail('GET', `/api/jobs/${id}/logs/tail`, res.statusCode ?? 500, text);
          } catch (error) {
            reject(error);
          }
        });
      });
      ws.on('error', (error: Error & { code?: string }) => reject(new RayError('unreachable', `${this.field}: cannot follow the log of ${id} at ${this.address} (${error.code ?? error.message})`)));
      ws.on('close', () => {
        signal?.removeEventListener('abort', abort);
        resolve();
      });
    });
  }

  /** Polls `/api/version` until the dashboard answers (a head the Studio just started). */
  async waitUntilReady(timeoutMs: number, intervalMs = 500): Promise<VersionInfo> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let last: RayError;
      try {
        return await this.version();
      } catch (error) {
        if (!(error instanceof RayError) || (error.code !== 'unreachable' && error.code !== 'timeout' && error.code !== 'server_error')) throw error;
        last = error;
      }
      if (Date.now() >= deadline) throw new RayError('unreachable', `${this.field}: the Ray dashboard at ${this.address} did not come up within ${Math.round(timeoutMs / 1000)} s (${last.message})`);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

function stripNulls<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}

function hostPort(address: string): string {
  try {
    const u = new URL(address);
    return `${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
  } catch {
    return address;
  }
}
