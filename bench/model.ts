/**
 * `npm run bench -- model [--seconds S] [--rounds R] [--backend auto|webgpu|wasm|cpu|tensorflow]
 *                        [--baseline wasm|cpu|none] [--no-peer] [--peer-device cpu|cuda]
 *                        [--python PATH] [--blas-dir DIR] [--no-plain] [--profile] [--json] [--json-out FILE]`
 *
 * One fixed small policy (vocab 32, width 64, 2 layers, 4 heads, context 64, MLP ×4) and batch
 * (16 sequences):
 *  - training tokens/s: batch 16 × context 64 per step, forward + backward + clip + Adam;
 *  - sampled tokens/s with and without the KV cache: 16 prompts of 8 tokens, 56 new tokens each
 *    (the context filled), temperature 1, top-p 0.95;
 * then the same model, batch and step in PyTorch on CPU with the same thread count
 * (bench/peers/torch_model.py under Debian's /usr/bin/python3), measured in the same run, and the
 * ratios. On wasm the training step is also timed without the wasm-specific kernels (TensorFlow.js's
 * own gradients with transposed matMuls, batched-matMul attention): the "plain tfjs-wasm"
 * starting point (`--no-plain` skips it).
 *
 * On webgpu (issue #15) the same workloads also run on a baseline backend in the same process
 * (`--baseline`, wasm by default), interleaved with the webgpu ones, and the table gains its
 * column and the webgpu / baseline ratio. WebGPU reads back asynchronously, so there the
 * workloads use the asynchronous forms (supervisedStepAsync, sampleAsync); each timed call
 * ends with its readback, so GPU work still queued is counted. `--peer-device cuda` runs the
 * PyTorch peer on the GPU (scripts/device-bench.sh).
 *
 * Both sides are timed per call (wall clock), interleaved in `rounds` rounds so that both see the
 * same machine; tokens/s and ratios use each side's best call, medians are printed beside them,
 * and so is the load average, because the machines this runs on are shared. On a busy machine
 * the best call of the slower side is the likelier to have been interrupted, so ratios then err
 * low; `--profile` adds the kernel breakdown of one tfjs training step.
 */
import * as tf from '@tensorflow/tfjs-core';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { activateBackend, adapterLabel, initBackend, type BackendPreference } from '../src-main/engine/model/backend';
import { createModel, type GPTConfig } from '../src-main/engine/gpt/model';
import { PLAIN_STRATEGY, type KernelStrategy } from '../src-main/engine/model/ops';
import { createOptimizer } from '../src-main/engine/model/optim';
import { canReadSync } from '../src-main/engine/model/readback';
import { sample, sampleAsync } from '../src-main/engine/model/sampling';
import { supervisedStep, supervisedStepAsync, type SupervisedBatch } from '../src-main/engine/model/train';
import { Rng } from '../src-main/engine/util/rng';
import { summarize, type Timing } from './timing';

export const BENCH_MODEL: GPTConfig = { vocabSize: 32, d_model: 64, n_layers: 2, n_heads: 4, context: 64, mlp_ratio: 4 };
const BATCH = 16;
const PROMPT = 8;
const NEW_TOKENS = BENCH_MODEL.context - PROMPT;
const TOP_P = 0.95;
const OPT = { lr: 1e-3, beta1: 0.9, beta2: 0.999, weight_decay: 0, grad_clip: 1 };

/** Call `fn` until `seconds` have passed and at least `minCalls` ran; returns per-call times (ms). */
async function timeCalls(fn: () => void | Promise<void>, seconds: number, minCalls: number): Promise<number[]> {
  const times: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (times.length < minCalls || performance.now() < end) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return times;
}

function trainBatch(rng: Rng): SupervisedBatch {
  const tokens = Array.from({ length: BATCH }, () => Array.from({ length: BENCH_MODEL.context }, () => rng.int(0, BENCH_MODEL.vocabSize - 1)));
  return { tokens, lossMask: tokens.map((r) => r.map(() => 1)) };
}

