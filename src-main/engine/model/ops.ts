/**
 * The building blocks of the policy model, each with a hand-written gradient where that makes the
 * training step cheaper on the backend in use.
 *
 * Why custom gradients: on tfjs-backend-wasm only a 2-D, untransposed matMul reaches XNNPACK
 * (17–37 GFLOP/s); matMul with transposeA/transposeB, and any batched matMul, runs a naive loop
 * at ~1 GFLOP/s, and the gather gradient (UnsortedSegmentSum) is not implemented at all. So on
 * wasm:
 *  - linear layers take their gradients through explicit transposes and plain 2-D matMuls,
 *  - embeddings are a one-hot matMul (the one-hot built in JavaScript, its transpose too),
 *  - attention runs its batched matMuls as depthwise convolutions (XNNPACK, ~7 GFLOP/s), which
 *    needs a time-major layout (rows ordered (t, b)) so that most operands are already in place.
 * Elsewhere (tfjs-node, pure-JS cpu) the plain formulation with TensorFlow.js's own gradients is
 * used. `KernelStrategy` names the choice; both are tested to agree.
 *
 * Layout convention: activations are 2-D `[T·B, D]` with rows in time-major order (row = t·B + b).
 * A batched matmul out_c[i, j] = Σ_r A_c[i, r] B_c[r, j] over channels c (c = (b, h)) is a
 * depthwise convolution with input [1, R, I, C] or [I, R, 1, C] (c innermost), filter [R, 1, C, J],
 * output [.., I, C·J]: each channel's filter slides over its own input, which is exactly a
 * per-channel matrix product.
 */
import * as tf from '@tensorflow/tfjs-core';

export interface KernelStrategy {
  /** 'onehot': one-hot matMul (wasm has no gather gradient); 'gather': tf.gather. */
  embedding: 'gather' | 'onehot';
  /** 'explicitTranspose': custom gradient with explicit transposes; 'autograd': tfjs's own. */
  linear: 'autograd' | 'explicitTranspose';
  /** 'depthwise': batched matmuls as depthwise convolutions; 'batchMatMul': tf.matMul on [B·H, T, E]. */
  attention: 'batchMatMul' | 'depthwise';
}

export const WASM_STRATEGY: KernelStrategy = { embedding: 'onehot', linear: 'explicitTranspose', attention: 'depthwise' };
export const PLAIN_STRATEGY: KernelStrategy = { embedding: 'gather', linear: 'autograd', attention: 'batchMatMul' };

/** The workarounds are applied only where they are needed: on wasm. */
export function strategyForBackend(backendName: string): KernelStrategy {
  return backendName === 'wasm' ? WASM_STRATEGY : PLAIN_STRATEGY;
}

/**
 * tf.customGrad with the inputs passed as an array: `f(inputs, save)` returns the value and its
 * gradient function (one gradient per input).
 */
function customOp<T extends tf.Tensor>(
  f: (inputs: tf.Tensor[], save: tf.GradSaveFunc) => { value: T; gradFunc: (dy: T, saved: tf.Tensor[]) => tf.Tensor | tf.Tensor[] },
): (...inputs: tf.Tensor[]) => T {
  return tf.customGrad<T>((...args: Array<tf.Tensor | tf.GradSaveFunc>) => f(args.slice(0, -1) as tf.Tensor[], args[args.length - 1] as tf.GradSaveFunc));
}

export const LN_EPS = 1e-5;
/** Additive attention mask value: large enough that exp() underflows to exactly 0, finite so that fully masked rows stay NaN-free. */
export const MASK_VALUE = -1e9;

// ---------------------------------------------------------------------------------------------
// Embedding: x[n] = wte[token[n]] + wpe[position[n]].

/**
 * Token + position embedding for N rows. `tokens`/`positions` are row-aligned (time-major rows).
 * Returns [N, D].
 */
