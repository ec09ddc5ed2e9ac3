/**
 * `npm run bench -- serve [--clients 1,8,32] [--requests K] [--rounds R] [--max-tokens N] [--digits 8 | 2,30] [--outputs natural,fixed]
 *                        [--model tiny-qwen,quick,bench] [--checkpoint DIR] [--backend auto|wasm|cpu|tensorflow] [--engine auto|thread|inline]
 *                        [--join-wait MS] [--batch-window MS] [--inline-server] [--system-problems P]
 *                        [--host-rows R] [--host-tokens N] [--text-tokens N] [--json]`
 *
 * Requests/s and tokens/s of `marsrl serve-model` (the OpenAI-compatible server, over loopback
 * HTTP with the Studio's endpoint client) with 1, 8 and 32 concurrent clients (the bench model: 8), against the same
 * decoding in-process: the same batcher fed the same requests (prompts, seeds, max_tokens) by the
 * same number of concurrent callers, without HTTP or JSON. Each client sends K requests one after
 * another (a closed loop); every request is seeded, so both sides generate the same tokens.
 * Overhead = served wall time / in-process wall time − 1 (target at 8 clients: under 10%, issue #16),
 * the median over rounds of each round's pair (served and in-process back to back); the ratio of
 * each side's best round is printed beside it.
 *
 * Rounds are long (40 requests per client by default) so that both sides are measured in their
 * steady state. In a short round, in-process callers whose answers have equal lengths stay in
 * lockstep: the quick GPT answers every "sort" question in 24 tokens, so every row finishes in the
 * same step and the next requests, submitted in that same turn of the event loop, are prefilled
 * together as one batch (0.17 prefills per request over 6 requests per client), which no clients
 * over a network do; over more requests its in-process rows drift apart as well (0.53 prefills per
 * request over 60, as served). And each round starts with every client's first request at once,
 * a burst the server takes one request at a time. With 6 requests per client both effects made
 * up most of the measured overhead (quick GPT at 8 clients: 46.6% against 14.5–21.1% over 60;
 * tiny-qwen 29.3% against 5.5%). The batches line shows the prefills of both sides.
 *
 * The models served (`--model`, a table each, all three by default): `tiny-qwen`, the tiny-qwen
 * preset's Solver (a Qwen3 of 0.13 M parameters, the Hugging Face path every served language model
 * takes), `quick`, the quick preset's Solver (a character GPT of about 0.1 M), and `bench`, the hf
 * bench's fixed model (Qwen3 architecture with Qwen3's real 151 936-token vocabulary, 8 layers ×
 * 256, random weights, written once to a temp folder: hf.ts benchFolder). A quick request decodes
 * whole in about 15 ms at 8 clients, so a closed-loop client's round trip (HTTP both ways, its JSON,
 * the hand-offs to and from the engine thread: about 1.5 ms of CPU time on the same 2 cores, and
 * waits for a core) is a large share of it; a bench-model request decodes for about 2 s, as a served
 * language model's requests take hundreds of milliseconds and more, and what serving adds is what
 * it adds to such a request. Each model has its own plan (TOY_PLAN, BENCH_MODEL_PLAN) where flags
 * leave it open; flags given apply to all. The run ends with every model's reading of the 8-client
 * target together.
 * `--checkpoint DIR` serves any checkpoint or model folder.
 *
 * Each client count is measured twice (`--outputs`): with answers as long as the model makes them
 * (`natural`: about 20 tokens for both shipped Solvers), and with every answer max_tokens long
 * (`fixed`: vLLM's ignore_eos, the fixed output lengths of vLLM's and SGLang's serving
 * benchmarks), where a request's round trip is spread over more decoding.
 *
 * Also printed: the CPU time per request on each side (Linux: the server process's threads from
 * /proc, the clients' from this process), which says how much the HTTP path adds to decoding on
 * a machine whose cores it shares, split by thread: the server's HTTP thread, its engine thread
 * and V8's helper threads (concurrent compiles, GC) against the in-process decoding thread and its
 * helpers; the engine thread's CPU time over the served rounds' wall time (below 100%: it waited
 * for the clients' next requests or for a core); and the engine's plain batched sampler (`sample`) on the same
 * prompts in batches of the client count, for scale. Sides are interleaved in `rounds` rounds
 * (which goes first alternates); requests/s are each side's best round (the machines this runs on
 * are shared; the load average is printed).
 *
 * The server runs as its own `marsrl serve-model` process, as a user runs it, with its `--engine`
 * (default auto: decoding in a thread of its own from two cores up), and the clients in the
 * bench's process: another process, but the same cores, so on a small machine their HTTP and
 * JSON work takes CPU time from the server as a client on another machine would not.
 * `--inline-server` runs the server in the bench's process instead, where the clients' JSON work
 * competes with decoding for the same thread.
 *
 * Then the engine's host work per token besides the forward pass, on Qwen3's real vocabulary
 * and tokenizer, against the in-process sampler's (serve-host.ts; `--host-rows 0` skips it), and
 * the cost of the answer's text after every token up to `--text-tokens`.
 *
 * Then the reasoning-system run's throughput through the pool (`--system-problems P`, 0 skips it):
 * a `system` run (the unrolled chain, greedy and k = 4 sampled chains per problem, no controls) of
 * the quick preset (96 problems) with its three agents served by one serve-model process (the run,
 * its pool and its store in the bench's), against the in-process evaluation of the same
 * checkpoints on the same problems (the same chains, batched by the sampler), both in chains/s;
 * every call of the served run is a stored turn, so the store's writes are in it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend, type BackendPreference } from '../src-main/engine/model/backend';
import type { GPT } from '../src-main/engine/gpt/model';
import { sample } from '../src-main/engine/model/sampling';
import { projectRoot, resourcesDir } from '../src-main/engine/resources';
import { median } from '../src-main/engine/compare/stats';
import { deepMerge, presetDocument } from '../src-main/engine/config/load';
import { resolveConfig } from '../src-main/engine/preflight';
import { EndpointClient } from '../src-main/engine/served/client';
import { systemRun } from '../src-main/engine/system/system-run';
import { openStore } from '../src-main/engine/store';
import { evaluatePart, type EvalPart } from '../src-main/engine/training/evaluate';
import { createPolicy, rolePolicies, usedPolicyIds, type PolicyRuntime } from '../src-main/engine/training/policies';
import { evaluationSet, loadTaskData } from '../src-main/engine/training/task-data';
import { Rng } from '../src-main/engine/util/rng';
import { RequestBatcher, type BatcherStats } from '../src-main/server/openai/batcher';
import { loadCheckpointPolicy, type ServedPolicy } from '../src-main/server/openai/policy';
import { createModelServer } from '../src-main/server/openai/server';
import { benchFolder } from './hf';
import { hostWork } from './serve-host';

interface Work {
  question: string;
  seed: number;
}

interface Measure {
  ms: number;
  requests: number;
  tokens: number;
}

/**
 * How long the answers are: `natural`, as the model ends them; `fixed`, every request decoding
 * max_tokens through the stop token (vLLM's ignore_eos), as vLLM's and SGLang's serving
 * benchmarks fix output lengths.
 */
