/**
 * Reasoning-system runs (issue #16) against `marsrl serve-model` serving the shipped quick
 * checkpoints, through a counting proxy that records every request the run sends.
 *
 * - Must show: the unrolled chain through HTTP gives the held-out accuracy of the in-process
 *   evaluation of the same checkpoints (greedy: identical chains, texts and metrics; sampled:
 *   within the seed spread, because the server's per-choice random streams are not the batch's).
 * - MarsRL's loop, stopped mid-run and resumed: the calls of both attempts together are exactly
 *   the calls of an uninterrupted run (none repeated, none lost) and the metrics are identical.
 * - Streamed replies fill segments; SFT and preference-pair exports of the run work; the API key
 *   is in none of the database file, the events and the exports.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deepMerge, presetDocument } from '../../src-main/engine/config/load';
import { resolveConfig } from '../../src-main/engine/preflight';
import type { RunConfig } from '../../src-main/engine/config/schema';
import { EXPORT_FORMATS, runExport } from '../../src-main/engine/export';
import { initBackend } from '../../src-main/engine/model/backend';
import { systemRun } from '../../src-main/engine/system/system-run';
import { openStore, type Store } from '../../src-main/engine/store';
import { evaluate } from '../../src-main/engine/training/evaluate';
import { expectSameMetrics, greedyEpisodes } from '../helpers/served-eval';
import { createPolicy, rolePolicies, usedPolicyIds, type PolicyRuntime } from '../../src-main/engine/training/policies';
import { evaluationSet, loadTaskData } from '../../src-main/engine/training/task-data';
import { loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { approvals } from '../helpers/key-approvals';
import { tempDir } from '../helpers/tmp';
import { QUICK_CHECKPOINTS } from '../helpers/model-server';

const KEY = 'system-run-secret-key-7f3a9c2e51d04b68';
const ENV = { SYSTEM_RUN_KEY: KEY };
// Issue #36: the key variable is approved for the loopback proxy, as a user approves theirs.
const POOL = { keyApprovals: approvals({ SYSTEM_RUN_KEY: ['127.0.0.1'] }) };

let tmp: ReturnType<typeof tempDir>;
let server: ModelServer;
let proxy: { url: string; seen: Array<Record<string, unknown>>; close: () => Promise<void> };
let store: Store;

/** Forwards to serve-model and records each POST body it passes on. */
async function countingProxy(target: string) {
  const seen: Array<Record<string, unknown>> = [];
  const targetUrl = new URL(target);
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (req.method === 'POST') seen.push(JSON.parse(raw.toString('utf8')) as Record<string, unknown>);
      const up = http.request({ host: targetUrl.hostname, port: targetUrl.port, path: req.url, method: req.method, headers: { ...req.headers, host: targetUrl.host } }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.end(raw);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    close: async () => {
      srv.closeAllConnections();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    },
  };
}

/** The run's own calls (the capability probe asks for 2 tokens; the run for the response budget). */
const runCalls = () => proxy.seen.filter((b) => b.max_tokens !== 2);

function quickConfig(over: Record<string, unknown>, served: boolean): RunConfig {
  const base = presetDocument('quick');
  const endpoints = served
    ? {
        endpoints: Object.fromEntries(['solver', 'verifier', 'corrector'].map((role) => [role, { base_url: proxy.url, model: role, api_key_env: 'SYSTEM_RUN_KEY', concurrency: 8, timeout_s: 60 }])),
        policies: Object.fromEntries(['solver', 'verifier', 'corrector'].map((role) => [role, { ...(base.policies as Record<string, object>)[role], endpoint: role }])),
      }
    : {};
  return resolveConfig(deepMerge(deepMerge(base, { pipeline: { mode: 'sync' } }), { ...endpoints, ...over }));
}

function newRun(config: RunConfig, name: string): number {
  const runId = store.runs.create({ name, config: config as unknown as Record<string, unknown>, codeVersion: 'test', seed: config.seed });
  store.runs.setStatus(runId, 'running');
  return runId;
}

