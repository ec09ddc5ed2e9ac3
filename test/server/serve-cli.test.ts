import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { marsrl } from '../helpers/cli';
import { startServe } from '../helpers/serve-process';
import { seededDatabase } from '../helpers/runs-db';
import { api, request } from './http';

let rendererDir: string;

const db = seededDatabase('serve.db', (store) => {
  store.runs.create({ name: 'served-run', config: {}, codeVersion: 't', seed: 1 });
}, 'marsrl-serve-cli-');

beforeAll(() => {
  rendererDir = path.join(db.dir, 'renderer');
  fs.mkdirSync(rendererDir);
  fs.writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>served</title>');
});

describe('marsrl serve (child process)', () => {
  it('serves the database on loopback and stops cleanly on Ctrl-C', async () => {
    const served = await startServe(['--db', db.path, '--port', '0', '--renderer', rendererDir]);
    const port = served.port;
    expect(served.url).toBe(`http://127.0.0.1:${port}/`);
    expect(served.stdout()).toMatch(/Only this machine can connect/);
    const res = await api(port, 'listRuns', []);
    expect(res.json<{ result: { items: { name: string }[] } }>().result.items[0].name).toBe('served-run');
    expect((await request(port, '/')).body).toContain('<title>served</title>');
    expect(await served.stop()).toBe(0);
    expect(served.stderr()).toMatch(/Ctrl-C: stopping…[\s\S]*Stopped\./);
  });

  it('generates and prints a token when bound off loopback, and requires it', async () => {
    const served = await startServe(['--db', db.path, '--host', '0.0.0.0', '--port', '0', '--renderer', rendererDir]);
    try {
      const login = new URL(served.url);
      const token = login.searchParams.get('token') ?? '';
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(served.stdout()).toContain(`Token: ${token} (generated for this session)`);
      const port = Number(login.port);
      expect((await api(port, 'listRuns', [])).status).toBe(401);
      expect((await api(port, 'listRuns', [], { Authorization: `Bearer ${token}` })).status).toBe(200);
    } finally {
      await served.stop();
    }
  });

  it('takes the token from MARSRL_TOKEN, and refuses a weak one', async () => {
    const served = await startServe(['--db', db.path, '--port', '0', '--renderer', rendererDir], { MARSRL_TOKEN: 'an-env-token-of-good-length' });
    try {
      const port = Number(new URL(served.url).port);
      expect(served.url).toContain('?token=an-env-token-of-good-length');
      expect((await api(port, 'listRuns', [])).status).toBe(401);
    } finally {
      await served.stop();
    }
    const weak = marsrl(['serve', '--db', db.path, '--token', 'abc']);
    expect(weak.code).toBe(2);
    expect(weak.stderr).toMatch(/--token: the token must be at least 16 characters/);
  });

  it('says what to run when --renderer has no build', () => {
    const result = marsrl(['serve', '--db', db.path, '--renderer', db.dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no index\.html there \(build the renderer with: cd .* && npm run build\)/);
  });
});
