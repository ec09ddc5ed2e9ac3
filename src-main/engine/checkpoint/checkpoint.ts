/**
 * Checkpoints of either policy family (issue #13).
 *
 * GPT checkpoints: a folder with a JSON manifest (model config, parameter layout, tokenizer, optimizer
 * settings and step, the run's config snapshot — as nanoGPT saves its config inside every
 * checkpoint — and caller extras), `weights.bin` (all weights, float32 little-endian, in
 * parameter order) and `optimizer.bin` (Adam's first then second moments, same layout).
 * Loading restores the weights and the optimizer bit for bit, so training resumes exactly.
 *
 * Hugging Face checkpoints (`family: hf` in the manifest): the base model's identity (folder,
 * config and weights digests) and its architecture, the trainable weights as `weights.safetensors`
 * (one tensor per parameter, in the Studio's storage layout and order), `optimizer.bin` as above,
 * and the tokenizer's files under `tokenizer/`, so the checkpoint decodes, resumes and exports
 * without the base folder.
 *
 * LoRA checkpoints (issue #14; `lora` in an hf manifest): the adapters as a PEFT folder
 * (adapter_config.json + adapter_model.safetensors beside the manifest, so PEFT and vLLM load the
 * checkpoint as it is), Adam's state over the adapters, the tokenizer, and the frozen base's path
 * and digests — the base itself is not copied, and is checked against the digests when loaded.
 *
 * Files are written under temporary names and renamed, the manifest last, so a crash mid-save
 * never leaves a manifest pointing at partial data; every binary file's SHA-256 is in the manifest
 * and checked on load.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { hfModelIdentity, loadHfWeights, readHfConfig } from '../hf/load';
import { acquireHfBase, LoraHfModel, PEFT_CONFIG, PEFT_WEIGHTS, readPeftAdapter, writePeftAdapterFiles, type HfBaseHandle, type LoraSettings } from '../hf/lora';
import { HfModel, hfParamSpecs } from '../hf/model';
import { openSafetensors, readTensorF32, writeSafetensors } from '../hf/safetensors';
import { GENERATION_CONFIG, HfTokenizer, TOKENIZER_FILES, TOKENIZER_JSON } from '../hf/tokenizer';
import { GPT, paramSpecs, type CreateModelOptions, type GPTConfig } from '../gpt/model';
import { Adam, createOptimizer, type AdamState } from '../model/optim';
import { readSync } from '../model/readback';
import type { ParamSpec } from '../model/policy-model';
import { Tokenizer } from '../gpt/tokenizer';
import { fileSha256 } from '../util/file-hash';
import { readRegularFile } from '../util/bounded-read';
import { CHECKPOINT_MANIFEST, HF_TOKENIZER_DIR, HF_WEIGHTS_FILE, readAnyCheckpointManifest, readCheckpointManifest, type CheckpointManifest, type HfBaseIdentity, type HfCheckpointManifest, type HfPromptSettings, type LoraBaseIdentity } from './manifest';

const WEIGHTS_FILE = 'weights.bin';
const OPTIMIZER_FILE = 'optimizer.bin';


/** What saving a GPT checkpoint reads from the model. */
export interface GptCheckpointModel {
  readonly config: GPTConfig;
  readonly specs: readonly ParamSpec[];
  readonly numParams: number;
  getWeights(): Float32Array;
}

export interface SaveCheckpointArgs {
  model: GptCheckpointModel;
  /** The optimizer, or its state already read (`getStateAsync`, for a backend without synchronous readback). */
  optimizer?: Adam | AdamState | null;
  tokenizer: Tokenizer;
  /** The run's configuration snapshot (saved verbatim). */
  config: unknown;
  step: number;
  /** Anything else to restore (data RNG position, metrics …); must be JSON-serialisable. */
  extra?: unknown;
}

export interface LoadedCheckpoint {
  model: GPT;
  optimizer: Adam | null;
  tokenizer: Tokenizer;
  config: unknown;
  step: number;
  extra: unknown;
  manifest: CheckpointManifest;
}

function assertLittleEndian(): void {
  if (os.endianness() !== 'LE') throw new Error('checkpoints are little-endian float32; big-endian hosts are not supported');
}

