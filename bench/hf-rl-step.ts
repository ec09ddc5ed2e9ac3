/**
 * The RL-step line of `npm run bench -- hf` (issue #14): one MarsRL-style step on the bench's fixed
 * model — a rollout (the Studio's sampler, KV cache, temperature 1) of B prompts, then a
 * policy-gradient update (−Σ advantage · log π over the response tokens, one backward pass, one
 * AdamW step) — with LoRA adapters (rank 8, alpha 16, every linear) against full fine-tuning.
 * Each time is the best of the steps run (the first includes warm-up). Each mode runs in a fresh
 * child process, so each peak RSS (Linux VmHWM) is its own: the process's peak over the whole run
 * (load + steps) and the step's peak over the RSS after loading (optimizer moments, gradients,
 * activations; the wasm heap keeps its high-water mark). At this size both modes are dominated by
 * the 151,936-row tied LM head, whose chunked custom gradient (model.ts chunkedHeadStats) also
 * forms d(head) [D, V] when the head is frozen, as it is under LoRA.
 * On webgpu (issue #15) the rollout and the update use the asynchronous forms (sampleAsync,
 * Adam.stepAsync): the update's time ends with the gradient norm read back, so GPU work is counted.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend, type BackendPreference } from '../src-main/engine/model/backend';
import { canReadSync } from '../src-main/engine/model/readback';
import type { PolicyModel } from '../src-main/engine/model/policy-model';
import { Rng } from '../src-main/engine/util/rng';

export type RlStepMode = 'lora' | 'full';

export interface RlStepResult {
  mode: RlStepMode;
  trainableParams: number;
  rolloutMs: number;
  updateMs: number;
  /** VmHWM at the end (load + steps), bytes. */
  peakRss: number;
  /** RSS right after loading, and the peak during the steps, bytes. */
  afterLoadRss: number;
  stepPeakRss: number;
}

const SETTINGS = { rank: 8, alpha: 16, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const };

function vm(field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** VmHWM := the current RSS (Linux); where /proc refuses it, the peaks then include the load. */
function resetPeakRss(): void {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // a container without write access to /proc: peaks stay process-wide
  }
}

/** The child: load, then `steps` RL steps; prints an RlStepResult (best times) as JSON. */
export async function rlStepChild(dir: string, mode: RlStepMode, backend: BackendPreference, opts: { batch: number; prompt: number; newTokens: number; steps: number }): Promise<void> {
  await initBackend(backend);
  tf.enableProdMode();
  const { createOptimizer } = await import('../src-main/engine/model/optim');
  const { sample, sampleAsync } = await import('../src-main/engine/model/sampling');
  const sync = canReadSync();
  let model: PolicyModel;
  if (mode === 'lora') {
    const { loadLoraHfModel } = await import('../src-main/engine/hf/lora');
    model = loadLoraHfModel(dir, { ...SETTINGS, targets: [...SETTINGS.targets] }, { seed: 1 }).model;
  } else {
    const { loadHfWeights, readHfConfig } = await import('../src-main/engine/hf/load');
    model = loadHfWeights(dir, readHfConfig(dir).config);
  }
  const optimizer = createOptimizer(model, { lr: 1e-4, beta1: 0.9, beta2: 0.999, weight_decay: 0.01, grad_clip: 1 });
  const afterLoadRss = vm('VmRSS');
  const loadPeak = vm('VmHWM');
  resetPeakRss();
  const rng = new Rng(7, 'bench/rl-step');
  const { batch: B, prompt: P, newTokens: N } = opts;
  let rolloutMs = Infinity;
  let updateMs = Infinity;
  for (let s = 0; s < opts.steps; s++) {
    const prompts = Array.from({ length: B }, () => Array.from({ length: P }, () => rng.int(0, 150000)));
    let t0 = performance.now();
    const sampleOpts = { maxNewTokens: N, temperature: 1, seed: s };
    const seqs = sync ? sample(model, prompts, sampleOpts) : await sampleAsync(model, prompts, sampleOpts);
    rolloutMs = Math.min(rolloutMs, performance.now() - t0);
    // Rows right-padded to one length; only response tokens carry the (random ±1) advantage.
    const T = P + N;
    const rows = prompts.map((p, b) => [...p, ...seqs[b].tokens, ...new Array<number>(N - seqs[b].tokens.length).fill(0)]);
    const weights = new Float32Array((T - 1) * B);
    for (let b = 0; b < B; b++) {
      const adv = rng.next() < 0.5 ? -1 : 1;
      for (let t = P - 1; t < P - 1 + seqs[b].tokens.length; t++) weights[t * B + b] = -adv / (B * N);
    }
    t0 = performance.now();
    const w = tf.tensor1d(weights);
    const { value, grads } = tf.variableGrads(() => {
      const { stats } = model.nextTokenStatsTimeMajor(rows, { entropy: false });
      return tf.sum(tf.mul(tf.squeeze(tf.slice(stats, [0, 0], [1, -1])), w)) as tf.Scalar;
    }, model.variables);
    if (sync) optimizer.step(grads);
    else await optimizer.stepAsync(grads);
    tf.dispose([value, w, ...Object.values(grads)]);
    updateMs = Math.min(updateMs, performance.now() - t0);
  }
  const result: RlStepResult = { mode, trainableParams: model.numParams, rolloutMs, updateMs, peakRss: Math.max(loadPeak, vm('VmHWM')), afterLoadRss, stepPeakRss: vm('VmHWM') };
  console.log(JSON.stringify(result));
}

