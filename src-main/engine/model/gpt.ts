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
 */
import * as tf from '@tensorflow/tfjs-core';
import type { ModelConfig } from '../config/schema';
import { Rng } from '../util/rng';
import { registerMissingGradients } from './gradients';
import {
  attention,
  attentionDecodeStep,
  attentionMask,
  embed,
  foldGain,
  kvLayout,
  layerNorm,
  layerNormInference,
  linear,
  linearInference,
  strategyForBackend,
  tokenLogProbsAndEntropy,
  type KernelStrategy,
  type KVPair,
} from './ops';

// ---------------------------------------------------------------------------------------------
// Configuration

/** The run config's model block plus the vocabulary size (which comes from the tokenizer). */
export interface GPTConfig extends ModelConfig {
  vocabSize: number;
}

export interface CreateModelOptions {
  /** Override the kernel strategy chosen from the backend (tests use this to compare both). */
  kernels?: KernelStrategy;
  /** Initialisation scale of the weights (GPT-2 uses 0.02). */
  initStd?: number;
}

export function validateConfig(c: GPTConfig): void {
  const ints: Array<keyof GPTConfig> = ['vocabSize', 'd_model', 'n_layers', 'n_heads', 'context', 'mlp_ratio'];
  for (const k of ints) {
    if (!Number.isInteger(c[k]) || (c[k] as number) < 1) throw new Error(`model config: ${k} must be a positive integer, got ${c[k]}`);
  }
  if (c.d_model % c.n_heads !== 0) throw new Error(`model config: n_heads (${c.n_heads}) must divide d_model (${c.d_model})`);
}

// ---------------------------------------------------------------------------------------------
// Parameters

export interface ParamSpec {
  name: string;
  shape: number[];
  /** Offset (in float32 elements) of this parameter in the flat weight buffer. */
  offset: number;
  size: number;
  /** Whether AdamW weight decay applies (matrices and embeddings; not LayerNorm gains). */
  decay: boolean;
}

/** Parameter names and shapes in their fixed order (the order of the flat weight buffer). */
export function paramSpecs(c: GPTConfig): ParamSpec[] {
  const D = c.d_model;
  const list: Array<[string, number[]]> = [
    ['wte', [c.vocabSize, D]],
    ['wpe', [c.context, D]],
  ];
  for (let i = 0; i < c.n_layers; i++) {
    list.push(
      [`h${i}.ln1.g`, [D]],
      [`h${i}.attn.wqkv`, [D, 3 * D]],
      [`h${i}.attn.wproj`, [D, D]],
      [`h${i}.ln2.g`, [D]],
      [`h${i}.mlp.wfc`, [D, c.mlp_ratio * D]],
      [`h${i}.mlp.wproj`, [c.mlp_ratio * D, D]],
    );
  }
  list.push(['lnf.g', [D]], ['head', [D, c.vocabSize]]);
  let offset = 0;
  return list.map(([name, shape]) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const spec = { name, shape, offset, size, decay: shape.length > 1 };
    offset += size;
    return spec;
  });
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

let modelCounter = 0;

interface LayerWeights {
  ln1: tf.Variable;
  wqkv: tf.Variable;
  wproj: tf.Variable;
  ln2: tf.Variable;
  wfc: tf.Variable;
  wproj2: tf.Variable;
}

/** Folded weights for decoding, recomputed when the variables change. */
interface DecodeWeights {
  table: tf.Tensor2D | null; // [V + context, D] for one-hot embedding
  layers: Array<{ wqkv: tf.Tensor2D; wproj: tf.Tensor2D; wfc: tf.Tensor2D; wproj2: tf.Tensor2D }>;
  head: tf.Tensor2D;
}

/** Key/value cache of a batch being decoded: one pair per layer, plus its length in positions. */
export interface KVCache {
  layers: KVPair[];
  length: number;
  /** `GPT.version` of the weights the cache was computed with. */
  version: number;
  strategy: KernelStrategy;
}

export class GPT {
  readonly config: GPTConfig;
  readonly specs: ParamSpec[];
  readonly variables: tf.Variable[];
  /** Unique prefix of this model's variable names (TensorFlow.js names are process-global). */
  readonly id: string;
  private readonly wte: tf.Variable;
  private readonly wpe: tf.Variable;
  private readonly layers: LayerWeights[];
  private readonly lnf: tf.Variable;
  private readonly head: tf.Variable;
  private readonly kernelsOverride?: KernelStrategy;
  private versionCounter = 0;
  private lastDataIds: unknown[];
  private decodeCache: { version: number; weights: DecodeWeights } | null = null;
  private disposed = false;