/**
 * The three workloads on one model of the active backend, each callable repeatedly: synchronous
 * where the backend reads synchronously, else the asynchronous forms.
 */
function workloads(kernels?: KernelStrategy): { train: () => void | Promise<void>; kv: () => void | Promise<void>; full: () => void | Promise<void>; dispose: () => void } {
  const model = createModel(BENCH_MODEL, 1, { kernels });
  const opt = createOptimizer(model, OPT);
  const batch = trainBatch(new Rng(2, 'bench-train'));
  const rng = new Rng(3, 'bench-prompts');
  const prompts = Array.from({ length: BATCH }, () => Array.from({ length: PROMPT }, () => rng.int(0, BENCH_MODEL.vocabSize - 1)));
  let seed = 0;
  const options = (useKvCache: boolean) => ({ maxNewTokens: NEW_TOKENS, temperature: 1, topP: TOP_P, seed: seed++, useKvCache });
  if (!canReadSync()) {
    const sampleOnce = async (useKvCache: boolean) => void (await sampleAsync(model, prompts, options(useKvCache)));
    return {
      train: async () => void (await supervisedStepAsync(model, opt, batch)),
      kv: () => sampleOnce(true),
      full: () => sampleOnce(false),
      dispose: () => {
        opt.dispose();
        model.dispose();
      },
    };
  }
  const sampleOnce = (useKvCache: boolean) => void sample(model, prompts, options(useKvCache));
  return {
    train: () => void supervisedStep(model, opt, batch),
    kv: () => sampleOnce(true),
    full: () => sampleOnce(false),
    dispose: () => {
      opt.dispose();
      model.dispose();
    },
  };
}

interface PeerInfo {
  ok: boolean;
  reason?: string;
  torch?: string;
  threads?: number;
  blas?: string[];
  kv_check_max_abs_diff?: number;
}

interface PeerTiming {
  best_ms: number;
  median_ms: number;
  calls: number;
  tokens_per_call: number;
}

function peerScript(): string | null {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, 'peers/torch_model.py'), path.resolve(process.cwd(), 'bench/peers/torch_model.py')];
  return candidates.find((p) => fs.existsSync(p)) ?? null;
}

/** The PyTorch peer as a long-lived process answering one timing command at a time. */
class Peer {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: AsyncIterator<string>;
  private stderr = '';

  private constructor(proc: ChildProcessWithoutNullStreams) {
    this.proc = proc;
    proc.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-2000)));
    this.lines = readline.createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  }

  static async start(python: string, threads: number, blasDir: string | undefined, device: string): Promise<{ peer: Peer | null; info: PeerInfo }> {
    const script = peerScript();
    if (!script) return { peer: null, info: { ok: false, reason: 'bench/peers/torch_model.py not found' } };
    if (!fs.existsSync(python)) return { peer: null, info: { ok: false, reason: `${python} not found (Debian's python3 with python3-torch is the peer)` } };
    const c = BENCH_MODEL;
    const args = [
      script,
      ...['--vocab', c.vocabSize, '--d-model', c.d_model, '--layers', c.n_layers, '--heads', c.n_heads, '--context', c.context, '--mlp-ratio', c.mlp_ratio],
      ...['--batch', BATCH, '--prompt', PROMPT, '--new', NEW_TOKENS, '--threads', threads, '--top-p', TOP_P, '--device', device, '--serve'],
    ].map(String);
    const n = String(threads);
    const env: NodeJS.ProcessEnv = { ...process.env, OMP_NUM_THREADS: n, OPENBLAS_NUM_THREADS: n, MKL_NUM_THREADS: n };
    if (blasDir) env.LD_LIBRARY_PATH = [blasDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
    const peer = new Peer(spawn(python, args, { env }));
    const first = await peer.next();
    if (!first) return { peer: null, info: { ok: false, reason: `peer exited: ${peer.stderr.trim().split('\n').slice(-2).join(' | ')}` } };
    const msg = JSON.parse(first) as { ready?: PeerInfo } & PeerInfo;
    if (!msg.ready) {
      peer.close();
      return { peer: null, info: { ok: false, reason: msg.reason ?? 'peer did not start' } };
    }
    return { peer, info: msg.ready };
  }

  private async next(): Promise<string | null> {
    const r = await this.lines.next();
    return r.done ? null : r.value;
  }

  async time(job: 'train' | 'kv' | 'full', seconds: number): Promise<PeerTiming> {
    this.proc.stdin.write(`${job} ${seconds}\n`);
    const line = await this.next();
    if (!line) throw new Error(`PyTorch peer exited: ${this.stderr.trim().split('\n').slice(-2).join(' | ')}`);
    return JSON.parse(line) as PeerTiming;
  }

  close(): void {
    this.proc.stdin.end('quit\n');
  }
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1);
}