/**
 * Run one mode in a fresh process: `childArgs` start the hf bench (`bench/run.js hf` here,
 * the bundled bench on a GPU machine), given `--measure-rl-step DIR --mode MODE --backend B`.
 */
export function measureRlStep(childArgs: readonly string[], dir: string, mode: RlStepMode, backend: string): RlStepResult | { error: string } {
  const r = spawnSync(process.execPath, [...childArgs, '--measure-rl-step', dir, '--mode', mode, '--backend', backend], { encoding: 'utf8', maxBuffer: 1 << 20 });
  try {
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as RlStepResult;
  } catch {
    return { error: `child exited ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-2).join(' | ')}` };
  }
}

/** The lines the bench prints for the modes measured (null: not asked for). */
export function formatRlStep(lora: RlStepResult | { error: string } | null, full: RlStepResult | { error: string } | null, shape: string, steps: number): string[] {
  const RL_STEPS_NOTE = `${steps} steps`;
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  const line = (r: RlStepResult | { error: string }, name: string) =>
    'error' in r
      ? `  ${name}: not measured (${r.error})`
      : `  ${name.padEnd(22)} ${r.trainableParams.toLocaleString('en-US').padStart(11)} trainable  rollout ${r.rolloutMs.toFixed(0).padStart(6)} ms  update ${r.updateMs.toFixed(0).padStart(6)} ms  step ${(r.rolloutMs + r.updateMs).toFixed(0).padStart(6)} ms  peak RSS ${mib(r.peakRss)} (step: +${mib(r.stepPeakRss - r.afterLoadRss)} over ${mib(r.afterLoadRss)} after loading)`;
  const out = [`RL step (${shape}; fresh process each, best of ${RL_STEPS_NOTE}):`];
  if (lora) out.push(line(lora, `LoRA r${SETTINGS.rank}, all linears`));
  if (full) out.push(line(full, 'full fine-tuning'));
  if (lora && full && !('error' in lora) && !('error' in full)) {
    out.push(`  LoRA / full: step time ${((lora.rolloutMs + lora.updateMs) / (full.rolloutMs + full.updateMs)).toFixed(2)}×, update ${(lora.updateMs / full.updateMs).toFixed(2)}×, peak RSS ${(lora.peakRss / full.peakRss).toFixed(2)}×`);
  }
  return out;
}
