import { afterEach, describe, expect, it } from 'vitest';
import type { ServedEvent } from '../../src-main/engine/served/events';
import { EndpointPool, type PoolEndpointSpec, type PoolOptions } from '../../src-main/engine/served/pool';
import { startFaultServer, type FaultServer, type FaultServerOptions } from './fault-server';

let servers: FaultServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function fault(opts: FaultServerOptions = {}): Promise<FaultServer> {
  const s = await startFaultServer(opts);
  servers.push(s);
  return s;
}

function spec(name: string, replicas: FaultServer[], more: Partial<PoolEndpointSpec> = {}): PoolEndpointSpec {
  return { name, baseUrls: replicas.map((r) => r.baseUrl), model: 'fault-model', concurrency: 8, timeoutMs: 2000, retries: 3, ...more };
}

function pool(endpoints: PoolEndpointSpec[], agents: Record<string, string>, more: Partial<PoolOptions> = {}) {
  const events: ServedEvent[] = [];
  const p = new EndpointPool({ endpoints, agents, onEvent: (e) => events.push(e), backoffBaseMs: 1, sleep: async () => {}, ...more });
  return { p, events };
}

const hi = [{ role: 'user' as const, content: 'hi' }];

describe('EndpointPool', () => {
  it('routes each agent to its endpoint (Solver apart from Verifier/Corrector, as MarsRL deploys them)', async () => {
    const solverBox = await fault({ text: 'from solver box' });
    const judgeBox = await fault({ text: 'from judge box' });
    const { p } = pool([spec('solvers', [solverBox]), spec('judges', [judgeBox])], { solver: 'solvers', verifier: 'judges', corrector: 'judges' });
    expect((await p.chat('solver', hi)).choices[0].text).toBe('from solver box');
    expect((await p.chat('verifier1', hi)).choices[0].text).toBe('from judge box');
    expect((await p.chat('corrector1', hi)).choices[0].text).toBe('from judge box');
    expect(p.endpointOf('verifier2')).toBe('judges');
    expect(() => p.endpointOf('reviewer')).toThrow(/agent reviewer has no endpoint in the pool/);
    expect(() => pool([spec('a', [solverBox])], { solver: 'b' })).toThrow(/agent solver is mapped to endpoint "b", which is not defined \(defined: a\)/);
  });

  it('balances by outstanding requests and keeps each endpoint under its concurrency limit', async () => {
    const a = await fault({ delayMs: 60 });
    const b = await fault({ delayMs: 60 });
    const { p } = pool([spec('e', [a, b], { concurrency: 4 })], { solver: 'e' });
    const running = Array.from({ length: 10 }, () => p.chat('solver', hi));
    await new Promise((r) => setTimeout(r, 25));
    const m = p.metrics();
    expect(m['pool/e/in_flight']).toBe(4);
    expect(m['pool/e/queue']).toBe(6);
    expect(p.replicas('e').map((r) => r.outstanding)).toEqual([2, 2]);
    await Promise.all(running);
    expect(a.seen.length + b.seen.length).toBe(10);
    expect(Math.abs(a.seen.length - b.seen.length)).toBeLessThanOrEqual(2);
    expect(a.maxActive() + b.maxActive()).toBeLessThanOrEqual(4);
    const after = p.metrics();
    expect(after['pool/e/in_flight']).toBe(0);
    expect(after['pool/e/requests']).toBe(10);
    expect(after['pool/e/latency_ms']).toBeGreaterThanOrEqual(60);
    expect(after['pool/e/completion_tokens']).toBe(20);
    // Latency is per snapshot: nothing finished since the last one.
    expect(p.metrics()['pool/e/latency_ms']).toBeUndefined();
  });

  it('takes a hanging replica out, retries on another, and brings it back after a health check', async () => {
    const hung = await fault({ script: [{ kind: 'hang' }] });
    const good = await fault();
    let clock = 1_000;
    const { p, events } = pool([spec('judges', [hung, good], { timeoutMs: 150 })], { verifier1: 'judges' }, { downForMs: 5_000, now: () => clock });
    const r = await p.chat('verifier1', hi);
    expect(r.attempts).toBe(2);
    expect(p.replicas('judges').map((x) => x.up)).toEqual([false, true]);
    expect(events.map((e) => e.kind)).toEqual(['served/replica_down', 'served/retry']);
    expect(events[0].data).toMatchObject({ endpoint: 'judges', baseUrl: hung.baseUrl, reason: 'timeout' });
    expect(p.metrics()['pool/judges/replicas_up']).toBe(1);
    expect(p.metrics()['pool/judges/errors']).toBe(1);
    // While it is out, requests go to the good replica only.
    const before = hung.seen.length;
    await p.chat('verifier1', hi);
    await p.chat('verifier1', hi);
    expect(hung.seen.length).toBe(before);
    // After downForMs it is health-checked (GET /models) and used again.
    clock += 5_000;
    await p.chat('verifier1', hi);
    await p.chat('verifier1', hi);
    expect(p.replicas('judges').map((x) => x.up)).toEqual([true, true]);
    expect(hung.seen.some((s) => s.method === 'GET' && s.url === '/v1/models')).toBe(true);
    expect(hung.seen.filter((s) => s.method === 'POST').length).toBeGreaterThan(1);
    expect(events.map((e) => e.kind)).toContain('served/replica_up');
  });

  it('a 429 keeps the replica in rotation; a 404 (wrong model) fails at once', async () => {
    const busy = await fault({ script: [{ kind: 'status', status: 429, headers: { 'retry-after': '1' } }] });
    const delays: number[] = [];
    const { p } = pool([spec('e', [busy])], { solver: 'e' }, { sleep: async (ms) => void delays.push(ms) });
    expect((await p.chat('solver', hi)).attempts).toBe(2);
    expect(delays).toEqual([1000]);
    expect(p.replicas('e')[0].up).toBe(true);

    const wrong = pool([spec('e', [busy], { model: 'not-served' })], { solver: 'e' });
    await expect(wrong.p.chat('solver', hi)).rejects.toMatchObject({ status: 404, attempts: 1 });
    expect(wrong.events.map((e) => e.kind)).toEqual(['served/failed']);
  });

  it('fails after the configured retries when every replica fails, and streams restart on failover', async () => {
    const a = await fault({ script: [{ kind: 'status', status: 500 }, { kind: 'status', status: 500 }] });
    const b = await fault({ script: [{ kind: 'status', status: 502 }, { kind: 'status', status: 502 }] });
    const { p, events } = pool([spec('e', [a, b], { retries: 2 })], { solver: 'e' });
    await expect(p.chat('solver', hi)).rejects.toMatchObject({ attempts: 3, kind: 'http' });
    expect(events.filter((e) => e.kind === 'served/failed')).toHaveLength(1);

    const cut = await fault({ script: [{ kind: 'stream-cut', after: 3 }], text: 'the quick fox' });
    const whole = await fault({ text: 'the quick fox' });
    const s = pool([spec('s', [cut, whole])], { solver: 's' });
    let shown = '';
    let restarts = 0;
    const r = await s.p.chat('solver', hi, {
      onChunk: (c) => {
        if (c.restart) {
          restarts++;
          shown = '';
        } else shown += c.delta;
      },
    });
    expect(r.choices[0].text).toBe('the quick fox');
    expect(shown).toBe('the quick fox');
    expect(restarts).toBe(1);
  });

  it('probes every endpoint and leaves out what it lacks', async () => {
    const plain = await fault({ ignoreN: true, rejectTopK: true });
    const { p } = pool([spec('e', [plain], { sampling: { n: 4, top_k: 20 } })], { solver: 'e' });
    const [report] = await p.probe();
    expect(new Set(report.missing)).toEqual(new Set(['n', 'top_k']));
    await p.chat('solver', hi);
    const last = plain.seen[plain.seen.length - 1].body!;
    expect(last.n).toBeUndefined();
    expect(last.top_k).toBeUndefined();
  });

  it('background health checks take a dead replica out before any request meets it, and keep it out while it stays dead', async () => {
    const a = await fault();
    const b = await fault();
    let clock = 0;
    const { p, events } = pool([spec('e', [a, b], { timeoutMs: 500 })], { solver: 'e' }, { downForMs: 1000, now: () => clock });
    await p.checkAll();
    expect(p.replicas('e').map((r) => r.up)).toEqual([true, true]);
    // b goes away: the next round of checks notices, with no request sent.
    const bUrl = b.baseUrl;
    await b.close();
    servers = servers.filter((x) => x !== b);
    const stop = p.startHealthChecks(20);
    for (let i = 0; i < 100 && p.replicas('e')[1].up; i++) await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(p.replicas('e').map((r) => r.up)).toEqual([true, false]);
    expect(events.find((e) => e.kind === 'served/replica_down')?.data).toMatchObject({ endpoint: 'e', baseUrl: bUrl, reason: 'network' });
    await p.chat('solver', hi);
    expect(a.seen.filter((x) => x.method === 'POST')).toHaveLength(1);
    // Still down when due again: it stays out; a comes through every check.
    clock += 1000;
    await p.checkAll();
    expect(p.replicas('e').map((r) => r.up)).toEqual([true, false]);
    p.close();
  });
});

