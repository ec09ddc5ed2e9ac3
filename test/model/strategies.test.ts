/**
 * The two kernel strategies compute the same model. Runs on the pure-JS cpu backend, where both
 * are available (wasm lacks the gather gradient the plain strategy uses), and covers the code
 * path tfjs-node takes (gather, TensorFlow.js gradients, batched matMul attention).
 */
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { createModel } from '../../src-main/engine/gpt/model';
import { PLAIN_STRATEGY, strategyForBackend, WASM_STRATEGY } from '../../src-main/engine/model/ops';
import { sample } from '../../src-main/engine/model/sampling';
import { Rng } from '../../src-main/engine/util/rng';
import { maxAbsDiff, randomArray, randomTokens, scalar, TINY, worstDirectionalError } from './helpers';

beforeAll(async () => {
  const info = await initBackend('cpu');
  expect(info.name).toBe('cpu');
});

describe('kernel strategies on the cpu backend', () => {
  it('the cpu backend uses the plain strategy', () => {
    expect(strategyForBackend('cpu')).toEqual(PLAIN_STRATEGY);
    expect(strategyForBackend('tensorflow')).toEqual(PLAIN_STRATEGY);
    expect(strategyForBackend('wasm')).toEqual(WASM_STRATEGY);
  });

  it('give the same logits, log-probabilities and gradients', () => {
    const plain = createModel(TINY, 51, { initStd: 0.3, kernels: PLAIN_STRATEGY });
    const wasm = createModel(TINY, 51, { initStd: 0.3, kernels: WASM_STRATEGY });
    const rng = new Rng(52, 'strat');
    const tokens = randomTokens(rng, 3, 7, TINY.vocabSize);
    const coef = tf.tensor2d(randomArray(rng, 18), [3, 6]);
    const run = (m: typeof plain) => {
      const lg = m.logits(tokens);
      const logits = lg.dataSync().slice();
      lg.dispose();
      const { value, grads } = tf.variableGrads(() => {
        const { logProbs, entropy } = m.sequenceLogProbs(tokens, { temperature: 0.8 });
        return tf.add(tf.sum(tf.mul(logProbs, coef)), tf.sum(entropy)) as tf.Scalar;
      }, m.variables);
      const g = m.variables.map((v) => grads[v.name].dataSync().slice());
      const loss = scalar(value);
      tf.dispose(grads);
      return { logits, g, loss };
    };
    const a = run(plain);
    const b = run(wasm);
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-5);
    expect(Math.abs(a.loss - b.loss)).toBeLessThan(1e-4);
    a.g.forEach((g, i) => expect(maxAbsDiff(g, b.g[i]), plain.specs[i].name).toBeLessThan(1e-4));
    coef.dispose();
    plain.dispose();
    wasm.dispose();
  });

  it('plain-strategy gradients (gather embedding) match finite differences', () => {
    const model = createModel(TINY, 53, { initStd: 0.3, kernels: PLAIN_STRATEGY });
    const rng = new Rng(54, 'plain-fd');
    const tokens = randomTokens(rng, 2, 5, TINY.vocabSize);
    const loss = () => tf.neg(tf.sum(model.sequenceLogProbs(tokens, { entropy: false }).logProbs)) as tf.Scalar;
    const { grads } = tf.variableGrads(loss, model.variables);
    const flat = model.getWeights();
    for (const name of ['wte', 'wpe', 'h1.attn.wqkv', 'head']) {
      const i = model.specs.findIndex((s) => s.name === name);
      const spec = model.specs[i];
      const f = (v: Float32Array) => {
        const w = flat.slice();
        w.set(v, spec.offset);
        model.setWeights(w);
        return scalar(tf.tidy(loss));
      };
      const err = worstDirectionalError(f, flat.slice(spec.offset, spec.offset + spec.size), grads[model.variables[i].name].dataSync() as Float32Array, rng, 2, [3e-3, 1e-3, 3e-4], 1e-2);
      expect(err, name).toBeLessThan(3e-2);
    }
    tf.dispose(grads);
    model.dispose();
  });

  it.each([
    ['batched-matMul tensor', PLAIN_STRATEGY],
    ['JavaScript', WASM_STRATEGY],
  ] as const)('sampling with the %s KV cache returns the log-probabilities a recompute gives', (_name, kernels) => {
    const model = createModel(TINY, 55, { initStd: 0.3, kernels });
    const prompts = [[1, 2, 3], [4], [5, 6]];
    const out = sample(model, prompts, { maxNewTokens: 6, temperature: 1, seed: 3 });
    const noCache = sample(model, prompts, { maxNewTokens: 6, temperature: 1, seed: 3, useKvCache: false });
    out.forEach((s, i) => {
      expect(s.tokens).toEqual(noCache[i].tokens);
      const seq = [...prompts[i], ...s.tokens];
      const { logProbs, entropy } = model.sequenceLogProbs([seq]);
      const re = logProbs.dataSync().slice(prompts[i].length - 1);
      expect(maxAbsDiff(re, s.rawLogProbs)).toBeLessThan(1e-4);
      tf.dispose([logProbs, entropy]);
    });
    model.dispose();
  });
});
