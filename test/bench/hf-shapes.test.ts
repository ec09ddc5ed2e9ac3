/**
 * The shapes `npm run bench -- hf --shape …` measures (issue #15): the Qwen2.5-0.5B shape must be
 * that model's, checked by its parameter count: 494,032,768 by a hand count (Qwen's model card says
 * 0.49B) of its config.json: embedding 151936·896 (tied), per layer q 896·896 + 896, k and v 896·128 + 128 each,
 * o 896·896, MLP 3·896·4864, two norms of 896; 24 layers; the final norm.
 */
import { describe, expect, it } from 'vitest';
import { hfParameterCount } from '../../src-main/engine/hf/config';
import { randomHfConfig } from '../../src-main/engine/hf/random-model';
import { HF_BENCH_SHAPES } from '../../bench/hf';

describe('the hf bench shapes', () => {
  it('qwen2.5-0.5b has Qwen2.5-0.5B’s architecture and parameter count', () => {
    const s = HF_BENCH_SHAPES['qwen2.5-0.5b'];
    const c = randomHfConfig({ ...s, tokenizerDir: '' }, s.vocabSize!, { bos: null, eos: [151643] }); // the tokenizer is not read here
    const perLayer = 896 * 896 + 896 + 2 * (896 * 128 + 128) + 896 * 896 + 3 * 896 * 4864 + 2 * 896;
    expect(perLayer * 24 + 151936 * 896 + 896).toBe(494_032_768);
    expect(hfParameterCount(c)).toBe(494_032_768);
    expect(c).toMatchObject({ modelType: 'qwen2', attentionBias: true, tieWordEmbeddings: true, headDim: 64, numKvHeads: 2, ropeTheta: 1e6 });
  });

  it('tiny is the same family, small enough for a software adapter, with the real vocabulary', () => {
    const t = HF_BENCH_SHAPES.tiny;
    const q = HF_BENCH_SHAPES['qwen2.5-0.5b'];
    expect([t.arch, t.tie, t.vocabSize, t.kvHeads < t.heads]).toEqual([q.arch, q.tie, q.vocabSize, true]);
    // The embedding must fit one storage-buffer binding of llvmpipe (128 MiB).
    expect(t.vocabSize! * t.hidden * 4).toBeLessThan(128 * 2 ** 20);
  });
});
