/**
 * The building blocks of the policy model, each with a hand-written gradient where that makes the
 * training step cheaper on the backend in use.
 *
 * Why custom gradients: on tfjs-backend-wasm only a 2-D, untransposed matMul reaches XNNPACK
 * (15–25 GFLOP/s at these shapes); matMul with transposeA/transposeB, and any batched matMul, runs
 * a naive loop at ~1 GFLOP/s, the gather gradient (UnsortedSegmentSum) is not implemented, and
 * every Slice/Split copies its whole input first. So on wasm:
 *  - each sublayer (LayerNorm → projections → attention → output projection, and LayerNorm → MLP)
 *    is one custom-gradient op whose backward pass uses explicit transposes and plain 2-D matMuls,
 *    and which keeps q, k and v apart by splitting the small weight instead of the activation;
 *  - attention runs its batched matmuls as depthwise convolutions (XNNPACK, 6–10 GFLOP/s), which
 *    needs a time-major layout (rows ordered (t, b)) so that most operands are already in place;
 *  - embeddings are looked up, and their gradient scattered, in JavaScript (one-hotᵀ·dX without
 *    the matMul).
 * Elsewhere (tfjs-node, pure-JS cpu) the plain formulation with TensorFlow.js's own gradients is
 * used. `KernelStrategy` names the choice; the two are tested to agree.
 *
 * Layout convention: activations are 2-D `[T·B, D]` with rows in time-major order (row = t·B + b).
 * A batched matmul out_c[i, j] = Σ_r A_c[i, r] B_c[r, j] over channels c (c = (b, h)) is a
 * depthwise convolution with input [1, R, I, C] or [I, R, 1, C] (c innermost), filter [R, 1, C, J],
 * output [.., I, C·J]: each channel's filter slides over its own input, which is exactly a
 * per-channel matrix product.
 */
import * as tf from '@tensorflow/tfjs-core';

export interface KernelStrategy {
  /** 'js': lookups and the scatter-add gradient in JavaScript (wasm has no gather gradient); 'gather': tf.gather. */
  embedding: 'gather' | 'js';
  /** 'fused': one custom-gradient op per sublayer, explicit transposes; 'autograd': tfjs's own gradients per op. */
  linear: 'autograd' | 'fused';
  /** 'depthwise': batched matmuls as depthwise convolutions; 'batchMatMul': tf.matMul on [B·H, T, E]. */
  attention: 'batchMatMul' | 'depthwise';
}

export const WASM_STRATEGY: KernelStrategy = { embedding: 'js', linear: 'fused', attention: 'depthwise' };
export const PLAIN_STRATEGY: KernelStrategy = { embedding: 'gather', linear: 'autograd', attention: 'batchMatMul' };