  constructor(config: GPTConfig, weights: Float32Array, opts: CreateModelOptions = {}) {
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
    this.lastDataIds = this.variables.map((v) => v.dataId);
  }

  get numParams(): number {
    const last = this.specs[this.specs.length - 1];
    return last.offset + last.size;
  }

  /** The kernel strategy in use (from the active backend unless overridden). */
  get kernels(): KernelStrategy {
    return this.kernelsOverride ?? strategyForBackend(tf.getBackend());
  }

  /**
   * Weights version: increases whenever any variable's value has been replaced (optimizer step,
   * setWeights, or any other `assign`). Decoding state records it to know when its cache is stale.
   */
  get version(): number {
    for (let i = 0; i < this.variables.length; i++) {
      if (this.variables[i].dataId !== this.lastDataIds[i]) {
        this.lastDataIds = this.variables.map((v) => v.dataId);
        this.versionCounter++;
        break;
      }
    }
    return this.versionCounter;
  }

  // -------------------------------------------------------------------------------------------
  // Forward pass

  /**
   * Final hidden states (after the last LayerNorm, without its gain) for a batch given as
   * time-major rows: tokens/positions [T·B]. Returns [T·B, D]. `capture` receives the per-layer
   * key/value tensors (for building a decoding cache).
   */
  private hidden(tokens: Int32Array, positions: Int32Array, T: number, B: number, leftPad: readonly number[] | undefined, capture?: KVPair[]): tf.Tensor2D {
    const s = this.kernels;
    const H = this.config.n_heads;
    const E = this.config.d_model / H;
    const mask = attentionMask(T, s, leftPad);
    let x = embed(this.wte as tf.Tensor2D, this.wpe as tf.Tensor2D, tokens, positions, s);
    for (const L of this.layers) {
      const qkv = linear(layerNorm(x), foldGain(L.ln1 as tf.Tensor1D, L.wqkv as tf.Tensor2D), false, s);
      x = tf.add(x, linear(attention(qkv, { T, B, H, E }, mask, s, capture), L.wproj as tf.Tensor2D, false, s));
      const h = linear(layerNorm(x), foldGain(L.ln2 as tf.Tensor1D, L.wfc as tf.Tensor2D), true, s);
      x = tf.add(x, linear(h, L.wproj2 as tf.Tensor2D, false, s));
    }
    mask.dispose();
    return layerNorm(x);
  }

  /** LM head on hidden rows [N, D] → logits [N, V] (the final LayerNorm gain is folded in here). */
  private headLogits(xf: tf.Tensor2D): tf.Tensor2D {
    return linear(xf, foldGain(this.lnf as tf.Tensor1D, this.head as tf.Tensor2D), false, this.kernels);
  }

  /**
   * Logits for every position of a batch: tokens [B][T] → [B, T, V], where [b, t] scores the token
   * at t + 1. `leftPad[b]` leading tokens of row b are padding: they are masked out as keys and the
   * row's positions start after them.
   */
  logits(tokens: number[][], opts: { leftPad?: number[] } = {}): tf.Tensor3D {
    const { tm, pos, T, B } = this.timeMajor(tokens, opts.leftPad);
    return tf.tidy(() => {
      const lg = this.headLogits(this.hidden(tm, pos, T, B, opts.leftPad));
      return tf.transpose(tf.reshape(lg, [T, B, this.config.vocabSize]), [1, 0, 2]) as tf.Tensor3D;
    });
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
    const { stats, T, B } = this.nextTokenStatsTimeMajor(tokens, opts);
    return tf.tidy(() => {
      const [lp, ent] = tf.unstack(stats);
      stats.dispose();
      return {
        logProbs: tf.transpose(tf.reshape(lp, [T - 1, B])) as tf.Tensor2D,
        entropy: tf.transpose(tf.reshape(ent, [T - 1, B])) as tf.Tensor2D,
      };
    });
  }