type Outputs = 'natural' | 'fixed';

/** Client c sorts lists of `digits[c % digits.length]` digits (mixed lengths show whether short requests wait for long ones). */
function questions(clients: number, perClient: number, digits: readonly number[] = [8]): Work[][] {
  const rng = new Rng(2026, 'bench-serve');
  return Array.from({ length: clients }, (_, c) =>
    Array.from({ length: perClient }, (_, k) => ({ question: `sort ${Array.from({ length: digits[c % digits.length] }, () => rng.int(0, 9)).join('')}`, seed: 1000 * c + k })),
  );
}

async function servedRound(client: EndpointClient, work: Work[][], maxTokens: number, outputs: Outputs = 'natural'): Promise<Measure> {
  const t0 = performance.now();
  let tokens = 0;
  await Promise.all(
    work.map(async (list) => {
      for (const w of list) {
        const r = await client.chat([{ role: 'user', content: w.question }], { sampling: { seed: w.seed, max_tokens: maxTokens, temperature: 1, ignore_eos: outputs === 'fixed' } });
        tokens += r.usage?.completionTokens ?? 0;
      }
    }),
  );
  return { ms: performance.now() - t0, requests: work.flat().length, tokens };
}

async function inProcessRound(batcher: RequestBatcher, policy: ServedPolicy, work: Work[][], maxTokens: number, outputs: Outputs = 'natural'): Promise<Measure> {
  const t0 = performance.now();
  let tokens = 0;
  await Promise.all(
    work.map(async (list) => {
      for (const w of list) {
        const prompt = policy.tokenizer.chatPrompt([{ role: 'user', content: w.question }]);
        const choices = await batcher.submit({ prompt, params: { maxTokens: Math.min(maxTokens, policy.model.context - prompt.length), temperature: 1, topP: 1, seed: w.seed, n: 1, stop: [], topLogprobs: 0, ignoreEos: outputs === 'fixed' } });
        tokens += choices[0].ids.length;
      }
    }),
  );
  return { ms: performance.now() - t0, requests: work.flat().length, tokens };
}

