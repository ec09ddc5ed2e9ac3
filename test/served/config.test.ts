import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src-main/engine/config/load';
import { resolveConfig, validateConfig } from '../../src-main/engine/preflight';
import { configSchemaInfo } from '../../src-main/engine/config/fields';
import { endpointEnvIssues, poolFromConfig, probeIssues } from '../../src-main/engine/served/config';
import { marsrl, MARSRL_BIN, REPO_ROOT } from '../helpers/cli';
import { approvals, approvedHome } from '../helpers/key-approvals';
import { tempDir } from '../helpers/tmp';
import { startFaultServer } from './fault-server';

const served = (extra: Record<string, unknown> = {}) => ({
  endpoints: {
    judges: { base_url: 'http://127.0.0.1:8001/v1', model: 'qwen3-32b', api_key_env: 'JUDGE_KEY', replicas: ['http://127.0.0.1:8002/v1'], concurrency: 16, sampling: { temperature: 0.6, top_p: 0.95, chat_template_kwargs: { enable_thinking: false } } },
  },
  policies: { solver: {}, judge: { endpoint: 'judges' } },
  agents: { verifier: 'judge', corrector: 'judge' },
  ...extra,
});

describe('endpoints in the run config', () => {
  it('resolves an endpoints block with defaults, and a policy pointing at it', () => {
    const config = resolveConfig(served());
    expect(config.endpoints!.judges).toMatchObject({ model: 'qwen3-32b', api_key_env: 'JUDGE_KEY', concurrency: 16, timeout_s: 120, retries: 3, replicas: ['http://127.0.0.1:8002/v1'] });
    expect(config.policies.judge.endpoint).toBe('judges');
    // Without the block nothing changes in the resolved config.
    expect('endpoints' in resolveConfig({})).toBe(false);
  });

  it("resolves a system block with MarsRL's defaults and names the field of each mistake in it", () => {
    expect(resolveConfig(served({ system: {} })).system).toEqual({ mode: 'loop', max_iterations: 10, approvals: 4, error_budget: 10, controls: true, metrics_every_s: 5 });
    expect('system' in resolveConfig({})).toBe(false);
    const result = validateConfig(served({ system: { mode: 'debate', approvals: 0, k: 1000, retries: 2 } }));
    expect(result.ok).toBe(false);
    const paths = result.ok ? [] : result.issues.map((i) => i.path).sort();
    expect(paths).toEqual(['system.approvals', 'system.k', 'system.mode', 'system.retries']);
  });

  it('names the field of every mistake, and never echoes a key pasted for a variable name', () => {
    const secret = 'sk-live-abcdefghijklmnop';
    const result = validateConfig({
      endpoints: { judges: { base_url: 'localhost:8000', model: '', api_key_env: secret, timeout_s: 0, api_key: 'x' } },
      policies: { solver: { endpoint: 'nowhere' } },
    });
    expect(result.ok).toBe(false);
    const issues = (result as { issues: Array<{ path: string; message: string; value?: unknown }> }).issues;
    const byPath = new Map(issues.map((i) => [i.path, i]));
    expect(byPath.get('endpoints.judges.base_url')?.message).toMatch(/http\(s\) URL including the API prefix/);
    expect(byPath.has('endpoints.judges.model')).toBe(true);
    expect(byPath.has('endpoints.judges.timeout_s')).toBe(true);
    expect(byPath.get('endpoints.judges.api_key')?.message).toMatch(/unknown key/);
    expect(byPath.get('endpoints.judges.api_key_env')?.message).toMatch(/NAME of an environment variable/);
    expect(JSON.stringify(issues)).not.toContain(secret);
    try {
      resolveConfig({ endpoints: { judges: { base_url: 'http://h/v1', model: 'm', api_key_env: secret } } });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).not.toContain(secret);
    }
    const dangling = validateConfig({ policies: { solver: { endpoint: 'nowhere' } } });
    expect((dangling as { issues: Array<{ path: string; message: string }> }).issues).toContainEqual({ path: 'policies.solver.endpoint', message: 'endpoint "nowhere" is not defined; defined endpoints: (none: add an endpoints block)', value: 'nowhere' });
  });

  it('reports a missing environment variable at validation, on api_key_env', () => {
    const config = resolveConfig(served());
    expect(endpointEnvIssues(config, {})).toEqual([{ path: 'endpoints.judges.api_key_env', message: 'the environment variable JUDGE_KEY is not set; export it with the API key of http://127.0.0.1:8001/v1 before starting the run' }]);
    expect(endpointEnvIssues(config, { JUDGE_KEY: 'k' }, approvals({ JUDGE_KEY: ['127.0.0.1:8001', '127.0.0.1:8002'] }))).toEqual([]);
  });

  it('keeps endpoints out of the generic form fields but offers the policy field', () => {
    const paths = configSchemaInfo().fields.map((f) => f.path);
    expect(paths.some((p) => p.startsWith('endpoints'))).toBe(false);
    expect(paths).toContain('policies.*.endpoint');
  });

  it('builds a pool mapping the roles to their endpoints, and the probe places its findings on fields', async () => {
    const server = await startFaultServer({ key: 'right-key-0123456789' });
    try {
      const config = resolveConfig({
        endpoints: {
          judges: { base_url: server.baseUrl, model: 'fault-model', api_key_env: 'JUDGE_KEY' },
          wrongmodel: { base_url: server.baseUrl, model: 'qwen3-32b', api_key_env: 'JUDGE_KEY' },
          down: { base_url: 'http://127.0.0.1:9/v1', model: 'm', timeout_s: 1 },
          badkey: { base_url: server.baseUrl, model: 'fault-model', api_key_env: 'OTHER_KEY' },
          unset: { base_url: server.baseUrl, model: 'fault-model', api_key_env: 'MARSRL_TEST_KEY_NEVER_SET' },
        },
        policies: { solver: {}, judge: { endpoint: 'judges' } },
        agents: { verifier: 'judge', corrector: 'judge' },
      });
      const pool = poolFromConfig(config, { env: { JUDGE_KEY: 'right-key-0123456789', OTHER_KEY: 'stale-key-0123456789' }, keyApprovals: approvals({ JUDGE_KEY: ['127.0.0.1'], OTHER_KEY: ['127.0.0.1'] }) });
      expect(pool.endpointOf('verifier2')).toBe('judges');
      expect(pool.endpointOf('corrector1')).toBe('judges');
      expect(() => pool.endpointOf('solver')).toThrow(/no endpoint/);
      expect((await pool.chat('verifier1', [{ role: 'user', content: 'hi' }])).choices[0].text).toBe('hello world');
      const issues = probeIssues(await pool.probe());
      expect(issues.map((i) => i.path).sort()).toEqual(['endpoints.badkey.api_key_env', 'endpoints.down.base_url', 'endpoints.unset.api_key_env', 'endpoints.wrongmodel.model']);
      expect(issues.find((i) => i.path === 'endpoints.unset.api_key_env')?.message).toMatch(/MARSRL_TEST_KEY_NEVER_SET/);
      expect(issues.find((i) => i.path === 'endpoints.wrongmodel.model')?.message).toMatch(/model "qwen3-32b" is not served/);
      expect(JSON.stringify(issues)).not.toContain('stale-key');
    } finally {
      await server.close();
    }
  });
});