export function embed(wte: tf.Tensor2D, wpe: tf.Tensor2D, tokens: Int32Array, positions: Int32Array, strategy: KernelStrategy): tf.Tensor2D {
  if (strategy.embedding === 'gather') {
    return tf.tidy(() => tf.add(tf.gather(wte, tf.tensor1d(tokens, 'int32')), tf.gather(wpe, tf.tensor1d(positions, 'int32'))) as tf.Tensor2D);
  }
  // One matMul does both lookups: [onehot(token) | onehot(position)] @ [wte; wpe]. The one-hot and
  // its transpose (for the weight gradient) are built in JavaScript, so no transpose op is needed.
  const V = wte.shape[0];
  const P = wpe.shape[0];
  const N = tokens.length;
  const K = V + P;
  const oh = new Float32Array(N * K);
  const ohT = new Float32Array(K * N);
  for (let n = 0; n < N; n++) {
    const a = tokens[n];
    const b = V + positions[n];
    oh[n * K + a] = 1;
    oh[n * K + b] = 1;
    ohT[a * N + n] = 1;
    ohT[b * N + n] = 1;
  }
  const f = customOp<tf.Tensor2D>(([wteIn, wpeIn]) => {
    const table = tf.concat([wteIn as tf.Tensor2D, wpeIn as tf.Tensor2D], 0);
    return {
      value: tf.matMul(tf.tensor2d(oh, [N, K]), table),
      gradFunc: (dy) => tf.split(tf.matMul(tf.tensor2d(ohT, [K, N]), dy), [V, P], 0),
    };
  });
  return f(wte, wpe);
}

// ---------------------------------------------------------------------------------------------
// LayerNorm without gain: x̂ = (x − mean) / sqrt(var + eps) over the last axis (Ba et al. 2016).
// The gain is folded into the weight of the linear layer that follows (x̂·g) @ W = x̂ @ (g ⊙ W),
// so its gradient comes from a small [D, M] product instead of a reduction over all rows.

function layerNormForward(x: tf.Tensor2D): { xhat: tf.Tensor2D; rstd: tf.Tensor2D } {
  const mean = tf.mean(x, -1, true);
  const xc = tf.sub(x, mean);
  const variance = tf.mean(tf.square(xc), -1, true);
  const rstd = tf.rsqrt(tf.add(variance, LN_EPS)) as tf.Tensor2D;
  return { xhat: tf.mul(xc, rstd) as tf.Tensor2D, rstd };
}

const layerNormGrad = customOp<tf.Tensor2D>(([x], save) => {
  const { xhat, rstd } = layerNormForward(x as tf.Tensor2D);
  save([xhat, rstd]);
  return {
    value: xhat,
    gradFunc: (g, [xh, r]) => {
      // dx = rstd · (dy − mean(dy) − x̂ · mean(dy ⊙ x̂))
      const a = tf.mean(g, -1, true);
      const b = tf.mean(tf.mul(g, xh), -1, true);
      return tf.mul(tf.sub(tf.sub(g, a), tf.mul(xh, b)), r);
    },
  };
});

/** Normalise each row of x [N, D] to zero mean and unit variance (no gain). */
export function layerNorm(x: tf.Tensor2D): tf.Tensor2D {
  return layerNormGrad(x);
}

/** Forward only (decoding): the same arithmetic, no gradient bookkeeping. */
export function layerNormInference(x: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => layerNormForward(x).xhat);
}

/** g ⊙ W with g [K] scaling the rows of W [K, M]: the folded LayerNorm gain. */
export function foldGain(g: tf.Tensor1D, w: tf.Tensor2D): tf.Tensor2D {
  return tf.mul(tf.reshape(g, [g.shape[0], 1]), w) as tf.Tensor2D;
}

// ---------------------------------------------------------------------------------------------
// Linear layers (no bias, as nanoGPT with bias=False): y = x @ W, optionally ReLU(x @ W).