function samplerRound(policy: ServedPolicy, work: Work[][], maxTokens: number, outputs: Outputs): Measure {
  const t0 = performance.now();
  let tokens = 0;
  const perClient = work[0].length;
  for (let k = 0; k < perClient; k++) {
    const prompts = work.map((list) => policy.tokenizer.chatPrompt([{ role: 'user', content: list[k].question }]));
    const out = sample(policy.model as GPT, prompts, { maxNewTokens: Math.min(maxTokens, policy.model.context - Math.max(...prompts.map((p) => p.length))), temperature: 1, seed: k, stopTokens: outputs === 'fixed' ? [] : [...policy.tokenizer.stopTokens] });
    tokens += out.reduce((a, s) => a + s.tokens.length, 0);
  }
  return { ms: performance.now() - t0, requests: work.flat().length, tokens };
}

interface BenchServer {
  baseUrl: string;
  /** The server's own batch counters (inline only: a child process keeps its own). */
  stats: (() => BatcherStats) | null;
  /** The server thread's event-loop time, busy and idle, ms (a child server only). */
  busy?: () => { idle: number; active: number };
  /** Re-read the counters where they live in another process. */
  refresh?: () => Promise<void>;
  /** Where the server said it decodes (a child server only). */
  where?: string;
  /** CPU time the server's process has used, ms, every thread (a child server on Linux only). */
  cpuMs?: () => number | null;
  /** The same per thread, by thread id, and the id of its main (HTTP) thread (a child server on Linux only). */
  threadCpuMs?: () => Map<number, number> | null;
  mainThread?: number;
  close(): Promise<void>;
}

/** `marsrl serve-model DIR…` as a child process on a free port; resolves once it says where it serves. */
async function childModelServer(dirs: string[], backend: string, engine: string, batching: { windowMs: number; joinWaitMs: number }): Promise<BenchServer> {
  const args = [path.join(projectRoot(), 'bin', 'marsrl.js'), 'serve-model', ...dirs, '--port', '0', '--backend', backend, '--batch-window', String(batching.windowMs), '--join-wait', String(batching.joinWaitMs), '--engine', engine];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const [baseUrl, where] = await new Promise<[string, string]>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /Serving on (http:\/\/\S+?) \(.*; (decoding [^)]*)\)/.exec(output);
      if (m) resolve([m[1], m[2]]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`marsrl serve-model exited (${code}) before serving:\n${output}`)));
  });
  // The child's batcher counters, from its /metrics (a user's server answers the same).
  let stats: BatcherStats | null = null;
  let loop = { idle: 0, active: 0 };
  const refresh = async () => {
    const r = await fetch(baseUrl.replace(/\/v1$/, '/metrics'));
    const body = (await r.json()) as { models: Record<string, BatcherStats>; eventLoop: { idle: number; active: number } };
    stats = Object.values(body.models)[0];
    loop = body.eventLoop;
  };
  await refresh();
  return {
    baseUrl,
    stats: () => stats!,
    busy: () => ({ ...loop }),
    refresh,
    where,
    cpuMs: () => processCpuMs(child.pid),
    threadCpuMs: () => threadCpuMs(child.pid),
    mainThread: child.pid,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGINT');
      }),
  };
}

/**
 * User plus system CPU time of a process, ms, from /proc/PID/stat (fields 14 and 15, in clock
 * ticks of 1/100 s: Linux's USER_HZ); null where there is no /proc.
 */
function processCpuMs(pid: number | undefined): number | null {
  return pid === undefined ? null : statCpuMs(`/proc/${pid}/stat`);
}

