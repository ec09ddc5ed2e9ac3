/**
 * LoRA adapters on the Hugging Face family (issue #14; Hu et al. 2021, "LoRA: Low-Rank Adaptation
 * of Large Language Models"). A target linear y = W x becomes
 *   y = W x + (alpha / r) · B A dropout(x)
 * with A [r, in] and B [out, r] trainable and W frozen. Initialisation as Hugging Face PEFT's
 * `LoraLayer.reset_lora_parameters` does it (read to learn, not copied): A by
 * `kaiming_uniform_(a=√5)`, i.e. U(−1/√in, 1/√in), and B = 0, so a fresh adapter leaves the
 * model's function unchanged. Dropout (PEFT's `lora_dropout`) acts on the adapter's input only, in
 * training passes only, with masks drawn from the seed (deterministic per seed).
 *
 * Storage: as model.ts keeps linears as [in, out], A is kept as [in, r] and B as [r, out] (Aᵀ, Bᵀ:
 * only untransposed matMuls reach XNNPACK on wasm); the PEFT files and `specs` names use PEFT's
 * names, and the files PEFT's [r, in] / [out, r] shapes.
 *
 * The base is held once per process: `acquireHfBase` keeps one frozen HfModel per weights digest
 * with a reference count, shared by every LoRA policy on it and by the KL reference, which is the
 * same base with the adapters off (`referenceModel`), not a second copy.
 *
 * Adapters out: `writePeftAdapter` (adapter_config.json + adapter_model.safetensors as PEFT's
 * `save_pretrained` names them: `base_model.model.<module>.lora_A.weight` [r, in] and `…lora_B.weight`
 * [out, r]), `readPeftAdapter`, and `mergeLoraTensors` (W + (alpha/r) B A, for exportHfFolder).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { Rng } from '../util/rng';
import { FlatWeightsModel } from '../model/flat-weights';
import { VersionSequence, WeightsVersion } from '../model/weights-version';
import { finishAsync, readSync, takeAsync } from '../model/readback';
import type { ParamSpec, PolicyModel } from '../model/policy-model';
import type { HfArchConfig } from './config';
import { OutputExistsError } from './export';
import { hfModelIdentity, loadHfWeights, readHfConfig, type HfNamedTensors } from './load';
import type { HfCache, HfLinearAdapter, HfLinearModule, HfModel, HfModelOptions, HfStaged } from './model';
import { checkLoraSettings, hfModuleName, loraModuleShapes, loraSettingsProblems, peftTensorNames, type LoraSettings } from './lora-settings';
import { HfFormatError, openSafetensors, readTensorF32, writeSafetensors } from './safetensors';
import { LIMITS, readTextFile } from '../util/bounded-read';

export * from './lora-settings';

// ---------------------------------------------------------------------------------------------
// The shared frozen base

interface BaseEntry {
  model: HfModel;
  refs: number;
}
const bases = new Map<string, BaseEntry>();

/** A counted reference to a shared frozen base; `release` once per acquire/share. */
export interface HfBaseHandle {
  readonly key: string;
  readonly model: HfModel;
  /** Another reference to the same base (for a KL reference or a second policy). */
  share(): HfBaseHandle;
  release(): void;
}

function handle(key: string, entry: BaseEntry): HfBaseHandle {
  let released = false;
  return {
    key,
    model: entry.model,
    share: () => {
      entry.refs++;
      return handle(key, entry);
    },
    release: () => {
      if (released) return;
      released = true;
      entry.refs--;
      if (entry.refs === 0) {
        bases.delete(key);
        entry.model.dispose();
      }
    },
  };
}

/**
 * The frozen base for `key` (a weights digest): loaded by `load` only when no live policy holds
 * it yet. Its variables are marked untrainable, so no optimizer or gradient ever reaches them.
 */
export function acquireHfBase(key: string, load: () => HfModel): HfBaseHandle {
  let entry = bases.get(key);
  if (entry) entry.refs++;
  else {
    const model = load();
    for (const v of model.variables) v.trainable = false;
    entry = { model, refs: 1 };
    bases.set(key, entry);
  }
  return handle(key, entry);
}

/** How many bases this process holds now (tests, diagnostics). */
export function heldHfBaseCount(): number {
  return bases.size;
}

// ---------------------------------------------------------------------------------------------
// The LoRA policy