const linearT = customOp<tf.Tensor2D>(([x, w], save) => {
  save([x, w]);
  return {
    value: tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D),
    gradFunc: (d, [xs, ws]) => [tf.matMul(d, tf.transpose(ws as tf.Tensor2D)), tf.matMul(tf.transpose(xs as tf.Tensor2D), d)],
  };
});

const linearReluT = customOp<tf.Tensor2D>(([x, w], save) => {
  // The ReLU is fused into the matMul kernel (XNNPACK clamps the output).
  const y = tf.fused.matMul({ a: x as tf.Tensor2D, b: w as tf.Tensor2D, activation: 'relu' }) as tf.Tensor2D;
  save([x, w, y]);
  return {
    value: y,
    gradFunc: (dy, [xs, ws, ys]) => {
      const dz = tf.mul(dy, tf.step(ys)) as tf.Tensor2D;
      return [tf.matMul(dz, tf.transpose(ws as tf.Tensor2D)), tf.matMul(tf.transpose(xs as tf.Tensor2D), dz)];
    },
  };
});

/** x [N, K] @ w [K, M] → [N, M]; `relu` applies max(0, ·). */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D, relu: boolean, strategy: KernelStrategy): tf.Tensor2D {
  if (strategy.linear === 'autograd') {
    return (relu ? tf.relu(tf.matMul(x, w)) : tf.matMul(x, w)) as tf.Tensor2D;
  }
  return relu ? linearReluT(x, w) : linearT(x, w);
}

/** Forward only (decoding). */
export function linearInference(x: tf.Tensor2D, w: tf.Tensor2D, relu: boolean): tf.Tensor2D {
  return relu ? (tf.fused.matMul({ a: x, b: w, activation: 'relu' }) as tf.Tensor2D) : tf.matMul(x, w);
}

// ---------------------------------------------------------------------------------------------
// Causal self-attention (Vaswani et al. 2017): softmax(q kᵀ / sqrt(E) + mask) v per head.

export interface AttentionShape {
  T: number;
  B: number;
  H: number;
  E: number;
}

/**
 * Key/value cache tensors in the layout the decoding step of the same strategy reads:
 *  - depthwise:   k [E, B, H, T] (time last, so a new column is the conv filter's last column), v [T, B, H, E]
 *  - batchMatMul: k [B, H, T, E], v [B, H, T, E]
 */
export interface KVPair {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
}

export function kvLayout(strategy: KernelStrategy): { batchAxis: number; timeAxisK: number; timeAxisV: number } {
  return strategy.attention === 'depthwise' ? { batchAxis: 1, timeAxisK: 3, timeAxisV: 0 } : { batchAxis: 0, timeAxisK: 2, timeAxisV: 2 };
}

/**
 * Additive attention mask for T queries over T keys: causal, plus (optionally) `leftPad[b]`
 * masked leading key positions per sequence. Shaped for the strategy's score layout:
 * depthwise scores are [T, B, H, T'] → mask [T, B or 1, 1, T']; batchMatMul scores are
 * [B, H, T, T'] → mask [B or 1, 1, T, T'].
 */
export function attentionMask(T: number, strategy: KernelStrategy, leftPad?: readonly number[]): tf.Tensor4D {
  const Bm = leftPad && leftPad.some((p) => p > 0) ? leftPad.length : 1;
  const m = new Float32Array(Bm * T * T);
  const depthwise = strategy.attention === 'depthwise';
  for (let b = 0; b < Bm; b++) {
    const pad = Bm > 1 ? leftPad![b] : 0;
    for (let t = 0; t < T; t++) {
      for (let s = 0; s < T; s++) {
        if (s <= t && s >= pad) continue;
        m[depthwise ? (t * Bm + b) * T + s : (b * T + t) * T + s] = MASK_VALUE;
      }
    }
  }
  return depthwise ? tf.tensor4d(m, [T, Bm, 1, T]) : tf.tensor4d(m, [Bm, 1, T, T]);
}