function bytesOf(a: Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

function sha256(buf: Uint8Array): string {
  return createHash('sha256').update(buf).digest('hex');
}

function writeAtomic(file: string, data: Uint8Array | string): void {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  fs.writeFileSync(tmp, data);
  fs.renameSync(tmp, file);
}

/** The parameter layout a manifest records: each parameter's place in the flat buffer. */
function paramLayout(specs: readonly ParamSpec[]): Array<Pick<ParamSpec, 'name' | 'shape' | 'offset' | 'size'>> {
  return specs.map(({ name, shape, offset, size }) => ({ name, shape, offset, size }));
}

/** Write the manifest last (writeAtomic), once every file it names is in place. */
function writeManifest<M extends CheckpointManifest | HfCheckpointManifest>(dir: string, manifest: M): M {
  writeAtomic(path.join(dir, CHECKPOINT_MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

/** Write optimizer.bin (or remove a stale one) and return its manifest entry. */
function saveOptimizer(dir: string, optimizerIn: Adam | AdamState | null | undefined, files: CheckpointManifest['files']): CheckpointManifest['optimizer'] {
  if (!optimizerIn) {
    if (fs.existsSync(path.join(dir, OPTIMIZER_FILE))) fs.rmSync(path.join(dir, OPTIMIZER_FILE));
    return null;
  }
  // A state already read (getStateAsync: webgpu has no synchronous readback), or the optimizer's own.
  const st = optimizerIn instanceof Adam ? optimizerIn.getState() : optimizerIn;
  const both = new Float32Array(st.m.length + st.v.length);
  both.set(st.m, 0);
  both.set(st.v, st.m.length);
  const buf = bytesOf(both);
  writeAtomic(path.join(dir, OPTIMIZER_FILE), buf);
  files[OPTIMIZER_FILE] = { sha256: sha256(buf), bytes: buf.length };
  return { kind: 'adam', step: st.step, config: st.config, schedule: st.schedule };
}

/** Write a checkpoint into `dir` (created if needed; an existing checkpoint there is replaced). */
export function saveCheckpoint(dir: string, args: SaveCheckpointArgs): CheckpointManifest {
  assertLittleEndian();
  fs.mkdirSync(dir, { recursive: true });
  const weights = bytesOf(args.model.getWeights());
  const files: CheckpointManifest['files'] = { [WEIGHTS_FILE]: { sha256: sha256(weights), bytes: weights.length } };
  writeAtomic(path.join(dir, WEIGHTS_FILE), weights);
  const optimizer = saveOptimizer(dir, args.optimizer, files);
  const manifest: CheckpointManifest = {
    format: 'marsrl-checkpoint',
    version: 1,
    step: args.step,
    savedAt: new Date().toISOString(),
    model: {
      config: { ...args.model.config },
      params: paramLayout(args.model.specs),
      numParams: args.model.numParams,
      dtype: 'float32',
      byteOrder: 'little',
    },
    tokenizer: args.tokenizer.toJSON(),
    config: args.config ?? null,
    optimizer,
    files,
    extra: args.extra,
  };
  return writeManifest(dir, manifest);
}


function readFloats(dir: string, name: string, manifest: Pick<CheckpointManifest, 'files'>, expected: number): Float32Array {
  const info = manifest.files[name];
  if (!info) throw new Error(`checkpoint manifest does not list ${name}`);
  // A regular file of the size the manifest states, checked before it is read (issue #36).
  const buf = readRegularFile(path.join(dir, name), { maxBytes: Math.max(expected * 4, 0), what: 'checkpoint file' });
  if (buf.length !== expected * 4 || buf.length !== info.bytes) throw new Error(`${name} has ${buf.length} bytes, expected ${expected * 4}`);
  if (sha256(buf) !== info.sha256) throw new Error(`${name} is corrupt (checksum mismatch)`);
  // Copy into an aligned buffer of our own.
  const out = new Float32Array(expected);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

/**
 * Load a checkpoint: a new model with the saved weights, the optimizer with its saved moments
 * and step (when one was saved), the tokenizer and the config snapshot.
 */
export function loadCheckpoint(dir: string, opts: CreateModelOptions = {}): LoadedCheckpoint {
  assertLittleEndian();
  const manifest = readCheckpointManifest(dir);
  const config = manifest.model.config;
  const specs = paramSpecs(config);
  const same = specs.length === manifest.model.params.length && specs.every((s, i) => {
    const p = manifest.model.params[i];
    return p.name === s.name && p.offset === s.offset && p.size === s.size && p.shape.join(',') === s.shape.join(',');
  });
  if (!same) throw new Error(`checkpoint in ${dir} has a parameter layout this version of the model does not match`);
  const weights = readFloats(dir, WEIGHTS_FILE, manifest, manifest.model.numParams);
  const model = new GPT(config, weights, opts);
  let optimizer: Adam | null = null;
  if (manifest.optimizer) {
    const both = readFloats(dir, OPTIMIZER_FILE, manifest, 2 * manifest.model.numParams);
    optimizer = createOptimizer(model, manifest.optimizer.config, manifest.optimizer.schedule);
    optimizer.setState({ step: manifest.optimizer.step, m: both.subarray(0, manifest.model.numParams), v: both.subarray(manifest.model.numParams) });
  }
  return {
    model,
    optimizer,
    tokenizer: Tokenizer.fromJSON(manifest.tokenizer),
    config: manifest.config,
    step: manifest.step,
    extra: manifest.extra,
    manifest,
  };
}

// ---------------------------------------------------------------------------------------------
// The Hugging Face family



export interface SaveHfCheckpointArgs {
  model: HfModel;
  /** The Hugging Face folder the weights came from first (what every hf checkpoint records). */
  base: HfBaseIdentity;
  /** The folder whose tokenizer files are copied into the checkpoint. */
  tokenizerDir: string;
  prompts: HfPromptSettings;
  /** As in `SaveCheckpointArgs`. */
  optimizer?: Adam | AdamState | null;
  config: unknown;
  step: number;
  extra?: unknown;
}

export interface LoadedHfCheckpoint {
  model: HfModel;
  optimizer: Adam | null;
  tokenizer: HfTokenizer;
  /** The checkpoint's own copy of the tokenizer files (a folder HfTokenizer.fromFolder reads). */
  tokenizerDir: string;
  prompts: HfPromptSettings;
  base: HfBaseIdentity;
  config: unknown;
  step: number;
  extra: unknown;
  manifest: HfCheckpointManifest;
}


/** Copy the tokenizer files into the checkpoint's tokenizer/ (listed in `files`). */
function copyTokenizer(dir: string, tokenizerDir: string, files: HfCheckpointManifest['files']): void {
  const tokDir = path.join(dir, HF_TOKENIZER_DIR);
  if (!fs.existsSync(path.join(tokenizerDir, TOKENIZER_JSON))) throw new Error(`${path.join(tokenizerDir, TOKENIZER_JSON)} is missing: the checkpoint needs the model's tokenizer (was the model folder moved?)`);
  if (path.resolve(tokenizerDir) === path.resolve(tokDir)) return;
  fs.mkdirSync(tokDir, { recursive: true });
  for (const name of [...TOKENIZER_FILES, GENERATION_CONFIG]) {
    const src = path.join(tokenizerDir, name);
    const target = path.join(tokDir, name);
    if (fs.existsSync(src)) {
      const data = fs.readFileSync(src);
      writeAtomic(target, data);
      files[`${HF_TOKENIZER_DIR}/${name}`] = { sha256: sha256(data), bytes: data.length };
    } else if (fs.existsSync(target)) {
      fs.rmSync(target);
    }
  }
}

/** Write a Hugging Face policy's checkpoint into `dir` (an existing checkpoint there is replaced). */
export function saveHfCheckpoint(dir: string, args: SaveHfCheckpointArgs): HfCheckpointManifest {
  assertLittleEndian();
  fs.mkdirSync(dir, { recursive: true });
  const { model } = args;
  // One tensor at a time (writeSafetensors asks for each when it writes it), never the whole flat buffer.
  writeSafetensors(
    path.join(dir, HF_WEIGHTS_FILE),
    model.specs.map((spec, i) => ({ name: spec.name, shape: spec.shape, dtype: 'F32' as const, data: () => readSync(model.variables[i], 'withReadAhead(model.variables, …) around saveHfCheckpoint').slice() })),
    { format: 'marsrl', layout: 'studio' },
  );
  const weightsFile = path.join(dir, HF_WEIGHTS_FILE);
  const files: HfCheckpointManifest['files'] = { [HF_WEIGHTS_FILE]: { sha256: fileSha256(weightsFile), bytes: fs.statSync(weightsFile).size } };
  return finishHfCheckpoint(dir, args, files, HF_WEIGHTS_FILE);
}

/**
 * The rest of an hf checkpoint once its weights file is written and listed in `files`: Adam's
 * state, the tokenizer copy and the manifest (written last, so a checkpoint without one is
 * unfinished). Full weights and LoRA adapters differ only in `weights` and `lora`.
 */
function finishHfCheckpoint(
  dir: string,
  args: Omit<SaveHfCheckpointArgs, 'model'> & { model: HfModel | LoraHfModel },
  files: HfCheckpointManifest['files'],
  weights: HfCheckpointManifest['model']['weights'],
  lora?: HfCheckpointManifest['lora'],
): HfCheckpointManifest {
  const { model } = args;
  const optimizer = saveOptimizer(dir, args.optimizer, files);
  copyTokenizer(dir, args.tokenizerDir, files);
  const manifest: HfCheckpointManifest = {
    format: 'marsrl-checkpoint',
    version: 1,
    family: 'hf',
    step: args.step,
    savedAt: new Date().toISOString(),
    model: {
      base: { ...args.base },
      config: { ...model.config },
      params: paramLayout(model.specs),
      numParams: model.numParams,
      dtype: 'float32',
      weights,
    },
    tokenizer: { kind: 'hf', dir: HF_TOKENIZER_DIR, prompts: args.prompts },
    ...(lora ? { lora } : {}),
    config: args.config ?? null,
    optimizer,
    files,
    extra: args.extra,
  };
  return writeManifest(dir, manifest);
}

function checkFile(dir: string, name: string, manifest: HfCheckpointManifest): void {
  const info = manifest.files[name];
  const file = path.join(dir, name);
  if (!info) throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} does not list ${name}`);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing (the checkpoint is incomplete)`);
  const bytes = fs.statSync(file).size;
  if (bytes !== info.bytes) throw new Error(`${file} has ${bytes} bytes, the manifest says ${info.bytes}`);
  if (fileSha256(file) !== info.sha256) throw new Error(`${file} is corrupt (checksum mismatch)`);
}

/**
 * Load a Hugging Face policy's checkpoint: the model with the saved weights (built from the saved
 * architecture, not the base folder), the optimizer with its moments and step when one was saved,
 * and the checkpoint's own tokenizer. The backend must be initialised first.
 */
export function loadHfCheckpoint(dir: string): LoadedHfCheckpoint {
  assertLittleEndian();
  const manifest = readAnyCheckpointManifest(dir);
  if (manifest.family !== 'hf') throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} is a checkpoint of the gpt family; load it with loadCheckpoint`);
  if (manifest.lora) throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} is a LoRA checkpoint (adapters on the base ${manifest.lora.base.path}); load it with loadLoraCheckpoint`);
  const config = manifest.model.config;
  // readAnyCheckpointManifest has checked the architecture and its size against this machine.
  const specs = hfParamSpecs(config);
  const same = specs.length === manifest.model.params.length && specs.every((s, i) => {
    const p = manifest.model.params[i];
    return p.name === s.name && p.offset === s.offset && p.size === s.size && p.shape.join(',') === s.shape.join(',');
  });
  if (!same) throw new Error(`checkpoint in ${dir} has a parameter layout this version of the Hugging Face model does not match`);
  for (const name of Object.keys(manifest.files)) checkFile(dir, name, manifest);
  const st = openSafetensors(path.join(dir, HF_WEIGHTS_FILE));
  const model = new HfModel(config, (spec) => {
    const t = st.tensors.get(spec.name);
    if (!t) throw new Error(`${path.join(dir, HF_WEIGHTS_FILE)} has no tensor ${spec.name}`);
    if (t.shape.join(',') !== spec.shape.join(',')) throw new Error(`${path.join(dir, HF_WEIGHTS_FILE)}: ${spec.name} has shape [${t.shape.join(', ')}], expected [${spec.shape.join(', ')}]`);
    return tf.tensor(readTensorF32(t), spec.shape, 'float32');
  });
  try {
    return { model, ...restoreHfCheckpointState(dir, manifest, model) };
  } catch (error) {
    model.dispose();
    throw error;
  }
}

/**
 * What an hf checkpoint restores besides its weights (full or adapters): Adam's state over the
 * model's trainable parameters, the checkpoint's tokenizer copy and the manifest's fields.
 */
function restoreHfCheckpointState(dir: string, manifest: HfCheckpointManifest, model: HfModel | LoraHfModel): Omit<LoadedHfCheckpoint, 'model'> {
  let optimizer: Adam | null = null;
  try {
    if (manifest.optimizer) {
      const both = readFloats(dir, OPTIMIZER_FILE, manifest, 2 * manifest.model.numParams);
      optimizer = createOptimizer(model, manifest.optimizer.config, manifest.optimizer.schedule);
      optimizer.setState({ step: manifest.optimizer.step, m: both.subarray(0, manifest.model.numParams), v: both.subarray(manifest.model.numParams) });
    }
    const tokenizerDir = path.join(dir, manifest.tokenizer.dir);
    return {
      optimizer,
      tokenizer: HfTokenizer.fromFolder(tokenizerDir),
      tokenizerDir,
      prompts: manifest.tokenizer.prompts,
      base: manifest.model.base,
      config: manifest.config,
      step: manifest.step,
      extra: manifest.extra,
      manifest,
    };
  } catch (error) {
    optimizer?.dispose();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// LoRA checkpoints (issue #14)


/** The key of a base in the process's shared cache (lora.ts acquireHfBase; loadLoraHfModel's for a folder). */
export function loraBaseKey(base: LoraBaseIdentity): string {
  return base.kind === 'folder' ? `${base.configDigest}:${base.weightsDigest}` : `checkpoint:${base.weightsDigest}`;
}

/** Folder identities hashed by this process, keyed by the files' paths, sizes and modification times. */
const folderIdentities = new Map<string, LoraBaseIdentity>();

/**
 * A Hugging Face folder as a LoRA base. Its weights are hashed once per process while its files
 * stay the same (a real base is gigabytes; a run's three policies on it would hash it thrice).
 */
export function loraBaseFromFolder(dir: string): LoraBaseIdentity {
  const files = [path.join(dir, 'config.json'), ...openSafetensors(dir).files].map((f) => path.resolve(f)).sort();
  const key = files.map((f) => {
    const st = fs.statSync(f);
    return `${f}:${st.size}:${st.mtimeMs}`;
  }).join('|');
  const known = folderIdentities.get(key);
  if (known) return { ...known };
  const identity = hfModelIdentity(dir);
  const base: LoraBaseIdentity = { kind: 'folder', path: identity.path, configDigest: identity.configDigest, weightsDigest: identity.weightsDigest };
  folderIdentities.set(key, base);
  return { ...base };
}

/** A Studio checkpoint of full hf weights as a LoRA base (digests from its manifest). */
export function loraBaseFromCheckpoint(dir: string): LoraBaseIdentity {
  const manifest = readAnyCheckpointManifest(dir);
  if (manifest.family !== 'hf' || manifest.lora) throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} is not a checkpoint of full Hugging Face weights, so it cannot be a LoRA base`);
  const weights = manifest.files[HF_WEIGHTS_FILE];
  if (!weights) throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} does not list ${HF_WEIGHTS_FILE}`);
  return { kind: 'checkpoint', path: path.resolve(dir), configDigest: manifest.model.base.configDigest, weightsDigest: weights.sha256 };
}

/**
 * A counted reference to the shared frozen base (loaded only when no live policy of this process
 * holds it). When it is loaded its weights are checked against the digests unless `verified`
 * (the caller has just hashed them): adapters trained on other weights would be garbage on these.
 */
export function acquireLoraBase(base: LoraBaseIdentity, opts: { verified?: boolean } = {}): HfBaseHandle {
  return acquireHfBase(loraBaseKey(base), () => {
    if (base.kind === 'folder') {
      if (!fs.existsSync(path.join(base.path, 'config.json'))) throw new Error(`LoRA base ${base.path} is missing (no config.json): the adapters were trained on that Hugging Face folder; put it back there`);
      if (!opts.verified) {
        const now = loraBaseFromFolder(base.path);
        if (now.weightsDigest !== base.weightsDigest || now.configDigest !== base.configDigest) {
          throw new Error(`LoRA base ${base.path} now holds other weights or another config.json than the adapters were trained on (weights digest ${now.weightsDigest.slice(0, 12)}…, recorded ${base.weightsDigest.slice(0, 12)}…); restore the original folder`);
        }
      }
      return loadHfWeights(base.path, readHfConfig(base.path).config);
    }
    const now = loraBaseFromCheckpoint(base.path);
    if (now.weightsDigest !== base.weightsDigest) {
      throw new Error(`LoRA base checkpoint ${base.path} now holds other weights than the adapters were trained on (weights.safetensors ${now.weightsDigest.slice(0, 12)}…, recorded ${base.weightsDigest.slice(0, 12)}…); restore it`);
    }
    const loaded = loadHfCheckpoint(base.path);
    loaded.optimizer?.dispose();
    return loaded.model;
  });
}

/** As `SaveHfCheckpointArgs`, for the adapters of a LoRA policy. */
export interface SaveLoraCheckpointArgs extends Omit<SaveHfCheckpointArgs, 'model'> {
  model: LoraHfModel;
  /** The frozen base the adapters sit on. */
  loraBase: LoraBaseIdentity;
}

export interface LoadedLoraCheckpoint extends Omit<LoadedHfCheckpoint, 'model'> {
  /** The adapters as saved, on the shared base (a counted reference: dispose releases it). */
  model: LoraHfModel;
  lora: { settings: LoraSettings; base: LoraBaseIdentity };
}

/**
 * Write a LoRA policy's checkpoint into `dir`: the adapters as a PEFT folder (adapter_config.json
 * and adapter_model.safetensors, so the checkpoint loads in PEFT and vLLM as it is), Adam's state
 * over the adapters, the tokenizer, and the base's path and digests (the base is not copied).
 */
export function saveLoraCheckpoint(dir: string, args: SaveLoraCheckpointArgs): HfCheckpointManifest {
  assertLittleEndian();
  const { model } = args;
  if (!model.settings) throw new Error('a LoRA checkpoint needs a model with adapters (this one is the bare base)');
  fs.mkdirSync(dir, { recursive: true });
  const baseName = args.loraBase.kind === 'folder' ? args.loraBase.path : args.base.path;
  writePeftAdapterFiles(dir, { config: model.config, settings: model.settings, weights: model.loraWeights(), baseModelNameOrPath: baseName });
  const files: HfCheckpointManifest['files'] = {};
  for (const name of [PEFT_WEIGHTS, PEFT_CONFIG]) {
    const file = path.join(dir, name);
    files[name] = { sha256: fileSha256(file), bytes: fs.statSync(file).size };
  }
  // A full-weights file from an earlier save in this folder would otherwise sit beside the adapters.
  fs.rmSync(path.join(dir, HF_WEIGHTS_FILE), { force: true });
  return finishHfCheckpoint(dir, args, files, PEFT_WEIGHTS, { settings: { ...model.settings, targets: [...model.settings.targets] }, base: { ...args.loraBase } });
}

/**
 * Load a LoRA checkpoint: the base from the process's shared cache (loaded and digest-checked only
 * if no live policy holds it), the adapters exactly as saved, and the optimizer over them with its
 * moments and step. The backend must be initialised first.
 */
export function loadLoraCheckpoint(dir: string, opts: { seed?: number } = {}): LoadedLoraCheckpoint {
  assertLittleEndian();
  const manifest = readAnyCheckpointManifest(dir);
  if (manifest.family !== 'hf' || !manifest.lora) throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} is not a LoRA checkpoint (it holds ${manifest.family === 'hf' ? 'full Hugging Face weights: load it with loadHfCheckpoint' : 'a GPT: load it with loadCheckpoint'})`);
  for (const name of Object.keys(manifest.files)) checkFile(dir, name, manifest);
  const { lora } = manifest;
  const model = new LoraHfModel(acquireLoraBase(lora.base), lora.settings, { seed: opts.seed ?? 0 });
  try {
    if (model.config.hiddenSize !== manifest.model.config.hiddenSize || model.config.numLayers !== manifest.model.config.numLayers) {
      throw new Error(`${dir}: the adapters were saved for a ${manifest.model.config.numLayers}-layer model of width ${manifest.model.config.hiddenSize}, but the base ${lora.base.path} is another architecture`);
    }
    const same = model.specs.length === manifest.model.params.length && model.specs.every((s, i) => {
      const p = manifest.model.params[i];
      return p.name === s.name && p.offset === s.offset && p.size === s.size && p.shape.join(',') === s.shape.join(',');
    });
    if (!same) throw new Error(`checkpoint in ${dir} has an adapter layout this version of the LoRA model does not match`);
    const adapter = readPeftAdapter(dir, model.config);
    model.setLoraWeights(adapter.weights);
    return { model, lora, ...restoreHfCheckpointState(dir, manifest, model) };
  } catch (error) {
    model.dispose();
    throw error;
  }
}
