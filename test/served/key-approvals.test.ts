/**
 * API keys go only where the person running the Studio allowed (issue #36): a variable approved
 * on this machine for a host (and port) is sent there and nowhere else; every request the client
 * makes passes the same check, redirects are not followed, and the approvals file holds names,
 * never values. A canary variable and a listener that records what it receives stand in for a
 * secret and a hostile server.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src-main/cli/main';
import { resolveConfig } from '../../src-main/engine/preflight';
import { EndpointClient } from '../../src-main/engine/served/client';
import { endpointEnvIssues, poolFromConfig, probeIssues } from '../../src-main/engine/served/config';
import { KeyApprovals, keyApprovalsFile, loadKeyApprovals, normaliseHostEntry, revokeKey } from '../../src-main/engine/served/key-approvals';
import { tempDir } from '../helpers/tmp';
import { startFaultServer, type FaultServer } from './fault-server';

const CANARY = 'canary-7d41c0ffee5e1ec7ba5e';
const VAR = 'MARSRL_TEST_CANARY_KEY';

interface Trap {
  url: string;
  received: Array<{ url: string; authorization: string | null }>;
  close(): Promise<void>;
}

/** A listener that records every request; it answers 307 to `redirectTo` when given. */
async function trap(redirectTo?: string): Promise<Trap> {
  const received: Trap['received'] = [];
  const server = http.createServer((req, res) => {
    received.push({ url: req.url ?? '', authorization: req.headers.authorization ?? null });
    req.resume();
    if (redirectTo) res.writeHead(307, { location: `${redirectTo}${req.url}` }).end();
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

let listener: Trap;
let redirector: Trap;
let legit: FaultServer;
beforeAll(async () => {
  listener = await trap();
  redirector = await trap(listener.url);
  legit = await startFaultServer({ key: CANARY });
});
afterAll(async () => {
  await listener.close();
  await redirector.close();
  await legit.close();
});

const carried = (t: Trap) => t.received.filter((r) => r.authorization !== null);

describe('host entries and matching', () => {
  it('reads HOST (any port), HOST:PORT and URLs, and matches by name as written, never by resolving it', () => {
    expect(normaliseHostEntry('10.0.0.5')).toBe('10.0.0.5');
    expect(normaliseHostEntry('10.0.0.5:8000')).toBe('10.0.0.5:8000');
    expect(normaliseHostEntry('http://Judge.Example/v1')).toBe('judge.example:80');
    expect(normaliseHostEntry('https://judge.example:8443/v1')).toBe('judge.example:8443');
    expect(normaliseHostEntry('[::1]:9000')).toBe('[::1]:9000');
    expect(() => normaliseHostEntry('http://user:pw@h/')).toThrow(/not a host/);
    const a = KeyApprovals.of({ K: ['10.0.0.5', 'judge.example:8443', '[::1]:9000'] });
    expect(a.allows('K', 'http://10.0.0.5:8000/v1')).toBe(true);
    expect(a.allows('K', 'http://10.0.0.6:8000/v1')).toBe(false);
    expect(a.allows('K', 'https://JUDGE.example:8443/v1')).toBe(true);
    expect(a.allows('K', 'https://judge.example/v1')).toBe(false);
    expect(a.allows('K', 'http://[::1]:9000/v1')).toBe(true);
    expect(a.allows('OTHER', 'http://10.0.0.5/v1')).toBe(false);
    expect(a.allows('K', 'not a url')).toBe(false);
    // 127.0.0.1 approved does not approve localhost (or the other way round): no name is resolved.
    expect(KeyApprovals.of({ K: ['127.0.0.1'] }).allows('K', 'http://localhost:1/v1')).toBe(false);
  });

  it('marsrl secrets allow / list / revoke keep names and hosts in a 0600 file of the data folder, never a value', async () => {
    const home = tempDir();
    try {
      const env = { MARSRL_HOME: home.dir, [VAR]: CANARY };
      const lines: string[] = [];
      const ctx = { env, out: (t: string) => lines.push(t), err: (t: string) => lines.push(t) };
      expect(await main(['secrets', 'allow', VAR, '--host', '10.0.0.5:8000', '--host', 'http://judge.example/v1'], ctx)).toBe(0);
      expect(await main(['secrets', 'list'], ctx)).toBe(0);
      expect(lines.join('\n')).toMatch(new RegExp(`${VAR}\\s+10\\.0\\.0\\.5:8000, judge\\.example:80`));
      const file = keyApprovalsFile(env);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.readFileSync(file, 'utf8')).not.toContain(CANARY);
      expect(loadKeyApprovals(env).allows(VAR, 'http://10.0.0.5:8000/v1')).toBe(true);
      expect(revokeKey(VAR, '10.0.0.5:8000', env).removed).toEqual(['10.0.0.5:8000']);
      expect(loadKeyApprovals(env).allows(VAR, 'http://10.0.0.5:8000/v1')).toBe(false);
      expect(await main(['secrets', 'revoke', VAR], ctx)).toBe(0);
      expect(loadKeyApprovals(env).list()).toEqual([]);
      expect(await main(['secrets', 'allow', 'not a name', '--host', 'h'], ctx)).toBe(1);
      expect(lines.at(-1)).toMatch(/not the name of an environment variable/);
      // A damaged file approves nothing, and the refusal says why.
      fs.writeFileSync(file, '{"format": "something else"}');
      const damaged = loadKeyApprovals(env);
      expect(damaged.allows(VAR, 'http://10.0.0.5:8000/v1')).toBe(false);
      expect(damaged.refusal(VAR, 'http://10.0.0.5:8000/v1', 'api_key_env')).toMatch(/not a MarsRL key approvals file/);
    } finally {
      home.cleanup();
    }
  });
});

describe('the endpoint client sends a key only to an approved host', () => {
  const client = (baseUrl: string, approvals: KeyApprovals) => new EndpointClient({ name: 'e', baseUrl, model: 'fault-model', apiKeyEnv: VAR, env: { [VAR]: CANARY }, keyApprovals: approvals, retries: 2, backoffBaseMs: 1, timeoutMs: 2000 });

  it('refuses every kind of request to an unapproved host before connecting, naming api_key_env and the command that approves it', async () => {
    const c = client(`${listener.url}/v1`, KeyApprovals.of({ [VAR]: ['10.9.9.9'] }));
    const host = new URL(listener.url).host;
    await expect(c.chat([{ role: 'user', content: 'hi' }])).rejects.toThrow(new RegExp(`api_key_env: the API key variable ${VAR} is not approved for ${host}.*marsrl secrets allow ${VAR} --host ${host}`));
    await expect(c.complete('hi')).rejects.toThrow(/not approved/);
    await expect(c.listModels()).rejects.toThrow(/not approved/);
    const report = await c.probe();
    expect(probeIssues([report]).map((i) => i.path)).toEqual(['endpoints.e.api_key_env']);
    expect(listener.received).toEqual([]);
  });

  it('sends it to the approved host:port, and not to the same listener named otherwise', async () => {
    const port = new URL(legit.baseUrl).port;
    const approved = client(legit.baseUrl, KeyApprovals.of({ [VAR]: [`127.0.0.1:${port}`] }));
    expect((await approved.chat([{ role: 'user', content: 'hi' }])).choices[0].text).toBe('hello world');
    expect(legit.seen.at(-1)?.authorization).toBe(`Bearer ${CANARY}`);
    const seen = legit.seen.length;
    const otherName = client(`http://localhost:${port}/v1`, KeyApprovals.of({ [VAR]: [`127.0.0.1:${port}`] }));
    await expect(otherName.chat([{ role: 'user', content: 'hi' }])).rejects.toThrow(/not approved for localhost/);
    expect(legit.seen.length).toBe(seen);
  });

  it('does not follow a 307 from an approved host: the error names the redirect, the listener it points to gets nothing', async () => {
    const c = client(`${redirector.url}/v1`, KeyApprovals.of({ [VAR]: [new URL(redirector.url).host] }));
    await expect(c.chat([{ role: 'user', content: 'hi' }])).rejects.toThrow(/answered HTTP 307, a redirect to .*; redirects are not followed/);
    expect(carried(redirector)).toHaveLength(1);
    expect(listener.received).toEqual([]);
    expect(probeIssues([await c.probe()]).map((i) => i.path)).toEqual(['endpoints.e.base_url']);
  });

  it('a pool never sends the key to an unapproved replica: validation refuses the replica, and its health checks and failover stay off it', async () => {
    const port = new URL(legit.baseUrl).port;
    const approvals = KeyApprovals.of({ [VAR]: [`127.0.0.1:${port}`] });
    const config = resolveConfig({
      endpoints: { judges: { base_url: legit.baseUrl, replicas: [`${listener.url}/v1`], model: 'fault-model', api_key_env: VAR, retries: 2, health_check_s: 0.01 } },
      policies: { solver: {}, judge: { endpoint: 'judges' } },
      agents: { verifier: 'judge', corrector: 'judge' },
    });
    const issues = endpointEnvIssues(config, { [VAR]: CANARY }, approvals);
    expect(issues.map((i) => i.path)).toEqual(['endpoints.judges.replicas.0']);
    expect(issues[0].message).toMatch(new RegExp(`marsrl secrets allow ${VAR} --host ${new URL(listener.url).host}`));
    const pool = poolFromConfig(config, { env: { [VAR]: CANARY }, keyApprovals: approvals, healthChecks: true, backoffBaseMs: 1 });
    try {
      for (let i = 0; i < 6; i++) await pool.chat('verifier1', [{ role: 'user', content: 'hi' }]).catch(() => undefined);
      await pool.checkAll();
      expect(listener.received).toEqual([]);
    } finally {
      pool.close();
    }
  });

  it('an unset variable is reported as before; a set one not approved for base_url is reported at api_key_env with the fix', () => {
    const config = resolveConfig({ endpoints: { j: { base_url: 'http://10.0.0.5:8000/v1', model: 'm', api_key_env: 'HOME' } } });
    expect(endpointEnvIssues(config, {}, KeyApprovals.of({}))[0].message).toMatch(/HOME is not set/);
    const [issue] = endpointEnvIssues(config, { HOME: '/home/me' }, KeyApprovals.of({}));
    expect(issue.path).toBe('endpoints.j.api_key_env');
    expect(issue.message).toMatch(/HOME is not approved for 10\.0\.0\.5:8000.*marsrl secrets allow HOME --host 10\.0\.0\.5:8000/);
    expect(issue.message).not.toContain('/home/me');
    expect(endpointEnvIssues(config, { HOME: '/home/me' }, KeyApprovals.of({ HOME: ['10.0.0.5'] }))).toEqual([]);
    expect(path.basename(keyApprovalsFile({ MARSRL_HOME: '/x' }))).toBe('key-approvals.json');
  });
});
