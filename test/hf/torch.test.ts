/**
 * The Hugging Face family against an independent PyTorch forward pass (bench/peers/hf_torch.py,
 * float64, each prompt alone and unpadded) on the same safetensors folder: max |Δ log-prob| ≤ 1e-4
 * over every position and the whole vocabulary of a left-padded batch of prompts, for Llama
 * (llama3 rope scaling, untied, F32), Qwen2 (q/k/v bias, tied, BF16) and Qwen3 (q/k norm,
 * head_dim ≠ hidden/heads, tied, F16), each with grouped-query attention.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHfModel } from '../../src-main/engine/hf/load';
import { initBackend } from '../../src-main/engine/model/backend';
import { leftPadded, logSoftmax, makeCheckpoint, maxAbs, randomPrompts, torchLogProbs, type Checkpoint, type Family } from './fixtures';

beforeAll(async () => {
  await initBackend('wasm');
});

const LENGTHS = [9, 4, 13, 1];

describe.each<Family>(['llama', 'qwen2', 'qwen3'])('%s against PyTorch', (family) => {
  let ckpt: Checkpoint;
  beforeAll(() => {
    ckpt = makeCheckpoint(family);
  });
  afterAll(() => ckpt.cleanup());

  it('log-probabilities of every position equal the PyTorch peer within 1e-4', () => {
    const { model } = loadHfModel(ckpt.dir);
    const V = model.vocabSize;
    const prompts = randomPrompts(7, LENGTHS, V);
    const peer = torchLogProbs(ckpt.dir, prompts);
    const { rows, leftPad } = leftPadded(prompts);
    const T = rows[0].length;
    const before = tf.memory().numTensors;
    const lg = model.logits(rows, { leftPad });
    const data = lg.dataSync();
    lg.dispose();
    expect(tf.memory().numTensors).toBe(before);
    let worst = 0;
    let spread = 0;
    prompts.forEach((p, b) => {
      for (let t = 0; t < p.length; t++) {
        const ours = logSoftmax(data, (b * T + leftPad[b] + t) * V, V);
        const theirs = peer[b].subarray(t * V, (t + 1) * V);
        worst = Math.max(worst, maxAbs(ours, theirs));
        let lo = Infinity;
        let hi = -Infinity;
        for (const x of theirs) [lo, hi] = [Math.min(lo, x), Math.max(hi, x)];
        spread = Math.max(spread, hi - lo);
      }
    });
    console.log(`${family}: max |Δ log-prob| vs PyTorch ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-4);
    // The random weights give peaked distributions (a near-uniform one would pass trivially).
    expect(spread).toBeGreaterThan(5);
    model.dispose();
  });
});