/**
 * Multi-head causal attention over fused projections qkv [T·B, 3D] (time-major rows, columns
 * (q|k|v, head, e)) → [T·B, D]. `mask` comes from `attentionMask`. When `capture` is given, the
 * keys and values are also written there (kept tensors, cache layout of `kvLayout`).
 */
export function attention(qkv: tf.Tensor2D, shape: AttentionShape, mask: tf.Tensor4D, strategy: KernelStrategy, capture?: KVPair[]): tf.Tensor2D {
  return strategy.attention === 'depthwise' ? attentionDepthwise(qkv, shape, mask, capture) : attentionBatchMatMul(qkv, shape, mask, capture);
}

function attentionBatchMatMul(qkv: tf.Tensor2D, { T, B, H, E }: AttentionShape, mask: tf.Tensor4D, capture?: KVPair[]): tf.Tensor2D {
  const D = H * E;
  // [T, B, H, E] → [B, H, T, E]
  const heads = (i: number) => tf.transpose(tf.reshape(tf.slice(qkv, [0, i * D], [T * B, D]), [T, B, H, E]), [1, 2, 0, 3]) as tf.Tensor4D;
  const q = tf.mul(heads(0), 1 / Math.sqrt(E)) as tf.Tensor4D;
  const k = heads(1);
  const v = heads(2);
  if (capture) capture.push({ k: tf.keep(tf.clone(k)), v: tf.keep(tf.clone(v)) });
  const p = tf.softmax(tf.add(tf.matMul(q, k, false, true), mask));
  const o = tf.matMul(p, v); // [B, H, T, E]
  return tf.reshape(tf.transpose(o, [2, 0, 1, 3]), [T * B, D]) as tf.Tensor2D;
}

