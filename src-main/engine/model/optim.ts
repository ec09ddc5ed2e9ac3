/**
 * Adam / AdamW with global-norm gradient clipping and a warm-up + cosine learning-rate schedule.
 *
 * Adam (Kingma & Ba 2015) in PyTorch's formulation:
 *   m ← β1 m + (1 − β1) g;   v ← β2 v + (1 − β2) g²
 *   p ← p − (lr / (1 − β1^t)) · m / (sqrt(v) / sqrt(1 − β2^t) + ε)
 * with decoupled weight decay (AdamW, Loshchilov & Hutter 2019) p ← p (1 − lr·wd) applied first,
 * only to matrices and embeddings (as nanoGPT; LayerNorm gains are not decayed).
 *
 * Two equivalent implementations:
 *  - 'js' (wasm and cpu backends, whose tensors live in this process's memory): the moments are
 *    JavaScript arrays and the update is one loop in float64, a ~0.5 ms pass over 100k
 *    parameters where the tensor version costs ~15 kernels plus a 20-way split (wasm's Split
 *    copies its whole input once per piece);
 *  - 'tensor' (other backends): all parameters updated as one flat vector of tensor ops. On webgpu
 *    the moments and weights stay on the GPU; only the gradient norm (one float, for clipping and
 *    the skip test) comes back, through `stepAsync` (WebGPU in Node has no synchronous readback).
 * Both are checked against a float64 loop in the tests.
 */
import * as tf from '@tensorflow/tfjs-core';
import type { OptimizerConfig } from '../config/schema';
import type { PolicyModel } from './policy-model';
import { readSync } from './readback';

export interface LrSchedule {
  /** Linear warm-up steps. */
  warmupSteps: number;
  /** Step at which the cosine decay reaches `minLrRatio · lr` (constant afterwards). 0 = no decay. */
  decaySteps: number;
  /** Floor of the decay as a fraction of the peak (nanoGPT: 0.1). */
  minLrRatio?: number;
}

/**
 * Learning rate at (0-based) step `step`: nanoGPT's schedule — lr·(step+1)/(warmup+1) during
 * warm-up, then cosine from lr down to minLrRatio·lr at decaySteps, then flat.
 */
export function scheduledLr(peak: number, step: number, s?: LrSchedule): number {
  if (!s) return peak;
  if (step < s.warmupSteps) return (peak * (step + 1)) / (s.warmupSteps + 1);
  if (s.decaySteps <= s.warmupSteps) return peak;
  const minLr = peak * (s.minLrRatio ?? 0.1);
  if (step >= s.decaySteps) return minLr;
  const ratio = (step - s.warmupSteps) / (s.decaySteps - s.warmupSteps);
  return minLr + 0.5 * (1 + Math.cos(Math.PI * ratio)) * (peak - minLr);
}

export interface AdamState {
  /** Number of updates applied so far. */
  step: number;
  config: OptimizerConfig;
  schedule?: LrSchedule;
  /** First and second moments, flat, in parameter order. */
  m: Float32Array;
  v: Float32Array;
}

export interface StepResult {
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
  /** Learning rate used for this update. */
  lr: number;
  /** Whether the gradient was scaled down by clipping. */
  clipped: boolean;
  /** True when the gradient had a NaN/Inf and the update was skipped. */
  skipped: boolean;
}

export interface AdamParam {
  variable: tf.Variable;
  /** Apply weight decay to this parameter. */
  decay: boolean;
}

export type AdamMode = 'js' | 'tensor';

/**
 * One parameter's Adam update in place (w, and the moments from offset `o`); returns the next
 * offset. A plain function over typed arrays so that V8 compiles it to a tight loop.
 * c1 = (1 − β1)·s and c2 = (1 − β2)·s² fold in the clipping scale s.
 */