/** Versions of LoRA models: a range of their own, so a cache never mistakes another model's. */
const LORA_VERSIONS = new VersionSequence(3 << 29);
let loraCounter = 0;

interface AdapterPair {
  a: tf.Variable; // [in, r]
  b: tf.Variable; // [r, out]
}

/** Adapter weights in PEFT's layout, by Hugging Face module name (e.g. model.layers.0.self_attn.q_proj). */
export type LoraWeights = Map<string, { a: Float32Array; b: Float32Array; inDim: number; outDim: number }>;

export interface LoraModelOptions {
  /** Seeds A's initialisation and the dropout masks. */
  seed: number;
  /** 'peft' (default): A Kaiming-uniform, B = 0. */
  init?: 'peft';
}

/**
 * A Hugging Face model with LoRA adapters behind the policy seam: `variables`, `specs`,
 * `getWeights` and `setWeights` cover the adapters only; the base is shared and frozen.
 * With `settings` null it is the base itself (no adapters: the KL reference).
 */
export class LoraHfModel extends FlatWeightsModel implements PolicyModel<HfCache> {
  readonly family = 'hf' as const;
  readonly config: HfArchConfig;
  readonly settings: LoraSettings | null;
  override readonly variables: tf.Variable[] = [];
  override readonly specs: ParamSpec[] = [];
  /** Adapters on (the default) or off (the base's function exactly). */
  adaptersEnabled = true;
  /** Training passes apply dropout to the adapters' inputs (nextTokenStatsTimeMajor only). */
  training = false;
  private readonly pairs = new Map<string, AdapterPair>();
  private readonly scaling: number;
  private readonly hook: HfLinearAdapter;
  private readonly dropoutRng: Rng;
  /** Changes whenever an adapter's value changed or the adapters were switched on or off. */
  protected override readonly weightsVersion = new WeightsVersion(LORA_VERSIONS, () => [this.adaptersEnabled, ...this.variables.map((v) => v.dataId)]);
  protected override readonly weightsOwner = 'the adapters have';
  private disposed = false;
  /** Set by withAdapters for the passes that may drop adapter inputs. */
  private dropoutActive = false;

  constructor(
    readonly base: HfBaseHandle,
    settings: LoraSettings | null,
    opts: LoraModelOptions,
  ) {
    super();
    this.config = base.model.config;
    this.settings = settings ? checkLoraSettings(this.config, settings) : null;
    this.scaling = settings ? settings.alpha / settings.rank : 0;
    this.dropoutRng = new Rng(opts.seed, 'lora/dropout');
    const id = `lora${loraCounter++}`;
    if (this.settings) {
      const { rank: r } = this.settings;
      const shapes = loraModuleShapes(this.config);
      let offset = 0;
      const add = (name: string, shape: number[], t: tf.Tensor) => {
        const size = shape[0] * shape[1];
        this.specs.push({ name, shape, offset, size, decay: true });
        offset += size;
        const v = tf.variable(t, true, `${id}/${name}`, 'float32');
        t.dispose();
        this.variables.push(v);
        return v;
      };
      for (let layer = 0; layer < this.config.numLayers; layer++) {
        for (const m of this.settings.targets) {
          const { inDim, outDim } = shapes[m];
          const names = peftTensorNames(this.config, layer, m);
          // kaiming_uniform_(a=√5) on A [r, in]: gain √(2/(1+5)), bound gain·√(3/fan_in) = 1/√in.
          const rng = new Rng(opts.seed, `lora/init/${names.a}`);
          const bound = 1 / Math.sqrt(inDim);
          const aT = new Float32Array(inDim * r);
          for (let i = 0; i < aT.length; i++) aT[i] = (2 * rng.next() - 1) * bound;
          const a = add(names.a, [inDim, r], tf.tensor2d(aT, [inDim, r]));
          const b = add(names.b, [r, outDim], tf.zeros([r, outDim]));
          this.pairs.set(`${layer}/${m}`, { a, b });
        }
      }
    }
    this.weightsVersion.watch();
    this.hook = {
      delta: (layer, module, h) => {
        const pair = this.pairs.get(`${layer}/${module}`);
        if (!pair) return null;
        return tf.mul(tf.matMul(tf.matMul(this.dropped(h), pair.a as tf.Tensor2D), pair.b as tf.Tensor2D), this.scaling) as tf.Tensor2D;
      },
    };
  }

