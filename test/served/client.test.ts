import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EndpointClient, EndpointError, parseRetryAfter, type EndpointClientOptions, type StreamChunk } from '../../src-main/engine/served/client';
import { redactSecret, type ServedEvent } from '../../src-main/engine/served/events';
import { openStore } from '../../src-main/engine/store';
import { approvals } from '../helpers/key-approvals';
import { tempDir } from '../helpers/tmp';
import { startFaultServer, type Behaviour, type FaultServer, type FaultServerOptions } from './fault-server';

const KEY = 'sk-test-0123456789abcdefSECRET';
const ENV = { SERVED_TEST_KEY: KEY };

let servers: FaultServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function setup(script: Behaviour[], client: Partial<EndpointClientOptions> = {}, server: FaultServerOptions = {}) {
  const fault = await startFaultServer({ key: KEY, script, ...server });
  servers.push(fault);
  const events: ServedEvent[] = [];
  const delays: number[] = [];
  const c = new EndpointClient({
    name: 'judge-pool',
    baseUrl: fault.baseUrl,
    model: 'fault-model',
    apiKeyEnv: 'SERVED_TEST_KEY',
    env: { ...ENV },
    // Issue #36: the test's variable is approved for its loopback server, as a user approves theirs.
    keyApprovals: approvals({ SERVED_TEST_KEY: ['127.0.0.1'] }),
    retries: 3,
    timeoutMs: 2_000,
    backoffBaseMs: 10,
    onEvent: (e) => events.push(e),
    sleep: async (ms) => {
      delays.push(ms);
    },
    ...client,
  });
  return { fault, c, events, delays };
}

