import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Page, RunSummary, StudioErrorShape, StudioEvent, Turn } from '#shared/contract';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { contentSecurityPolicy } from '#shared/csp';
import { openStore, type Store } from '../../src-main/engine/store';
import { createStudioServer, type StudioServer } from '../../src-main/server/server';
import { seedStudio, type Seeded } from '../helpers/seed';
import { tempDir } from '../helpers/tmp';
import { api, request } from './http';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let hub: EventHub;
let seeded: Seeded;
let server: StudioServer;
let rendererDir: string;

const TOKEN = 'correct-horse-battery-staple-42';

beforeAll(async () => {
  tmp = tempDir('marsrl-server-');
  const databasePath = path.join(tmp.dir, 'server.db');
  store = openStore(databasePath);
  seeded = seedStudio(store);
  hub = new EventHub();
  rendererDir = path.join(tmp.dir, 'renderer');
  fs.mkdirSync(path.join(rendererDir, 'assets'), { recursive: true });
  fs.writeFileSync(path.join(rendererDir, 'index.html'), '<!doctype html><title>studio</title>');
  fs.writeFileSync(path.join(rendererDir, 'assets', 'app-abc123.js'), 'console.log(1)');
  fs.writeFileSync(path.join(tmp.dir, 'secret.txt'), 'do not serve');
  const service = createStudioService({ store, databasePath, transport: 'http', hub });
  server = await createStudioServer({ service, hub, port: 0, rendererDir, log: () => {} });
});

afterAll(async () => {
  await server?.close();
  store?.close();
  tmp?.cleanup();
});

function wsConnect(port: number, headers: Record<string, string>): Promise<{ socket: WebSocket; status: number | null }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers });
    socket.once('open', () => resolve({ socket, status: 101 }));
    socket.once('unexpected-response', (_req, res) => resolve({ socket, status: res.statusCode ?? null }));
    socket.once('error', () => resolve({ socket, status: null }));
  });
}

