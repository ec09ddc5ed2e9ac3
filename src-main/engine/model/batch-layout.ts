/**
 * How both model families lay a token batch out (the GPT in gpt/model.ts and the Hugging Face family
 * in hf/model.ts compute on time-major 2-D activations; see ops.ts for why). One definition, so
 * the two families validate batches and count positions the same way.
 */
import * as tf from '@tensorflow/tfjs-core';

/**
 * Validate a batch [B][T] and lay it out time-major: row t·B + b holds tokens[b][t], and its
 * position counts from the end of row b's left padding (`leftPad[b]` leading tokens are padding).
 */
export function timeMajorBatch(tokens: number[][], leftPad: readonly number[] | undefined, vocabSize: number, context: number): { tm: Int32Array; pos: Int32Array; T: number; B: number } {
  const B = tokens.length;
  if (B === 0) throw new Error('empty batch');
  const T = tokens[0].length;
  if (T === 0) throw new Error('empty sequences');
  if (T > context) throw new Error(`sequence length ${T} exceeds the model context ${context}`);
  if (leftPad && leftPad.length !== B) throw new Error(`leftPad has ${leftPad.length} entries for ${B} sequences`);
  const tm = new Int32Array(T * B);
  const pos = new Int32Array(T * B);
  for (let b = 0; b < B; b++) {
    const row = tokens[b];
    if (row.length !== T) throw new Error(`all sequences in a batch must have the same length (row 0 has ${T}, row ${b} has ${row.length}); pad them`);
    const pad = leftPad ? leftPad[b] : 0;
    for (let t = 0; t < T; t++) {
      const id = row[t];
      if (!Number.isInteger(id) || id < 0 || id >= vocabSize) throw new Error(`token id ${id} at [${b}][${t}] is outside the vocabulary (size ${vocabSize})`);
      tm[t * B + b] = id;
      pos[t * B + b] = Math.max(0, t - pad);
    }
  }
  return { tm, pos, T, B };
}

/**
 * Time-major next-token statistics [2, (T−1)·B] (PolicyModel.nextTokenStatsTimeMajor) as
 * batch-major log-probabilities and entropies, each [B, T−1]. Consumes `stats`.
 */
export function batchMajorStats({ stats, T, B }: { stats: tf.Tensor2D; T: number; B: number }): { logProbs: tf.Tensor2D; entropy: tf.Tensor2D } {
  return tf.tidy(() => {
    const [lp, ent] = tf.unstack(stats);
    stats.dispose();
    return {
      logProbs: tf.transpose(tf.reshape(lp, [T - 1, B])) as tf.Tensor2D,
      entropy: tf.transpose(tf.reshape(ent, [T - 1, B])) as tf.Tensor2D,
    };
  });
}

/** Time-major logits [T·B, V] (row t·B + b scores the token after tokens[b][t]) as [B, T, V]. */
export function batchMajorLogits(logits: tf.Tensor2D, T: number, B: number): tf.Tensor3D {
  return tf.transpose(tf.reshape(logits, [T, B, logits.shape[1]]), [1, 0, 2]);
}
