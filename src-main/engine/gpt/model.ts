/**
 * The policy model: a small decoder-only transformer (GPT; Radford et al. 2018/2019) written with
 * TensorFlow.js ops. It reads top to bottom in the order its parts compose, as nanoGPT does:
 * configuration → parameters → forward pass (embedding, blocks, head) → log-probabilities →
 * incremental decoding with a key/value cache → weights in and out.
 *
 * Architecture: learned token and position embeddings; n_layers pre-norm blocks
 *   x = x + Attn(LN(x));  x = x + W2 · ReLU(W1 · LN(x))
 * with bias-free linears and gain-only LayerNorm (nanoGPT with bias=False), a final LayerNorm and
 * an untied LM head. ReLU rather than GPT-2's GELU: the wasm backend has no vectorised tanh/erf
 * (tanh on a [1024, 256] activation costs ~7 ms there, while ReLU fuses into the matMul for free).
 *
 * Shapes: token batches are number[][] with equal-length rows, [B][T]; internally activations are
 * time-major 2-D tensors [T·B, D] (see ops.ts for why).
 *
 * Decoding (`prefill`, `decodeStep`) computes the same function with weights refolded for one
 * token per step (see DecodeWeights) and a key/value cache (see KVCache); sampling.ts drives it.
 */
import * as tf from '@tensorflow/tfjs-core';
import { batchMajorLogits, batchMajorStats, timeMajorBatch } from '../model/batch-layout';
import { FlatWeightsModel } from '../model/flat-weights';
import { VersionSequence, WeightsVersion } from '../model/weights-version';
import { Rng } from '../util/rng';
import type { ParamSpec, PolicyModel } from '../model/policy-model';
import { registerMissingGradients } from '../model/gradients';
import { disposeModelCache, joinModelCaches, selectModelCacheRows } from '../model/kv-join';
import { finishAsync, finishSync, readSync, takeAsync, takeSync, type Staged } from '../model/readback';
import { paramSpecs, validateConfig, type GPTConfig } from './config';
import {
  attentionDecodeStep,
  attentionMask,
  attentionSublayer,
  embed,
  foldGain,
  kvLayout,
  lnLinear,
  LN_EPS,
  MASK_VALUE,
  mlpSublayer,
  strategyForBackend,
  tokenLogProbsAndEntropy,
  type KernelStrategy,
  type KVPair,
} from '../model/ops';

// ---------------------------------------------------------------------------------------------
// Configuration and parameters (config.ts)

export { paramSpecs, validateConfig, type GPTConfig } from './config';
export type { ParamSpec } from '../model/policy-model';

export interface CreateModelOptions {
  /** Override the kernel strategy chosen from the backend (tests use this to compare both). */
  kernels?: KernelStrategy;
  /** Initialisation scale of the weights (GPT-2 uses 0.02). */
  initStd?: number;
}

/**
 * Initial weights (GPT-2): N(0, 0.02) for matrices and embeddings, gains 1, and the two residual
 * projections of each block scaled by 1/sqrt(2·n_layers) so the residual stream's variance does
 * not grow with depth. Each parameter draws from its own seeded stream.
 */
function initialWeights(c: GPTConfig, seed: number, std: number): Float32Array {
  const specs = paramSpecs(c);
  const last = specs[specs.length - 1];
  const flat = new Float32Array(last.offset + last.size);
  for (const s of specs) {
    const view = flat.subarray(s.offset, s.offset + s.size);
    if (!s.decay) {
      view.fill(1);
      continue;
    }
    const scale = s.name.endsWith('.wproj') ? std / Math.sqrt(2 * c.n_layers) : std;
    const rng = new Rng(seed, `init/${s.name}`);
    for (let i = 0; i < view.length; i++) view[i] = rng.normal() * scale;
  }
  return flat;
}

/** ε of the decoding LayerNorm (the same as training's). */
const LN_EPS_DECODE = LN_EPS;

let modelCounter = 0;
/** The GPT family's weights versions (weights-version.ts). */
const GPT_VERSIONS = new VersionSequence(0);

