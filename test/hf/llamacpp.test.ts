/**
 * The Hugging Face family against llama.cpp (node-llama-cpp's CPU build) on the F32 GGUF the
 * Studio writes from the loaded model's weights (hfNamedTensors → writeGguf): max |Δ log-prob|
 * ≤ 2e-3 over every position and the whole vocabulary of a batch of prompts, for Llama (llama3
 * rope scaling, untied), Qwen2 (q/k/v bias, tied, BF16) and Qwen3 (q/k norm, head_dim ≠
 * hidden/heads, tied), with grouped-query attention. llama.cpp's probabilities per position come
 * from `sequence.controlledEvaluate(… generateNext: { probabilities: true })`.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { getLlama, type ControlledEvaluateInputItem, type Llama, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeGguf } from '../../src-main/engine/hf/gguf';
import { hfNamedTensors, loadHfModel } from '../../src-main/engine/hf/load';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
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

describe('marsrl model generate', () => {
  it('--greedy --json gives llama.cpp\'s greedy ids and log-probs on the same weights (child process)', async () => {
    const ckpt = makeCheckpoint('qwen3', { layers: 1 });
    try {
      const prompt = randomPrompts(41, [6], ckpt.config.vocabSize)[0];
      const maxTokens = 10;
      const { stdout } = await promisify(execFile)(process.execPath, ['bin/marsrl.js', 'model', 'generate', ckpt.dir, '--prompt-ids', prompt.join(','), '--max-tokens', String(maxTokens), '--greedy', '--backend', 'wasm', '--json'], { maxBuffer: 1 << 24 });
      const out = JSON.parse(stdout) as { prompt_ids: number[]; ids: number[]; logprobs: number[]; text: string; finish_reason: string };
      expect(out.prompt_ids).toEqual(prompt);
      expect(out.ids.length).toBe(out.logprobs.length);
      expect(out.ids.length).toBeGreaterThan(0);
      if (out.finish_reason !== 'stop') expect(out.ids.length).toBe(maxTokens);

      // llama.cpp's greedy decoding with its own KV cache: the argmax of each next-token distribution.
      const gguf = path.join(ckpt.dir, 'model-f32.gguf');
      const { model: ours } = loadHfModel(ckpt.dir);
      writeGguf(gguf, { config: ours.config, tensors: hfNamedTensors(ours), dtype: 'f32', tokenizerDir: ckpt.dir });
      ours.dispose();
      const model = await llama.loadModel({ modelPath: gguf });
      const context = await model.createContext({ contextSize: 64, sequences: 1, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', flashAttention: false });
      const sequence = context.getSequence();
      const ids: number[] = [];
      const logprobs: number[] = [];
      let feed = prompt;
      try {
        while (ids.length < out.ids.length) {
          const res = await sequence.controlledEvaluate(feed.map((t, i): ControlledEvaluateInputItem => (i === feed.length - 1 ? [t as Token, { generateNext: { probabilities: true } }] : (t as Token))));
          let best = -1;
          let bestP = -1;
          for (const [tok, p] of res[feed.length - 1]!.next!.probabilities!) if (p > bestP) [best, bestP] = [tok, p];
          ids.push(best);
          logprobs.push(Math.log(bestP));
          feed = [best];
        }
      } finally {
        await context.dispose();
        await model.dispose();
      }
      expect(out.ids).toEqual(ids);
      out.logprobs.forEach((lp, i) => expect(Math.abs(lp - logprobs[i])).toBeLessThan(2e-3));
      expect(out.text).toBe(HfTokenizer.fromFolder(ckpt.dir).decode(out.ids, { skipSpecialTokens: true }));
    } finally {
      ckpt.cleanup();
    }
  });
});