describe('marsrl serve: the StudioApi over HTTP', () => {
  it('binds loopback by default and answers calls with { result }', async () => {
    expect(server.host).toBe('127.0.0.1');
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    const res = await api(server.port, 'listRuns', [{ limit: 2 }]);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const page = res.json<{ result: Page<RunSummary> }>().result;
    expect(page.items.map((r) => r.id)).toEqual([seeded.running.id, seeded.done.id]);
    expect(page.nextCursor).toBe(seeded.done.id);
  });

  it('pages turns by keyset over HTTP', async () => {
    const first = (await api(server.port, 'listTurns', [{ runId: seeded.done.id, agent: 'verifier1', limit: 5 }])).json<{ result: Page<Turn> }>().result;
    expect(first.items).toHaveLength(5);
    expect(first.items.every((t) => t.agent === 'verifier1')).toBe(true);
    const second = (await api(server.port, 'listTurns', [{ runId: seeded.done.id, agent: 'verifier1', limit: 5, afterId: first.nextCursor }])).json<{ result: Page<Turn> }>().result;
    expect(second.items[0].id).toBeGreaterThan(first.items[4].id);
  });

  it('answers a void method with null', async () => {
    const res = await api(server.port, 'updateRun', [seeded.failed.id, { notes: 'lr too high' }]);
    expect(res.status).toBe(200);
    expect(res.json<{ result: RunSummary }>().result.notes).toBe('lr too high');
  });

  it('rejects bad payloads with 400 and names the field', async () => {
    const empty = await api(server.port, 'getSeries', [{ runId: seeded.done.id, keys: [] }]);
    expect(empty.status).toBe(400);
    const shape = empty.json<StudioErrorShape>();
    expect(shape.code).toBe('invalid_request');
    expect(shape.issues?.map((i) => i.path)).toContain('getSeries.0.keys');
    expect(shape.message).toMatch(/getSeries\.0\.keys/);

    const wrongType = await api(server.port, 'listTurns', [{ runId: seeded.done.id, limit: 'ten' }]);
    expect(wrongType.status).toBe(400);
    expect(wrongType.json<StudioErrorShape>().issues?.[0].path).toBe('listTurns.0.limit');

    const extra = await api(server.port, 'getRun', [seeded.done.id, 'surplus']);
    expect(extra.status).toBe(400);

    const unknown = await api(server.port, 'dropDatabase', []);
    expect(unknown.status).toBe(400);
    expect(unknown.json<StudioErrorShape>().message).toMatch(/unknown method "dropDatabase"/);

    const proto = await api(server.port, '__proto__', []);
    expect(proto.status).toBe(400);

    const notArray = await request(server.port, '/api/getRun', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"runId":1}' });
    expect(notArray.status).toBe(400);
    expect(notArray.json<StudioErrorShape>().message).toMatch(/must be an array/);

    const malformed = await request(server.port, '/api/getRun', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '[1,' });
    expect(malformed.status).toBe(400);
    expect(malformed.json<StudioErrorShape>().message).toMatch(/not valid JSON/);
  });

  it('maps not_found to 404 and conflict to 409', async () => {
    const missing = await api(server.port, 'getRun', [987654]);
    expect(missing.status).toBe(404);
    expect(missing.json<StudioErrorShape>()).toMatchObject({ code: 'not_found', message: 'run 987654 does not exist' });
    const running = await api(server.port, 'deleteRun', [seeded.running.id]);
    expect(running.status).toBe(409);
    expect(running.json<StudioErrorShape>().code).toBe('conflict');
  });

  it('limits the body size and the methods', async () => {
    const big = await request(server.port, '/api/validateConfig', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify([{ name: 'x'.repeat(1_100_000) }]),
    });
    expect(big.status).toBe(413);
    const get = await request(server.port, '/api/listRuns');
    expect(get.status).toBe(405);
    const form = await request(server.port, '/api/listRuns', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '[]' });
    expect(form.status).toBe(415);
  });

  it('refuses cross-origin calls and DNS-rebound hosts', async () => {
    const csrf = await api(server.port, 'deleteRun', [seeded.done.id], { Origin: 'http://evil.example' });
    expect(csrf.status).toBe(403);
    expect(store.runs.get(seeded.done.id)).not.toBeNull();
    const sibling = await api(server.port, 'listRuns', [], { Origin: `http://127.0.0.1:${server.port + 1}` });
    expect(sibling.status).toBe(403);
    const fetchSite = await api(server.port, 'listRuns', [], { 'Sec-Fetch-Site': 'cross-site' });
    expect(fetchSite.status).toBe(403);
    const rebound = await api(server.port, 'listRuns', [], { Host: `evil.example:${server.port}`, Origin: `http://evil.example:${server.port}` });
    expect(rebound.status).toBe(421);
    const page = await request(server.port, '/', { headers: { Host: `evil.example:${server.port}` } });
    expect(page.status).toBe(421);
    const localhost = await api(server.port, 'listRuns', [], { Host: `localhost:${server.port}`, Origin: `http://localhost:${server.port}` });
    expect(localhost.status).toBe(200);
    // No Origin at all: a script or curl, not a browser acting for another site.
    const noOrigin = await request(server.port, '/api/appInfo', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '[]' });
    expect(noOrigin.status).toBe(200);
    expect(noOrigin.json<{ result: { transport: string } }>().result.transport).toBe('http');
  });

  it('serves the renderer with the Electron CSP, and nothing outside it', async () => {
    const index = await request(server.port, '/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toMatch(/text\/html/);
    expect(index.headers['content-security-policy']).toBe(contentSecurityPolicy({ delivery: 'header' }));
    expect(index.headers['content-security-policy']).toMatch(/connect-src 'self'/);
    expect(index.headers['x-frame-options']).toBe('DENY');
    expect(index.headers['cache-control']).toBe('no-cache');
    const asset = await request(server.port, '/assets/app-abc123.js');
    expect(asset.status).toBe(200);
    expect(asset.headers['cache-control']).toMatch(/immutable/);
    for (const escape of ['/../secret.txt', '/assets/..%2f..%2fsecret.txt', '/%2e%2e/secret.txt', '/.hidden', '/assets/%00']) {
      const res = await request(server.port, escape);
      expect(res.status, escape).toBe(404);
      expect(res.body).not.toContain('do not serve');
    }
    const post = await request(server.port, '/', { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('pushes hub events over the WebSocket', async () => {
    const { socket, status } = await wsConnect(server.port, { Origin: `http://127.0.0.1:${server.port}` });
    expect(status).toBe(101);
    const received = new Promise<StudioEvent>((resolve) => socket.once('message', (data) => resolve(JSON.parse(String(data)) as StudioEvent)));
    const event: StudioEvent = { type: 'run-progress', runId: seeded.running.id, step: 24, totalSteps: 60, metrics: { 'system/accuracy': 0.61 } };
    hub.publish(event);
    // Each pushed event carries the server's sequence number.
    expect(await received).toEqual({ ...event, seq: expect.any(Number) });
    socket.close();
  });

  it('refuses WebSocket upgrades from other origins, hosts or paths', async () => {
    expect((await wsConnect(server.port, { Origin: 'http://evil.example' })).status).toBe(403);
    expect((await wsConnect(server.port, { Origin: `http://evil.example:${server.port}`, Host: `evil.example:${server.port}` })).status).toBe(421);
    const other = await new Promise<number | null>((resolve) => {
      const socket = new WebSocket(`ws://127.0.0.1:${server.port}/elsewhere`);
      socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? null));
      socket.once('error', () => resolve(null));
    });
    expect(other).toBe(404);
  });
});

describe('marsrl serve: off loopback', () => {
  it('refuses to listen on another address without a token, or with a weak one', async () => {
    const service = createStudioService({ store, databasePath: store.path, transport: 'http' });
    await expect(createStudioServer({ service, hub: new EventHub(), host: '0.0.0.0', port: 0 })).rejects.toThrow(/without a token/);
    await expect(createStudioServer({ service, hub: new EventHub(), host: '0.0.0.0', port: 0, token: 'short' })).rejects.toThrow(/at least 16/);
  });

  it('requires the token on every API and WebSocket request; the printed URL logs a browser in', async () => {
    const service = createStudioService({ store, databasePath: store.path, transport: 'http' });
    const hub2 = new EventHub();
    const guarded = await createStudioServer({ service, hub: hub2, host: '0.0.0.0', port: 0, token: TOKEN, rendererDir, log: () => {} });
    try {
      const port = guarded.port;
      expect(guarded.loginUrl).toMatch(new RegExp(`:${port}/\\?token=${TOKEN}$`));

      expect((await api(port, 'listRuns', [])).status).toBe(401);
      expect((await api(port, 'listRuns', [], { Authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
      expect((await api(port, 'listRuns', [], { Authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      // The page itself is not served without it either.
      const page = await request(port, '/');
      expect(page.status).toBe(401);
      expect(page.body).toMatch(/access token/);

      const wrong = await request(port, '/?token=nope-nope-nope-nope');
      expect(wrong.status).toBe(401);
      expect(wrong.headers['set-cookie']).toBeUndefined();

      const login = await request(port, `/?token=${TOKEN}`);
      expect(login.status).toBe(303);
      expect(login.headers.location).toBe('/');
      const cookie = login.headers['set-cookie']?.[0] ?? '';
      expect(cookie).toMatch(new RegExp(`^marsrl_token_${port}=`));
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Strict/);
      const pair = cookie.split(';')[0];
      expect((await request(port, '/', { headers: { Cookie: pair } })).status).toBe(200);
      expect((await api(port, 'listRuns', [], { Cookie: pair })).status).toBe(200);
      // Another port's cookie is not this server's.
      expect((await api(port, 'listRuns', [], { Cookie: `marsrl_token_1=${TOKEN}` })).status).toBe(401);

      // Off loopback any Host is accepted (the token is the defence), but cross-origin is not.
      expect((await api(port, 'listRuns', [], { Cookie: pair, Host: `gpu-box:${port}`, Origin: `http://gpu-box:${port}` })).status).toBe(200);
      expect((await api(port, 'listRuns', [], { Cookie: pair, Origin: 'http://evil.example' })).status).toBe(403);

      expect((await wsConnect(port, { Origin: `http://127.0.0.1:${port}` })).status).toBe(401);
      const { socket, status } = await wsConnect(port, { Origin: `http://127.0.0.1:${port}`, Cookie: pair });
      expect(status).toBe(101);
      const received = new Promise<StudioEvent>((resolve) => socket.once('message', (data) => resolve(JSON.parse(String(data)) as StudioEvent)));
      hub2.publish({ type: 'run-created', runId: 42 });
      expect(await received).toEqual({ type: 'run-created', runId: 42, seq: 1 });
      socket.close();
    } finally {
      await guarded.close();
    }
  });

  it('serves the API alone, with a page saying what to run, when the renderer is not built', async () => {
    const service = createStudioService({ store, databasePath: store.path, transport: 'http' });
    const bare = await createStudioServer({ service, hub: new EventHub(), port: 0, rendererDir: path.join(tmp.dir, 'nowhere'), log: () => {} });
    try {
      const page = await request(bare.port, '/');
      expect(page.status).toBe(503);
      expect(page.body).toMatch(/npm run build/);
      expect((await api(bare.port, 'appInfo', [])).status).toBe(200);
    } finally {
      await bare.close();
    }
  });

  it('answers startRun with a 409 when no run manager is wired', async () => {
    const service = createStudioService({ store, databasePath: store.path, transport: 'http' });
    const bare = await createStudioServer({ service, hub: new EventHub(), port: 0, rendererDir, log: () => {} });
    try {
      const res = await api(bare.port, 'startRun', [{ preset: 'quick' }]);
      expect(res.status).toBe(409);
      expect(res.json<StudioErrorShape>().message).toMatch(/no run manager/);
    } finally {
      await bare.close();
    }
  });
});
