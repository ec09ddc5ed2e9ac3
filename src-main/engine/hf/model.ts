/**
 * The Hugging Face decoder family on TensorFlow.js (issue #13): LlamaForCausalLM,
 * Qwen2ForCausalLM and Qwen3ForCausalLM behind the policy seam (PolicyModel). It reads top to
 * bottom in the order the parts compose: parameters → rotary tables → the differentiable forward
 * pass → next-token statistics with a chunked LM head → incremental decoding → weights in and out.
 *
 * The function (transformers' modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py, and
 * llama.cpp's llama/qwen2/qwen3 graphs, read to learn, not copied):
 *   x = embed[token]
 *   per layer:  h = RMSNorm(x)·g₁;  q = h Wq (+bq), k = h Wk (+bk), v = h Wv (+bv)
 *               Qwen3: q, k ← RMSNorm per head (gains q_norm, k_norm), before RoPE
 *               q, k ← RoPE (rotate-half convention, θ = rope_theta, rope_scaling linear/llama3)
 *               x += softmax(q kᵀ/√head_dim + causal mask) v  Wo   (grouped-query: query head h
 *                    reads key/value head ⌊h / (H / KV)⌋, as repeat_kv does)
 *               h = RMSNorm(x)·g₂;  x += (SiLU(h Wgate) ⊙ h Wup) Wdown
 *   logits = RMSNorm(x)·g_f  W_head   (W_head = embedᵀ with tie_word_embeddings)
 * RMSNorm(x) = x / sqrt(mean(x²) + rms_norm_eps).
 *
 * Storage: every matrix is kept as [in, out] (Hugging Face stores linears as [out, in]) because
 * on tfjs-backend-wasm only an untransposed 2-D matMul reaches XNNPACK (ops.ts); the token
 * embedding is kept as [D, V], the layout the (tied) LM head multiplies by, and looked up by
 * columns. `specs` give these storage shapes; `hfNamedTensors` (load.ts) turns them back.
 *
 * Decoding has two cache modes, as the GPT's (gpt/model.ts): 'js' (wasm, cpu) keeps keys and values in
 * JavaScript arrays and computes attention, RoPE and the Qwen3 q/k norm of the new positions in
 * plain loops between the tensor matMuls; 'concat' (other backends) keeps them as tensors grown
 * by concatenation and runs the same tensor forward pass as training. On webgpu (issue #15) only
 * 'concat' runs: WebGPU in Node reads tensors back asynchronously only (model/readback.ts), so
 * every call that returns values has an `…Async` twin, built on a staged form (HfStaged) that
 * does the tensor work at once and reads back afterwards; the embedding's gradient stays on the
 * device there (embedColumns).
 *
 * Trainable parameters: all weights (full fine-tuning). LoRA (a later issue) adds adapter
 * variables beside these; its KL reference is this forward pass with the adapters off.
 */
import * as tf from '@tensorflow/tfjs-core';
import { batchMajorLogits, batchMajorStats, timeMajorBatch } from '../model/batch-layout';
import { FlatWeightsModel } from '../model/flat-weights';
import { VersionSequence, WeightsVersion } from '../model/weights-version';
import { registerMissingGradients } from '../model/gradients';
import { MASK_VALUE } from '../model/ops';
import type { DecodeCache, ParamSpec, PolicyModel } from '../model/policy-model';
import { disposeModelCache, joinModelCaches, selectModelCacheRows } from '../model/kv-join';
import { canReadSync, finishAsync, finishSync, takeAsync, takeSync, type Staged } from '../model/readback';
import type { HfArchConfig } from './config';

// ---------------------------------------------------------------------------------------------
// Parameters

/** Cache mode of incremental decoding (see the module comment). */
export type HfDecodeMode = 'js' | 'concat';

// --- LoRA hook (issue #14; the adapters themselves are in lora.ts) ---------------------------
/** The linear modules of a decoder layer, by their Hugging Face names (LoRA targets). */
export type HfLinearModule = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';
/**
 * Something added to a linear's output y = h W: LoRA's (alpha/r)·B A h. Set on `HfModel.adapter`
 * around a call (lora.ts); null (the default) is the plain model, so with no adapter the forward
 * pass is exactly the one without the hook.
 */
export interface HfLinearAdapter {
  /** The addition for input rows h [N, in] of `layer`'s `module` ([N, out]), or null for none. */
  delta(layer: number, module: HfLinearModule, h: tf.Tensor2D): tf.Tensor2D | null;
}
// --- end of the LoRA hook --------------------------------------------------------------------

export interface HfModelOptions {
  /** Override the decode mode chosen from the backend (tests compare both). */
  decodeMode?: HfDecodeMode;
  /**
   * Rows of the LM head computed at once in `nextTokenStatsTimeMajor` (default: as many as fit
   * in ~4M logits). Only [rows × vocabulary] logits are ever held, never [tokens × vocabulary].
   */
  headChunkRows?: number;
}

/**
 * Parameter names (Hugging Face names) and storage shapes in their fixed order (the order of the
 * flat weight buffer). Matrices are [in, out]; the embedding is [D, V]; with tied embeddings
 * there is no lm_head.
 */