function adamLoop(
  w: Float32Array,
  g: Float32Array,
  m: Float32Array,
  v: Float32Array,
  o: number,
  b1: number,
  b2: number,
  c1: number,
  c2: number,
  decay: number,
  stepSize: number,
  sqrtBc2: number,
  eps: number,
): number {
  const n = w.length;
  for (let i = 0; i < n; i++, o++) {
    const gi = g[i];
    const mi = b1 * m[o] + c1 * gi;
    const vi = b2 * v[o] + c2 * gi * gi;
    m[o] = mi;
    v[o] = vi;
    w[i] = w[i] * decay - (stepSize * mi) / (Math.sqrt(vi) / sqrtBc2 + eps);
  }
  return o;
}

/** Where Adam's update runs: in JavaScript when tensors live in this process's memory. */
export function adamModeForBackend(backendName: string): AdamMode {
  return backendName === 'wasm' || backendName === 'cpu' ? 'js' : 'tensor';
}

export class Adam {
  readonly config: OptimizerConfig;
  readonly schedule?: LrSchedule;
  readonly mode: AdamMode;
  private readonly params: AdamParam[];
  private readonly sizes: number[];
  private readonly total: number;
  // 'tensor' mode moments
  private m: tf.Tensor1D | null = null;
  private v: tf.Tensor1D | null = null;
  // 'js' mode moments
  private mJs: Float32Array | null = null;
  private vJs: Float32Array | null = null;
  private decayMask: tf.Tensor1D | null = null;
  private t = 0;
  /** ε of Adam (PyTorch's default). */
  static readonly EPS = 1e-8;

  constructor(params: AdamParam[], config: OptimizerConfig, schedule?: LrSchedule, mode: AdamMode = adamModeForBackend(tf.getBackend())) {
    if (params.length === 0) throw new Error('Adam: no parameters');
    this.params = params;
    this.config = { ...config };
    this.schedule = schedule ? { ...schedule } : undefined;
    this.mode = mode;
    this.sizes = params.map((p) => p.variable.size);
    this.total = this.sizes.reduce((a, b) => a + b, 0);
    if (mode === 'js') {
      this.mJs = new Float32Array(this.total);
      this.vJs = new Float32Array(this.total);
    } else {
      this.m = tf.keep(tf.zeros([this.total]));
      this.v = tf.keep(tf.zeros([this.total]));
    }
  }

  /** Number of updates applied so far. */
  get stepCount(): number {
    return this.t;
  }

  /** Learning rate the next update will use. */
  get currentLr(): number {
    return scheduledLr(this.config.lr, this.t, this.schedule);
  }

  /** Global L2 norm of gradients given in parameter order. */
  static globalNorm(grads: tf.Tensor[]): number {
    const sq = tf.tidy(() => tf.addN(grads.map((g) => tf.sum(tf.square(g)))));
    const n = Math.sqrt(sq.dataSync()[0]);
    sq.dispose();
    return n;
  }

  /**
   * Apply one update. `grads` are in parameter order, or a map by variable name (as
   * tf.variableGrads returns). Returns the gradient norm before clipping. A non-finite gradient
   * skips the update (moments and step count untouched) and reports `skipped`.
   */
  step(grads: tf.Tensor[] | tf.NamedTensorMap): StepResult {
    const list = this.gradientList(grads);
    if (this.mode === 'js') return this.stepJs(list);
    const { g, sq } = this.flatGradient(list);
    return this.applyTensor(g, readSync(sq, 'Adam.stepAsync')[0], sq);
  }

  /** `step` for every backend, WebGPU included (the gradient norm is read back asynchronously). */
  async stepAsync(grads: tf.Tensor[] | tf.NamedTensorMap): Promise<StepResult> {
    const list = this.gradientList(grads);
    if (this.mode === 'js') return this.stepJs(list);
    const { g, sq } = this.flatGradient(list);
    return this.applyTensor(g, ((await sq.data()) as Float32Array)[0], sq);
  }