/** The CPU time in a /proc stat file: a process's, or one thread's (/proc/PID/task/TID/stat). */
function statCpuMs(file: string): number | null {
  try {
    const fields = fs.readFileSync(file, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** processCpuMs for each thread of a process, by thread id; null where there is no /proc. */
function threadCpuMs(pid: number | undefined): Map<number, number> | null {
  if (pid === undefined) return null;
  try {
    const out = new Map<number, number>();
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const ms = statCpuMs(`/proc/${pid}/task/${tid}/stat`);
      if (ms !== null) out.set(Number(tid), ms);
    }
    return out;
  } catch {
    return null;
  }
}

/** This process's CPU time, ms, every thread. */
function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * The server's CPU time by thread, ms: its main (HTTP) thread, its engine thread where it decodes
 * in one (the busiest of the others: Node names no threads, and the rest, V8's helpers and the
 * module loader's, are far below it while it decodes), and the rest together (V8's helpers).
 */
function serverThreads(threads: Map<number, number>, server: BenchServer): { main: number; engine: number | null; helpers: number } | null {
  if (threads.size === 0 || server.mainThread === undefined) return null;
  const others = [...threads].filter(([tid]) => tid !== server.mainThread).map(([, ms]) => ms);
  const engine = /own thread/.test(server.where ?? '') && others.length > 0 ? Math.max(...others) : null;
  return { main: threads.get(server.mainThread) ?? 0, engine, helpers: others.reduce((a, b) => a + b, 0) - (engine ?? 0) };
}

function best(ms: Measure[]): Measure {
  return ms.reduce((a, b) => (b.ms < a.ms ? b : a));
}

/** What one model is measured with where the flags leave it open. */
interface ModelPlan {
  levels: number[];
  perClient: number;
  maxTokens: number;
  outputs: Outputs[];
}

/** The shipped Solvers: 1, 8 and 32 clients, 40 requests each (long rounds: see the header). */
const TOY_PLAN: ModelPlan = { levels: [1, 8, 32], perClient: 40, maxTokens: 64, outputs: ['natural', 'fixed'] };

/**
 * The bench model: 8 clients, 4 requests each of 32 tokens. Its random weights never end an
 * answer, so its answers are max_tokens long either way (`fixed` only). A request decodes for
 * about 2 s here, so 4 a client make rounds of about 8 s (the whole table about 1.5 min).
 */
const BENCH_MODEL_PLAN: ModelPlan = { levels: [8], perClient: 4, maxTokens: 32, outputs: ['fixed'] };

interface ModelBenchOptions {
  levels: number[];
  perClient: number;
  rounds: number;
  maxTokens: number;
  digits: number[];
  outputs: Outputs[];
  backend: string;
  engine: string;
  inlineServer: boolean;
  windowMs: number;
  joinWaitMs: number;
  out: (s?: string) => void;
}

/** One reading of issue #16's target: a model's paired median overhead at 8 clients. */
interface TargetReading {
  model: string;
  outputs: Outputs;
  maxTokens: number;
  overhead: number;
  rounds: number[];
}

function targetLine(t: TargetReading): string {
  const length = t.outputs === 'fixed' ? `answers of max_tokens ${t.maxTokens} (ignore_eos)` : 'answers as the model ends them';
  // Each round's pair beside the median, so a reader sees how far the machine's noise reaches.
  const perRound = t.rounds.map((x) => `${(x * 100).toFixed(1)}%`).join(', ');
  return `${t.model}, ${length}: target at 8 clients, serving overhead under 10% of in-process decoding time — ${(t.overhead * 100).toFixed(1)}% (rounds: ${perRound}): ${t.overhead < 0.1 ? 'met' : 'NOT met'}`;
}

/** The table for one model: served against in-process at each client count. */
async function benchModel(dir: string, o: ModelBenchOptions): Promise<{ results: Array<Record<string, number>>; targets: TargetReading[] }> {
  const { out, maxTokens, rounds, perClient } = o;
  const policy = loadCheckpointPolicy(dir);
  let server: BenchServer;
  if (o.inlineServer) {
    const inline = await createModelServer({ policies: [policy], batchWindowMs: o.windowMs, joinWaitMs: o.joinWaitMs, log: () => {} });
    server = { baseUrl: inline.baseUrl, stats: () => inline.batchers.get(policy.id)!.stats, close: () => inline.close() };
  } else server = await childModelServer([dir], o.backend, o.engine, { windowMs: o.windowMs, joinWaitMs: o.joinWaitMs });
  // The in-process side batches as the server does.
  const batcher = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: o.windowMs, joinWaitMs: o.joinWaitMs });
  const client = new EndpointClient({ name: 'bench', baseUrl: server.baseUrl, model: policy.id, retries: 0, timeoutMs: 600_000 });
  out(`serve bench: ${policy.id} from ${dir} (context ${policy.model.context}), ${perClient} requests per client, max_tokens ${maxTokens}, temperature 1, seeded`);
  out(`load average ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} CPUs; best of ${rounds} rounds`);
  out(o.inlineServer ? 'server: in the bench process (--inline-server)' : `server: marsrl serve-model --engine ${o.engine} in its own process at ${server.baseUrl}, ${server.where ?? ''}`);
  out('');
  out('clients outputs   served req/s  tok/s    in-process req/s  tok/s    overhead (paired, best)   sampler tok/s');
  const results: Array<Record<string, number>> = [];
  const targets: TargetReading[] = [];
  try {
    // Warm both paths (JIT, wasm kernels, keep-alive connections): the first calls are several times slower.
    for (let i = 0; i < 2; i++) {
      await servedRound(client, questions(8, 2), maxTokens);
      await inProcessRound(batcher, policy, questions(8, 2), maxTokens);
    }
    for (const [outputs, clients] of o.outputs.flatMap((x) => o.levels.map((c) => [x, c] as const))) {
      const work = questions(clients, perClient, o.digits);
      await server.refresh?.();
      const before = { served: server.stats ? { ...server.stats() } : null, local: { ...batcher.stats } };
      const served: Measure[] = [];
      // How busy the server's HTTP thread is while it serves: near 100% means decoding and HTTP
      // compete for it (inline); well below means the clients' round trips leave it waiting.
      const loop = { active: 0, idle: 0 };
      // CPU time per request on each side: the served side's is the server process's (decoding,
      // HTTP, JSON, V8's helper threads) plus the clients' (this process); the in-process side's is
      // this process's. On a machine with few cores the difference competes with decoding.
      // Per server thread as well: its HTTP thread, its engine thread and V8's helper threads
      // (TurboFan's concurrent compiles, GC), which share the cores with the decoding.
      const cpu = { server: 0, clients: 0, local: 0, localMain: 0, measured: true, threads: new Map<number, number>() };
      const servedOnce = async (w: Work[][]) => {
        await server.refresh?.();
        const b0 = server.busy?.();
        const c0 = server.cpuMs?.() ?? null;
        const t0 = server.threadCpuMs?.() ?? null;
        const own0 = ownCpuMs();
        const m = await servedRound(client, w, maxTokens, outputs);
        const own1 = ownCpuMs();
        const c1 = server.cpuMs?.() ?? null;
        const t1 = server.threadCpuMs?.() ?? null;
        if (c0 !== null && c1 !== null) cpu.server += c1 - c0;
        else cpu.measured = false;
        if (t0 && t1) for (const [tid, ms] of t1) cpu.threads.set(tid, (cpu.threads.get(tid) ?? 0) + ms - (t0.get(tid) ?? 0));
        cpu.clients += own1 - own0;
        await server.refresh?.();
        const b1 = server.busy?.();
        if (b0 && b1) {
          loop.active += b1.active - b0.active;
          loop.idle += b1.idle - b0.idle;
        }
        return m;
      };
      const ownMainThread = `/proc/${process.pid}/task/${process.pid}/stat`;
      const localOnce = async (w: Work[][]) => {
        const own0 = ownCpuMs();
        const main0 = statCpuMs(ownMainThread);
        const m = await inProcessRound(batcher, policy, w, maxTokens, outputs);
        const main1 = statCpuMs(ownMainThread);
        cpu.local += ownCpuMs() - own0;
        if (main0 !== null && main1 !== null) cpu.localMain += main1 - main0;
        else cpu.localMain = NaN;
        return m;
      };
      const local: Measure[] = [];
      const plain: Measure[] = [];
      for (let r = 0; r < rounds; r++) {
        // Alternate which side goes first, so neither always meets the machine in the same state.
        if (r % 2 === 0) {
          served.push(await servedOnce(work));
          local.push(await localOnce(work));
        } else {
          local.push(await localOnce(work));
          served.push(await servedOnce(work));
        }
        plain.push(samplerRound(policy, work, maxTokens, outputs));
      }
      const measuredRequests = rounds * work.flat().length;
      const batchesOf = (now: BatcherStats, then: BatcherStats) =>
        `${now.batches - then.batches} started, ${now.joined - then.joined} requests joined running ones, ${((now.prefills - then.prefills) / measuredRequests).toFixed(2)} prefills per request, ${((now.rowSteps - then.rowSteps) / (now.steps - then.steps)).toFixed(2)} rows/step`;
      const localBatches = `in-process ${batchesOf(batcher.stats, before.local)}`;
      await server.refresh?.();
      if (server.stats && before.served) {
        // Same batches on both sides means the comparison measures serving, not batch composition.
        out(`        batches: served ${batchesOf(server.stats(), before.served)}; ${localBatches}`);
        // The engine thread's CPU time over the served rounds' wall time: what is missing from 100%
        // is time it waited for requests (the clients' round trips) or for a core.
        const threads = serverThreads(cpu.threads, server);
        const servedWall = served.reduce((a, m) => a + m.ms, 0);
        if (loop.active + loop.idle > 0) out(`        server HTTP thread busy ${((100 * loop.active) / (loop.active + loop.idle)).toFixed(0)}% of the served rounds${threads?.engine ? `, its engine thread on a CPU ${((100 * threads.engine) / servedWall).toFixed(0)}%` : ''}`);
        const perRequest = (ms: number) => (ms / measuredRequests).toFixed(2);
        const serverSplit = !threads
          ? ''
          : threads.engine !== null
            ? `: HTTP thread ${perRequest(threads.main)}, engine thread ${perRequest(threads.engine)}, V8 helpers ${perRequest(threads.helpers)}`
            : `: HTTP and decoding ${perRequest(threads.main)}, V8 helpers ${perRequest(threads.helpers)}`;
        const localSplit = Number.isNaN(cpu.localMain) ? '' : ` (decoding thread ${perRequest(cpu.localMain)}, V8 helpers ${perRequest(cpu.local - cpu.localMain)})`;
        if (cpu.measured) out(`        CPU per request: served ${perRequest(cpu.server + cpu.clients)} ms (server ${perRequest(cpu.server)}${serverSplit}, clients ${perRequest(cpu.clients)}), in-process ${perRequest(cpu.local)} ms${localSplit}; ${os.availableParallelism()} CPUs`);
      } else out(`        batches: ${localBatches} (the served side's are counted in its own process)`);
      const s = best(served);
      const l = best(local);
      const p = best(plain);
      if (s.tokens !== l.tokens) throw new Error(`served and in-process generated different token counts (${s.tokens} vs ${l.tokens}): the comparison is void`);
      const bestOverhead = s.ms / l.ms - 1;
      // Each round's served side against its in-process side, run back to back: the machine's
      // speed drifts over minutes here (the in-process side alone between 170 and 280 requests/s
      // across runs), which a best-of-each comparison does not cancel and a paired one does.
      const paired = served.map((m, r) => m.ms / local[r].ms - 1);
      const overhead = median(paired);
      const row = { clients, fixedLength: outputs === 'fixed' ? 1 : 0, servedRequestsPerS: (s.requests / s.ms) * 1000, servedTokensPerS: (s.tokens / s.ms) * 1000, inProcessRequestsPerS: (l.requests / l.ms) * 1000, inProcessTokensPerS: (l.tokens / l.ms) * 1000, overhead, bestOverhead, samplerTokensPerS: (p.tokens / p.ms) * 1000 };
      results.push(row);
      if (clients === 8) targets.push({ model: `${policy.id} (${path.basename(path.dirname(dir))})`, outputs, maxTokens, overhead, rounds: paired });
      out(
        `${String(clients).padStart(7)} ${outputs.padEnd(7)}   ${row.servedRequestsPerS.toFixed(1).padStart(11)}  ${row.servedTokensPerS.toFixed(0).padStart(6)}   ${row.inProcessRequestsPerS.toFixed(1).padStart(15)}  ${row.inProcessTokensPerS.toFixed(0).padStart(6)}   ${(overhead * 100).toFixed(1).padStart(6)}%  ${(bestOverhead * 100).toFixed(1).padStart(6)}%   ${row.samplerTokensPerS.toFixed(0).padStart(12)}`,
      );
    }
    out('');
    for (const t of targets) out(targetLine(t));
    return { results, targets };
  } finally {
    await server.close();
    policy.model.dispose();
  }
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      clients: { type: 'string' },
      requests: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      'max-tokens': { type: 'string' },
      digits: { type: 'string', default: '8' },
      outputs: { type: 'string' },
      checkpoint: { type: 'string' },
      model: { type: 'string', default: 'tiny-qwen,quick,bench' },
      backend: { type: 'string', default: 'auto' },
      'system-problems': { type: 'string', default: '96' },
      json: { type: 'boolean', default: false },
      'inline-server': { type: 'boolean', default: false },
      engine: { type: 'string', default: 'auto' },
      'engine-thread': { type: 'boolean', default: false },
      'join-wait': { type: 'string', default: '0' },
      'batch-window': { type: 'string', default: '0' },
      'host-rows': { type: 'string', default: '2' },
      'host-tokens': { type: 'string', default: '128' },
      'text-tokens': { type: 'string', default: '16000' },
    },
    strict: true,
  });
  // Flags given apply to every model; where a flag is left out each model takes its plan's.
  const levels = values.clients?.split(',').map(Number);
  if (levels && !levels.every((c) => Number.isInteger(c) && c >= 1 && c <= 256)) throw new Error(`--clients must be integers from 1 to 256 separated by commas, got ${values.clients}`);
  const perClient = values.requests === undefined ? undefined : Number(values.requests);
  const rounds = Number(values.rounds);
  const maxTokens = values['max-tokens'] === undefined ? undefined : Number(values['max-tokens']);
  const digits = values.digits.split(',').map(Number);
  if (!digits.every((d) => Number.isInteger(d) && d >= 1 && d <= 40)) throw new Error(`--digits must be integers from 1 to 40 separated by commas, got ${values.digits}`);
  const outputs = values.outputs?.split(',') as Outputs[] | undefined;
  if (outputs && !outputs.every((x) => x === 'natural' || x === 'fixed')) throw new Error(`--outputs must be natural, fixed or both separated by a comma, got ${values.outputs}`);
  for (const [name, v] of [['requests', perClient], ['rounds', rounds], ['max-tokens', maxTokens]] as const) {
    if (v !== undefined && !(Number.isInteger(v) && v >= 1)) throw new Error(`--${name} must be a positive integer, got ${v}`);
  }
  const joinWaitMs = Number(values['join-wait']);
  if (!(Number.isInteger(joinWaitMs) && joinWaitMs >= 0)) throw new Error(`--join-wait must be a non-negative integer (ms), got ${values['join-wait']}`);
  const windowMs = Number(values['batch-window']);
  if (!(Number.isInteger(windowMs) && windowMs >= 0)) throw new Error(`--batch-window must be a non-negative integer (ms), got ${values['batch-window']}`);
  const backend = values.backend as BackendPreference;
  if (!['auto', 'tensorflow', 'wasm', 'cpu'].includes(backend)) throw new Error(`--backend must be auto, tensorflow, wasm or cpu, got ${backend}`);
  const engine = values['engine-thread'] ? 'thread' : values.engine;
  if (!['auto', 'thread', 'inline'].includes(engine)) throw new Error(`--engine must be auto, thread or inline, got ${engine}`);
  const [hostRows, hostTokens, textTokens] = (['host-rows', 'host-tokens', 'text-tokens'] as const).map((k) => {
    const v = Number(values[k]);
    if (!(Number.isInteger(v) && v >= 0)) throw new Error(`--${k} must be a non-negative integer, got ${values[k]}`);
    return v;
  });
  const systemProblems = Number(values['system-problems']);
  if (!(Number.isInteger(systemProblems) && systemProblems >= 0)) throw new Error(`--system-problems must be a non-negative integer, got ${values['system-problems']}`);
  const info = await initBackend(backend);
  tf.enableProdMode();
  const out = (s = '') => {
    if (!values.json) console.log(s);
  };
  const models: Record<string, { dir: () => Promise<string>; plan: ModelPlan }> = {
    quick: { dir: async () => path.join(resourcesDir(), 'checkpoints', 'quick', 'solver'), plan: TOY_PLAN },
    'tiny-qwen': { dir: async () => path.join(resourcesDir(), 'checkpoints', 'tiny-qwen', 'solver'), plan: TOY_PLAN },
    bench: { dir: async () => (await benchFolder('bench', false)).dir, plan: BENCH_MODEL_PLAN },
  };
  const names = values.checkpoint !== undefined ? [] : values.model.split(',');
  for (const name of names) if (!(name in models)) throw new Error(`--model must be one or more of ${Object.keys(models).join(', ')} separated by commas (or pass --checkpoint DIR), got ${name}`);
  const served = values.checkpoint !== undefined ? [{ dir: values.checkpoint, plan: TOY_PLAN }] : await Promise.all(names.map(async (n) => ({ dir: await models[n].dir(), plan: models[n].plan })));
  out(`tfjs backend: ${info.name}, ${info.threads} thread(s)`);
  const tables: Array<{ model: string; plan: ModelPlan; results: Array<Record<string, number>> }> = [];
  const targets: TargetReading[] = [];
  for (const { dir, plan: defaults } of served) {
    const plan: ModelPlan = { levels: levels ?? defaults.levels, perClient: perClient ?? defaults.perClient, maxTokens: maxTokens ?? defaults.maxTokens, outputs: outputs ?? defaults.outputs };
    out('');
    const table = await benchModel(dir, { ...plan, rounds, digits, backend: info.name, engine, inlineServer: values['inline-server'], windowMs, joinWaitMs, out });
    tables.push({ model: dir, plan, results: table.results });
    targets.push(...table.targets);
  }
  const host = hostRows > 0 && hostTokens > 0 ? await hostWork({ rows: hostRows, tokens: hostTokens, textTokens, reps: Math.min(rounds, 3), out }) : null;
  const system = systemProblems > 0 ? await systemThroughput(systemProblems, { backend: info.name, engine }, out) : null;
  if (targets.length > 0) {
    out('');
    out('issue #16, at 8 clients (serving overhead under 10% of in-process decoding time), every model measured:');
    for (const t of targets) out(`  ${targetLine(t)}`);
  }
  if (values.json) console.log(JSON.stringify({ backend: info.name, load: os.loadavg()[0], rounds, engine, tables, targets, host, system }, null, 2));
}