/**
 * The workarounds are applied only where they are needed: on wasm. WebGPU (issue #15) takes the
 * plain strategy: tfjs-backend-webgpu 4.22 has every kernel it uses, the gather gradient
 * (UnsortedSegmentSum) included; on llvmpipe its logits and gradients came within ~3e-6 of the
 * cpu backend, and test/model/webgpu.test.ts holds the weights after an AdamW step within 1e-5,
 * the gradients to finite differences and KV sampling to cpu's tokens. The wasm workarounds would be wrong there:
 * the 'js' embedding and KV cache read tensors back synchronously, which WebGPU in Node cannot
 * (readback.ts), and batched matMul is a GPU's fast path, not a naive loop. What WebGPU needed
 * was asynchronous readback, not other kernels.
 */
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
  // The tables are small; reading them, adding rows and scattering the gradient back in plain
  // loops costs less than a one-hot matMul (~1.5 ms a step) or wasm's gather (~0.2 µs a row).
  const [V, D] = wte.shape;
  const P = wpe.shape[0];
  const N = tokens.length;
  const f = customOp<tf.Tensor2D>(([wteIn, wpeIn]) => {
    const te = wteIn.dataSync() as Float32Array;
    const pe = wpeIn.dataSync() as Float32Array;
    const x = new Float32Array(N * D);
    for (let n = 0; n < N; n++) {
      const a = tokens[n] * D;
      const b = positions[n] * D;
      const o = n * D;
      for (let d = 0; d < D; d++) x[o + d] = te[a + d] + pe[b + d];
    }
    return {
      value: tf.tensor2d(x, [N, D]),
      gradFunc: (dy) => {
        const g = dy.dataSync() as Float32Array;
        const gte = new Float32Array(V * D);
        const gpe = new Float32Array(P * D);
        for (let n = 0; n < N; n++) {
          const a = tokens[n] * D;
          const b = positions[n] * D;
          const o = n * D;
          for (let d = 0; d < D; d++) {
            gte[a + d] += g[o + d];
            gpe[b + d] += g[o + d];
          }
        }
        return [tf.tensor2d(gte, [V, D]), tf.tensor2d(gpe, [P, D])];
      },
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

/** dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)), the LayerNorm backward pass. */
function layerNormBackward(g: tf.Tensor, xhat: tf.Tensor, rstd: tf.Tensor): tf.Tensor2D {
  const a = tf.mean(g, -1, true);
  const b = tf.mean(tf.mul(g, xhat), -1, true);
  return tf.mul(tf.sub(tf.sub(g, a), tf.mul(xhat, b)), rstd) as tf.Tensor2D;
}

const layerNormGrad = customOp<tf.Tensor2D>(([x], save) => {
  const { xhat, rstd } = layerNormForward(x as tf.Tensor2D);
  save([xhat, rstd]);
  return { value: xhat, gradFunc: (g, [xh, r]) => layerNormBackward(g, xh, r) };
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

/**
 * x @ w with the ReLU fused into the kernel (XNNPACK clamps the output). Called through the
 * kernel directly: tf.fused.matMul falls back to two kernels whenever a gradient is being
 * recorded, and here the gradient is our own.
 */
function matMulRelu(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  const [N] = x.shape;
  const M = w.shape[1];
  const a = tf.reshape(x, [1, N, x.shape[1]]);
  const b = tf.reshape(w, [1, w.shape[0], M]);
  const y = tf.engine().runKernel('_FusedMatMul', { a, b }, { transposeA: false, transposeB: false, activation: 'relu' }) as tf.Tensor;
  return tf.reshape(y, [N, M]);
}

/** x [N, K] @ w [K, M] → [N, M]; `relu` applies max(0, ·). Gradients: TensorFlow.js's own. */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D, relu: boolean): tf.Tensor2D {
  return (relu ? tf.relu(tf.matMul(x, w)) : tf.matMul(x, w)) as tf.Tensor2D;
}

/** Forward only (decoding). */
export function linearInference(x: tf.Tensor2D, w: tf.Tensor2D, relu: boolean): tf.Tensor2D {
  return relu ? matMulRelu(x, w) : tf.matMul(x, w);
}

/** dW = xᵀ @ dy through an explicit transpose: wasm's transposed matMul is ~10x slower. */
function weightGrad(x: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  return tf.matMul(tf.transpose(x), dy);
}

/** dx = dy @ wᵀ through an explicit (small) transpose. */
function inputGrad(dy: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  return tf.matMul(dy, tf.transpose(w));
}

// ---------------------------------------------------------------------------------------------
// The MLP sublayer: y = ReLU(LN(x) @ W1) @ W2 (W1 with the LayerNorm gain folded in).

/** MLP sublayer on x [N, D] → [N, D] (the residual add is the caller's). */
export function mlpSublayer(x: tf.Tensor2D, w1: tf.Tensor2D, w2: tf.Tensor2D, strategy: KernelStrategy): tf.Tensor2D {
  if (strategy.linear === 'autograd') return linear(linear(layerNorm(x), w1, true), w2, false);
  const f = customOp<tf.Tensor2D>(([xIn, w1In, w2In], save) => {
    const { xhat, rstd } = layerNormForward(xIn as tf.Tensor2D);
    const h = matMulRelu(xhat, w1In as tf.Tensor2D);
    save([xhat, rstd, w1In, w2In, h]);
    return {
      value: tf.matMul(h, w2In as tf.Tensor2D),
      gradFunc: (dy, [xh, r, w1s, w2s, hs]) => {
        const dW2 = weightGrad(hs as tf.Tensor2D, dy);
        const dz = tf.mul(inputGrad(dy, w2s as tf.Tensor2D), tf.step(hs)) as tf.Tensor2D;
        const dW1 = weightGrad(xh as tf.Tensor2D, dz);
        const dx = layerNormBackward(inputGrad(dz, w1s as tf.Tensor2D), xh, r);
        return [dx, dW1, dW2];
      },
    };
  });
  return f(x, w1, w2);
}

/** LN(x) @ w (the final LayerNorm and the LM head): x [N, D] → [N, M]. */
export function lnLinear(x: tf.Tensor2D, w: tf.Tensor2D, strategy: KernelStrategy): tf.Tensor2D {
  if (strategy.linear === 'autograd') return linear(layerNorm(x), w, false);
  const f = customOp<tf.Tensor2D>(([xIn, wIn], save) => {
    const { xhat, rstd } = layerNormForward(xIn as tf.Tensor2D);
    save([xhat, rstd, wIn]);
    return {
      value: tf.matMul(xhat, wIn as tf.Tensor2D),
      gradFunc: (dy, [xh, r, ws]) => [layerNormBackward(inputGrad(dy, ws as tf.Tensor2D), xh, r), weightGrad(xh as tf.Tensor2D, dy)],
    };
  });
  return f(x, w);
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

/**
 * The attention sublayer: y = Attn(LN(x) @ Wqkv) @ Wproj for x [T·B, D] → [T·B, D] (Wqkv with the
 * LayerNorm gain folded in; the residual add is the caller's).
 */
export function attentionSublayer(
  x: tf.Tensor2D,
  wqkv: tf.Tensor2D,
  wproj: tf.Tensor2D,
  shape: AttentionShape,
  mask: tf.Tensor4D,
  strategy: KernelStrategy,
  capture?: KVPair[],
): tf.Tensor2D {
  if (strategy.linear === 'autograd' || strategy.attention !== 'depthwise') {
    return linear(attention(linear(layerNorm(x), wqkv, false), shape, mask, strategy, capture), wproj, false);
  }
  const scale = 1 / Math.sqrt(shape.E);
  const f = customOp<tf.Tensor2D>(([xIn, wqkvIn, wprojIn], save) => {
    const { xhat, rstd } = layerNormForward(xIn as tf.Tensor2D);
    // Split the [D, 3D] weight, not the [T·B, 3D] activation (wasm's Split copies its input once
    // per output); the attention scale goes into Wq.
    const [wq0, wk, wv] = tf.split(wqkvIn as tf.Tensor2D, 3, 1) as tf.Tensor2D[];
    const wq = tf.mul(wq0, scale) as tf.Tensor2D;
    const q: tf.Tensor2D = tf.matMul(xhat, wq);
    const k: tf.Tensor2D = tf.matMul(xhat, wk);
    const v: tf.Tensor2D = tf.matMul(xhat, wv);
    const { o, saved } = depthwiseAttentionForward(q, k, v, shape, mask, capture);
    save([xhat, rstd, wq, wk, wv, wprojIn, o, ...saved]);
    return {
      value: tf.matMul(o, wprojIn as tf.Tensor2D),
      gradFunc: (dy, [xh, r, wqs, wks, wvs, wps, os, ...attnSaved]) => {
        const dWproj = weightGrad(os as tf.Tensor2D, dy);
        const { dq, dk, dv } = depthwiseAttentionBackward(inputGrad(dy, wps as tf.Tensor2D), attnSaved, shape);
        const xhT = tf.transpose(xh as tf.Tensor2D);
        // dq is with respect to the scaled q = x̂ (s·Wq), so dWq = s · x̂ᵀ dq.
        const dWqkv = tf.concat([tf.mul(tf.matMul(xhT, dq), scale), tf.matMul(xhT, dk), tf.matMul(xhT, dv)], 1);
        const dxhat = tf.addN([inputGrad(dq, wqs as tf.Tensor2D), inputGrad(dk, wks as tf.Tensor2D), inputGrad(dv, wvs as tf.Tensor2D)]);
        return [layerNormBackward(dxhat, xh, r), dWqkv, dWproj];
      },
    };
  });
  return f(x, wqkv, wproj);
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

/**
 * Depthwise-convolution attention, forward: q (already scaled), k, v as [T·B, D] time-major rows.
 * Returns the output [T·B, D] and the tensors the backward pass needs.
 */
function depthwiseAttentionForward(
  q2: tf.Tensor2D,
  k2: tf.Tensor2D,
  v2: tf.Tensor2D,
  { T, B, H, E }: AttentionShape,
  mask: tf.Tensor4D,
  capture?: KVPair[],
): { o: tf.Tensor2D; saved: tf.Tensor[] } {
  const C = B * H;
  const q = tf.reshape(q2, [T, C, E]);
  const k = tf.reshape(k2, [T, C, E]);
  const v = tf.reshape(v2, [T, C, E]);
  // S_c[t, t'] = Σ_e q_c[t, e] k_c[t', e]: input (e, t, c), filter (e, c, t'), output (t, c, t').
  const qIn = tf.reshape(tf.transpose(q, [2, 0, 1]), [1, E, T, C]) as tf.Tensor4D;
  const kT = tf.transpose(k, [2, 1, 0]); // [E, C, T]
  const s = tf.depthwiseConv2d(qIn, tf.reshape(kT, [E, 1, C, T]) as tf.Tensor4D, 1, 'valid');
  const p = tf.softmax(tf.add(tf.reshape(s, [T, B, H, T]), mask)); // [T, B, H, T']
  // O_c[t, e] = Σ_t' P_c[t, t'] v_c[t', e]: input (t, t', c) as [T, T', 1, C], filter v (t', c, e).
  const pT = tf.transpose(tf.reshape(p, [T, C, T]), [0, 2, 1]); // [T, T', C]
  const o = tf.depthwiseConv2d(tf.reshape(pT, [T, T, 1, C]) as tf.Tensor4D, tf.reshape(v, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
  if (capture) capture.push({ k: tf.keep(tf.reshape(kT, [E, B, H, T])) as tf.Tensor4D, v: tf.keep(tf.reshape(v, [T, B, H, E])) as tf.Tensor4D });
  return { o: tf.reshape(o, [T * B, H * E]), saved: [q, k, v, tf.reshape(p, [T, C, T]), pT] };
}

/** Depthwise-convolution attention, backward: dO [T·B, D] → dq (for the scaled q), dk, dv [T·B, D]. */
function depthwiseAttentionBackward(dy: tf.Tensor, [q, k, v, p, pT]: tf.Tensor[], { T, B, H, E }: AttentionShape): { dq: tf.Tensor2D; dk: tf.Tensor2D; dv: tf.Tensor2D } {
  const C = B * H;
  const N = T * B;
  const D = H * E;
  const dO = tf.reshape(dy, [T, C, E]);
  // dV_c[t', e] = Σ_t P_c[t, t'] dO_c[t, e]: input P as (t, t', c) = [1, T, T', C], filter dO (t, c, e).
  const dv = tf.depthwiseConv2d(tf.reshape(pT, [1, T, T, C]) as tf.Tensor4D, tf.reshape(dO, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
  // dP_c[t, t'] = Σ_e dO_c[t, e] v_c[t', e]: input dO as (e, t, c), filter v as (e, c, t').
  const dOIn = tf.reshape(tf.transpose(dO, [2, 0, 1]), [1, E, T, C]) as tf.Tensor4D;
  const vF = tf.reshape(tf.transpose(v, [2, 1, 0]), [E, 1, C, T]) as tf.Tensor4D;
  const dP = tf.reshape(tf.depthwiseConv2d(dOIn, vF, 1, 'valid'), [T, C, T]);
  // Softmax backward: dS = P ⊙ (dP − Σ_t' dP ⊙ P). Masked entries have P = 0, so dS = 0 there.
  const dS = tf.mul(p, tf.sub(dP, tf.sum(tf.mul(dP, p), -1, true)));
  const dST = tf.transpose(dS, [0, 2, 1]); // [T, T', C]
  // dq_c[t, e] = Σ_t' dS_c[t, t'] k_c[t', e]: input (t, t', c) as [T, T', 1, C], filter k (t', c, e).
  const dq = tf.depthwiseConv2d(tf.reshape(dST, [T, T, 1, C]) as tf.Tensor4D, tf.reshape(k, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
  // dk_c[t', e] = Σ_t dS_c[t, t'] q_c[t, e]: input (t, t', c) as [1, T, T', C], filter q (t, c, e).
  const dk = tf.depthwiseConv2d(tf.reshape(dST, [1, T, T, C]) as tf.Tensor4D, tf.reshape(q, [T, 1, C, E]) as tf.Tensor4D, 1, 'valid');
  return { dq: tf.reshape(dq, [N, D]), dk: tf.reshape(dk, [N, D]), dv: tf.reshape(dv, [N, D]) };
}

/** Depthwise attention on fused qkv as one op (used by `attention`; the model uses the sublayer op). */
function attentionDepthwise(qkv: tf.Tensor2D, shape: AttentionShape, mask: tf.Tensor4D, capture?: KVPair[]): tf.Tensor2D {
  const scale = 1 / Math.sqrt(shape.E);
  const f = customOp<tf.Tensor2D>(([qkvIn], save) => {
    const [q, k, v] = tf.split(qkvIn as tf.Tensor2D, 3, 1) as tf.Tensor2D[];
    const { o, saved } = depthwiseAttentionForward(tf.mul(q, scale) as tf.Tensor2D, k, v, shape, mask, capture);
    save(saved);
    return {
      value: o,
      gradFunc: (dy, saved2) => {
        const { dq, dk, dv } = depthwiseAttentionBackward(dy, saved2, shape);
        return tf.concat([tf.mul(dq, scale), dk, dv], 1);
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
 * row 1 entropy) because a custom-gradient op has one output. With z = logits / τ, p = softmax(z)
 * (one fused kernel) and lse = log Σ exp z:
 *   log p_y = z_y − lse,   H = lse − Σ p z,   lse = max z − log max p  (max p ≥ 1/V, never underflows)
 *   ∂ log p_y / ∂z = onehot(y) − p;   ∂H / ∂z = −p ⊙ (z − lse + H).
 * This avoids elementwise exp/log over [N, V] (wasm's are scalar and ~8 ns an element).
 * `withEntropy: false` skips the entropy work (its row is then zeros with zero gradient).
 */
export function tokenLogProbsAndEntropy(logits: tf.Tensor2D, targets: Int32Array, temperature = 1, withEntropy = true): tf.Tensor2D {
  const [N, V] = logits.shape;
  // The one-hot of the targets is built in JavaScript: tfjs-backend-wasm 4.22's OneHot writes
  // integer bits into float32 outputs (1 becomes 1.4e-45).
  const oh = new Float32Array(N * V);
  for (let n = 0; n < N; n++) oh[n * V + targets[n]] = 1;
  const invT = 1 / temperature;
  const f = customOp<tf.Tensor2D>(([lg], save) => {
    const onehot = tf.tensor2d(oh, [N, V]);
    const z = temperature === 1 ? lg : tf.mul(lg, invT);
    const p = tf.softmax(z);
    const lse = tf.sub(tf.max(z, -1), tf.log(tf.max(p, -1))); // [N]
    const logp = tf.sub(tf.sum(tf.mul(z, onehot), -1), lse);
    const ent = withEntropy ? tf.sub(lse, tf.sum(tf.mul(p, z), -1)) : tf.zeros([N]);
    save(withEntropy ? [p, onehot, z, lse, ent] : [p, onehot]);
    return {
      value: tf.stack([logp, ent]) as tf.Tensor2D,
      gradFunc: (dy, [ps, ohs, zs, lses, ents]) => {
        const [gLogp, gEnt] = tf.unstack(dy).map((t) => tf.reshape(t, [N, 1]));
        let dz = tf.mul(gLogp, tf.sub(ohs, ps));
        if (withEntropy) {
          const shift = tf.reshape(tf.sub(ents, lses), [N, 1]); // H − lse
          dz = tf.sub(dz, tf.mul(gEnt, tf.mul(ps, tf.add(zs, shift))));
        }
        return temperature === 1 ? dz : tf.mul(dz, invT);
      },
    };
  });
  return f(logits);
}