  /** Gradients in parameter order, checked against the parameters' sizes. */
  private gradientList(grads: tf.Tensor[] | tf.NamedTensorMap): tf.Tensor[] {
    const list = Array.isArray(grads) ? grads : this.params.map((p) => {
      const g = grads[p.variable.name];
      if (!g) throw new Error(`Adam.step: no gradient for ${p.variable.name}`);
      return g;
    });
    if (list.length !== this.params.length) throw new Error(`Adam.step: ${list.length} gradients for ${this.params.length} parameters`);
    list.forEach((g, i) => {
      if (g.size !== this.sizes[i]) throw new Error(`Adam.step: gradient ${i} has ${g.size} values, parameter ${this.params[i].variable.name} has ${this.sizes[i]}`);
    });
    return list;
  }

  /** The update in JavaScript (float64 arithmetic, float32 storage). */
  private stepJs(list: tf.Tensor[]): StepResult {
    const lr = this.currentLr;
    const { beta1, beta2, weight_decay: wd, grad_clip: clip } = this.config;
    const grads = list.map((g) => g.dataSync() as Float32Array);
    let sq = 0;
    for (const g of grads) for (let i = 0; i < g.length; i++) sq += g[i] * g[i];
    const gradNorm = Math.sqrt(sq);
    if (!Number.isFinite(gradNorm)) return { gradNorm, lr, clipped: false, skipped: true };
    const clipped = clip > 0 && gradNorm > clip;
    const scale = clipped ? clip / (gradNorm + 1e-6) : 1;
    this.t += 1;
    const bc1 = 1 - Math.pow(beta1, this.t);
    const sqrtBc2 = Math.sqrt(1 - Math.pow(beta2, this.t));
    const stepSize = lr / bc1;
    const m = this.mJs!;
    const v = this.vJs!;
    const b1 = beta1;
    const b2 = beta2;
    const c1 = (1 - beta1) * scale;
    const c2 = (1 - beta2) * scale * scale;
    const eps = Adam.EPS;
    let o = 0;
    for (let k = 0; k < this.params.length; k++) {
      const p = this.params[k];
      const g = grads[k];
      const w = (p.variable.dataSync() as Float32Array).slice();
      const decay = wd > 0 && p.decay ? 1 - lr * wd : 1;
      o = adamLoop(w, g, m, v, o, b1, b2, c1, c2, decay, stepSize, sqrtBc2, eps);
      const t = tf.tensor(w, p.variable.shape, 'float32');
      p.variable.assign(t);
      t.dispose();
    }
    return { gradNorm, lr, clipped, skipped: false };
  }

  /** The gradient as one flat vector and its squared norm (still on the device). */
  private flatGradient(list: tf.Tensor[]): { g: tf.Tensor1D; sq: tf.Scalar } {
    const g = tf.tidy(() => tf.concat(list.map((x) => tf.reshape(x, [-1]))) as tf.Tensor1D);
    const sq = tf.tidy(() => tf.sum(tf.square(g)) as tf.Scalar);
    return { g, sq };
  }