  /** Validate a batch and lay it out time-major: row t·B + b holds tokens[b][t]. */
  private timeMajor(tokens: number[][], leftPad?: readonly number[]): { tm: Int32Array; pos: Int32Array; T: number; B: number } {
    const B = tokens.length;
    if (B === 0) throw new Error('empty batch');
    const T = tokens[0].length;
    const V = this.config.vocabSize;
    if (T === 0) throw new Error('empty sequences');
    if (T > this.config.context) throw new Error(`sequence length ${T} exceeds the model context ${this.config.context}`);
    if (leftPad && leftPad.length !== B) throw new Error(`leftPad has ${leftPad.length} entries for ${B} sequences`);
    const tm = new Int32Array(T * B);
    const pos = new Int32Array(T * B);
    for (let b = 0; b < B; b++) {
      const row = tokens[b];
      if (row.length !== T) throw new Error(`all sequences in a batch must have the same length (row 0 has ${T}, row ${b} has ${row.length}); pad them`);
      const pad = leftPad ? leftPad[b] : 0;
      for (let t = 0; t < T; t++) {
        const id = row[t];
        if (!Number.isInteger(id) || id < 0 || id >= V) throw new Error(`token id ${id} at [${b}][${t}] is outside the vocabulary (size ${V})`);
        tm[t * B + b] = id;
        pos[t * B + b] = Math.max(0, t - pad);
      }
    }
    return { tm, pos, T, B };
  }

  // -------------------------------------------------------------------------------------------
  // Incremental decoding with a key/value cache

  /** Weights folded for decoding: LayerNorm gains into the next matrix, 1/sqrt(E) into Wq. */
  private decodeWeights(): DecodeWeights {
    const version = this.version;
    if (this.decodeCache && this.decodeCache.version === version) return this.decodeCache.weights;
    this.disposeDecodeWeights();
    const D = this.config.d_model;
    const E = D / this.config.n_heads;
    const weights = tf.tidy((): tf.TensorContainer => {
      const qScale = tf.concat([tf.fill([1, D], 1 / Math.sqrt(E)), tf.ones([1, 2 * D])], 1);
      const w: DecodeWeights = {
        table: this.kernels.embedding === 'onehot' ? (tf.concat([this.wte, this.wpe], 0) as tf.Tensor2D) : null,
        layers: this.layers.map((L) => ({
          wqkv: tf.mul(foldGain(L.ln1 as tf.Tensor1D, L.wqkv as tf.Tensor2D), qScale) as tf.Tensor2D,
          wproj: tf.clone(L.wproj) as tf.Tensor2D,
          wfc: foldGain(L.ln2 as tf.Tensor1D, L.wfc as tf.Tensor2D),
          wproj2: tf.clone(L.wproj2) as tf.Tensor2D,
        })),
        head: foldGain(this.lnf as tf.Tensor1D, this.head as tf.Tensor2D),
      };
      return w as unknown as tf.TensorContainer;
    }) as unknown as DecodeWeights;
    const keepAll = (t: tf.Tensor | null) => t && tf.keep(t);
    keepAll(weights.table);
    weights.layers.forEach((l) => Object.values(l).forEach((t: tf.Tensor) => keepAll(t)));
    keepAll(weights.head);
    this.decodeCache = { version, weights };
    return weights;
  }

  private disposeDecodeWeights(): void {
    if (!this.decodeCache) return;
    const w = this.decodeCache.weights;
    w.table?.dispose();
    w.layers.forEach((l) => Object.values(l).forEach((t) => t.dispose()));
    w.head.dispose();
    this.decodeCache = null;
  }

  /**
   * Run the prompt rows (equal length, left-padded by `leftPad`) through the model, keeping their
   * keys and values. Returns the cache and the next-token logits of each row [B·V].
   */
  prefill(rows: number[][], leftPad: number[]): { cache: KVCache; logits: Float32Array } {
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    const capture: KVPair[] = [];
    const version = this.version;
    const strategy = this.kernels;
    const logits = tf.tidy(() => {
      const xf = this.hidden(tm, pos, T, B, leftPad, capture);
      const last = tf.slice(xf, [(T - 1) * B, 0], [B, this.config.d_model]);
      return linearInference(last, this.decodeWeights().head, false);
    });
    const data = logits.dataSync() as Float32Array;
    logits.dispose();
    return { cache: { layers: capture, length: T, version, strategy }, logits: data };
  }

