/**
 * The Ray Jobs REST client (issue 38) against the fake Ray server, and the fake against the texts
 * Ray 2.58.0's dashboard code writes (ray/dashboard/modules/job/*.py; the quoted strings below are
 * copied from that source).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyApprovals } from '../../src-main/engine/served/key-approvals';
import { RayError, RayJobsClient, isDuplicateSubmission, lastTracebackLine } from '../../src-main/engine/engines/ray/client';
import { closedPortUrl } from '../helpers/env';
import { FakeRay } from '../helpers/fake-ray';

let fake: FakeRay;
let client: RayJobsClient;

beforeAll(async () => {
  fake = await new FakeRay({ pendingMs: 30, stopWaitMs: 500 }).start();
  client = new RayJobsClient({ address: fake.address });
});
afterAll(() => fake.close());

async function raw(method: string, route: string, body?: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${fake.address}${route}`, { method, body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

describe('submit, status, logs, stop', () => {
  it('submits with the Studio\'s id and follows PENDING → RUNNING → SUCCEEDED with Ray\'s messages', async () => {
    const held = await new FakeRay({ pendingMs: 600_000 }).start();
    const client = new RayJobsClient({ address: held.address });
    try {
      const { submissionId, attached } = await client.submit({ entrypoint: "echo 'hello from the job'", submission_id: 'marsrl-1-aaaa-a1', runtime_env: { env_vars: { A: '1' } }, metadata: { marsrl_run: '1' }, entrypoint_num_cpus: 1 });
      expect([submissionId, attached]).toEqual(['marsrl-1-aaaa-a1', false]);
      const pending = await client.status(submissionId);
      // JobInfo.__post_init__ (common.py): resources requested and a runtime env.
      expect(pending.status).toBe('PENDING');
      expect(pending.message).toBe('Job has not started yet. It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available. It may be waiting for the runtime environment to be set up.');
      expect(await client.logs(submissionId)).toBe('');
      held.release(submissionId);
      await held.waitFor(submissionId, ['SUCCEEDED']);
      const done = await client.status(submissionId);
      expect(done).toMatchObject({ type: 'SUBMISSION', submission_id: submissionId, status: 'SUCCEEDED', message: 'Job finished successfully.', driver_exit_code: 0, error_type: null, metadata: { marsrl_run: '1' } });
      expect(done.end_time).toBeGreaterThanOrEqual(done.start_time!);
      expect(Object.keys(done)).toEqual(['type', 'job_id', 'submission_id', 'driver_info', 'status', 'entrypoint', 'message', 'error_type', 'start_time', 'end_time', 'metadata', 'runtime_env', 'driver_agent_http_address', 'driver_node_id', 'driver_exit_code']);
      const logs = await client.logs(submissionId);
      expect(logs).toMatch(/\tINFO job_manager\.py:\d+ -- Runtime env is setting up\.\n/);
      expect(logs).toContain(`Running entrypoint for job ${submissionId}: echo 'hello from the job'\n`);
      expect(logs.endsWith('hello from the job\n')).toBe(true);
      expect((await client.list()).map((j) => j.submission_id)).toContain(submissionId);
    } finally {
      await held.close();
    }
  });

  it('attaches when the same submission id is submitted again (a restarted Studio), for the head\'s 500 and an agent\'s 400', async () => {
    await client.submit({ entrypoint: 'sleep 5', submission_id: 'marsrl-dup-a1' });
    const again = await client.submit({ entrypoint: 'sleep 5', submission_id: 'marsrl-dup-a1' });
    expect(again).toEqual({ submissionId: 'marsrl-dup-a1', attached: true });
    // What Ray sends: the head relays the agent's 400 as a 500 (job_head.py JobAgentSubmissionClient._raise_error).
    const r = await raw('POST', '/api/jobs/', JSON.stringify({ entrypoint: 'true', submission_id: 'marsrl-dup-a1' }));
    expect(r.status).toBe(500);
    expect(r.type).toBe('text/plain; charset=utf-8');
    expect(r.text).toContain('RuntimeError: Request failed with status code 400: Traceback (most recent call last):');
    expect(r.text).toContain('ValueError: Job with submission_id marsrl-dup-a1 already exists. Please use a different submission_id.\n.');
    const agentDirect = await new FakeRay({ duplicateStatus: 400 }).start();
    try {
      const c = new RayJobsClient({ address: agentDirect.address });
      await c.submit({ entrypoint: 'true', submission_id: 'x-a1' });
      expect(await c.submit({ entrypoint: 'true', submission_id: 'x-a1' })).toEqual({ submissionId: 'x-a1', attached: true });
    } finally {
      await agentDirect.close();
    }
    await client.stop('marsrl-dup-a1');
  });

  it('stops a running job (STOPPED, final) and answers false for a finished one', async () => {
    await client.submit({ entrypoint: 'trap "" TERM; sleep 30', submission_id: 'marsrl-stop-a1' });
    await fake.waitFor('marsrl-stop-a1', ['RUNNING']);
    expect(await client.stop('marsrl-stop-a1')).toBe(true);
    // The entrypoint ignores SIGTERM: SIGKILL after RAY_JOB_STOP_WAIT_TIME_S.
    await fake.waitFor('marsrl-stop-a1', ['STOPPED'], 10_000);
    const stopped = await client.status('marsrl-stop-a1');
    expect([stopped.status, stopped.message]).toEqual(['STOPPED', 'Job was intentionally stopped.']);
    expect(await client.stop('marsrl-stop-a1')).toBe(false);
    expect((await client.status('marsrl-stop-a1')).status).toBe('STOPPED');
  });

  it('reports a failed entrypoint as Ray does: exit code, the last 10 log lines, JOB_ENTRYPOINT_COMMAND_ERROR', async () => {
    const script = 'for i in $(seq 1 15); do echo line $i; done; echo "ValueError: boom" >&2; exit 3';
    await client.submit({ entrypoint: script, submission_id: 'marsrl-fail-a1' });
    await fake.waitFor('marsrl-fail-a1', ['FAILED']);
    const job = await client.status('marsrl-fail-a1');
    expect(job.error_type).toBe('JOB_ENTRYPOINT_COMMAND_ERROR');
    expect(job.driver_exit_code).toBe(3);
    expect(job.message).toBe(`Job entrypoint command failed with exit code 3, last available logs (truncated to 20,000 chars):\n${['line 7', 'line 8', 'line 9', 'line 10', 'line 11', 'line 12', 'line 13', 'line 14', 'line 15', 'ValueError: boom'].join('\n')}\n`);
  });
});

describe('the log tail websocket', () => {
  it('streams the log as it is written and closes when the job has ended', async () => {
    const tailing = await new FakeRay({ pendingMs: 10, tailIntervalMs: 30 }).start();
    try {
      const c = new RayJobsClient({ address: tailing.address });
      await c.submit({ entrypoint: 'for i in $(seq 1 25); do echo "line $i"; sleep 0.01; done', submission_id: 'marsrl-tail-a1' });
      const frames: string[] = [];
      await c.tail('marsrl-tail-a1', (text) => frames.push(text));
      expect((await c.status('marsrl-tail-a1')).status).toBe('SUCCEEDED');
      expect(frames.join('')).toBe(await c.logs('marsrl-tail-a1'));
      // Chunks of at most 10 complete lines (file_tail_iterator).
      expect(frames.every((f) => f.endsWith('\n') && f.split('\n').length - 1 <= 10)).toBe(true);
      const missing = await c.tail('nope', () => undefined).catch((e) => e);
      expect([missing.code, missing.body]).toEqual(['not_found', 'Job nope does not exist']);
    } finally {
      await tailing.close();
    }
  });
});

describe('errors, named', () => {
  it('404 for an unknown job, with Ray\'s text', async () => {
    const r = await raw('GET', '/api/jobs/nope');
    expect([r.status, r.text]).toEqual([404, 'Job nope does not exist']);
    const error = await client.status('nope').catch((e) => e);
    expect(error).toBeInstanceOf(RayError);
    expect([error.code, error.status, error.body]).toEqual(['not_found', 404, 'Job nope does not exist']);
  });

  it('needs the trailing slash on POST /api/jobs/ (aiohttp route)', async () => {
    const r = await raw('POST', '/api/jobs', JSON.stringify({ entrypoint: 'true' }));
    expect([r.status, r.text]).toEqual([404, '404: Not Found']);
  });

  it('refuses bad submissions with Python\'s TypeErrors (JobSubmitRequest.__post_init__)', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ entrypoint: 'true', metadata: { a: 1 } }, "TypeError: metadata values must be strings, got <class 'int'>"],
      [{ entrypoint: 5 }, "TypeError: entrypoint must be a string, got <class 'int'>"],
      [{ entrypoint: 'true', colour: 'red' }, "TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument 'colour'"],
      [{ submission_id: 'x' }, "TypeError: JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'"],
      [{ entrypoint: 'true', entrypoint_num_gpus: '1' }, "TypeError: entrypoint_num_gpus must be a number, got <class 'str'>"],
    ];
    for (const [body, line] of cases) {
      const r = await raw('POST', '/api/jobs/', JSON.stringify(body));
      expect(r.status).toBe(400);
      expect(r.text.startsWith('Traceback (most recent call last):\n')).toBe(true);
      expect(lastTracebackLine(r.text)).toBe(line);
    }
    // Null keys are stripped before validation (parse_and_validate_request), so null metadata is fine.
    expect((await raw('POST', '/api/jobs/', JSON.stringify({ entrypoint: 'true', metadata: null }))).status).toBe(200);
    // The client refuses a non-string metadata value before sending.
    await expect(client.submit({ entrypoint: 'true', metadata: { a: 1 as unknown as string } })).rejects.toThrow(/metadata.a must be a string/);
  });

  it('says the cluster is unreachable, naming the field and the address', async () => {
    const address = (await closedPortUrl()).replace(/\/v1$/, '');
    const c = new RayJobsClient({ address });
    const error = await c.version().catch((e) => e);
    expect(error.code).toBe('unreachable');
    expect(error.message).toMatch(new RegExp(`^engine.address: cannot reach the Ray dashboard at ${address} \\(ECONNREFUSED\\)`));
    expect(isDuplicateSubmission(error)).toBe(false);
  });

  it('reports a 500 on logs (the driver\'s node is gone) without taking the client down', async () => {
    await client.submit({ entrypoint: 'echo hi', submission_id: 'marsrl-logs-a1' });
    await fake.waitFor('marsrl-logs-a1', ['SUCCEEDED']);
    fake.failLogs = true;
    try {
      const error = await client.logs('marsrl-logs-a1').catch((e) => e);
      expect([error.code, error.status]).toEqual(['server_error', 500]);
      expect(error.message).toMatch(/ClientConnectorError: Cannot connect to host/);
    } finally {
      fake.failLogs = false;
    }
    expect(await client.logs('marsrl-logs-a1')).toContain('hi\n');
  });
});

describe('a cluster token goes only to an approved host (issue 36 approvals)', () => {
  let secured: FakeRay;
  beforeAll(async () => {
    secured = await new FakeRay({ token: 's3cret' }).start();
  });
  afterAll(() => secured.close());

  it('answers 401/403 with Ray\'s texts (http_token_authentication.py)', async () => {
    const missing = await fetch(`${secured.address}/api/version`);
    expect([missing.status, await missing.text()]).toEqual([401, 'Unauthorized: Missing authentication token']);
    const wrong = await fetch(`${secured.address}/api/version`, { headers: { authorization: 'Bearer nope' } });
    expect([wrong.status, await wrong.text()]).toEqual([403, 'Forbidden: Invalid authentication token']);
  });

  it('refuses to send the token to a host nobody approved, and sends it where approved', async () => {
    const host = new URL(secured.address).host;
    const env = { RAY_AUTH_TOKEN: 's3cret' };
    const unapproved = new RayJobsClient({ address: secured.address, tokenEnv: 'RAY_AUTH_TOKEN', env, approvals: KeyApprovals.of({ RAY_AUTH_TOKEN: ['10.0.0.5:8265'] }) });
    const refused = await unapproved.version().catch((e) => e);
    expect(refused.code).toBe('token_refused');
    expect(refused.message).toContain(`engine.token_env: the API key variable RAY_AUTH_TOKEN is not approved for ${host}`);
    expect(refused.message).toContain(`marsrl secrets allow RAY_AUTH_TOKEN --host ${host}`);
    expect(refused.message).not.toContain('s3cret');
    // Nothing was sent: the refusal happens before the request.
    expect(secured.requests.filter((r) => r.headers.authorization?.includes('s3cret'))).toHaveLength(0);
    const approved = new RayJobsClient({ address: secured.address, tokenEnv: 'RAY_AUTH_TOKEN', env, approvals: KeyApprovals.of({ RAY_AUTH_TOKEN: [host] }) });
    expect((await approved.version()).ray_version).toBe('2.58.0');
    const wrong = new RayJobsClient({ address: secured.address, tokenEnv: 'RAY_AUTH_TOKEN', env: { RAY_AUTH_TOKEN: 'nope' }, approvals: KeyApprovals.of({ RAY_AUTH_TOKEN: [host] }) });
    expect((await wrong.version().catch((e) => e)).code).toBe('forbidden');
    const without = new RayJobsClient({ address: secured.address });
    const unauthorized = await without.version().catch((e) => e);
    expect(unauthorized.code).toBe('unauthorized');
    expect(unauthorized.message).toMatch(/set engine.token_env/);
    const unset = new RayJobsClient({ address: secured.address, tokenEnv: 'RAY_AUTH_TOKEN', env: {}, approvals: KeyApprovals.of({ RAY_AUTH_TOKEN: [host] }) });
    expect((await unset.version().catch((e) => e)).message).toMatch(/RAY_AUTH_TOKEN is not set/);
  });
});