  /** The update as tensor ops on one flat vector, given the squared gradient norm read back. */
  private applyTensor(g: tf.Tensor1D, squaredNorm: number, sq: tf.Scalar): StepResult {
    const lr = this.currentLr;
    const { beta1, beta2, weight_decay: wd, grad_clip: clip } = this.config;
    const gradNorm = Math.sqrt(squaredNorm);
    sq.dispose();
    if (!Number.isFinite(gradNorm)) {
      g.dispose();
      return { gradNorm, lr, clipped: false, skipped: true };
    }
    // torch.nn.utils.clip_grad_norm_: scale by clip / (norm + 1e-6) when the norm exceeds clip.
    const clipped = clip > 0 && gradNorm > clip;
    const scale = clipped ? clip / (gradNorm + 1e-6) : 1;
    this.t += 1;
    const bc1 = 1 - Math.pow(beta1, this.t);
    const bc2 = 1 - Math.pow(beta2, this.t);
    if (wd > 0 && !this.decayMask) {
      const mask = new Float32Array(this.total);
      let o = 0;
      this.params.forEach((p, i) => {
        if (p.decay) mask.fill(1, o, o + this.sizes[i]);
        o += this.sizes[i];
      });
      this.decayMask = tf.keep(tf.tensor1d(mask));
    }
    const [m, v, pieces] = tf.tidy(() => {
      const gs = scale === 1 ? g : tf.mul(g, scale);
      const m = tf.add(tf.mul(this.m!, beta1), tf.mul(gs, 1 - beta1)) as tf.Tensor1D;
      const v = tf.add(tf.mul(this.v!, beta2), tf.mul(tf.square(gs), 1 - beta2)) as tf.Tensor1D;
      let p = tf.concat(this.params.map((x) => tf.reshape(x.variable, [-1]))) as tf.Tensor1D;
      if (wd > 0) p = tf.mul(p, tf.sub(1, tf.mul(this.decayMask!, lr * wd)));
      const denom = tf.add(tf.div(tf.sqrt(v), Math.sqrt(bc2)), Adam.EPS);
      p = tf.sub(p, tf.mul(tf.div(m, denom), lr / bc1));
      const pieces = tf.split(p, this.sizes);
      return [tf.keep(m), tf.keep(v), pieces.map((x, i) => tf.reshape(x, this.params[i].variable.shape))] as const;
    });
    g.dispose();
    this.m!.dispose();
    this.v!.dispose();
    this.m = m;
    this.v = v;
    this.params.forEach((p, i) => {
      p.variable.assign(pieces[i]);
      pieces[i].dispose();
    });
    return { gradNorm, lr, clipped, skipped: false };
  }

  getState(): AdamState {
    return {
      step: this.t,
      config: { ...this.config },
      schedule: this.schedule ? { ...this.schedule } : undefined,
      m: (this.mJs ?? readSync(this.m!, 'Adam.getStateAsync')).slice(),
      v: (this.vJs ?? readSync(this.v!, 'Adam.getStateAsync')).slice(),
    };
  }

  /** `getState` for every backend, WebGPU included. */
  async getStateAsync(): Promise<AdamState> {
    return {
      step: this.t,
      config: { ...this.config },
      schedule: this.schedule ? { ...this.schedule } : undefined,
      m: (this.mJs ?? ((await this.m!.data()) as Float32Array)).slice(),
      v: (this.vJs ?? ((await this.v!.data()) as Float32Array)).slice(),
    };
  }

  /** Restore moments and step count (configuration comes from the constructor). */
  setState(state: Pick<AdamState, 'step' | 'm' | 'v'>): void {
    if (state.m.length !== this.total || state.v.length !== this.total) {
      throw new Error(`Adam.setState: moments have ${state.m.length}/${state.v.length} values, expected ${this.total}`);
    }
    if (this.mode === 'js') {
      this.mJs = state.m.slice();
      this.vJs = state.v.slice();
    } else {
      this.m!.dispose();
      this.v!.dispose();
      this.m = tf.keep(tf.tensor1d(state.m));
      this.v = tf.keep(tf.tensor1d(state.v));
    }
    this.t = state.step;
  }

  dispose(): void {
    this.m?.dispose();
    this.v?.dispose();
    this.decayMask?.dispose();
  }
}

/** An Adam optimizer over all of a model's parameters (decay on matrices and embeddings only). */
export function createOptimizer(
  model: Pick<PolicyModel, 'variables' | 'specs'>,
  config: OptimizerConfig,
  schedule?: LrSchedule,
  mode?: AdamMode,
): Adam {
  return new Adam(model.variables.map((variable, i) => ({ variable, decay: model.specs[i].decay })), config, schedule, mode);
}
