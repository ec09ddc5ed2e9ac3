/**
 * A reasoning-system run against the scripted fault server (issue #16, Must show "Faults"): 429
 * with Retry-After, a 500, a hang, malformed JSON and a stream cut mid-reply are retried by the
 * pool, each logged with the endpoint's name; no turn is lost or duplicated and a cut stream's
 * partial segments are dropped. A chain over its error budget is marked failed; a refused key
 * mid-run ends the run, which resumes without repeating its finished calls; a wrong key or model
 * is found by the probe and named by field. The key is in no event and no stored row.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { CHAIN_FAILED_EVENT, systemRun } from '../../src-main/engine/system/system-run';
import { openStore, type Store } from '../../src-main/engine/store';
import { approvals } from '../helpers/key-approvals';
import { tempDir } from '../helpers/tmp';
import { startFaultServer, type Behaviour, type FaultServer } from './fault-server';

const KEY = 'fault-system-key-5e6f7a8b9c0d1e2f';
let tmp: ReturnType<typeof tempDir>;
let store: Store;

beforeAll(() => {
  tmp = tempDir('marsrl-system-faults-');
  store = openStore(path.join(tmp.dir, 'runs.db'));
});

afterAll(() => {
  store?.close();
  tmp?.cleanup();
});

/** Every role served by the fault server, one request at a time (so the script's order is the calls' order); 1.5 s without a byte is a hang, loose enough for a loaded machine. */
function faultConfig(server: FaultServer, over: Record<string, unknown> = {}, endpoint: Record<string, unknown> = {}): RunConfig {
  const roles = ['solver', 'verifier', 'corrector'];
  return resolveConfig(
    deepMerge(deepMerge(presetDocument('quick'), { pipeline: { mode: 'sync' }, eval: { problems: 2, k: 1 }, system: { mode: 'chain', controls: false } }), {
      endpoints: { faulty: { base_url: server.baseUrl, model: 'fault-model', api_key_env: 'FAULT_KEY', concurrency: 1, timeout_s: 1.5, retries: 6, ...endpoint } },
      policies: Object.fromEntries(roles.map((r) => [r, { endpoint: 'faulty' }])),
      ...over,
    }),
  );
}