  /** The base's: adapters change neither the vocabulary nor the context. */
  get vocabSize(): number {
    return this.base.model.vocabSize;
  }

  get context(): number {
    return this.base.model.context;
  }

  /** The KL reference: the same base with no adapters (a counted reference, no second copy). */
  referenceModel(): LoraHfModel {
    return new LoraHfModel(this.base.share(), null, { seed: 0 });
  }

  /** Inverted dropout on the adapter input (PEFT's lora_dropout), in training passes only. */
  private dropped(h: tf.Tensor2D): tf.Tensor2D {
    const p = this.settings?.dropout ?? 0;
    if (!this.dropoutActive || p === 0) return h;
    const u = tf.randomUniform(h.shape, 0, 1, 'float32', this.dropoutRng.nextUint32());
    return tf.mul(h, tf.mul(tf.cast(tf.greaterEqual(u, p), 'float32'), 1 / (1 - p))) as tf.Tensor2D;
  }

  /** Run `f` on the base with this model's adapters in the hook (restored afterwards). */
  private withAdapters<T>(f: (m: HfModel) => T, dropout = false): T {
    const m = this.base.model;
    const before = m.adapter;
    m.adapter = this.settings && this.adaptersEnabled ? this.hook : null;
    this.dropoutActive = dropout && this.training;
    try {
      return f(m);
    } finally {
      m.adapter = before;
      this.dropoutActive = false;
    }
  }

  nextTokenStatsTimeMajor(tokens: number[][], opts?: { temperature?: number; entropy?: boolean; leftPad?: number[] }): { stats: tf.Tensor2D; T: number; B: number } {
    return this.withAdapters((m) => m.nextTokenStatsTimeMajor(tokens, opts), true);
  }

  /** Logits for every position [B, T, V] (tests, small vocabularies; see HfModel.logits). */
  logits(tokens: number[][], opts: { leftPad?: number[] } = {}): tf.Tensor3D {
    return this.withAdapters((m) => m.logits(tokens, opts));
  }

  prefill(rows: number[][], leftPad: number[], capacity: number): { cache: HfCache; logits: Float32Array } {
    const version = this.version;
    const out = this.withAdapters((m) => m.prefill(rows, leftPad, capacity));
    return { cache: { ...out.cache, version }, logits: out.logits };
  }

  decodeStep(tokens: Int32Array, positions: Int32Array, cache: HfCache, live?: boolean[]): { cache: HfCache; logits: Float32Array } {
    return this.withAdapters((m) => m.decodeStep(tokens, positions, cache, live));
  }

  selectCacheRows(cache: HfCache, rows: number[]): HfCache {
    return this.base.model.selectCacheRows(cache, rows);
  }

  joinCaches(caches: HfCache[], room: number): HfCache {
    return this.base.model.joinCaches(caches, room);
  }

  disposeCache(cache: HfCache): void {
    this.base.model.disposeCache(cache);
  }

  lastLogits(rows: number[][], leftPad: number[]): Float32Array {
    return this.withAdapters((m) => m.lastLogits(rows, leftPad));
  }

  // --- asynchronous twins (issue #15: WebGPU in Node reads back only asynchronously) ----------
  // The hook is set only while the staged call builds its tensors (withAdapters is synchronous):
  // an await inside it would leave the adapters on the shared base for whatever else runs then.

  /** Build a staged call with the adapters in the hook, then read its logits outside it. */
  private async staged<R>(build: (m: HfModel) => HfStaged<R>): Promise<R> {
    return finishAsync(this.withAdapters(build));
  }

  async prefillAsync(rows: number[][], leftPad: number[], capacity: number): Promise<{ cache: HfCache; logits: Float32Array }> {
    if (this.base.model.decodeMode === 'js') return this.prefill(rows, leftPad, capacity);
    const version = this.version;
    const out = await this.staged((m) => m.prefillStaged(rows, leftPad));
    return { cache: { ...out.cache, version }, logits: out.logits };
  }

  async decodeStepAsync(tokens: Int32Array, positions: Int32Array, cache: HfCache, live?: boolean[]): Promise<{ cache: HfCache; logits: Float32Array }> {
    if (cache.mode === 'js') return this.decodeStep(tokens, positions, cache, live);
    return this.staged((m) => m.decodeStepStaged(tokens, positions, cache));
  }