describe('EndpointClient against a loopback server', () => {
  it('sends the model, sampling parameters and the key read from the environment at call time', async () => {
    const env: NodeJS.ProcessEnv = { SERVED_TEST_KEY: KEY };
    const { fault, c } = await setup([], { env, sampling: { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0.05, max_tokens: 32, seed: 7, n: 2, logprobs: true, top_logprobs: 2, chat_template_kwargs: { enable_thinking: false }, ignore_eos: true, min_tokens: 4 } });
    const r = await c.chat([{ role: 'user', content: 'What is 2+2?' }]);
    expect(r.choices.map((x) => x.text)).toEqual(['hello world 0', 'hello world 1']);
    expect(r.usage).toEqual({ promptTokens: 7, completionTokens: 6, totalTokens: 13 });
    expect(r.choices[0].logprobs?.map((l) => l.logprob)).toEqual([-0.5, -1, -1.5]);
    expect(r.attempts).toBe(1);
    const body = fault.seen[0].body!;
    expect(body).toMatchObject({ model: 'fault-model', temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0.05, max_tokens: 32, seed: 7, n: 2, logprobs: true, top_logprobs: 2, chat_template_kwargs: { enable_thinking: false }, ignore_eos: true, min_tokens: 4 });
    expect(fault.seen[0].authorization).toBe(`Bearer ${KEY}`);
    // The key is read per call: a rotated key is used by the next request.
    env.SERVED_TEST_KEY = `${KEY}-rotated`;
    await expect(c.chat([{ role: 'user', content: 'x' }])).rejects.toThrow(/refused the API key from SERVED_TEST_KEY/);
    expect(fault.seen[1].authorization).toBe(`Bearer ${KEY}-rotated`);
    expect(c.totals).toMatchObject({ requests: 2, failures: 1, promptTokens: 7, completionTokens: 6 });
  });

  it('honours Retry-After on 429 and logs the retry with the endpoint name', async () => {
    const { c, events, delays, fault } = await setup([{ kind: 'status', status: 429, headers: { 'retry-after': '2' } }]);
    const r = await c.chat([{ role: 'user', content: 'hi' }]);
    expect(r.attempts).toBe(2);
    expect(fault.seen).toHaveLength(2);
    expect(delays).toEqual([2000]);
    expect(events[0]).toMatchObject({ level: 'warning', kind: 'served/retry', data: { endpoint: 'judge-pool', status: 429, attempt: 1, delayMs: 2000 } });
    expect(events[0].message).toContain('judge-pool');
  });

  it('retries 500s with exponential backoff and fails once the retries are spent', async () => {
    const ok = await setup([{ kind: 'status', status: 500 }, { kind: 'status', status: 503 }], { random: () => 1 });
    expect((await ok.c.chat([{ role: 'user', content: 'hi' }])).attempts).toBe(3);
    expect(ok.delays).toEqual([10, 20]);

    const failing = await setup([{ kind: 'status', status: 500 }, { kind: 'status', status: 500 }, { kind: 'status', status: 500 }], { retries: 1 });
    const error = await failing.c.chat([{ role: 'user', content: 'hi' }]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndpointError);
    expect(error).toMatchObject({ status: 500, attempts: 2, endpoint: 'judge-pool', kind: 'http' });
    expect(failing.fault.seen).toHaveLength(2);
    expect(failing.events.map((e) => e.kind)).toEqual(['served/retry', 'served/failed']);
  });

  it('backoff doubles per attempt, jitters within [d/2, d] and stops at the cap', () => {
    const lows = new EndpointClient({ name: 'e', baseUrl: 'http://127.0.0.1:1/v1', model: 'm', backoffBaseMs: 100, backoffMaxMs: 1000, random: () => 0 });
    const highs = new EndpointClient({ name: 'e', baseUrl: 'http://127.0.0.1:1/v1', model: 'm', backoffBaseMs: 100, backoffMaxMs: 1000, random: () => 0.999999 });
    expect([1, 2, 3, 4, 5, 6].map((a) => lows.backoffDelay(a, null))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 6].map((a) => highs.backoffDelay(a, null))).toEqual([100, 200, 400, 800, 1000, 1000]);
    // Retry-After is a floor, capped by backoffMaxMs.
    expect(lows.backoffDelay(1, 700)).toBe(700);
    expect(lows.backoffDelay(1, 5000)).toBe(1000);
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(null)).toBeNull();
    const inTwo = parseRetryAfter(new Date(Date.now() + 2000).toUTCString())!;
    expect(inTwo).toBeGreaterThan(500);
    expect(inTwo).toBeLessThanOrEqual(2000);
  });

  it('gives up on a hanging replica after the idle timeout and retries', async () => {
    const { c, events } = await setup([{ kind: 'hang' }], { timeoutMs: 150 });
    const started = Date.now();
    const r = await c.chat([{ role: 'user', content: 'hi' }]);
    expect(r.attempts).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(events[0].data).toMatchObject({ reason: 'timeout', endpoint: 'judge-pool' });

    const hung = await setup([{ kind: 'hang' }, { kind: 'hang' }], { timeoutMs: 100, retries: 1 });
    await expect(hung.c.chat([{ role: 'user', content: 'hi' }])).rejects.toMatchObject({ kind: 'timeout', attempts: 2 });
  });

  it('keeps one connection for calls in a row, and does not reuse the one a timed-out call left hanging', async () => {
    const { fault, c } = await setup([], { timeoutMs: 150 });
    for (let i = 0; i < 5; i++) await c.chat([{ role: 'user', content: `call ${i}` }]);
    expect(fault.seen).toHaveLength(5);
    expect(fault.connections()).toBe(1);
    // A streamed call read to its end also gives its connection back.
    await c.chat([{ role: 'user', content: 'streamed' }], { onChunk: () => {} });
    await c.chat([{ role: 'user', content: 'after the stream' }]);
    expect(fault.connections()).toBe(1);

    fault.script.push({ kind: 'hang' });
    const r = await c.chat([{ role: 'user', content: 'hangs, then retried' }]);
    expect(r.attempts).toBe(2);
    // The hung socket was destroyed, so the retry opened a new one (and later calls keep it).
    expect(fault.connections()).toBe(2);
    await c.chat([{ role: 'user', content: 'last' }]);
    expect(fault.connections()).toBe(2);
  });

  it('retries malformed JSON', async () => {
    const { c, events } = await setup([{ kind: 'malformed' }]);
    expect((await c.chat([{ role: 'user', content: 'hi' }])).choices[0].text).toBe('hello world');
    expect(events[0].data.reason).toBe('malformed');
    const strict = await setup([{ kind: 'malformed' }], { retries: 0 });
    await expect(strict.c.chat([{ role: 'user', content: 'hi' }])).rejects.toThrow(/malformed JSON/);
  });

  it('streams deltas as they arrive, and restarts cleanly when a stream is cut', async () => {
    const { c, events } = await setup([{ kind: 'stream-cut', after: 6 }], {}, { text: 'the quick brown fox' });
    const chunks: StreamChunk[] = [];
    let shown = '';
    const r = await c.chat([{ role: 'user', content: 'hi' }], {
      onChunk: (ch) => {
        chunks.push(ch);
        shown = ch.restart ? '' : shown + ch.delta;
      },
    });
    expect(r.choices[0].text).toBe('the quick brown fox');
    expect(r.choices[0].finishReason).toBe('stop');
    expect(r.usage?.completionTokens).toBe(4);
    expect(shown).toBe('the quick brown fox');
    expect(chunks.filter((ch) => ch.restart)).toHaveLength(1);
    // Before the cut, one word arrived on its own ("the", 3 characters ≤ 6; " quick" would pass 6).
    expect(chunks[0]).toEqual({ index: 0, delta: 'the' });
    expect(events[0].data.reason).toBe('stream_cut');
  });

  it('fails at once on a wrong model name (404) and on an expired key (401), naming the variable and never the key', async () => {
    const wrong = await setup([], { model: 'no-such-model' });
    const e404 = (await wrong.c.chat([{ role: 'user', content: 'hi' }]).catch((e: unknown) => e)) as EndpointError;
    expect(e404.status).toBe(404);
    expect(e404.message).toContain('"no-such-model"');
    expect(wrong.fault.seen).toHaveLength(1);

    const expired = await setup([], { env: { SERVED_TEST_KEY: `${KEY}-expired` } });
    const e401 = (await expired.c.chat([{ role: 'user', content: 'hi' }]).catch((e: unknown) => e)) as EndpointError;
    expect(e401.status).toBe(401);
    expect(e401.message).toContain('SERVED_TEST_KEY');
    expect(e401.message).not.toContain(KEY);
    expect(e401.message).not.toContain(KEY.slice(0, 8));
    expect(expired.fault.seen).toHaveLength(1);

    const missing = await setup([], { env: {} });
    await expect(missing.c.chat([{ role: 'user', content: 'hi' }])).rejects.toThrow(/SERVED_TEST_KEY \(api_key_env\) is not set/);
    expect(missing.fault.seen).toHaveLength(0);
  });

  it('probes what a server lacks before a run', async () => {
    const { c } = await setup([], {}, { ignoreN: true, noLogprobs: true, rejectTopK: true });
    const report = await c.probe();
    expect(report.error).toBeNull();
    expect(report.models).toEqual(['fault-model']);
    expect(report.modelServed).toBe(true);
    expect(new Set(report.missing)).toEqual(new Set(['top_k', 'n', 'logprobs']));
    expect(report.notes.join('\n')).toMatch(/ignores n/);

    const full = await setup([]);
    expect((await full.c.probe()).missing).toEqual([]);

    const wrongModel = await setup([], { model: 'qwen3-32b' });
    const bad = await wrongModel.c.probe();
    expect(bad.error).toMatch(/model "qwen3-32b" is not served at .* \(it serves "fault-model"\)/);

    const unreachable = new EndpointClient({ name: 'gone', baseUrl: 'http://127.0.0.1:9/v1', model: 'm', retries: 0, timeoutMs: 1000 });
    const down = await unreachable.probe();
    expect(down.reachable).toBe(false);
    expect(down.error).toMatch(/gone: cannot reach http:\/\/127\.0\.0\.1:9\/v1\/models/);
  });

  it('no event, error or stored event row carries the key', async () => {
    const tmp = tempDir();
    try {
      const all: ServedEvent[] = [];
      const errors: string[] = [];
      const script: Behaviour[] = [{ kind: 'status', status: 429, headers: { 'retry-after': '0' } }, { kind: 'status', status: 500 }, { kind: 'hang' }, { kind: 'malformed' }, { kind: 'stream-cut', after: 3 }];
      const faulty = await setup(script, { timeoutMs: 100, retries: 6, onEvent: (e) => all.push(e) });
      await faulty.c.chat([{ role: 'user', content: 'hi' }], { onChunk: () => {} });
      for (const variant of [{ env: { SERVED_TEST_KEY: `${KEY}-expired` } }, { model: 'wrong' }]) {
        const s = await setup([], { ...variant, onEvent: (e) => all.push(e) });
        await s.c.chat([{ role: 'user', content: 'hi' }]).catch((e: Error) => errors.push(e.message));
        await s.c.probe();
      }
      expect(all.length).toBeGreaterThanOrEqual(7);
      const dbPath = path.join(tmp.dir, 'runs.db');
      const store = openStore(dbPath);
      const runId = store.runs.create({ name: 'served', config: {}, codeVersion: 't', seed: 1 });
      for (const e of all) store.events.log(runId, e.level, e.kind, e.message, e.data);
      store.close();
      const logFile = path.join(tmp.dir, 'served.jsonl');
      fs.writeFileSync(logFile, all.map((e) => JSON.stringify(e)).join('\n') + errors.join('\n'));
      const files = fs.readdirSync(tmp.dir).map((f) => path.join(tmp.dir, f));
      const haystack = Buffer.concat(files.map((f) => fs.readFileSync(f)));
      expect(haystack.includes('judge-pool')).toBe(true); // the endpoint's name is there …
      expect(haystack.includes(KEY)).toBe(false); // … its key is not,
      expect(haystack.includes(KEY.slice(0, 8))).toBe(false); // not even the part a 401 echoes.
    } finally {
      tmp.cleanup();
    }
  });

  it('redactSecret scrubs the key, its prefix and bearer credentials', () => {
    expect(redactSecret(`Incorrect API key provided: ${KEY.slice(0, 8)}...RET; Bearer abc`, KEY)).toBe('Incorrect API key provided: ***...RET; Bearer ***');
    expect(redactSecret(`x${KEY}y`, KEY)).toBe('x***y');
  });
});