interface LayerWeights {
  ln1: tf.Variable;
  wqkv: tf.Variable;
  wproj: tf.Variable;
  ln2: tf.Variable;
  wfc: tf.Variable;
  wproj2: tf.Variable;
}

/**
 * Weights folded for decoding, recomputed when the variables change:
 *  - LayerNorm gains folded into the matrix that follows, and 1/sqrt(E) into Wq;
 *  - everything written into the residual stream (embeddings, both output projections) is
 *    centred (multiplied by C = I − 11ᵀ/D), so the stream has zero mean per row and each
 *    LayerNorm reduces to x / sqrt(mean(x²) + ε): 4 kernels instead of 7. LayerNorm subtracts
 *    the mean anyway, so the model computes the same function;
 *  - the embedding tables kept in JavaScript (a step's lookup is B rows).
 */
interface DecodeWeights {
  te: Float32Array; // [V·D], centred
  pe: Float32Array; // [P·D], centred
  layers: Array<{ wqkv: tf.Tensor2D; wproj: tf.Tensor2D; wfc: tf.Tensor2D; wproj2: tf.Tensor2D }>;
  head: tf.Tensor2D;
  meanCol: tf.Tensor2D; // [D, 1] of 1/D
  eps: tf.Tensor1D; // [1]
}

/**
 * Key/value cache of a batch being decoded.
 *
 * 'js' (wasm, cpu): keys and values live in JavaScript arrays, per layer k and v [C, capacity, E]
 * (C = rows·H channels), preallocated and filled one column per step, and attention for the new
 * position is computed in plain loops. At one query per sequence the attention is ~75k
 * multiply-adds a layer, less than the ~10 tensor kernels (~0.1 ms each at these sizes on wasm)
 * it replaces, and the cache is updated without copying.
 * 'concat' (other backends, where reading back every step would stall a GPU): tensors in the
 * layouts of `kvLayout`, grown by concatenation each step.
 */
export interface KVCache {
  mode: 'js' | 'concat';
  strategy: KernelStrategy;
  /** `GPT.version` of the weights the cache was computed with. */
  version: number;
  /** Filled positions (columns). */
  length: number;
  /** Preallocated positions ('js'). */
  capacity: number;
  /** Left padding of each row. */
  leftPad: number[];
  /** 'concat': per-layer key/value tensors. */
  layers: KVPair[];
  /** 'js': per-layer keys and values, each [C, capacity, E]. */
  js: Array<{ k: Float32Array; v: Float32Array }>;
}

export class GPT extends FlatWeightsModel implements PolicyModel<KVCache> {
  readonly family = 'gpt' as const;
  readonly config: GPTConfig;
  override readonly specs: ParamSpec[];
  override readonly variables: tf.Variable[];
  /** Unique prefix of this model's variable names (TensorFlow.js names are process-global). */
  readonly id: string;
  readonly wte: tf.Variable;
  readonly wpe: tf.Variable;
  readonly layers: LayerWeights[];
  readonly lnf: tf.Variable;
  readonly head: tf.Variable;
  private readonly kernelsOverride?: KernelStrategy;
  protected override readonly weightsVersion = new WeightsVersion(GPT_VERSIONS, () => this.variables.map((v) => v.dataId));
  private decodeCache: { version: number; weights: DecodeWeights } | null = null;
  private disposed = false;