async function profileStep(): Promise<string[]> {
  const model = createModel(BENCH_MODEL, 1);
  const opt = createOptimizer(model, OPT);
  const batch = trainBatch(new Rng(2, 'bench-train'));
  const step = canReadSync() ? async () => void supervisedStep(model, opt, batch) : async () => void (await supervisedStepAsync(model, opt, batch));
  for (let i = 0; i < 3; i++) await step();
  const p = await tf.profile(step);
  opt.dispose();
  model.dispose();
  const agg = new Map<string, { n: number; ms: number }>();
  for (const k of p.kernels) {
    // Custom-gradient ops appear as unnamed scopes wrapping their kernels; count kernels only.
    if (k.name === 'unnamed scope') continue;
    const a = agg.get(k.name) ?? { n: 0, ms: 0 };
    a.n++;
    a.ms += Number(k.kernelTimeMs);
    agg.set(k.name, a);
  }
  const rows = [...agg.entries()].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((s, [, a]) => s + a.ms, 0);
  return [
    `kernels per training step: ${rows.reduce((s, [, a]) => s + a.n, 0)} (profiled time ${total.toFixed(1)} ms; profiling adds overhead)`,
    ...rows.slice(0, 12).map(([k, a]) => `  ${k.padEnd(24)} ${String(a.n).padStart(4)} calls ${a.ms.toFixed(1).padStart(7)} ms`),
  ];
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: '6' },
      rounds: { type: 'string', default: '3' },
      backend: { type: 'string', default: 'auto' },
      baseline: { type: 'string' },
      'no-peer': { type: 'boolean', default: false },
      'peer-device': { type: 'string', default: 'cpu' },
      python: { type: 'string', default: '/usr/bin/python3' },
      'blas-dir': { type: 'string', default: process.env.MARSRL_TORCH_BLAS_DIR },
      'no-plain': { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'json-out': { type: 'string' },
    },
    strict: true,
  });
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  if (!(seconds > 0)) throw new Error(`--seconds must be a positive number, got ${values.seconds}`);
  if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
  const backend = values.backend as BackendPreference;
  if (!['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'].includes(backend)) throw new Error(`--backend must be auto, webgpu, tensorflow, wasm or cpu, got ${backend}`);
  if (!['cpu', 'cuda'].includes(values['peer-device']!)) throw new Error(`--peer-device must be cpu or cuda, got ${values['peer-device']}`);
  const info = await initBackend(backend);
  // The baseline measured beside webgpu in the same run; none for the other backends.
  const baselineName = values.baseline ?? (info.name === 'webgpu' ? 'wasm' : 'none');
  if (!['wasm', 'cpu', 'none'].includes(baselineName)) throw new Error(`--baseline must be wasm, cpu or none, got ${baselineName}`);
  const baseline = baselineName === 'none' || baselineName === info.name ? null : (baselineName as 'wasm' | 'cpu');
  const primary = info.name as 'webgpu' | 'wasm' | 'cpu';
  tf.enableProdMode();
  const out = (s = '') => {
    if (!values.json) console.log(s);
  };
  const load0 = os.loadavg()[0];
  out(`model bench: vocab ${BENCH_MODEL.vocabSize}, width ${BENCH_MODEL.d_model}, ${BENCH_MODEL.n_layers} layers, ${BENCH_MODEL.n_heads} heads, context ${BENCH_MODEL.context}, batch ${BATCH}`);
  out(`tfjs backend: ${info.name} (${info.provider}), ${info.threads} thread(s), SIMD ${info.simd ? 'on' : 'off'}; load average ${load0.toFixed(2)} on ${os.cpus().length} CPUs`);
  if (info.adapter && info.name === 'webgpu') out(`adapter: ${adapterLabel(info.adapter)}${info.adapter.software ? ' — a software adapter (CPU): expect it slower than wasm' : ''}`);
  for (const w of info.warnings) out(`warning: ${w}`);

  const { peer, info: peerInfo } = values['no-peer']
    ? { peer: null, info: { ok: false, reason: 'skipped (--no-peer)' } as PeerInfo }
    : await Peer.start(values.python!, info.threads, values['blas-dir'], values['peer-device']!);
  // Interleave: each round times every workload here and then in the peer, so that both sides
  // see the same (shared, noisy) machine; `seconds` is the budget per workload and side.
  const jobs = ['train', 'kv', 'full'] as const;
  const tokensPerCall = { train: BATCH * BENCH_MODEL.context, kv: BATCH * NEW_TOKENS, full: BATCH * NEW_TOKENS };
  const mine: Record<(typeof jobs)[number], number[]> = { train: [], kv: [], full: [] };
  const theirs: Record<(typeof jobs)[number], PeerTiming[]> = { train: [], kv: [], full: [] };
  const base: Record<(typeof jobs)[number], number[]> = { train: [], kv: [], full: [] };
  const w = workloads();
  for (const job of jobs) await w[job](); // warm-up (JIT, shader compilation, decoding weights)
  let wb: ReturnType<typeof workloads> | null = null;
  if (baseline) {
    await activateBackend(baseline);
    wb = workloads();
    for (const job of jobs) await wb[job]();
    await activateBackend(primary);
  }
  for (let r = 0; r < rounds; r++) {
    for (const job of jobs) {
      mine[job].push(...(await timeCalls(w[job], seconds / rounds, job === 'full' ? 1 : 2)));
      if (wb) {
        await activateBackend(baseline!);
        base[job].push(...(await timeCalls(wb[job], seconds / rounds, job === 'full' ? 1 : 2)));
        await activateBackend(primary);
      }
      if (peer) theirs[job].push(await peer.time(job, seconds / rounds));
    }
  }
  w.dispose();
  if (wb) {
    await activateBackend(baseline!);
    wb.dispose();
    await activateBackend(primary);
  }
  peer?.close();
  let plain: Timing | null = null;
  if (!values['no-plain'] && info.name === 'wasm') {
    const p = workloads({ ...PLAIN_STRATEGY, embedding: 'js' });
    p.train();
    plain = summarize(await timeCalls(p.train, Math.min(seconds, 3), 3), tokensPerCall.train);
    p.dispose();
  }
  const load1 = os.loadavg()[0];

  const peerSummary = (job: (typeof jobs)[number]): Timing | null => {
    const ts = theirs[job];
    if (!ts.length) return null;
    const best = Math.min(...ts.map((t) => t.best_ms));
    return { bestMs: best, medianMs: ts.map((t) => t.median_ms).sort((a, b) => a - b)[Math.floor(ts.length / 2)], tokensPerS: (tokensPerCall[job] / best) * 1000, calls: ts.reduce((s, t) => s + t.calls, 0) };
  };
  const names = { train: 'training (fwd+bwd+Adam)', kv: 'sampling, KV cache', full: 'sampling, no cache' };
  const results = jobs.map((job) => ({ job, tfjs: summarize(mine[job], tokensPerCall[job]), baseline: wb ? summarize(base[job], tokensPerCall[job]) : null, torch: peerSummary(job) }));
  out('');
  out(`${''.padEnd(26)}${'tfjs tok/s'.padStart(12)}${'best ms'.padStart(9)}${'median'.padStart(8)}${'torch tok/s'.padStart(13)}${'best ms'.padStart(9)}${'median'.padStart(8)}${'ratio'.padStart(8)}`);
  for (const { job, tfjs, torch } of results) {
    out(
      `${names[job].padEnd(26)}${fmt(tfjs.tokensPerS).padStart(12)}${tfjs.bestMs.toFixed(1).padStart(9)}${tfjs.medianMs.toFixed(1).padStart(8)}` +
        (torch ? `${fmt(torch.tokensPerS).padStart(13)}${torch.bestMs.toFixed(1).padStart(9)}${torch.medianMs.toFixed(1).padStart(8)}${((tfjs.tokensPerS / torch.tokensPerS).toFixed(2) + '×').padStart(8)}` : ''),
    );
  }
  if (plain) out(`${'training, plain tfjs-wasm'.padEnd(26)}${fmt(plain.tokensPerS).padStart(12)}${plain.bestMs.toFixed(1).padStart(9)}${plain.medianMs.toFixed(1).padStart(8)}   (tfjs gradients, transposed and batched matMuls)`);
  if (wb) {
    out('');
    out(`${`same workloads, ${baseline} baseline`.padEnd(26)}${`${baseline} tok/s`.padStart(12)}${'best ms'.padStart(9)}${'median'.padStart(8)}${`${primary} / ${baseline}`.padStart(16)}`);
    for (const { job, tfjs, baseline: b } of results) {
      out(`${names[job].padEnd(26)}${fmt(b!.tokensPerS).padStart(12)}${b!.bestMs.toFixed(1).padStart(9)}${b!.medianMs.toFixed(1).padStart(8)}${((tfjs.tokensPerS / b!.tokensPerS).toFixed(2) + '×').padStart(16)}`);
    }
  }
  out('');
  out('tokens/s and ratios use the best call of each side (least disturbed by other processes); ratio = tfjs / torch.');
  if (peerInfo.ok) {
    out(`peer: PyTorch ${peerInfo.torch} on ${values['peer-device']}, ${peerInfo.threads} thread(s), BLAS ${peerInfo.blas?.[0] ?? 'unknown'}; KV check max |Δ| ${peerInfo.kv_check_max_abs_diff?.toExponential(1)}`);
    if (peerInfo.blas?.some((b) => b.includes('/blas/libblas'))) {
      out('note: this PyTorch uses the reference BLAS (Debian libblas3, ~3 GFLOP/s). For a peer on an optimised BLAS, install');
      out('      libopenblas0-pthread or pass --blas-dir DIR holding an OpenBLAS libblas.so.3 (the ratios then drop).');
    }
  } else {
    out(`peer: skipped — ${peerInfo.reason}`);
  }
  out(`load average ${load0.toFixed(2)} → ${load1.toFixed(2)}${Math.max(load0, load1) > os.cpus().length - 0.5 ? ' (the machine was busy: medians are noisy)' : ''}`);
  if (values.profile) {
    out('');
    for (const l of await profileStep()) out(l);
  }
  const report = JSON.stringify({ backend: info, baseline, model: BENCH_MODEL, batch: BATCH, results, plainTrain: plain, peer: { ...peerInfo, device: values['peer-device'] }, loadavg: [load0, load1] });
  if (values.json) console.log(report);
  // The table on stdout and the figures in a file, from one run (scripts/device-bench.sh).
  if (values['json-out']) fs.writeFileSync(values['json-out'], report + '\n');
}