describe('EndpointClient on a server without n', () => {
  it('sends a group as n requests of one choice, seeds offset per choice', async () => {
    const fault = await startFaultServer({ ignoreN: true });
    servers.push(fault);
    const c = new EndpointClient({ name: 'plain', baseUrl: fault.baseUrl, model: 'fault-model', sampling: { n: 3, seed: 10 }, unsupported: ['n'] });
    const shown = ['', '', ''];
    const r = await c.chat([{ role: 'user', content: 'hi' }], { onChunk: (ch) => (shown[ch.index] += ch.delta) });
    expect(r.choices.map((x) => x.index)).toEqual([0, 1, 2]);
    expect(r.choices.map((x) => x.text)).toEqual(['hello world', 'hello world', 'hello world']);
    expect(shown).toEqual(['hello world', 'hello world', 'hello world']);
    expect(r.usage).toEqual({ promptTokens: 21, completionTokens: 6, totalTokens: 27 });
    const bodies = fault.seen.map((s) => s.body!);
    expect(bodies.map((b) => b.n)).toEqual([undefined, undefined, undefined]);
    expect(bodies.map((b) => b.seed).sort()).toEqual([10, 11, 12]);
  });
});

describe('EndpointClient cancellation', () => {
  it('a caller abort ends a hanging request at once, without retries', async () => {
    const fault = await startFaultServer({ script: [{ kind: 'hang' }, { kind: 'hang' }] });
    servers.push(fault);
    const events: ServedEvent[] = [];
    const c = new EndpointClient({ name: 'cancel', baseUrl: fault.baseUrl, model: 'fault-model', timeoutMs: 60_000, retries: 3, onEvent: (e) => events.push(e) });
    const controller = new AbortController();
    const started = Date.now();
    const pending = c.chat([{ role: 'user', content: 'hi' }], { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ kind: 'aborted', attempts: 1 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(fault.seen).toHaveLength(1);
    expect(events.map((e) => e.kind)).toEqual(['served/failed']);
  });
});
