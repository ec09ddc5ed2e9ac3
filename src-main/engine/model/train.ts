/**
 * Supervised (warm-start) training: next-token cross-entropy on the positions a mask selects.
 * Warm start trains each role on its target text only: the prompt (and padding) positions get
 * lossMask 0, the role's answer positions 1.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { PolicyModel } from './policy-model';
import type { Adam, StepResult } from './optim';
import { takeSync, takeAsync } from './readback';

export interface SupervisedBatch {
  /** [B][T] token ids, equal lengths (right-pad with <pad>). */
  tokens: number[][];
  /**
   * [B][T] weights; lossMask[b][t] = 1 makes the model predict tokens[b][t] from tokens[b][< t].
   * lossMask[b][0] is ignored (nothing precedes the first token).
   */
  lossMask: number[][];
}

export interface SupervisedStepResult extends StepResult {
  /** Mean cross-entropy (nats per target token) before the update. */
  loss: number;
  /** Number of target tokens. */
  tokens: number;
}

/**
 * Mean masked cross-entropy as a scalar tensor (differentiable). Returns the number of target
 * tokens too. Throws when the mask selects nothing.
 */
export function supervisedLoss(model: PolicyModel, batch: SupervisedBatch): { loss: tf.Scalar; count: number } {
  const B = batch.tokens.length;
  const T = batch.tokens[0]?.length ?? 0;
  if (batch.lossMask.length !== B || batch.lossMask.some((r, b) => r.length !== batch.tokens[b].length)) {
    throw new Error('lossMask must have the same shape as tokens');
  }
  // Time-major weights for targets t = 1..T−1 (row (t−1)·B + b), matching nextTokenStatsTimeMajor.
  const w = new Float32Array((T - 1) * B);
  let count = 0;
  for (let t = 1; t < T; t++) {
    for (let b = 0; b < B; b++) {
      const m = batch.lossMask[b][t];
      w[(t - 1) * B + b] = m;
      count += m;
    }
  }
  if (!(count > 0)) throw new Error('lossMask selects no target token');
  const loss = tf.tidy(() => {
    const { stats } = model.nextTokenStatsTimeMajor(batch.tokens, { entropy: false });
    const logp = tf.reshape(tf.slice(stats, [0, 0], [1, (T - 1) * B]), [(T - 1) * B]);
    return tf.div(tf.neg(tf.sum(tf.mul(logp, tf.tensor1d(w)))), count) as tf.Scalar;
  });
  return { loss, count };
}

/**
 * One optimizer step on a supervised batch: forward, backward, clip, Adam. Returns the loss
 * (before the update) and the gradient norm (before clipping). A NaN/Inf gradient skips the update.
 */
export function supervisedStep(model: PolicyModel, optimizer: Adam, batch: SupervisedBatch): SupervisedStepResult {
  const { value, grads, count } = supervisedGrads(model, batch);
  const loss = takeSync(value, 'supervisedStepAsync')[0];
  const result = optimizer.step(grads);
  tf.dispose(grads);
  return { ...result, loss, tokens: count };
}

/** `supervisedStep` for every backend, WebGPU included (the loss and gradient norm are read back asynchronously). */
export async function supervisedStepAsync(model: PolicyModel, optimizer: Adam, batch: SupervisedBatch): Promise<SupervisedStepResult> {
  const { value, grads, count } = supervisedGrads(model, batch);
  const loss = (await takeAsync(value))[0];
  try {
    const result = await optimizer.stepAsync(grads);
    return { ...result, loss, tokens: count };
  } finally {
    tf.dispose(grads);
  }
}

/** The loss (a scalar tensor, not yet read back), its gradients and the target-token count. */
function supervisedGrads(model: PolicyModel, batch: SupervisedBatch): { value: tf.Scalar; grads: tf.NamedTensorMap; count: number } {
  let count = 0;
  const { value, grads } = tf.variableGrads(() => {
    const r = supervisedLoss(model, batch);
    count = r.count;
    return r.loss;
  }, model.variables);
  return { value, grads, count };
}
