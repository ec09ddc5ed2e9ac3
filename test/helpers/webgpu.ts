/**
 * The webgpu tests' shared setup (issue #15). They run on a real adapter where there is one and on
 * Mesa's llvmpipe elsewhere; a machine without any adapter FAILS them (scripts/test-setup.sh, which
 * npm test runs first, installs Mesa 25 from bookworm-backports), so the WebGPU path is never
 * silently untested.
 */
import * as tf from '@tensorflow/tfjs-core';
import { expect } from 'vitest';
import { initBackend, type BackendInfo } from '../../src-main/engine/model/backend';
import type { PolicyModel } from '../../src-main/engine/model/policy-model';
import { decodeSegmentAsync, disposeDecodeState, sampleAsync, startDecode } from '../../src-main/engine/model/sampling';
import { maxAbsDiff } from '../model/helpers';

/** Make webgpu the backend, or throw saying why there is no adapter and how to get one. */
export async function requireWebGpu(what: string): Promise<BackendInfo> {
  const info = await initBackend('webgpu');
  if (info.name !== 'webgpu') {
    throw new Error(
      `no WebGPU adapter, so ${what} cannot run: ${info.skipped.find((s) => s.backend === 'webgpu')?.reason}. ` +
        'On Debian 12 install Mesa 25 from bookworm-backports: sudo bash scripts/test-setup.sh (npm test runs it first) installs it.',
    );
  }
  return info;
}

/** Run `f` on the given backend (the other one stays registered and keeps its own tensors), then return to webgpu. */
export async function onBackend<R>(backend: 'cpu' | 'webgpu', f: () => Promise<R> | R): Promise<R> {
  await tf.setBackend(backend);
  try {
    return await f();
  } finally {
    await tf.setBackend('webgpu');
  }
}

/** What recomputedLogProbs needs of a model: both families (the GPT, HfModel) have it. */
interface SequenceScorer {
  sequenceLogProbs(tokens: number[][]): { logProbs: tf.Tensor2D; entropy: tf.Tensor2D };
}

/**
 * Each decoded sequence's per-token log-probabilities recomputed by `model` without a cache (the
 * reference a resumed decode is checked against), from the position that predicts the first response token.
 */
export function recomputedLogProbs(model: SequenceScorer, sequences: ReadonlyArray<{ prompt: readonly number[]; tokens: readonly number[] }>): number[][] {
  return sequences.map((s) => {
    const { logProbs, entropy } = model.sequenceLogProbs([[...s.prompt, ...s.tokens]]);
    const lp = Array.from(logProbs.dataSync() as Float32Array).slice(s.prompt.length - 1);
    tf.dispose([logProbs, entropy]);
    return lp;
  });
}

/**
 * Segment resume on webgpu, for both model families: a decode split into segments equals an
 * uninterrupted one; after new weights mid-decode the tokens that follow are scored by the new
 * model (against `cpuModel(newWeights)` on cpu) and the ones before by the old.
 */
export async function expectSegmentResume(model: PolicyModel, prompts: number[][], newWeights: Float32Array, cpuModel: (weights: Float32Array) => SequenceScorer & { dispose(): void }): Promise<void> {
  const opts = { maxNewTokens: 10, temperature: 1, stopTokens: [0], seed: 17 };
  const whole = await sampleAsync(model, prompts, opts);
  const state = startDecode(prompts, opts);
  let segments = 0;
  while (state.sequences.some((s) => !s.finished)) {
    await decodeSegmentAsync(model, state, 3);
    segments++;
  }
  expect(segments).toBeGreaterThan(1);
  state.sequences.forEach((s, i) => {
    expect(s.tokens).toEqual(whole[i].tokens);
    expect(s.logProbs).toEqual(whole[i].logProbs); // the same computation on the same backend
  });
  disposeDecodeState(state);

  const resumed = startDecode(prompts, { maxNewTokens: 6, seed: 5 });
  await decodeSegmentAsync(model, resumed, 2);
  model.setWeights(newWeights);
  await decodeSegmentAsync(model, resumed, 4);
  const ref = await onBackend('cpu', () => {
    const m = cpuModel(newWeights);
    const lps = recomputedLogProbs(m, resumed.sequences);
    m.dispose();
    return lps;
  });
  resumed.sequences.forEach((s, i) => {
    expect(s.tokens).toHaveLength(6);
    expect(maxAbsDiff(s.rawLogProbs.slice(2), ref[i].slice(2))).toBeLessThan(1e-4);
    expect(maxAbsDiff(s.rawLogProbs.slice(0, 2), ref[i].slice(0, 2))).toBeGreaterThan(1e-3);
  });
  disposeDecodeState(resumed);
}