  async lastLogitsAsync(rows: number[][], leftPad: number[]): Promise<Float32Array> {
    if (this.base.model.decodeMode === 'js') return this.lastLogits(rows, leftPad);
    return takeAsync(this.withAdapters((m) => m.lastLogitsTensor(rows, leftPad)));
  }

  /** `loraWeights` for every backend, WebGPU included (for writing a PEFT adapter from a webgpu run). */
  async loraWeightsAsync(): Promise<LoraWeights> {
    const values = new Map<tf.Variable, Float32Array>();
    for (const v of this.variables) values.set(v, (await v.data()) as Float32Array);
    return this.loraWeights((v) => values.get(v)!);
  }
  // --- end of the asynchronous twins ----------------------------------------------------------

  /**
   * The adapters in PEFT's layout (A [r, in], B [out, r]) by module name. `read` gives a
   * variable's values (synchronously by default; loraWeightsAsync passes values read before).
   */
  loraWeights(read: (v: tf.Variable) => Float32Array = (v) => readSync(v, 'loraWeightsAsync')): LoraWeights {
    const out: LoraWeights = new Map();
    if (!this.settings) return out;
    const r = this.settings.rank;
    const shapes = loraModuleShapes(this.config);
    for (const [key, pair] of this.pairs) {
      const [layer, m] = key.split('/') as [string, HfLinearModule];
      const { inDim, outDim } = shapes[m];
      out.set(hfModuleName(this.config, Number(layer), m), {
        a: transpose(read(pair.a), inDim, r),
        b: transpose(read(pair.b), r, outDim),
        inDim,
        outDim,
      });
    }
    return out;
  }

  /** Take adapters in PEFT's layout (e.g. from readPeftAdapter); every target must be given. */
  setLoraWeights(weights: LoraWeights): void {
    if (!this.settings) throw new Error('this model has no adapters');
    const r = this.settings.rank;
    const shapes = loraModuleShapes(this.config);
    for (const [key, pair] of this.pairs) {
      const [layer, m] = key.split('/') as [string, HfLinearModule];
      const name = hfModuleName(this.config, Number(layer), m);
      const w = weights.get(name);
      if (!w) throw new Error(`adapter weights for ${name} are missing`);
      const { inDim, outDim } = shapes[m];
      if (w.a.length !== r * inDim || w.b.length !== outDim * r) throw new Error(`${name}: adapter sizes disagree with rank ${r} and the layer (${outDim}×${inDim})`);
      const a = tf.tensor2d(transpose(w.a, r, inDim), [inDim, r]);
      const b = tf.tensor2d(transpose(w.b, outDim, r), [r, outDim]);
      pair.a.assign(a);
      pair.b.assign(b);
      tf.dispose([a, b]);
    }
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.variables.forEach((v) => v.dispose());
    this.base.release();
  }
}

/** rows×cols row-major → cols×rows. */
function transpose(src: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(src.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = src[i * cols + j];
  return out;
}

/**
 * A LoRA policy on a Hugging Face folder: the base from the process's shared cache (keyed by
 * config and weights digests, loaded only if no live policy holds it) and fresh adapters.
 * Settings are checked before anything is loaded.
 */
export function loadLoraHfModel(dir: string, settings: LoraSettings, opts: LoraModelOptions & HfModelOptions & { where?: string }): { model: LoraHfModel; identity: ReturnType<typeof hfModelIdentity> } {
  const { config } = readHfConfig(dir);
  const checked = checkLoraSettings(config, settings, opts.where);
  const identity = hfModelIdentity(dir);
  const base = acquireHfBase(`${identity.configDigest}:${identity.weightsDigest}`, () => loadHfWeights(dir, config, { decodeMode: opts.decodeMode, headChunkRows: opts.headChunkRows }));
  return { model: new LoraHfModel(base, checked, opts), identity };
}

// ---------------------------------------------------------------------------------------------
// Adapters out (PEFT) and merged weights

export const PEFT_CONFIG = 'adapter_config.json';
export const PEFT_WEIGHTS = 'adapter_model.safetensors';

/** adapter_config.json as PEFT's LoraConfig serialises it (the fields a LoRA on linears uses). */
export function peftAdapterConfig(settings: LoraSettings, baseModelNameOrPath: string): Record<string, unknown> {
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModelNameOrPath,
    r: settings.rank,
    lora_alpha: settings.alpha,
    lora_dropout: settings.dropout,
    target_modules: [...settings.targets],
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    use_rslora: false,
    use_dora: false,
    modules_to_save: null,
    layers_to_transform: null,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
    revision: null,
  };
}