beforeAll(async () => {
  await initBackend('wasm');
  tmp = tempDir('marsrl-system-');
  const policies = ['solver', 'verifier', 'corrector'].map((role) => loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, role)));
  server = await createModelServer({ policies, token: KEY, batchWindowMs: 2, log: () => {} });
  proxy = await countingProxy(server.url);
  store = openStore(path.join(tmp.dir, 'runs.db'));
}, 60_000);

afterAll(async () => {
  store?.close();
  await proxy?.close();
  await server?.close();
  tmp?.cleanup();
});

describe('a reasoning-system run against marsrl serve-model', () => {
  it('gives the in-process evaluation of the quick checkpoints: greedy identical, sampled within seed spread', async () => {
    const over = { eval: { problems: 24, k: 4 }, system: { mode: 'chain' } };
    const config = quickConfig(over, true);
    const runId = newRun(config, 'served-chain');
    const outcome = await systemRun({ store, runId, config, env: ENV, pool: POOL });
    expect(outcome).toEqual({ status: 'done', step: 0 });
    const served = store.metrics.latest(runId, store.metrics.keys(runId));

    const local = quickConfig({ eval: { problems: 24, k: 4 } }, false);
    const data = loadTaskData(local);
    const byId = new Map<string, PolicyRuntime>();
    for (const id of usedPolicyIds(local)) byId.set(id, createPolicy(id, local.policies[id], data.tokenizer, local.seed).policy);
    const ctx = { family: data.family, policies: rolePolicies(local, byId), config: local };
    const { problems, seed } = evaluationSet(local, data);
    const reference = evaluate(ctx, problems, seed);

    expectSameMetrics(served, reference, ['eval/solver/accuracy', 'eval/system/accuracy', 'eval/system/margin', 'eval/control/oracle_verifier/accuracy', 'eval/control/corrector_always/accuracy', 'eval/verifier/recall', 'eval/corrector/fix_rate']);
    // The greedy chains themselves: every stored turn's text is the in-process chain's text.
    const episodes = greedyEpisodes(store, runId, reference);
    expect(episodes).toHaveLength(24);
    for (const { turns, chain } of episodes) {
      expect(turns.map((t) => [t.agent, t.text])).toEqual(chain.steps.map((s) => [s.role === 'solver' ? 'solver' : `${s.role}${s.round}`, s.text]));
    }
    // Sampled: the served streams are other random draws of the same policies.
    const n = 24 * 4;
    for (const key of ['eval/solver/avg@4', 'eval/system/avg@4']) {
      const p = reference.metrics[key];
      const spread = 4 * Math.sqrt((2 * Math.max(p * (1 - p), 0.05)) / n);
      expect(Math.abs(served[key] - p), key).toBeLessThanOrEqual(spread);
    }
    for (const p of byId.values()) p.dispose();
    // Every call is a turn: the calls the server saw are the run's stored (non-oracle) turns.
    const stored = store.db.prepare("SELECT COUNT(*) AS n FROM turns WHERE run_id = ? AND policy_id != 'oracle' AND superseded_by IS NULL").get(runId) as { n: number };
    expect(runCalls().length).toBe(stored.n);
    expect(served['system/calls']).toBe(stored.n);
    expect(served['pool/solver/requests']).toBeGreaterThan(0);
  }, 90_000);

  it("MarsRL's loop, stopped mid-run and resumed, makes exactly the calls of an uninterrupted run", async () => {
    const over = { eval: { problems: 6, k: 2 }, system: { mode: 'loop', max_iterations: 3, approvals: 2 }, pipeline: { segment_tokens: 4 } };
    const config = quickConfig(over, true);

    const whole = newRun(config, 'loop-whole');
    const before = runCalls().length;
    expect(await systemRun({ store, runId: whole, config, env: ENV, pool: POOL })).toEqual({ status: 'done', step: 0 });
    const wholeCalls = runCalls().slice(before);
    const wholeMetrics = store.metrics.latest(whole, store.metrics.keys(whole).filter((k) => !k.startsWith('pool/')));

    const stopped = newRun(config, 'loop-stopped');
    const controller = new AbortController();
    const first = runCalls().length;
    const outcome = await systemRun({ store, runId: stopped, config, env: ENV, pool: POOL, signal: controller.signal, onProgress: (p) => (p.phase === 'pretrain' && p.step >= 7 ? controller.abort('test stop') : undefined) });
    expect(outcome.status).toBe('interrupted');
    const firstCalls = runCalls().length - first;
    expect(firstCalls).toBeGreaterThan(0);
    expect(firstCalls).toBeLessThan(wholeCalls.length);
    store.runs.setStatus(stopped, 'running');
    expect(await systemRun({ store, runId: stopped, config, env: ENV, pool: POOL, resume: true })).toEqual({ status: 'done', step: 0 });
    const resumedCalls = runCalls().slice(first);

    // The same requests (messages, seed, sampling), as many times each: none repeated, none lost.
    const asKeys = (calls: Array<Record<string, unknown>>) => calls.map((c) => JSON.stringify([c.model, c.messages, c.seed, c.temperature])).sort();
    expect(asKeys(resumedCalls)).toEqual(asKeys(wholeCalls));
    const metrics = store.metrics.latest(stopped, store.metrics.keys(stopped).filter((k) => !k.startsWith('pool/')));
    expect(metrics).toEqual(wholeMetrics);
    expect(metrics['system/accepted']).toBeGreaterThanOrEqual(0);
    expect(store.events.latestOfKind(stopped, 'resumed')?.message).toMatch(new RegExp(`${firstCalls} finished calls are kept`));

    // Streamed replies filled segments as they came: a turn's segments add up to its text.
    const turns = store.trajectories.pageTurns({ runId: stopped, limit: 1000 }).items.filter((t) => t.policyId !== 'oracle');
    const multi = turns.filter((t) => store.trajectories.segments(t.id).length > 1);
    expect(multi.length).toBeGreaterThan(0);
    for (const t of multi) expect(store.trajectories.segments(t.id).map((s) => s.text).join('')).toBe(t.text);
    // Loop mode: verifier rounds beyond the first exist (the same solution judged again, or a repair judged).
    expect(turns.some((t) => t.agent === 'verifier2')).toBe(true);

    // SFT and preference pairs of the run, and every other format: none carries the key.
    const outDir = path.join(tmp.dir, 'exports');
    fs.mkdirSync(outDir, { recursive: true });
    const sft = await runExport(store, { runs: [stopped], format: 'sft', out: path.join(outDir, 'sft.jsonl') });
    expect(sft.rows).toBeGreaterThan(0);
    const pairs = await runExport(store, { runs: [stopped], format: 'pairs', out: path.join(outDir, 'pairs.jsonl') });
    expect(pairs.rows).toBeGreaterThan(0);
    const pairRow = JSON.parse(fs.readFileSync(pairs.out, 'utf8').split('\n')[0]) as Record<string, unknown>;
    expect(JSON.stringify(pairRow)).toMatch(/sort/);
    const files = [sft.out, sft.card, pairs.out, pairs.card];
    for (const format of EXPORT_FORMATS.filter((f) => f !== 'sft' && f !== 'pairs')) {
      for (const container of ['jsonl', 'parquet'] as const) {
        const r = await runExport(store, { runs: [stopped], format, container, out: path.join(outDir, `${format}.${container}`) }).catch((e: Error) => e);
        if (r instanceof Error) {
          // veRL exports training prompts; a system run has held-out problems only.
          expect({ format, message: r.message }).toMatchObject({ format: 'verl' });
          continue;
        }
        files.push(r.out, r.card);
      }
    }
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    const dbFiles = fs.readdirSync(tmp.dir).filter((f) => f.startsWith('runs.db')).map((f) => path.join(tmp.dir, f));
    const events = JSON.stringify(store.events.events(stopped, 0, 1000).items);
    expect(events).toMatch(/served\/probe|resumed/);
    for (const file of [...files, ...dbFiles]) {
      const bytes = fs.readFileSync(file);
      expect({ file, found: bytes.includes(KEY) || bytes.includes(KEY.slice(0, 8)) }).toEqual({ file, found: false });
    }
    expect(events).not.toContain(KEY);
  }, 90_000);
});