function attentionDepthwise(qkv: tf.Tensor2D, { T, B, H, E }: AttentionShape, mask: tf.Tensor4D, capture?: KVPair[]): tf.Tensor2D {
  const D = H * E;
  const C = B * H;
  const scale = 1 / Math.sqrt(E);
  const f = customOp<tf.Tensor2D>(([qkvIn], save) => {
    const [q0, k, v] = tf.split(qkvIn as tf.Tensor2D, 3, 1).map((t) => tf.reshape(t, [T, C, E]) as tf.Tensor3D);
    const q = tf.mul(q0, scale) as tf.Tensor3D; // [T, C, E]
    // S_c[t, t'] = Σ_e q_c[t, e] k_c[t', e]: input (e, t, c), filter (e, c, t'), output (t, c, t').
    const qIn = tf.reshape(tf.transpose(q, [2, 0, 1]), [1, E, T, C]) as tf.Tensor4D;
    const kT = tf.transpose(k, [2, 1, 0]); // [E, C, T]
    const s = tf.depthwiseConv2d(qIn, tf.reshape(kT, [E, 1, C, T]) as tf.Tensor4D, 1, 'valid');
    const p = tf.softmax(tf.add(tf.reshape(s, [T, B, H, T]), mask)); // [T, B, H, T']
    // O_c[t, e] = Σ_t' P_c[t, t'] v_c[t', e]: input (t, t', c) as [T, T', 1, C], filter v (t', c, e).
    const pT = tf.transpose(tf.reshape(p, [T, C, T]), [0, 2, 1]); // [T, T', C]
    const o = tf.depthwiseConv2d(tf.reshape(pT, [T, T, 1, C]) as tf.Tensor4D, tf.reshape(v, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
    if (capture) capture.push({ k: tf.keep(tf.reshape(kT, [E, B, H, T])) as tf.Tensor4D, v: tf.keep(tf.reshape(v, [T, B, H, E])) as tf.Tensor4D });
    save([q, k, v, tf.reshape(p, [T, C, T]), pT]);
    return {
      value: tf.reshape(o, [T * B, D]),
      gradFunc: (dy, [qs, ks, vs, ps, pTs]) => {
        const dO = tf.reshape(dy, [T, C, E]);
        // dV_c[t', e] = Σ_t P_c[t, t'] dO_c[t, e]: input P as (t, t', c) = [1, T, T', C], filter dO (t, c, e).
        const dV = tf.depthwiseConv2d(tf.reshape(pTs, [1, T, T, C]) as tf.Tensor4D, tf.reshape(dO, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
        // dP_c[t, t'] = Σ_e dO_c[t, e] v_c[t', e]: input dO as (e, t, c), filter v as (e, c, t').
        const dOIn = tf.reshape(tf.transpose(dO, [2, 0, 1]), [1, E, T, C]) as tf.Tensor4D;
        const vF = tf.reshape(tf.transpose(vs, [2, 1, 0]), [E, 1, C, T]) as tf.Tensor4D;
        const dP = tf.reshape(tf.depthwiseConv2d(dOIn, vF, 1, 'valid'), [T, C, T]);
        // Softmax backward: dS = P ⊙ (dP − Σ_t' dP ⊙ P). Masked entries have P = 0, so dS = 0 there.
        const dS = tf.mul(ps, tf.sub(dP, tf.sum(tf.mul(dP, ps), -1, true)));
        const dST = tf.transpose(dS, [0, 2, 1]); // [T, T', C]
        // dq_c[t, e] = Σ_t' dS_c[t, t'] k_c[t', e] (times the scale): input (t, t', c) as [T, T', 1, C], filter k (t', c, e).
        const dQ = tf.mul(tf.depthwiseConv2d(tf.reshape(dST, [T, T, 1, C]) as tf.Tensor4D, tf.reshape(ks, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid'), scale);
        // dk_c[t', e] = Σ_t dS_c[t, t'] q_c[t, e]: input (t, t', c) as [1, T, T', C], filter q (t, c, e).
        const dK = tf.depthwiseConv2d(tf.reshape(dST, [1, T, T, C]) as tf.Tensor4D, tf.reshape(qs, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
        return tf.concat([tf.reshape(dQ, [T * B, D]), tf.reshape(dK, [T * B, D]), tf.reshape(dV, [T * B, D])], 1);
      },
    };
  });
  return f(qkv);
}

/**
 * One decoding step of attention for the B sequences of a batch: q, k, v [B, D] for the newest
 * position (q already scaled by 1/sqrt(E)). Appends k, v to the cache (returning the new cache
 * tensors; the caller disposes the old ones) and returns the attention output [B, D].
 * `mask` is an additive [B, 1, T'] mask over cached positions (left padding), or null.
 */
export function attentionDecodeStep(
  q: tf.Tensor2D,
  k: tf.Tensor2D,
  v: tf.Tensor2D,
  cache: KVPair,
  H: number,
  mask: tf.Tensor3D | null,
  strategy: KernelStrategy,
): { out: tf.Tensor2D; cache: KVPair } {
  const B = q.shape[0];
  const D = q.shape[1];
  const E = D / H;
  const C = B * H;
  if (strategy.attention === 'depthwise') {
    const kNew = tf.concat([cache.k, tf.reshape(tf.transpose(tf.reshape(k, [C, E])), [E, B, H, 1])], 3) as tf.Tensor4D;
    const vNew = tf.concat([cache.v, tf.reshape(v, [1, B, H, E])], 0) as tf.Tensor4D;
    const Tk = kNew.shape[3];
    const qIn = tf.reshape(tf.transpose(tf.reshape(q, [C, E])), [1, E, 1, C]) as tf.Tensor4D;
    let s = tf.reshape(tf.depthwiseConv2d(qIn, tf.reshape(kNew, [E, 1, C, Tk]) as tf.Tensor4D, 1, 'valid'), [B, H, Tk]);
    if (mask) s = tf.add(s, mask);
    const pIn = tf.reshape(tf.transpose(tf.reshape(tf.softmax(s), [C, Tk])), [1, Tk, 1, C]) as tf.Tensor4D;
    const o = tf.depthwiseConv2d(pIn, tf.reshape(vNew, [Tk, 1, C, E]) as tf.Tensor4D, 1, 'valid');
    return { out: tf.reshape(o, [B, D]), cache: { k: kNew, v: vNew } };
  }
  const kNew = tf.concat([cache.k, tf.reshape(k, [B, H, 1, E])], 2) as tf.Tensor4D;
  const vNew = tf.concat([cache.v, tf.reshape(v, [B, H, 1, E])], 2) as tf.Tensor4D;
  const Tk = kNew.shape[2];
  let s = tf.reshape(tf.matMul(tf.reshape(q, [C, 1, E]), tf.reshape(kNew, [C, Tk, E]), false, true), [B, H, Tk]);
  if (mask) s = tf.add(s, mask);
  const o = tf.matMul(tf.reshape(tf.softmax(s), [C, 1, Tk]), tf.reshape(vNew, [C, Tk, E]));
  return { out: tf.reshape(o, [B, D]), cache: { k: kNew, v: vNew } };
}

// ---------------------------------------------------------------------------------------------
// Per-token log-probabilities and entropy of the next-token distribution.

/**
 * For logits [N, V] and target ids [N]: log softmax(logits / temperature)[target] and the entropy
 * H = −Σ p log p of softmax(logits / temperature), returned stacked as [2, N] (row 0 log-probs,
 * row 1 entropy) because a custom-gradient op has one output. Gradient (z = logits / τ, p = softmax(z)):
 *   ∂ log p_y / ∂z = onehot(y) − p;   ∂H / ∂z = −p ⊙ (log p + H).
 * `withEntropy: false` skips the entropy work (its row is then zeros with zero gradient).
 */
export function tokenLogProbsAndEntropy(logits: tf.Tensor2D, targets: Int32Array, temperature = 1, withEntropy = true): tf.Tensor2D {
  const [N, V] = logits.shape;
  const flatIndex = new Int32Array(N);
  for (let n = 0; n < N; n++) flatIndex[n] = n * V + targets[n];
  const invT = 1 / temperature;
  const f = customOp<tf.Tensor2D>(([lg], save) => {
    const z = temperature === 1 ? lg : tf.mul(lg, invT);
    const zs = tf.sub(z, tf.max(z, -1, true));
    const lp = tf.sub(zs, tf.log(tf.sum(tf.exp(zs), -1, true))) as tf.Tensor2D; // log-softmax
    const logp = tf.gather(tf.reshape(lp, [N * V]), tf.tensor1d(flatIndex, 'int32'));
    const p = tf.exp(lp);
    const ent = withEntropy ? tf.neg(tf.sum(tf.mul(p, lp), -1)) : tf.zeros([N]);
    save([p, lp, ent]);
    return {
      value: tf.stack([logp, ent]) as tf.Tensor2D,
      gradFunc: (dy, [ps, lps, ents]) => {
        const [gLogp, gEnt] = tf.unstack(dy).map((t) => tf.reshape(t, [N, 1]));
        // Built in JavaScript: tfjs-backend-wasm 4.22's OneHot writes integer bits into float32
        // outputs (1 becomes 1.4e-45).
        const oh = new Float32Array(N * V);
        for (let n = 0; n < N; n++) oh[flatIndex[n]] = 1;
        const onehot = tf.tensor2d(oh, [N, V]);
        let dz = tf.mul(gLogp, tf.sub(onehot, ps));
        if (withEntropy) dz = tf.sub(dz, tf.mul(gEnt, tf.mul(ps, tf.add(lps, tf.reshape(ents, [N, 1])))));
        return temperature === 1 ? dz : tf.mul(dz, invT);
      },
    };
  });
  return f(logits);
}