/** A reasoning-system run through the pool against the in-process evaluation of the same checkpoints (chains/s). */
async function systemThroughput(problems: number, serving: { backend: string; engine: string }, out: (s?: string) => void): Promise<Record<string, number>> {
  const quick = path.join(resourcesDir(), 'checkpoints', 'quick');
  const roles = ['solver', 'verifier', 'corrector'] as const;
  // Its own serve-model process, as a user serves models to a run (the run, its pool and its store
  // writes in this one).
  const server = await childModelServer(
    roles.map((r) => path.join(quick, r)),
    serving.backend,
    serving.engine,
    { windowMs: 0, joinWaitMs: 0 },
  );
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-system-'));
  const k = 4;
  const base = deepMerge(presetDocument('quick'), { pipeline: { mode: 'sync' }, eval: { problems, k } });
  const local = resolveConfig(base);
  const config = resolveConfig(
    deepMerge(base, {
      system: { mode: 'chain', controls: false, k },
      // As many calls in flight per agent as one serve-model batch holds (batcher.ts: 64 rows);
      // with 24 problems and 32 a run's chains (each call waiting on the last) left batches of a
      // few rows: 2.2–2.4× the in-process time, against 0.99–1.03× with 96 and 64 on the day it
      // was set (1.46–1.94× on a slower day, the commit that set it measured again beside the
      // current tree: the machine's, not the code's).
      endpoints: Object.fromEntries(roles.map((r) => [r, { base_url: server.baseUrl, model: r, concurrency: 64 }])),
      policies: Object.fromEntries(roles.map((r) => [r, { endpoint: r }])),
    }),
  );
  const store = openStore(path.join(tmp, 'bench.db'));
  const byId = new Map<string, PolicyRuntime>();
  try {
    const runId = store.runs.create({ name: 'bench-system', config: config as unknown as Record<string, unknown>, codeVersion: 'bench', seed: config.seed });
    const t0 = performance.now();
    const outcome = await systemRun({ store, runId, config });
    const servedMs = performance.now() - t0;
    if (outcome.status !== 'done') throw new Error(`the system run ended ${outcome.status}: ${outcome.reason}`);
    const m = store.metrics.latest(runId, store.metrics.keys(runId));
    const tokens = roles.reduce((a, r) => a + (m[`pool/${r}/completion_tokens`] ?? 0), 0);
    const chains = problems * (1 + k);

    const data = loadTaskData(local);
    for (const id of usedPolicyIds(local)) byId.set(id, createPolicy(id, local.policies[id], data.tokenizer, local.seed).policy);
    const ctx = { family: data.family, policies: rolePolicies(local, byId), config: local };
    const set = evaluationSet(local, data);
    const t1 = performance.now();
    for (const part of ['greedy', 'sampled'] as EvalPart[]) evaluatePart(ctx, set.problems, set.seed, part);
    const localMs = performance.now() - t1;
    const row = { problems, chains, calls: m['system/calls'], servedChainsPerS: (chains / servedMs) * 1000, servedCallsPerS: (m['system/calls'] / servedMs) * 1000, servedTokensPerS: (tokens / servedMs) * 1000, inProcessChainsPerS: (chains / localMs) * 1000, slowdown: servedMs / localMs };
    out('');
    out(`reasoning-system run (chain mode, ${problems} problems × (1 greedy + ${k} sampled) chains, every call a stored turn) through the pool:`);
    out(`  served: ${row.servedChainsPerS.toFixed(1)} chains/s, ${row.servedCallsPerS.toFixed(1)} calls/s, ${row.servedTokensPerS.toFixed(0)} tok/s (${row.calls} calls in ${(servedMs / 1000).toFixed(2)} s)`);
    out(`  in-process evaluation of the same checkpoints (batched sampler, nothing stored): ${row.inProcessChainsPerS.toFixed(1)} chains/s — the served run takes ${row.slowdown.toFixed(2)}× its time`);
    return row;
  } finally {
    store.close();
    for (const p of byId.values()) p.dispose();
    await server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