  /**
   * Feed one new token per row: tokens [B] at positions [B] (the row's position of that token).
   * `mask` is an additive [B, 1, cache.length + 1] mask of left padding, or null when no row is
   * padded. Returns the extended cache (the old one is disposed) and next-token logits [B·V].
   */
  decodeStep(tokens: Int32Array, positions: Int32Array, cache: KVCache, mask: tf.Tensor3D | null): { cache: KVCache; logits: Float32Array } {
    const B = tokens.length;
    const { d_model: D, n_heads: H } = this.config;
    const w = this.decodeWeights();
    const s = cache.strategy;
    const newLayers: KVPair[] = [];
    const logits = tf.tidy(() => {
      let x: tf.Tensor2D;
      if (w.table) {
        const V = this.config.vocabSize;
        const K = w.table.shape[0];
        const oh = new Float32Array(B * K);
        for (let b = 0; b < B; b++) {
          oh[b * K + tokens[b]] = 1;
          oh[b * K + V + positions[b]] = 1;
        }
        x = tf.matMul(tf.tensor2d(oh, [B, K]), w.table);
      } else {
        x = tf.add(tf.gather(this.wte, tf.tensor1d(tokens, 'int32')), tf.gather(this.wpe, tf.tensor1d(positions, 'int32'))) as tf.Tensor2D;
      }
      w.layers.forEach((L, i) => {
        const [q, k, v] = tf.split(linearInference(layerNormInference(x), L.wqkv, false), 3, 1) as tf.Tensor2D[];
        const step = attentionDecodeStep(q, k, v, cache.layers[i], H, mask, s);
        newLayers.push({ k: tf.keep(step.cache.k), v: tf.keep(step.cache.v) });
        x = tf.add(x, linearInference(step.out, L.wproj, false));
        const h = linearInference(layerNormInference(x), L.wfc, true);
        x = tf.add(x, linearInference(h, L.wproj2, false));
      });
      return linearInference(layerNormInference(x), w.head, false);
    });
    const data = logits.dataSync() as Float32Array;
    logits.dispose();
    disposeCache(cache);
    void D;
    return { cache: { layers: newLayers, length: cache.length + 1, version: cache.version, strategy: s }, logits: data };
  }

  /** Keep only the given rows (indices into the current batch) of a cache; disposes the old one. */
  selectCacheRows(cache: KVCache, rows: number[]): KVCache {
    const { batchAxis } = kvLayout(cache.strategy);
    const layers = tf.tidy(() => {
      const idx = tf.tensor1d(rows, 'int32');
      return cache.layers.map((p) => ({ k: tf.keep(tf.gather(p.k, idx, batchAxis)) as tf.Tensor4D, v: tf.keep(tf.gather(p.v, idx, batchAxis)) as tf.Tensor4D }));
    });
    disposeCache(cache);
    return { ...cache, layers };
  }

  /** Next-token logits [B·V] of the last position of each row, recomputed without a cache. */
  lastLogits(rows: number[][], leftPad: number[]): Float32Array {
    const { tm, pos, T, B } = this.timeMajor(rows, leftPad);
    const lg = tf.tidy(() => {
      const xf = this.hidden(tm, pos, T, B, leftPad);
      return this.headLogits(tf.slice(xf, [(T - 1) * B, 0], [B, this.config.d_model]));
    });
    const data = lg.dataSync() as Float32Array;
    lg.dispose();
    return data;
  }

  // -------------------------------------------------------------------------------------------
  // Weights in and out

  /**
   * All weights as one flat Float32Array in `specs` order (one transferable ArrayBuffer, for
   * sending between worker processes).
   */
  getWeights(): Float32Array {
    const flat = new Float32Array(this.numParams);
    this.variables.forEach((v, i) => flat.set(v.dataSync() as Float32Array, this.specs[i].offset));
    return flat;
  }

  /** Replace all weights from a flat buffer laid out as `getWeights` returns it. */
  setWeights(flat: Float32Array): void {
    if (flat.length !== this.numParams) throw new Error(`setWeights: got ${flat.length} values, the model has ${this.numParams}`);
    this.variables.forEach((v, i) => {
      const s = this.specs[i];
      const t = tf.tensor(flat.slice(s.offset, s.offset + s.size), s.shape, 'float32');
      v.assign(t);
      t.dispose();
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.disposeDecodeWeights();
    this.variables.forEach((v) => v.dispose());
  }
}

export function disposeCache(cache: KVCache): void {
  cache.layers.forEach((p) => {
    p.k.dispose();
    p.v.dispose();
  });
}

/** A freshly initialised model (deterministic in `seed`). */
export function createModel(config: GPTConfig, seed: number, opts: CreateModelOptions = {}): GPT {
  validateConfig(config);
  return new GPT(config, initialWeights(config, seed, opts.initStd ?? 0.02), opts);
}
