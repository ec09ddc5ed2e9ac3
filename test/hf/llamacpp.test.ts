/**
 * The Hugging Face family against llama.cpp (node-llama-cpp's CPU build) on the F32 GGUF the
 * Studio writes from the loaded model's weights (hfNamedTensors → writeGguf): max |Δ log-prob|
 * ≤ 2e-3 over every position and the whole vocabulary of a batch of prompts, for Llama (llama3
 * rope scaling, untied), Qwen2 (q/k/v bias, tied, BF16) and Qwen3 (q/k norm, head_dim ≠
 * hidden/heads, tied), with grouped-query attention. llama.cpp's probabilities per position come
 * from `sequence.controlledEvaluate(… generateNext: { probabilities: true })`.
 */
import path from 'node:path';
import { getLlama, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGguf } from '../../src-main/engine/hf/gguf';
import { hfNamedTensors, loadHfModel } from '../../src-main/engine/hf/load';
import { initBackend } from '../../src-main/engine/model/backend';
import { leftPadded, llamaCppLogProbs, logSoftmax, makeCheckpoint, randomPrompts, type Checkpoint, type Family } from './fixtures';

let llama: Llama;
beforeAll(async () => {
  await initBackend('wasm');
  llama = await getLlama({ gpu: false, build: 'never' });
});
afterAll(async () => {
  await llama?.dispose();
});

describe.each<Family>(['llama', 'qwen2', 'qwen3'])('%s against llama.cpp', (family) => {
  let ckpt: Checkpoint;
  beforeAll(() => {
    ckpt = makeCheckpoint(family);
  });
  afterAll(() => ckpt.cleanup());

  it('log-probabilities of every position equal llama.cpp on the exported F32 GGUF within 2e-3', async () => {
    const { model } = loadHfModel(ckpt.dir);
    const V = model.vocabSize;
    const gguf = path.join(ckpt.dir, 'model-f32.gguf');
    writeGguf(gguf, { config: model.config, tensors: hfNamedTensors(model), dtype: 'f32', tokenizerDir: ckpt.dir, name: `tiny-${family}` });
    const prompts = randomPrompts(17, [7, 3, 10], V);
    const theirs = await llamaCppLogProbs(llama, gguf, prompts, V);
    const { rows, leftPad } = leftPadded(prompts);
    const T = rows[0].length;
    const lg = model.logits(rows, { leftPad });
    const data = lg.dataSync();
    lg.dispose();
    let worst = 0;
    let compared = 0;
    prompts.forEach((p, b) => {
      expect(theirs[b].length).toBe(p.length);
      for (let t = 0; t < p.length; t++) {
        const ours = logSoftmax(data, (b * T + leftPad[b] + t) * V, V);
        const ref = theirs[b][t];
        for (let v = 0; v < V; v++) {
          worst = Math.max(worst, Math.abs(ours[v] - ref[v]));
          compared++;
        }
      }
    });
    console.log(`${family}: max |Δ log-prob| vs llama.cpp ${worst.toExponential(2)} over ${compared} values`);
    expect(compared).toBe(20 * V);
    expect(worst).toBeLessThan(2e-3);
    model.dispose();
  });
});