  constructor(config: GPTConfig, weights: Float32Array, opts: CreateModelOptions = {}) {
    super();
    validateConfig(config);
    registerMissingGradients();
    this.config = { ...config };
    this.specs = paramSpecs(config);
    const total = this.specs[this.specs.length - 1].offset + this.specs[this.specs.length - 1].size;
    if (weights.length !== total) throw new Error(`weights have ${weights.length} values, the model needs ${total}`);
    this.id = `gpt${modelCounter++}`;
    this.kernelsOverride = opts.kernels;
    this.variables = this.specs.map((s) =>
      tf.tidy(() => tf.variable(tf.tensor(weights.slice(s.offset, s.offset + s.size), s.shape, 'float32'), true, `${this.id}/${s.name}`)),
    );
    const byName = new Map(this.specs.map((s, i) => [s.name, this.variables[i]]));
    const get = (n: string) => byName.get(n)!;
    this.wte = get('wte');
    this.wpe = get('wpe');
    this.layers = [];
    for (let i = 0; i < config.n_layers; i++) {
      this.layers.push({
        ln1: get(`h${i}.ln1.g`),
        wqkv: get(`h${i}.attn.wqkv`),
        wproj: get(`h${i}.attn.wproj`),
        ln2: get(`h${i}.ln2.g`),
        wfc: get(`h${i}.mlp.wfc`),
        wproj2: get(`h${i}.mlp.wproj`),
      });
    }
    this.lnf = get('lnf.g');
    this.head = get('head');
    this.weightsVersion.watch();
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  get context(): number {
    return this.config.context;
  }

  /** The kernel strategy in use (from the active backend unless overridden). */
  get kernels(): KernelStrategy {
    return this.kernelsOverride ?? strategyForBackend(tf.getBackend());
  }

  // -------------------------------------------------------------------------------------------
  // Forward pass

  /**
   * The residual stream after the last block, for a batch given as time-major rows:
   * tokens/positions [T·B]. Returns [T·B, D]. `capture` receives the per-layer key/value tensors
   * (for building a decoding cache).
   */
  private hidden(tokens: Int32Array, positions: Int32Array, T: number, B: number, leftPad: readonly number[] | undefined, capture?: KVPair[]): tf.Tensor2D {
    const s = this.kernels;
    const H = this.config.n_heads;
    const E = this.config.d_model / H;
    const mask = attentionMask(T, s, leftPad);
    let x = embed(this.wte as tf.Tensor2D, this.wpe as tf.Tensor2D, tokens, positions, s);
    for (const L of this.layers) {
      x = tf.add(x, attentionSublayer(x, foldGain(L.ln1 as tf.Tensor1D, L.wqkv as tf.Tensor2D), L.wproj as tf.Tensor2D, { T, B, H, E }, mask, s, capture));
      x = tf.add(x, mlpSublayer(x, foldGain(L.ln2 as tf.Tensor1D, L.wfc as tf.Tensor2D), L.wproj2 as tf.Tensor2D, s));
    }
    mask.dispose();
    return x;
  }

  /** Final LayerNorm and LM head on residual rows [N, D] → logits [N, V] (the gain folded into the head). */
  private headLogits(x: tf.Tensor2D): tf.Tensor2D {
    return lnLinear(x, foldGain(this.lnf as tf.Tensor1D, this.head as tf.Tensor2D), this.kernels);
  }

  /**
   * Logits for every position of a batch: tokens [B][T] → [B, T, V], where [b, t] scores the token
   * at t + 1. `leftPad[b]` leading tokens of row b are padding: they are masked out as keys and the
   * row's positions start after them.
   */
  logits(tokens: number[][], opts: { leftPad?: number[] } = {}): tf.Tensor3D {
    const { tm, pos, T, B } = this.timeMajor(tokens, opts.leftPad);
    return tf.tidy(() => batchMajorLogits(this.headLogits(this.hidden(tm, pos, T, B, opts.leftPad)), T, B));
  }

  // -------------------------------------------------------------------------------------------
  // Log-probabilities (for PPO ratios, KL and supervised losses)

  /**
   * Time-major next-token statistics: for t = 0..T−2, row (t, b) holds log π(tokens[b][t+1] | tokens[b][≤t])
   * and the entropy of that distribution. Returns [2, (T−1)·B] (row 0 log-probs, row 1 entropies);
   * differentiable with respect to the model's variables.
   */
  nextTokenStatsTimeMajor(tokens: number[][], opts: { temperature?: number; entropy?: boolean; leftPad?: number[] } = {}): { stats: tf.Tensor2D; T: number; B: number } {
    const { tm, pos, T, B } = this.timeMajor(tokens, opts.leftPad);
    if (T < 2) throw new Error('sequenceLogProbs needs sequences of at least 2 tokens');
    const targets = tm.subarray(B); // token at t + 1 for row (t, b) is row (t + 1, b)
    const stats = tf.tidy(() => {
      const xf = this.hidden(tm, pos, T, B, opts.leftPad);
      const lg = this.headLogits(tf.slice(xf, [0, 0], [(T - 1) * B, this.config.d_model]));
      return tokenLogProbsAndEntropy(lg, targets, opts.temperature ?? 1, opts.entropy ?? true);
    });
    return { stats, T, B };
  }

  /**
   * Per-token log-probabilities and entropies of given sequences, usable inside a gradient
   * computation (tf.variableGrads over `model.variables`).
   *
   * tokens [B][T] (equal lengths; pad the right end and mask it in the loss, or pass `leftPad`).
   * Returns logProbs [B, T−1] with logProbs[b][t] = log π(tokens[b][t+1] | tokens[b][0..t]) and
   * entropy [B, T−1], the entropy of π(· | tokens[b][0..t]). With `temperature` τ ≠ 1 both refer to
   * softmax(logits / τ), the distribution `sample` draws from at that temperature.
   */
  sequenceLogProbs(tokens: number[][], opts: { temperature?: number; entropy?: boolean; leftPad?: number[] } = {}): { logProbs: tf.Tensor2D; entropy: tf.Tensor2D } {
    return batchMajorStats(this.nextTokenStatsTimeMajor(tokens, opts));
  }

  /** Validate a batch and lay it out time-major: row t·B + b holds tokens[b][t]. */
  private timeMajor(tokens: number[][], leftPad?: readonly number[]): { tm: Int32Array; pos: Int32Array; T: number; B: number } {
    return timeMajorBatch(tokens, leftPad, this.config.vocabSize, this.config.context);
  }

  // -------------------------------------------------------------------------------------------
  // Incremental decoding with a key/value cache

  /**
   * The folded decoding weights for the current variables (see DecodeWeights). `tables` are the
   * embedding tables already read back (the asynchronous path, see `prepareDecodeWeights`).
   */
  private decodeWeights(tables?: { te: Float32Array; pe: Float32Array }): DecodeWeights {
    const version = this.version;
    if (this.decodeCache && this.decodeCache.version === version) return this.decodeCache.weights;
    this.disposeDecodeWeights();
    const D = this.config.d_model;
    const E = D / this.config.n_heads;
    const centre = (rows: Float32Array) => {
      for (let o = 0; o < rows.length; o += D) {
        let m = 0;
        for (let d = 0; d < D; d++) m += rows[o + d];
        m /= D;
        for (let d = 0; d < D; d++) rows[o + d] -= m;
      }
      return rows;
    };
    const tensors = tf.tidy(() => {
      const C = tf.sub(tf.eye(D), 1 / D); // centring matrix
      const qScale = tf.concat([tf.fill([1, D], 1 / Math.sqrt(E)), tf.ones([1, 2 * D])], 1);
      const layers = this.layers.map((L) => ({
        wqkv: tf.keep(tf.mul(foldGain(L.ln1 as tf.Tensor1D, L.wqkv as tf.Tensor2D), qScale) as tf.Tensor2D),
        wproj: tf.keep(tf.matMul(L.wproj as tf.Tensor2D, C as tf.Tensor2D)) as tf.Tensor2D,
        wfc: tf.keep(foldGain(L.ln2 as tf.Tensor1D, L.wfc as tf.Tensor2D)),
        wproj2: tf.keep(tf.matMul(L.wproj2 as tf.Tensor2D, C as tf.Tensor2D)) as tf.Tensor2D,
      }));
      return {
        layers,
        head: tf.keep(foldGain(this.lnf as tf.Tensor1D, this.head as tf.Tensor2D)),
        meanCol: tf.keep(tf.fill([D, 1], 1 / D) as tf.Tensor2D),
        eps: tf.keep(tf.tensor1d([LN_EPS_DECODE])),
      };
    });
    const weights: DecodeWeights = {
      te: centre(tables ? tables.te : readSync(this.wte, 'prefillAsync/decodeStepAsync').slice()),
      pe: centre(tables ? tables.pe : readSync(this.wpe, 'prefillAsync/decodeStepAsync').slice()),
      ...tensors,
    };
    this.decodeCache = { version, weights };
    return weights;
  }

  /** Build the decoding weights if stale, reading the embedding tables asynchronously. */
  private async prepareDecodeWeights(): Promise<void> {
    if (this.decodeCache && this.decodeCache.version === this.version) return;
    const te = ((await this.wte.data()) as Float32Array).slice();
    const pe = ((await this.wpe.data()) as Float32Array).slice();
    this.decodeWeights({ te, pe });
  }

  private disposeDecodeWeights(): void {
    if (!this.decodeCache) return;
    const w = this.decodeCache.weights;
    w.layers.forEach((l) => Object.values(l).forEach((t) => t.dispose()));
    tf.dispose([w.head, w.meanCol, w.eps]);
    this.decodeCache = null;
  }

  /** LayerNorm of a centred residual stream: x / sqrt(mean(x²) + ε) (gain folded elsewhere). */
  private centredNorm(x: tf.Tensor2D, w: DecodeWeights): tf.Tensor2D {
    const ms = tf.fused.matMul({ a: tf.square(x), b: w.meanCol, bias: w.eps }); // mean(x²) + ε, [B, 1]
    return tf.mul(x, tf.rsqrt(ms)) as tf.Tensor2D;
  }

  /**
   * Run the prompt rows (equal length T, left-padded by `leftPad`) through the model, keeping
   * their keys and values in a cache with room for `capacity` positions in all (≥ T). Returns the
   * cache and the next-token logits of each row [B·V].
   */
  prefill(rows: number[][], leftPad: number[], capacity: number): { cache: KVCache; logits: Float32Array } {
    return finishSync(this.prefillTensors(rows, leftPad, capacity), 'prefillAsync');
  }

  /** `prefill` for every backend, WebGPU included (its readback is asynchronous). */
  async prefillAsync(rows: number[][], leftPad: number[], capacity: number): Promise<{ cache: KVCache; logits: Float32Array }> {
    return finishAsync(this.prefillTensors(rows, leftPad, capacity));
  }

  /** The prefill's logits tensor, and the rest of the work once its values are read. */
  private prefillTensors(rows: number[][], leftPad: number[], capacity: number): Staged<{ cache: KVCache; logits: Float32Array }> {
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    const capture: KVPair[] = [];
    const version = this.version;
    const strategy = this.kernels;
    const D = this.config.d_model;
    const logits = tf.tidy(() => {
      const x = this.hidden(tm, pos, T, B, leftPad, capture);
      return this.headLogits(tf.slice(x, [(T - 1) * B, 0], [B, D]));
    });
    return { logits, finish: (data) => this.prefillCache(data, capture, { strategy, version, T, B, leftPad, capacity }) };
  }

  private prefillCache(
    data: Float32Array,
    capture: KVPair[],
    { strategy, version, T, B, leftPad, capacity }: { strategy: KernelStrategy; version: number; T: number; B: number; leftPad: number[]; capacity: number },
  ): { cache: KVCache; logits: Float32Array } {
    const D = this.config.d_model;
    const base = { strategy, version, length: T, leftPad: [...leftPad] };
    if (strategy.attention !== 'depthwise') return { cache: { ...base, mode: 'concat', capacity: T, layers: capture, js: [] }, logits: data };
    // Re-lay the captured keys (e, c, t) and values (t, c, e) as [C, capacity, E].
    const cap = Math.max(capacity, T);
    const H = this.config.n_heads;
    const E = D / H;
    const C = B * H;
    const js = capture.map(({ k, v }) => {
      const kd = k.dataSync() as Float32Array;
      const vd = v.dataSync() as Float32Array;
      tf.dispose([k, v]);
      const K = new Float32Array(C * cap * E);
      const Vv = new Float32Array(C * cap * E);
      for (let c = 0; c < C; c++) {
        for (let t = 0; t < T; t++) {
          for (let e = 0; e < E; e++) {
            K[(c * cap + t) * E + e] = kd[(e * C + c) * T + t];
            Vv[(c * cap + t) * E + e] = vd[(t * C + c) * E + e];
          }
        }
      }
      return { k: K, v: Vv };
    });
    return { cache: { ...base, mode: 'js', capacity: cap, layers: [], js }, logits: data };
  }

  /**
   * Feed one new token per row: tokens [B] at positions [B] (each row's position of that token).
   * Rows marked false in `live` are finished: give them any valid token; their output is not
   * computed. Returns the extended cache (the old one is consumed) and next-token logits [B·V].
   */
  decodeStep(tokens: Int32Array, positions: Int32Array, cache: KVCache, live?: boolean[]): { cache: KVCache; logits: Float32Array } {
    return finishSync(this.decodeStepTensors(tokens, positions, cache, live), 'decodeStepAsync');
  }

  /** `decodeStep` for every backend, WebGPU included (its readback is asynchronous). */
  async decodeStepAsync(tokens: Int32Array, positions: Int32Array, cache: KVCache, live?: boolean[]): Promise<{ cache: KVCache; logits: Float32Array }> {
    // The 'js' cache reads every layer's projections back mid-step: only where that is synchronous.
    if (cache.mode === 'js') return this.decodeStep(tokens, positions, cache, live);
    await this.prepareDecodeWeights();
    return finishAsync(this.decodeStepTensors(tokens, positions, cache, live));
  }

  /** The decoding step's logits tensor, and the cache bookkeeping once its values are read. */
  private decodeStepTensors(
    tokens: Int32Array,
    positions: Int32Array,
    cache: KVCache,
    live?: boolean[],
  ): Staged<{ cache: KVCache; logits: Float32Array }> {
    const B = tokens.length;
    const { d_model: D, n_heads: H, context } = this.config;
    const w = this.decodeWeights();
    const t = cache.length;
    if (cache.mode === 'js' && t >= cache.capacity) throw new Error(`KV cache is full (${cache.capacity} positions)`);
    const x0 = new Float32Array(B * D);
    for (let b = 0; b < B; b++) {
      const a = tokens[b] * D;
      const p = Math.min(positions[b], context - 1) * D;
      for (let d = 0; d < D; d++) x0[b * D + d] = w.te[a + d] + w.pe[p + d];
    }
    let concatMask: tf.Tensor3D | null = null;
    if (cache.mode === 'concat' && cache.leftPad.some((p) => p > 0)) {
      const m = new Float32Array(B * (t + 1));
      cache.leftPad.forEach((p, b) => m.fill(MASK_VALUE, b * (t + 1), b * (t + 1) + p));
      concatMask = tf.tensor3d(m, [B, 1, t + 1]);
    }
    const newLayers: KVPair[] = [];
    const logits = tf.tidy(() => {
      let x = tf.tensor2d(x0, [B, D]);
      w.layers.forEach((L, i) => {
        const qkv = tf.matMul(this.centredNorm(x, w), L.wqkv) as tf.Tensor2D;
        let o: tf.Tensor2D;
        if (cache.mode === 'js') {
          o = tf.tensor2d(this.jsAttention(readSync(qkv, 'decodeStepAsync'), cache, i, B, live), [B, D]);
        } else {
          const [q, k, v] = tf.split(qkv, 3, 1) as tf.Tensor2D[];
          const step = attentionDecodeStep(q, k, v, cache.layers[i], H, concatMask, cache.strategy);
          newLayers.push({ k: tf.keep(step.cache.k), v: tf.keep(step.cache.v) });
          o = step.out;
        }
        x = tf.add(x, tf.matMul(o, L.wproj));
        const h = tf.fused.matMul({ a: this.centredNorm(x, w), b: L.wfc, activation: 'relu' });
        x = tf.add(x, tf.matMul(h, L.wproj2));
      });
      return tf.matMul(this.centredNorm(x, w), w.head);
    });
    concatMask?.dispose();
    return {
      logits,
      finish: (data) => {
        if (cache.mode === 'concat') {
          cache.layers.forEach((p) => tf.dispose([p.k, p.v]));
          return { cache: { ...cache, layers: newLayers, length: t + 1 }, logits: data };
        }
        return { cache: { ...cache, length: t + 1 }, logits: data };
      },
    };
  }

  /**
   * Attention of one new position per row over the JavaScript cache of layer `layer`, after
   * writing this step's keys and values into column `cache.length`. qkv [B, 3D] (q already
   * scaled) → output [B, D]. Keys before a row's left padding are skipped (masked).
   */
  private jsAttention(qkv: Float32Array, cache: KVCache, layer: number, B: number, live?: boolean[]): Float32Array {
    const H = this.config.n_heads;
    const D = this.config.d_model;
    const E = D / H;
    const cap = cache.capacity;
    const t = cache.length;
    const { k: K, v: V } = cache.js[layer];
    const out = new Float32Array(B * D);
    const w = new Float64Array(t + 1);
    const acc = new Float64Array(E);
    for (let b = 0; b < B; b++) {
      for (let h = 0; h < H; h++) {
        const c = b * H + h;
        const row = b * 3 * D + h * E;
        const col = (c * cap + t) * E;
        for (let e = 0; e < E; e++) {
          K[col + e] = qkv[row + D + e];
          V[col + e] = qkv[row + 2 * D + e];
        }
        if (live && !live[b]) continue;
        const start = cache.leftPad[b];
        let max = -Infinity;
        for (let s = start; s <= t; s++) {
          const ko = (c * cap + s) * E;
          let dot = 0;
          for (let e = 0; e < E; e++) dot += qkv[row + e] * K[ko + e];
          w[s] = dot;
          if (dot > max) max = dot;
        }
        let sum = 0;
        for (let s = start; s <= t; s++) {
          w[s] = Math.exp(w[s] - max);
          sum += w[s];
        }
        acc.fill(0);
        for (let s = start; s <= t; s++) {
          const vo = (c * cap + s) * E;
          const p = w[s] / sum;
          for (let e = 0; e < E; e++) acc[e] += p * V[vo + e];
        }
        for (let e = 0; e < E; e++) out[b * D + h * E + e] = acc[e];
      }
    }
    return out;
  }

  /** Keep only the given rows (indices into the current batch) of a cache; the old one is consumed. */
  selectCacheRows(cache: KVCache, rows: number[]): KVCache {
    // 'js': one row's channels are its H heads × capacity × E values ([C, capacity, E], C = B·H).
    return selectModelCacheRows(cache, rows, { batchAxis: kvLayout(cache.strategy).batchAxis, rowValues: cache.capacity * this.config.d_model });
  }

  /** See PolicyModel.joinCaches: the running batch of a continuous batcher gains rows. */
  joinCaches(caches: KVCache[], room: number): KVCache {
    const H = this.config.n_heads;
    return joinModelCaches(caches, room, { heads: H, width: this.config.d_model / H, ...kvLayout(caches[0].strategy) }, disposeCache);
  }

  /** Next-token logits [B·V] of the last position of each row, recomputed without a cache. */
  lastLogits(rows: number[][], leftPad: number[]): Float32Array {
    return takeSync(this.lastLogitsTensor(rows, leftPad), 'lastLogitsAsync');
  }

  /** `lastLogits` for every backend, WebGPU included. */
  lastLogitsAsync(rows: number[][], leftPad: number[]): Promise<Float32Array> {
    return takeAsync(this.lastLogitsTensor(rows, leftPad));
  }

  private lastLogitsTensor(rows: number[][], leftPad: number[]): tf.Tensor2D {
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    return tf.tidy(() => {
      const xf = this.hidden(tm, pos, T, B, leftPad);
      return this.headLogits(tf.slice(xf, [(T - 1) * B, 0], [B, this.config.d_model]));
    });
  }

  // -------------------------------------------------------------------------------------------
  // Weights in and out (numParams, version, getWeights, setWeights: FlatWeightsModel); disposal

  disposeCache(cache: KVCache): void {
    disposeCache(cache);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.disposeDecodeWeights();
    this.variables.forEach((v) => v.dispose());
  }
}

export function disposeCache(cache: KVCache): void {
  disposeModelCache(cache);
}

/** A freshly initialised model (deterministic in `seed`). */
export function createModel(config: GPTConfig, seed: number, opts: CreateModelOptions = {}): GPT {
  validateConfig(config);
  return new GPT(config, initialWeights(config, seed, opts.initStd ?? 0.02), opts);
}