function newRun(config: RunConfig): number {
  return store.runs.create({ name: 'faults', config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
}

const liveTurns = (runId: number) => store.trajectories.pageTurns({ runId, limit: 1000 }).items;
const posts = (server: FaultServer) => server.seen.filter((r) => r.method === 'POST').length;
// Issue #36: the test's key variable is approved for its loopback server.
const quickPool = { backoffBaseMs: 1, backoffMaxMs: 5, keyApprovals: approvals({ FAULT_KEY: ['127.0.0.1'] }) };

/** The probe's two requests (n = 2, then the same seeded again) answer normally. */
const PROBE: Behaviour[] = [{ kind: 'ok' }, { kind: 'ok' }];

describe('a reasoning-system run meets faults', () => {
  it('retries 429 / 500 / a hang / malformed JSON / a cut stream, logs each by endpoint name, and loses or duplicates no turn', async () => {
    const server = await startFaultServer({ key: KEY, script: [...PROBE, { kind: 'status', status: 429, headers: { 'retry-after': '0' } }, { kind: 'status', status: 500 }, { kind: 'hang' }, { kind: 'malformed' }, { kind: 'stream-cut', after: 6 }] });
    try {
      const config = faultConfig(server);
      const runId = newRun(config);
      expect(await systemRun({ store, runId, config, env: { FAULT_KEY: KEY }, pool: quickPool })).toEqual({ status: 'done', step: 0 });
      // "hello world" parses as no answer and no verdict: each of the 2 × (1 greedy + 1 sampled)
      // chains is a Solver and one Verifier call.
      const turns = liveTurns(runId);
      expect(turns.map((t) => t.agent).sort()).toEqual([...Array(4).fill('solver'), ...Array(4).fill('verifier1')]);
      for (const t of turns) {
        expect(t.text).toBe('hello world');
        // The cut stream had delivered "hello"; its segments were dropped when it was sent again.
        expect(store.trajectories.segments(t.id).map((s) => s.text).join('')).toBe('hello world');
      }
      expect(posts(server)).toBe(2 + 8 + 5);
      const events = store.events.events(runId, 0, 1000).items;
      const retries = events.filter((e) => e.kind === 'served/retry');
      // The run streams its calls: a malformed JSON body in place of the event stream ends before
      // any [DONE], which the client reads as a cut stream.
      expect(retries.map((e) => e.data?.reason)).toEqual(['http', 'http', 'timeout', 'stream_cut', 'stream_cut']);
      for (const e of retries) expect(e.data?.endpoint).toBe('faulty');
      expect(JSON.stringify(events)).not.toContain(KEY);
      expect(store.metrics.latest(runId, ['pool/faulty/errors'])['pool/faulty/errors']).toBe(5);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('marks a chain over its error budget failed, keeping the failed calls as superseded turns', async () => {
    const server = await startFaultServer({ key: KEY, script: [...PROBE, { kind: 'status', status: 500 }, { kind: 'status', status: 500 }, { kind: 'status', status: 500 }] });
    try {
      const config = faultConfig(server, { eval: { problems: 1, k: 1 }, system: { mode: 'chain', controls: false, error_budget: 1 } }, { retries: 0 });
      const runId = newRun(config);
      expect(await systemRun({ store, runId, config, env: { FAULT_KEY: KEY }, pool: quickPool })).toEqual({ status: 'done', step: 0 });
      const m = store.metrics.latest(runId, ['system/failed_chains', 'system/failed_calls', 'system/calls', 'eval/solver/accuracy']);
      // Greedy chain: 500, 500 (over a budget of 1): failed. Sampled chain: 500, then answered.
      expect(m).toEqual({ 'system/failed_chains': 1, 'system/failed_calls': 3, 'system/calls': 2, 'eval/solver/accuracy': 0 });
      expect(store.events.latestOfKind(runId, CHAIN_FAILED_EVENT)?.message).toMatch(/greedy chain 0 of problem .*: 2 failed calls, over system.error_budget \(1\)/);
      const all = store.trajectories.pageTurns({ runId, limit: 1000, includeSuperseded: true }).items;
      expect(all.filter((t) => t.supersededBy !== null)).toHaveLength(3);
      expect(liveTurns(runId).map((t) => t.agent)).toEqual(['solver', 'verifier1']);
      const greedy = store.trajectories.pageEpisodes({ runId, split: 'test' }).items.find((e) => (e.meta as { eval: string }).eval === 'greedy');
      expect(greedy).toMatchObject({ correct: false, finalAnswer: null });
    } finally {
      await server.close();
    }
  }, 60_000);

  it('ends the run on a key refused mid-run, and resumes it without repeating a finished call', async () => {
    const server = await startFaultServer({ key: KEY, script: [...PROBE, { kind: 'ok' }, { kind: 'status', status: 401 }] });
    try {
      const config = faultConfig(server);
      const runId = newRun(config);
      const failed = await systemRun({ store, runId, config, env: { FAULT_KEY: KEY }, pool: quickPool });
      expect(failed.status).toBe('failed');
      expect(failed.status === 'failed' && failed.reason).toMatch(/faulty/);
      expect(liveTurns(runId).map((t) => [t.agent, t.text])).toEqual([['solver', 'hello world']]);
      const before = posts(server);
      expect(await systemRun({ store, runId, config, env: { FAULT_KEY: KEY }, pool: quickPool, resume: true })).toEqual({ status: 'done', step: 0 });
      // The probe again, then the seven calls still to make: the first Solver call is not repeated.
      expect(posts(server) - before).toBe(2 + 7);
      expect(liveTurns(runId).map((t) => t.agent).sort()).toEqual([...Array(4).fill('solver'), ...Array(4).fill('verifier1')]);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('shows a turn being written: its streamed segments are in the store before the reply ends', async () => {
    const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');
    const server = await startFaultServer({ key: KEY, text: words, wordDelayMs: 60 });
    try {
      const config = faultConfig(server, { eval: { problems: 1, k: 1 }, system: { mode: 'chain', controls: false }, pipeline: { segment_tokens: 2 } });
      const runId = newRun(config);
      // Read the store as the trajectory browser does, from another connection, while the run streams.
      const reader = openStore(store.path);
      const seen: Array<{ text: string; segments: string }> = [];
      const poll = setInterval(() => {
        for (const t of reader.trajectories.pageTurns({ runId, limit: 100 }).items) {
          if (t.correct === null) seen.push({ text: t.text, segments: reader.trajectories.segments(t.id).map((s) => s.text).join('') });
        }
      }, 40);
      try {
        expect(await systemRun({ store, runId, config, env: { FAULT_KEY: KEY }, pool: quickPool })).toEqual({ status: 'done', step: 0 });
      } finally {
        clearInterval(poll);
        reader.close();
      }
      // An unfinished turn with part of its reply in segments: a proper, growing prefix of the reply.
      const partial = seen.filter((s) => s.segments.length > 0 && s.segments.length < words.length);
      expect(partial.length).toBeGreaterThan(0);
      for (const s of partial) {
        expect(s.text).toBe('');
        expect(words.startsWith(s.segments)).toBe(true);
      }
      for (const t of liveTurns(runId)) expect(t.text).toBe(words);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('names the field when the probe finds an expired key or a model not served, and makes no call', async () => {
    const server = await startFaultServer({ key: KEY });
    try {
      const expired = faultConfig(server);
      const a = await systemRun({ store, runId: newRun(expired), config: expired, env: { FAULT_KEY: `${KEY}-expired` }, pool: quickPool });
      expect(a.status === 'failed' && a.reason).toMatch(/^endpoints\.faulty\.api_key_env: /);
      expect(a.status === 'failed' && a.reason).not.toContain(KEY.slice(0, 8));
      const wrong = faultConfig(server, {}, { model: 'no-such-model' });
      const b = await systemRun({ store, runId: newRun(wrong), config: wrong, env: { FAULT_KEY: KEY }, pool: quickPool });
      expect(b.status === 'failed' && b.reason).toMatch(/^endpoints\.faulty\.model: .*no-such-model/);
      expect(posts(server)).toBe(0);
    } finally {
      await server.close();
    }
  }, 60_000);
});