describe("a run's pool checks its replicas in the background", () => {
  it('at health_check_s: a replica that stops answering is taken out before any request meets it; a probe-only pool never checks', async () => {
    const server = await startFaultServer();
    const dead = await startFaultServer();
    try {
      const config = resolveConfig({
        endpoints: { judges: { base_url: server.baseUrl, replicas: [dead.baseUrl], model: 'fault-model', health_check_s: 0.02, timeout_s: 1 } },
        policies: { solver: {}, judge: { endpoint: 'judges' } },
        agents: { verifier: 'judge', corrector: 'judge' },
      });
      expect(resolveConfig(served()).endpoints!.judges.health_check_s).toBe(30);
      const run = poolFromConfig(config, { healthChecks: true });
      const probeOnly = poolFromConfig(config);
      await dead.close();
      for (let i = 0; i < 100 && run.replicas('judges')[1].up; i++) await new Promise((r) => setTimeout(r, 20));
      expect(run.replicas('judges').map((r) => r.up)).toEqual([true, false]);
      // No request was sent to either replica: the checks found it.
      expect(server.seen.filter((x) => x.method === 'POST')).toHaveLength(0);
      expect(probeOnly.replicas('judges').map((r) => r.up)).toEqual([true, true]);
      run.close();
      probeOnly.close();
    } finally {
      await server.close();
    }
  });
});

describe('marsrl config validate with endpoints', () => {
  it('fails on an unset key variable, and --probe reports what the server serves', async () => {
    const server = await startFaultServer({ key: 'probe-key-0123456789', ignoreN: true });
    const tmp = tempDir();
    const home = approvedHome({ JUDGE_KEY: ['127.0.0.1'] });
    try {
      const file = path.join(tmp.dir, 'served.yaml');
      fs.writeFileSync(file, JSON.stringify({ endpoints: { judges: { base_url: server.baseUrl, model: 'fault-model', api_key_env: 'JUDGE_KEY' } }, policies: { solver: {}, judge: { endpoint: 'judges' } }, agents: { verifier: 'judge', corrector: 'judge' } }));
      const unset = marsrl(['config', 'validate', file], { JUDGE_KEY: undefined });
      expect(unset.code).toBe(2);
      expect(unset.stderr).toMatch(/endpoints\.judges\.api_key_env: the environment variable JUDGE_KEY is not set/);
      // The fault server lives in this process: the probing child must be spawned without blocking it.
      const run = (env: NodeJS.ProcessEnv) =>
        new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
          const child = spawn(process.execPath, [MARSRL_BIN, 'config', 'validate', file, '--probe'], { cwd: REPO_ROOT, env: { ...process.env, MARSRL_HOME: home.dir, ...env } });
          let stderr = '';
          let stdout = '';
          child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          child.on('exit', (code) => resolve({ code, stderr, stdout }));
        });
      const ok = await run({ JUDGE_KEY: 'probe-key-0123456789' });
      expect(ok.code).toBe(0);
      expect(ok.stderr).toMatch(/endpoint judges: serves fault-model; lacks n/);
      const refused = await run({ JUDGE_KEY: 'expired-key-0123456789' });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/endpoints\.judges\.api_key_env: endpoint judges: .* refused the API key from JUDGE_KEY \(HTTP 401\)/);
      expect(refused.stderr).not.toContain('expired-key-0123456789');
    } finally {
      tmp.cleanup();
      home.cleanup();
      await server.close();
    }
  });
});