export function hfParamSpecs(c: HfArchConfig): ParamSpec[] {
  const D = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const list: Array<[string, number[]]> = [['model.embed_tokens.weight', [D, c.vocabSize]]];
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}.`;
    list.push([`${p}input_layernorm.weight`, [D]], [`${p}self_attn.q_proj.weight`, [D, q]]);
    if (c.attentionBias) list.push([`${p}self_attn.q_proj.bias`, [q]]);
    list.push([`${p}self_attn.k_proj.weight`, [D, kv]]);
    if (c.attentionBias) list.push([`${p}self_attn.k_proj.bias`, [kv]]);
    list.push([`${p}self_attn.v_proj.weight`, [D, kv]]);
    if (c.attentionBias) list.push([`${p}self_attn.v_proj.bias`, [kv]]);
    list.push([`${p}self_attn.o_proj.weight`, [q, D]]);
    if (c.qkNorm) list.push([`${p}self_attn.q_norm.weight`, [c.headDim]], [`${p}self_attn.k_norm.weight`, [c.headDim]]);
    list.push([`${p}post_attention_layernorm.weight`, [D]], [`${p}mlp.gate_proj.weight`, [D, I]], [`${p}mlp.up_proj.weight`, [D, I]], [`${p}mlp.down_proj.weight`, [I, D]]);
  }
  list.push(['model.norm.weight', [D]]);
  if (!c.tieWordEmbeddings) list.push(['lm_head.weight', [D, c.vocabSize]]);
  let offset = 0;
  return list.map(([name, shape]) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const spec: ParamSpec = { name, shape, offset, size, decay: shape.length > 1 };
    offset += size;
    return spec;
  });
}

interface LayerVars {
  ln1: tf.Variable;
  wq: tf.Variable;
  wk: tf.Variable;
  wv: tf.Variable;
  bq: tf.Variable | null;
  bk: tf.Variable | null;
  bv: tf.Variable | null;
  wo: tf.Variable;
  qNorm: tf.Variable | null;
  kNorm: tf.Variable | null;
  ln2: tf.Variable;
  wGate: tf.Variable;
  wUp: tf.Variable;
  wDown: tf.Variable;
}

/** Incremental-decoding cache of the Hugging Face family. */
export interface HfCache extends DecodeCache {
  mode: HfDecodeMode;
  version: number;
  length: number;
  /** Preallocated positions ('js'). */
  capacity: number;
  leftPad: number[];
  /** 'js': per layer, keys and values [B, KV, capacity, headDim] (RoPE applied to the keys). */
  js: Array<{ k: Float32Array; v: Float32Array }>;
  /** 'concat': per layer, keys and values [B, KV, length, headDim]. */
  layers: Array<{ k: tf.Tensor4D; v: tf.Tensor4D }>;
}

/**
 * A decoding call split at its readback (model/readback.ts Staged). No tensor work is left for
 * `finish`, so a LoRA hook set while the staged call is made covers the whole call.
 */
export type HfStaged<R> = Staged<R>;

let modelCounter = 0;
/** Weights versions, shared with no other family: offset so they never collide with the GPT's. */
const HF_VERSIONS = new VersionSequence(1 << 30);

// ---------------------------------------------------------------------------------------------
// Rotary position embedding (Su et al. 2021, RoFormer), Hugging Face rotate-half convention:
// rot(x) = x·cos(pθ) + rotate_half(x)·sin(pθ), rotate_half(x) = [−x₂, x₁] over the two halves.

/**
 * Inverse frequencies θ_i = rope_theta^(−2i/d), i < d/2, with rope scaling applied:
 * linear divides them by the factor (positions / factor); llama3 (transformers'
 * `_compute_llama3_parameters`) divides the low frequencies (wavelength above
 * original_max / low_freq_factor) by the factor, keeps the high ones (wavelength below
 * original_max / high_freq_factor) and interpolates smoothly between.
 */
export function ropeInverseFrequencies(c: HfArchConfig): Float64Array {
  const half = c.headDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / Math.pow(c.ropeTheta, (2 * i) / c.headDim);
  const s = c.ropeScaling;
  if (s?.type === 'linear') for (let i = 0; i < half; i++) inv[i] /= s.factor;
  if (s?.type === 'llama3') {
    const lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositions / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i];
      if (wavelen > lowWavelen) inv[i] /= s.factor;
      else if (wavelen >= highWavelen) {
        const smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = (1 - smooth) * (inv[i] / s.factor) + smooth * inv[i];
      }
    }
  }
  return inv;
}

/** cos and sin of p·θ_i for each row's position: two [N, d/2] tables. */
function ropeTables(inv: Float64Array, positions: Int32Array): { cos: Float32Array; sin: Float32Array } {
  const half = inv.length;
  const cos = new Float32Array(positions.length * half);
  const sin = new Float32Array(positions.length * half);
  for (let n = 0; n < positions.length; n++) {
    for (let i = 0; i < half; i++) {
      const a = positions[n] * inv[i];
      cos[n * half + i] = Math.cos(a);
      sin[n * half + i] = Math.sin(a);
    }
  }
  return { cos, sin };
}

// ---------------------------------------------------------------------------------------------
// Differentiable building blocks

/** tf.customGrad with the inputs passed as an array (as ops.ts's helper). */
function customOp<T extends tf.Tensor>(
  f: (inputs: tf.Tensor[], save: tf.GradSaveFunc) => { value: T; gradFunc: (dy: T, saved: tf.Tensor[]) => tf.Tensor | tf.Tensor[] },
): (...inputs: tf.Tensor[]) => T {
  return tf.customGrad<T>((...args: Array<tf.Tensor | tf.GradSaveFunc>) => f(args.slice(0, -1) as tf.Tensor[], args[args.length - 1] as tf.GradSaveFunc));
}

/** x / sqrt(mean(x²) + ε) · g over the last axis. */
function rmsNorm(x: tf.Tensor, g: tf.Tensor, eps: number): tf.Tensor {
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), g);
}

/** RoPE on x [N, heads, d] with cos/sin [N, 1, d/2] (rotate-half halves). */
function applyRope(x: tf.Tensor3D, cos: tf.Tensor3D, sin: tf.Tensor3D): tf.Tensor3D {
  const [N, Hh, d] = x.shape;
  const x1 = tf.slice(x, [0, 0, 0], [N, Hh, d / 2]);
  const x2 = tf.slice(x, [0, 0, d / 2], [N, Hh, d / 2]);
  return tf.concat([tf.sub(tf.mul(x1, cos), tf.mul(x2, sin)), tf.add(tf.mul(x2, cos), tf.mul(x1, sin))], 2);
}

/**
 * Token embedding: columns of embT [D, V] for time-major ids [N] → [N, D]. The gradient is
 * scattered in JavaScript (tfjs-backend-wasm has no UnsortedSegmentSum, the gather gradient),
 * except where tensors cannot be read synchronously (WebGPU in Node, issue #15; readback.ts):
 * there tfjs's own gather gradient (UnsortedSegmentSum, which tfjs-backend-webgpu has) keeps the
 * scatter on the device.
 */
function embedColumns(embT: tf.Tensor2D, ids: Int32Array): tf.Tensor2D {
  if (!canReadSync()) return tf.tidy(() => tf.transpose(tf.gather(embT, tf.tensor1d(ids, 'int32'), 1)) as tf.Tensor2D);
  const [D, V] = embT.shape;
  const N = ids.length;
  const f = customOp<tf.Tensor2D>(([w]) => {
    const value = tf.tidy(() => tf.transpose(tf.gather(w as tf.Tensor2D, tf.tensor1d(ids, 'int32'), 1)) as tf.Tensor2D);
    return {
      value,
      gradFunc: (dy) => {
        const g = dy.dataSync() as Float32Array;
        const out = new Float32Array(D * V);
        for (let n = 0; n < N; n++) {
          const id = ids[n];
          for (let d = 0; d < D; d++) out[d * V + id] += g[n * D + d];
        }
        return tf.tensor2d(out, [D, V]);
      },
    };
  });
  return f(embT);
}

/**
 * log softmax(h W / τ)[target] and the entropy of softmax(h W / τ) for rows h [M, D] and the LM
 * head W [D, V], computed `rows` rows at a time so that only [rows × V] logits exist at once. The
 * backward pass recomputes each chunk's logits (no [M × V] activation is saved). Returns [2, M]
 * (row 0 log-probs, row 1 entropies; zeros without `withEntropy`). Formulas as in ops.ts's
 * tokenLogProbsAndEntropy: log p_y = z_y − lse, H = lse − Σ p z, ∂log p_y/∂z = onehot − p,
 * ∂H/∂z = −p ⊙ (z − lse + H).
 * `headGrad` false (a frozen head, as under LoRA, issue #14): the head's gradient is returned as
 * zeros without being formed (no [D, V] product and sum per chunk).
 */
export function chunkedHeadStats(h: tf.Tensor2D, w: tf.Tensor2D, targets: Int32Array, temperature: number, withEntropy: boolean, rows: number, headGrad = true): tf.Tensor2D {
  const [M, D] = h.shape;
  const V = w.shape[1];
  const invT = 1 / temperature;
  const chunks: Array<[number, number]> = [];
  for (let s = 0; s < M; s += rows) chunks.push([s, Math.min(rows, M - s)]);
  const oneHot = (s: number, n: number) => {
    const oh = new Float32Array(n * V); // built in JS: wasm's OneHot writes integer bits into floats (ops.ts)
    for (let r = 0; r < n; r++) oh[r * V + targets[s + r]] = 1;
    return tf.tensor2d(oh, [n, V]);
  };
  /** z, p, lse, logp, ent of one chunk. */
  const chunkStats = (hIn: tf.Tensor2D, wIn: tf.Tensor2D, s: number, n: number) => {
    const hc = n === M ? hIn : tf.slice(hIn, [s, 0], [n, D]);
    const lg = tf.matMul(hc, wIn);
    const z = temperature === 1 ? lg : tf.mul(lg, invT);
    const p = tf.softmax(z);
    const lse = tf.sub(tf.max(z, -1), tf.log(tf.max(p, -1))); // max p ≥ 1/V: never underflows
    const oh = oneHot(s, n);
    const logp = tf.sub(tf.sum(tf.mul(z, oh), -1), lse);
    const ent = withEntropy ? tf.sub(lse, tf.sum(tf.mul(p, z), -1)) : tf.zeros([n]);
    return { hc, z, p, lse, oh, logp, ent };
  };
  const f = customOp<tf.Tensor2D>(([hIn, wIn], save) => {
    save([hIn, wIn]);
    const parts = chunks.map(([s, n]) => tf.tidy(() => {
      const c = chunkStats(hIn as tf.Tensor2D, wIn as tf.Tensor2D, s, n);
      return tf.stack([c.logp, c.ent]);
    }));
    const value = (parts.length === 1 ? parts[0] : tf.concat(parts, 1)) as tf.Tensor2D;
    if (parts.length > 1) tf.dispose(parts);
    return {
      value,
      gradFunc: (dy, saved) => {
        const [hs, ws] = saved as tf.Tensor2D[];
        /** ∂L/∂z of one chunk (its logits recomputed). */
        const chunkDz = (hIn: tf.Tensor2D, wIn: tf.Tensor2D, s: number, n: number): tf.Tensor2D => {
          const c = chunkStats(hIn, wIn, s, n);
          const gLogp = tf.reshape(tf.slice(dy, [0, s], [1, n]), [n, 1]);
          let dz = tf.mul(gLogp, tf.sub(c.oh, c.p));
          if (withEntropy) {
            const gEnt = tf.reshape(tf.slice(dy, [1, s], [1, n]), [n, 1]);
            const shift = tf.reshape(tf.sub(c.ent, c.lse), [n, 1]); // H − lse
            dz = tf.sub(dz, tf.mul(gEnt, tf.mul(c.p, tf.add(c.z, shift))));
          }
          return (temperature !== 1 ? tf.mul(dz, invT) : dz) as tf.Tensor2D;
        };
        const wT = tf.transpose(ws); // once per backward: wasm's transposed matMul is ~10x slower
        let dW: tf.Tensor2D = tf.zeros([D, V]);
        const dh: tf.Tensor[] = [];
        if (!headGrad) {
          for (const [s, n] of chunks) dh.push(tf.tidy(() => tf.matMul(chunkDz(hs, ws, s, n), wT)));
          wT.dispose();
          const dhOnly = dh.length === 1 ? dh[0] : tf.concat(dh, 0);
          if (dh.length > 1) tf.dispose(dh);
          return [dhOnly, dW];
        }
        for (const [s, n] of chunks) {
          const [dhc, dWc] = tf.tidy(() => {
            const hc = n === M ? hs : tf.slice(hs, [s, 0], [n, D]);
            const dz = chunkDz(hs, ws, s, n);
            return [tf.matMul(dz, wT), tf.matMul(tf.transpose(hc), dz)];
          });
          dh.push(dhc);
          const next = tf.add(dW, dWc) as tf.Tensor2D;
          tf.dispose([dW, dWc]);
          dW = next;
        }
        wT.dispose();
        const dhAll = dh.length === 1 ? dh[0] : tf.concat(dh, 0);
        if (dh.length > 1) tf.dispose(dh);
        return [dhAll, dW];
      },
    };
  });
  return f(h, w);
}

// ---------------------------------------------------------------------------------------------
// The model

export class HfModel extends FlatWeightsModel implements PolicyModel<HfCache> {
  readonly family = 'hf' as const;
  readonly config: HfArchConfig;
  override readonly specs: ParamSpec[];
  override readonly variables: tf.Variable[];
  /** Unique prefix of this model's variable names (TensorFlow.js names are process-global). */
  readonly id: string;
  /** Token embedding, [D, V]. */
  readonly embed: tf.Variable;
  readonly layers: LayerVars[];
  readonly finalNorm: tf.Variable;
  /** LM head [D, V]: the embedding itself when tied. */
  readonly head: tf.Variable;
  private readonly invFreq: Float64Array;
  private readonly opts: HfModelOptions;
  protected override readonly weightsVersion = new WeightsVersion(HF_VERSIONS, () => this.variables.map((v) => v.dataId));
  private disposed = false;
  /** LoRA hook (issue #14): added to every linear of the layers while set; see HfLinearAdapter. */
  adapter: HfLinearAdapter | null = null;

  /**
   * `init(spec)` returns each parameter's initial value in its storage shape (see hfParamSpecs);
   * the model takes ownership of the tensor.
   */
  constructor(config: HfArchConfig, init: (spec: ParamSpec) => tf.Tensor, opts: HfModelOptions = {}) {
    super();
    registerMissingGradients();
    this.config = { ...config };
    this.opts = opts;
    this.specs = hfParamSpecs(config);
    this.id = `hf${modelCounter++}`;
    this.variables = this.specs.map((s) => {
      const t = init(s);
      if (t.shape.length !== s.shape.length || t.shape.some((d, i) => d !== s.shape[i])) {
        t.dispose();
        throw new Error(`${s.name}: got shape [${t.shape.join(', ')}], the model needs [${s.shape.join(', ')}]`);
      }
      const v = tf.variable(t, true, `${this.id}/${s.name}`, 'float32');
      t.dispose();
      return v;
    });
    const byName = new Map(this.specs.map((s, i) => [s.name, this.variables[i]]));
    const get = (n: string) => byName.get(n)!;
    const opt = (n: string) => byName.get(n) ?? null;
    this.embed = get('model.embed_tokens.weight');
    this.layers = [];
    for (let i = 0; i < config.numLayers; i++) {
      const p = `model.layers.${i}.`;
      this.layers.push({
        ln1: get(`${p}input_layernorm.weight`),
        wq: get(`${p}self_attn.q_proj.weight`),
        wk: get(`${p}self_attn.k_proj.weight`),
        wv: get(`${p}self_attn.v_proj.weight`),
        bq: opt(`${p}self_attn.q_proj.bias`),
        bk: opt(`${p}self_attn.k_proj.bias`),
        bv: opt(`${p}self_attn.v_proj.bias`),
        wo: get(`${p}self_attn.o_proj.weight`),
        qNorm: opt(`${p}self_attn.q_norm.weight`),
        kNorm: opt(`${p}self_attn.k_norm.weight`),
        ln2: get(`${p}post_attention_layernorm.weight`),
        wGate: get(`${p}mlp.gate_proj.weight`),
        wUp: get(`${p}mlp.up_proj.weight`),
        wDown: get(`${p}mlp.down_proj.weight`),
      });
    }
    this.finalNorm = get('model.norm.weight');
    this.head = config.tieWordEmbeddings ? this.embed : get('lm_head.weight');
    this.invFreq = ropeInverseFrequencies(config);
    this.weightsVersion.watch();
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  get context(): number {
    return this.config.maxPositions;
  }

  /** The decode mode in use (from the active backend unless overridden). */
  get decodeMode(): HfDecodeMode {
    if (this.opts.decodeMode) return this.opts.decodeMode;
    const b = tf.getBackend();
    return b === 'wasm' || b === 'cpu' ? 'js' : 'concat';
  }

  // -------------------------------------------------------------------------------------------
  // Forward pass (tensors; differentiable)

  /** h W of a layer's linear, plus the LoRA hook's addition when one is set (issue #14). */
  private linear(layer: number, module: HfLinearModule, h: tf.Tensor2D, w: tf.Variable): tf.Tensor2D {
    const y = tf.matMul(h, w as tf.Tensor2D) as tf.Tensor2D;
    const extra = this.adapter ? this.adapter.delta(layer, module, h) : null;
    return extra ? (tf.add(y, extra) as tf.Tensor2D) : y;
  }

  /**
   * The residual stream after the last layer (before the final norm), [T·B, D] for time-major
   * rows. `past` holds earlier keys/values [B, KV, L, d] (decoding in 'concat' mode): the new
   * rows are positions L..L+T−1 of the cache. `capture` receives the keys/values of all L+T
   * columns per layer (kept tensors).
   */
  private hiddenTensors(
    tokens: Int32Array,
    positions: Int32Array,
    T: number,
    B: number,
    leftPad: readonly number[] | undefined,
    past?: HfCache['layers'],
    capture?: HfCache['layers'],
  ): tf.Tensor2D {
    const c = this.config;
    const { numHeads: H, numKvHeads: KV, headDim: d, rmsNormEps: eps } = c;
    const G = H / KV;
    const N = T * B;
    const L = past && past.length > 0 ? past[0].k.shape[2] : 0;
    const Tk = L + T;
    const { cos, sin } = ropeTables(this.invFreq, positions);
    const cosT = tf.tensor3d(cos, [N, 1, d / 2]);
    const sinT = tf.tensor3d(sin, [N, 1, d / 2]);
    // Additive mask [B or 1, 1, 1, T, Tk]: query t (column L + t) sees keys pad_b ≤ s ≤ L + t.
    const padded = leftPad && leftPad.some((p) => p > 0);
    const Bm = padded ? B : 1;
    const m = new Float32Array(Bm * T * Tk);
    for (let b = 0; b < Bm; b++) {
      const pad = padded ? leftPad[b] : 0;
      for (let t = 0; t < T; t++) for (let s = 0; s < Tk; s++) if (s > L + t || s < pad) m[(b * T + t) * Tk + s] = MASK_VALUE;
    }
    const mask = tf.tensor(m, [Bm, 1, 1, T, Tk]);
    const scale = 1 / Math.sqrt(d);
    // [T·B, heads·d] time-major → [B, heads, T, d]
    const toHeads = (x: tf.Tensor, heads: number) => tf.transpose(tf.reshape(x, [T, B, heads, d]), [1, 2, 0, 3]);
    let x: tf.Tensor = embedColumns(this.embed as tf.Tensor2D, tokens);
    this.layers.forEach((Lw, i) => {
      const h = rmsNorm(x, Lw.ln1, eps) as tf.Tensor2D;
      let q: tf.Tensor = this.linear(i, 'q_proj', h, Lw.wq);
      let k: tf.Tensor = this.linear(i, 'k_proj', h, Lw.wk);
      let v: tf.Tensor = this.linear(i, 'v_proj', h, Lw.wv);
      if (Lw.bq) q = tf.add(q, Lw.bq);
      if (Lw.bk) k = tf.add(k, Lw.bk);
      if (Lw.bv) v = tf.add(v, Lw.bv);
      q = tf.reshape(q, [N, H, d]);
      k = tf.reshape(k, [N, KV, d]);
      if (Lw.qNorm) q = rmsNorm(q, Lw.qNorm, eps);
      if (Lw.kNorm) k = rmsNorm(k, Lw.kNorm, eps);
      q = applyRope(q as tf.Tensor3D, cosT, sinT);
      k = applyRope(k as tf.Tensor3D, cosT, sinT);
      let kh = toHeads(k, KV) as tf.Tensor4D;
      let vh = toHeads(v, KV) as tf.Tensor4D;
      if (past && past.length > 0) {
        kh = tf.concat([past[i].k, kh], 2);
        vh = tf.concat([past[i].v, vh], 2);
      }
      if (capture) capture.push({ k: tf.keep(tf.clone(kh)), v: tf.keep(tf.clone(vh)) });
      // Query heads grouped under their key/value head: [B, KV, G·T, d] against [B, KV, Tk, d].
      const qh = tf.reshape(tf.mul(toHeads(q, H), scale), [B, KV, G * T, d]);
      const scores = tf.add(tf.reshape(tf.matMul(qh, kh, false, true), [B, KV, G, T, Tk]), mask);
      const p = tf.reshape(tf.softmax(scores), [B, KV, G * T, Tk]);
      const o = tf.reshape(tf.transpose(tf.reshape(tf.matMul(p, vh), [B, H, T, d]), [2, 0, 1, 3]), [N, H * d]);
      x = tf.add(x, this.linear(i, 'o_proj', o as tf.Tensor2D, Lw.wo));
      const h2 = rmsNorm(x, Lw.ln2, eps) as tf.Tensor2D;
      const gate = this.linear(i, 'gate_proj', h2, Lw.wGate);
      const up = this.linear(i, 'up_proj', h2, Lw.wUp);
      x = tf.add(x, this.linear(i, 'down_proj', tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D, Lw.wDown));
    });
    tf.dispose([cosT, sinT, mask]);
    return x as tf.Tensor2D;
  }

  /** Final norm and LM head of residual rows [n, D] → logits [n, V]. */
  private headLogits(x: tf.Tensor2D): tf.Tensor2D {
    return tf.matMul(rmsNorm(x, this.finalNorm, this.config.rmsNormEps) as tf.Tensor2D, this.head as tf.Tensor2D);
  }

  /**
   * Logits for every position, [B, T, V]. For tests and small vocabularies only: it holds the
   * whole [tokens × vocabulary] block that `nextTokenStatsTimeMajor` never does.
   */
  logits(tokens: number[][], opts: { leftPad?: number[] } = {}): tf.Tensor3D {
    const { tm, pos, T, B } = this.timeMajor(tokens, opts.leftPad);
    return tf.tidy(() => batchMajorLogits(this.headLogits(this.hiddenTensors(tm, pos, T, B, opts.leftPad)), T, B));
  }

  nextTokenStatsTimeMajor(tokens: number[][], opts: { temperature?: number; entropy?: boolean; leftPad?: number[] } = {}): { stats: tf.Tensor2D; T: number; B: number } {
    const { tm, pos, T, B } = this.timeMajor(tokens, opts.leftPad);
    if (T < 2) throw new Error('nextTokenStatsTimeMajor needs sequences of at least 2 tokens');
    const targets = tm.subarray(B); // the token at t + 1 for row (t, b) is row (t + 1, b)
    const V = this.config.vocabSize;
    const rows = this.opts.headChunkRows ?? Math.max(1, Math.floor((1 << 22) / V));
    const stats = tf.tidy(() => {
      const x = this.hiddenTensors(tm, pos, T, B, opts.leftPad);
      const hf = rmsNorm(tf.slice(x, [0, 0], [(T - 1) * B, this.config.hiddenSize]), this.finalNorm, this.config.rmsNormEps) as tf.Tensor2D;
      return chunkedHeadStats(hf, this.head as tf.Tensor2D, targets, opts.temperature ?? 1, opts.entropy ?? true, rows, this.head.trainable);
    });
    return { stats, T, B };
  }

  /** Per-token log-probabilities and entropies [B, T−1] (convenience over nextTokenStatsTimeMajor). */
  sequenceLogProbs(tokens: number[][], opts: { temperature?: number; entropy?: boolean; leftPad?: number[] } = {}): { logProbs: tf.Tensor2D; entropy: tf.Tensor2D } {
    return batchMajorStats(this.nextTokenStatsTimeMajor(tokens, opts));
  }

  /** Validate a batch and lay it out time-major: row t·B + b holds tokens[b][t]; positions count from each row's padding. */
  private timeMajor(tokens: number[][], leftPad?: readonly number[]): { tm: Int32Array; pos: Int32Array; T: number; B: number } {
    return timeMajorBatch(tokens, leftPad, this.config.vocabSize, this.context);
  }

  // -------------------------------------------------------------------------------------------
  // Incremental decoding

  prefill(rows: number[][], leftPad: number[], capacity: number): { cache: HfCache; logits: Float32Array } {
    if (this.decodeMode === 'concat') {
      return finishSync(this.prefillStaged(rows, leftPad), 'prefillAsync');
    }
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    const cap = Math.max(capacity, T);
    const { numKvHeads: KV, headDim: d } = this.config;
    const js = this.layers.map(() => ({ k: new Float32Array(B * KV * cap * d), v: new Float32Array(B * KV * cap * d) }));
    const cache: HfCache = { version: this.version, length: 0, leftPad: [...leftPad], mode: 'js', capacity: cap, js, layers: [] };
    const logits = this.forwardJs(tm, pos, T, B, cache);
    return { cache: { ...cache, length: T }, logits };
  }

  /**
   * `prefill` for every backend, WebGPU included (issue #15: its readback is asynchronous). The
   * 'js' cache reads projections back mid-pass, which only wasm/cpu do, synchronously.
   */
  async prefillAsync(rows: number[][], leftPad: number[], capacity: number): Promise<{ cache: HfCache; logits: Float32Array }> {
    if (this.decodeMode === 'js') return this.prefill(rows, leftPad, capacity);
    return finishAsync(this.prefillStaged(rows, leftPad));
  }

  /**
   * The 'concat'-mode prefill up to its readback: the last position's logits [B, V] (to be read and
   * disposed by the caller) and the rest of the call once they are read. All tensor work happens
   * in this call, so a LoRA hook set around it (lora.ts) applies; `finish` runs none.
   */
  prefillStaged(rows: number[][], leftPad: number[]): HfStaged<{ cache: HfCache; logits: Float32Array }> {
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    const base = { version: this.version, length: T, leftPad: [...leftPad] };
    const capture: HfCache['layers'] = [];
    const logits = tf.tidy(() => {
      const x = this.hiddenTensors(tm, pos, T, B, leftPad, undefined, capture);
      return this.headLogits(tf.slice(x, [(T - 1) * B, 0], [B, this.config.hiddenSize]));
    });
    return { logits, finish: (data) => ({ cache: { ...base, mode: 'concat', capacity: T, js: [], layers: capture }, logits: data }) };
  }

  decodeStep(tokens: Int32Array, positions: Int32Array, cache: HfCache, live?: boolean[]): { cache: HfCache; logits: Float32Array } {
    if (cache.mode === 'js') {
      this.checkDecodeTokens(tokens, cache);
      if (cache.length >= cache.capacity) throw new Error(`KV cache is full (${cache.capacity} positions)`);
      const logits = this.forwardJs(tokens, positions, 1, tokens.length, cache, live);
      return { cache: { ...cache, length: cache.length + 1 }, logits };
    }
    return finishSync(this.decodeStepStaged(tokens, positions, cache), 'decodeStepAsync');
  }

  /** `decodeStep` for every backend, WebGPU included (issue #15; see prefillAsync). */
  async decodeStepAsync(tokens: Int32Array, positions: Int32Array, cache: HfCache, live?: boolean[]): Promise<{ cache: HfCache; logits: Float32Array }> {
    if (cache.mode === 'js') return this.decodeStep(tokens, positions, cache, live);
    return finishAsync(this.decodeStepStaged(tokens, positions, cache));
  }

  /**
   * A 'concat'-mode decoding step up to its readback (see prefillStaged). Every row is computed
   * (finished rows too: one batched pass costs no more). The old cache's tensors are released in
   * `finish`, after the readback, so no queued GPU work reads a buffer already handed back.
   */
  decodeStepStaged(tokens: Int32Array, positions: Int32Array, cache: HfCache): HfStaged<{ cache: HfCache; logits: Float32Array }> {
    this.checkDecodeTokens(tokens, cache);
    const capture: HfCache['layers'] = [];
    const logits = tf.tidy(() => this.headLogits(this.hiddenTensors(tokens, positions, 1, tokens.length, cache.leftPad, cache.layers, capture)));
    return {
      logits,
      finish: (data) => {
        cache.layers.forEach((p) => tf.dispose([p.k, p.v]));
        return { cache: { ...cache, layers: capture, length: cache.length + 1 }, logits: data };
      },
    };
  }

  private checkDecodeTokens(tokens: Int32Array, cache: HfCache): void {
    const B = tokens.length;
    if (B !== cache.leftPad.length) throw new Error(`decodeStep: ${B} tokens for a cache of ${cache.leftPad.length} rows`);
    for (let b = 0; b < B; b++) {
      if (tokens[b] < 0 || tokens[b] >= this.config.vocabSize) throw new Error(`token id ${tokens[b]} of row ${b} is outside the vocabulary (size ${this.config.vocabSize})`);
    }
  }

  /**
   * The 'js'-mode forward pass of T new time-major rows (tokens/positions [T·B]) appended at
   * columns cache.length.. of the cache: matMuls and the MLP as tensors, and per layer the q/k
   * norm, RoPE, the cache write and attention in plain loops. Returns the last new position's
   * logits [B·V]. Rows false in `live` skip attention (their output is ignored).
   */
  private forwardJs(tokens: Int32Array, positions: Int32Array, T: number, B: number, cache: HfCache, live?: boolean[]): Float32Array {
    const c = this.config;
    const { numHeads: H, numKvHeads: KV, headDim: d, rmsNormEps: eps, hiddenSize: D } = c;
    const G = H / KV;
    const N = T * B;
    const L0 = cache.length;
    const cap = cache.capacity;
    const half = d / 2;
    const { cos, sin } = ropeTables(this.invFreq, positions);
    const scale = 1 / Math.sqrt(d);
    const idx = tf.tensor1d(tokens, 'int32');
    let x = tf.tidy(() => tf.transpose(tf.gather(this.embed, idx, 1)) as tf.Tensor2D);
    idx.dispose();
    const normRows = (a: Float32Array, heads: number, g: Float32Array | null) => {
      if (!g) return;
      for (let r = 0; r < N * heads; r++) {
        let ms = 0;
        for (let e = 0; e < d; e++) ms += a[r * d + e] * a[r * d + e];
        const inv = 1 / Math.sqrt(ms / d + eps);
        for (let e = 0; e < d; e++) a[r * d + e] = a[r * d + e] * inv * g[e];
      }
    };
    const rope = (a: Float32Array, heads: number) => {
      for (let n = 0; n < N; n++) {
        for (let hh = 0; hh < heads; hh++) {
          const o = (n * heads + hh) * d;
          for (let i = 0; i < half; i++) {
            const cs = cos[n * half + i];
            const sn = sin[n * half + i];
            const x1 = a[o + i];
            const x2 = a[o + half + i];
            a[o + i] = x1 * cs - x2 * sn;
            a[o + half + i] = x2 * cs + x1 * sn;
          }
        }
      }
    };
    const w = new Float64Array(L0 + T);
    const acc = new Float64Array(d);
    this.layers.forEach((Lw, li) => {
      const [qT, kT, vT] = tf.tidy(() => {
        const h = rmsNorm(x, Lw.ln1, eps) as tf.Tensor2D;
        const proj = (m: HfLinearModule, wt: tf.Variable, bias: tf.Variable | null) => (bias ? tf.add(this.linear(li, m, h, wt), bias) : this.linear(li, m, h, wt));
        return [proj('q_proj', Lw.wq, Lw.bq), proj('k_proj', Lw.wk, Lw.bk), proj('v_proj', Lw.wv, Lw.bv)];
      });
      const q = qT.dataSync() as Float32Array;
      const k = kT.dataSync() as Float32Array;
      const v = vT.dataSync() as Float32Array;
      tf.dispose([qT, kT, vT]);
      normRows(q, H, Lw.qNorm ? (Lw.qNorm.dataSync() as Float32Array) : null);
      normRows(k, KV, Lw.kNorm ? (Lw.kNorm.dataSync() as Float32Array) : null);
      rope(q, H);
      rope(k, KV);
      const { k: K, v: Vc } = cache.js[li];
      for (let n = 0; n < N; n++) {
        const t = Math.floor(n / B);
        const b = n - t * B;
        for (let g = 0; g < KV; g++) {
          const dst = ((b * KV + g) * cap + L0 + t) * d;
          const src = (n * KV + g) * d;
          for (let e = 0; e < d; e++) {
            K[dst + e] = k[src + e];
            Vc[dst + e] = v[src + e];
          }
        }
      }
      const out = new Float32Array(N * H * d);
      for (let n = 0; n < N; n++) {
        const t = Math.floor(n / B);
        const b = n - t * B;
        if (live && !live[b]) continue;
        const start = cache.leftPad[b];
        const end = L0 + t; // inclusive
        for (let hh = 0; hh < H; hh++) {
          const base = (b * KV + Math.floor(hh / G)) * cap;
          const qo = (n * H + hh) * d;
          let max = -Infinity;
          for (let s = start; s <= end; s++) {
            const ko = (base + s) * d;
            let dot = 0;
            for (let e = 0; e < d; e++) dot += q[qo + e] * K[ko + e];
            dot *= scale;
            w[s] = dot;
            if (dot > max) max = dot;
          }
          let sum = 0;
          for (let s = start; s <= end; s++) {
            w[s] = Math.exp(w[s] - max);
            sum += w[s];
          }
          acc.fill(0);
          for (let s = start; s <= end; s++) {
            const vo = (base + s) * d;
            const p = w[s] / sum;
            for (let e = 0; e < d; e++) acc[e] += p * Vc[vo + e];
          }
          for (let e = 0; e < d; e++) out[qo + e] = acc[e];
        }
      }
      const next = tf.tidy(() => {
        const x1 = tf.add(x, this.linear(li, 'o_proj', tf.tensor2d(out, [N, H * d]), Lw.wo));
        const h2 = rmsNorm(x1, Lw.ln2, eps) as tf.Tensor2D;
        const gate = this.linear(li, 'gate_proj', h2, Lw.wGate);
        const up = this.linear(li, 'up_proj', h2, Lw.wUp);
        return tf.add(x1, this.linear(li, 'down_proj', tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D, Lw.wDown)) as tf.Tensor2D;
      });
      x.dispose();
      x = next;
    });
    const lg = tf.tidy(() => this.headLogits(T === 1 ? x : tf.slice(x, [(T - 1) * B, 0], [B, D])));
    x.dispose();
    const logits = lg.dataSync() as Float32Array;
    lg.dispose();
    return logits;
  }

  selectCacheRows(cache: HfCache, rows: number[]): HfCache {
    // Keys and values are [B, KV, length or capacity, headDim] in both kinds of cache.
    return selectModelCacheRows(cache, rows, { batchAxis: 0, rowValues: this.config.numKvHeads * cache.capacity * this.config.headDim });
  }

  /** See PolicyModel.joinCaches: the running batch of a continuous batcher gains rows. */
  joinCaches(caches: HfCache[], room: number): HfCache {
    // Keys and values are [B, KV, length or capacity, headDim] in both kinds of cache.
    return joinModelCaches(caches, room, { heads: this.config.numKvHeads, width: this.config.headDim, batchAxis: 0, timeAxisK: 2, timeAxisV: 2 }, (c) => this.disposeCache(c));
  }

  disposeCache(cache: HfCache): void {
    disposeModelCache(cache);
  }

  lastLogits(rows: number[][], leftPad: number[]): Float32Array {
    if (this.decodeMode === 'js') {
      // The same loops as decoding, with a cache just large enough and dropped at once.
      const { cache, logits } = this.prefill(rows, leftPad, rows[0]?.length ?? 0);
      this.disposeCache(cache);
      return logits;
    }
    return takeSync(this.lastLogitsTensor(rows, leftPad), 'lastLogitsAsync');
  }

  /** `lastLogits` for every backend, WebGPU included (issue #15). */
  async lastLogitsAsync(rows: number[][], leftPad: number[]): Promise<Float32Array> {
    if (this.decodeMode === 'js') return this.lastLogits(rows, leftPad);
    return takeAsync(this.lastLogitsTensor(rows, leftPad));
  }

  /** Next-token logits [B, V] of each row's last position through the tensor forward pass (no cache kept). */
  lastLogitsTensor(rows: number[][], leftPad: number[]): tf.Tensor2D {
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    return tf.tidy(() => this.headLogits(tf.slice(this.hiddenTensors(tm, pos, T, B, leftPad), [(T - 1) * B, 0], [B, this.config.hiddenSize])));
  }

  // -------------------------------------------------------------------------------------------
  // Weights in and out (numParams, version, getWeights, setWeights: FlatWeightsModel); disposal

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.variables.forEach((v) => v.dispose());
  }
}

/** A model from a flat weight buffer in `hfParamSpecs` order (e.g. weights sent by another process). */
export function hfModelFromFlat(config: HfArchConfig, flat: Float32Array, opts: HfModelOptions = {}): HfModel {
  const specs = hfParamSpecs(config);
  const last = specs[specs.length - 1];
  if (flat.length !== last.offset + last.size) throw new Error(`weights have ${flat.length} values, the model needs ${last.offset + last.size}`);
  return new HfModel(config, (s) => tf.tensor(flat.subarray(s.offset, s.offset + s.size), s.shape, 'float32'), opts);
}