/**
 * Write a PEFT adapter folder (adapter_config.json, adapter_model.safetensors in F32) that
 * `PeftModel.from_pretrained(base, out)` and vLLM's LoRA loader read. An existing `out` is
 * refused without `force`; the folder appears only when complete.
 */
export function writePeftAdapter(out: string, args: { config: HfArchConfig; settings: LoraSettings; weights: LoraWeights; baseModelNameOrPath: string; force?: boolean }): void {
  if (fs.existsSync(out) && !args.force) throw new OutputExistsError(out);
  const tmp = `${out}.partial-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  try {
    writePeftAdapterFiles(tmp, args);
    if (fs.existsSync(out)) fs.rmSync(out, { recursive: true, force: true });
    fs.renameSync(tmp, out);
  } catch (error) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Write adapter_config.json and adapter_model.safetensors into the existing folder `dir` (a run's
 * LoRA checkpoint holds them beside its manifest, so the checkpoint itself is a PEFT folder).
 */
export function writePeftAdapterFiles(dir: string, args: { config: HfArchConfig; settings: LoraSettings; weights: LoraWeights; baseModelNameOrPath: string }): void {
  const tensors = [];
  for (let layer = 0; layer < args.config.numLayers; layer++) {
    for (const m of args.settings.targets) {
      const w = args.weights.get(hfModuleName(args.config, layer, m));
      if (!w) throw new Error(`adapter weights for ${hfModuleName(args.config, layer, m)} are missing`);
      const names = peftTensorNames(args.config, layer, m);
      tensors.push({ name: names.a, shape: [args.settings.rank, w.inDim], dtype: 'F32' as const, data: () => w.a });
      tensors.push({ name: names.b, shape: [w.outDim, args.settings.rank], dtype: 'F32' as const, data: () => w.b });
    }
  }
  writeSafetensors(path.join(dir, PEFT_WEIGHTS), tensors, { format: 'pt' });
  fs.writeFileSync(path.join(dir, PEFT_CONFIG), `${JSON.stringify(peftAdapterConfig(args.settings, args.baseModelNameOrPath), null, 2)}\n`);
}

/** Whether a folder is a PEFT adapter (has adapter_config.json). */
export function isPeftAdapterFolder(dir: string): boolean {
  return fs.existsSync(path.join(dir, PEFT_CONFIG));
}

/**
 * Read a PEFT LoRA adapter for a model of `config`: adapter_config.json (LORA, no bias, no
 * fan_in_fan_out, linear targets) and every adapter tensor with the shape the rank and the
 * layer imply. Each refusal names the file and the key.
 */
export function readPeftAdapter(dir: string, config: HfArchConfig): { settings: LoraSettings; weights: LoraWeights; baseModelNameOrPath: string | null } {
  const file = path.join(dir, PEFT_CONFIG);
  if (!fs.existsSync(file)) throw new HfFormatError(file, null, 'not found: a PEFT adapter folder has adapter_config.json beside adapter_model.safetensors');
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(readTextFile(file, { maxBytes: LIMITS.settings, what: 'adapter_config.json' })) as Record<string, unknown>;
  } catch (e) {
    throw new HfFormatError(file, null, e instanceof SyntaxError ? `does not parse as JSON (${e.message})` : (e as Error).message.replace(`${file}: `, ''));
  }
  if (json.peft_type !== 'LORA') throw new HfFormatError(file, 'peft_type', `${JSON.stringify(json.peft_type)}: only LORA adapters are supported`);
  if (json.bias !== undefined && json.bias !== 'none') throw new HfFormatError(file, 'bias', `${JSON.stringify(json.bias)}: only bias "none" is supported`);
  if (json.fan_in_fan_out === true) throw new HfFormatError(file, 'fan_in_fan_out', 'true is for Conv1D (GPT-2) layers; Llama/Qwen linears use false');
  if (json.use_dora === true) throw new HfFormatError(file, 'use_dora', 'DoRA adapters are not supported');
  const targets = Array.isArray(json.target_modules) ? (json.target_modules as unknown[]).map(String) : [];
  const raw = { rank: Number(json.r), alpha: Number(json.lora_alpha), dropout: Number(json.lora_dropout ?? 0), targets };
  const problems = loraSettingsProblems(config, raw);
  if (problems.length > 0) throw new HfFormatError(file, { rank: 'r', alpha: 'lora_alpha', dropout: 'lora_dropout', targets: 'target_modules' }[problems[0].field], problems[0].message);
  const settings = checkLoraSettings(config, raw);
  const st = openSafetensors(path.join(dir, PEFT_WEIGHTS));
  const weights: LoraWeights = new Map();
  const shapes = loraModuleShapes(config);
  const expected = new Set<string>();
  for (let layer = 0; layer < config.numLayers; layer++) {
    for (const m of settings.targets) {
      const names = peftTensorNames(config, layer, m);
      const { inDim, outDim } = shapes[m];
      const get = (name: string, shape: number[]) => {
        expected.add(name);
        const t = st.tensors.get(name);
        if (!t) throw new HfFormatError(path.join(dir, PEFT_WEIGHTS), name, `missing: adapter_config.json targets ${m} with r ${settings.rank}, which implies this tensor [${shape.join(', ')}]`);
        if (t.shape.length !== 2 || t.shape[0] !== shape[0] || t.shape[1] !== shape[1]) throw new HfFormatError(t.file, name, `shape [${t.shape.join(', ')}] disagrees with r ${settings.rank} and the layer, which imply [${shape.join(', ')}]`);
        return readTensorF32(t);
      };
      weights.set(hfModuleName(config, layer, m), { a: get(names.a, [settings.rank, inDim]), b: get(names.b, [outDim, settings.rank]), inDim, outDim });
    }
  }
  for (const [name, t] of st.tensors) if (!expected.has(name)) throw new HfFormatError(t.file, name, 'not an adapter tensor of the targets adapter_config.json names for this model');
  return { settings, weights, baseModelNameOrPath: typeof json.base_model_name_or_path === 'string' ? json.base_model_name_or_path : null };
}

/**
 * Base tensors (Hugging Face names and shapes) with the adapters merged in:
 * W' = W + (alpha / r) · B A per target (PEFT's merge_and_unload), summed in float64.
 */
export function mergeLoraTensors(tensors: HfNamedTensors, settings: LoraSettings, weights: LoraWeights): HfNamedTensors {
  const scaling = settings.alpha / settings.rank;
  const r = settings.rank;
  const seen = new Set<string>();
  const merged = tensors.map((t) => {
    const w = t.name.endsWith('.weight') ? weights.get(t.name.slice(0, -'.weight'.length)) : undefined;
    if (!w) return t;
    seen.add(t.name);
    if (t.shape[0] !== w.outDim || t.shape[1] !== w.inDim) throw new Error(`${t.name}: shape [${t.shape.join(', ')}] disagrees with its adapter (${w.outDim}×${w.inDim})`);
    return {
      ...t,
      data: () => {
        const base = t.data();
        const out = new Float32Array(base.length);
        const row = new Float64Array(w.inDim);
        for (let o = 0; o < w.outDim; o++) {
          row.fill(0);
          for (let k = 0; k < r; k++) {
            const bok = w.b[o * r + k];
            if (bok === 0) continue;
            const aRow = k * w.inDim;
            for (let i = 0; i < w.inDim; i++) row[i] += bok * w.a[aRow + i];
          }
          for (let i = 0; i < w.inDim; i++) out[o * w.inDim + i] = base[o * w.inDim + i] + scaling * row[i];
        }
        return out;
      },
    };
  });
  for (const name of weights.keys()) if (!seen.has(`${name}.weight`)) throw new Error(`adapter for ${name}: the base has no tensor ${name}.weight`);
  return merged;
}

/**
 * The frozen base a model holds through the shared cache, with its size, or null for a model that
 * owns all its weights: device-memory accounting (model/gpu-memory.ts) counts each base once,
 * however many policies and KL references hold it.
 */
export function sharedBaseOf(model: PolicyModel): { key: string; bytes: number } | null {
  if (!(model instanceof LoraHfModel)) return null;
  return { key: model.base.key, bytes: model.base.model.numParams * 4 };
}
