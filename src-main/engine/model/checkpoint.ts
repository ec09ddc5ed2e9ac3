/**
 * Checkpoints: a folder with a JSON manifest (model config, parameter layout, tokenizer, optimizer
 * settings and step, the run's config snapshot — as nanoGPT saves its config inside every
 * checkpoint — and caller extras), `weights.bin` (all weights, float32 little-endian, in
 * parameter order) and `optimizer.bin` (Adam's first then second moments, same layout).
 * Loading restores the weights and the optimizer bit for bit, so training resumes exactly.
 *
 * Files are written under temporary names and renamed, the manifest last, so a crash mid-save
 * never leaves a manifest pointing at partial data.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GPT, paramSpecs, type CreateModelOptions, type GPTConfig } from './gpt';
import { Adam, createOptimizer, type LrSchedule } from './optim';
import type { ParamSpec } from './policy-model';
import { Tokenizer, type TokenizerJSON } from './tokenizer';
import type { OptimizerConfig } from '../config/schema';

export const CHECKPOINT_MANIFEST = 'checkpoint.json';
const WEIGHTS_FILE = 'weights.bin';
const OPTIMIZER_FILE = 'optimizer.bin';

export interface CheckpointManifest {
  format: 'marsrl-checkpoint';
  version: 1;
  step: number;
  savedAt: string;
  model: {
    config: GPTConfig;
    params: Array<{ name: string; shape: number[]; offset: number; size: number }>;
    numParams: number;
    dtype: 'float32';
    byteOrder: 'little';
  };
  tokenizer: TokenizerJSON;
  /** Configuration snapshot of the run (whatever the caller passes, JSON). */
  config: unknown;
  optimizer: null | {
    kind: 'adam';
    step: number;
    config: OptimizerConfig;
    schedule?: LrSchedule;
  };
  /** SHA-256 of each binary file, checked on load. */
  files: Record<string, { sha256: string; bytes: number }>;
  extra?: unknown;
}

/** What saving a GPT checkpoint reads from the model. */
export interface GptCheckpointModel {
  readonly config: GPTConfig;
  readonly specs: readonly ParamSpec[];
  readonly numParams: number;
  getWeights(): Float32Array;
}

export interface SaveCheckpointArgs {
  model: GptCheckpointModel;
  optimizer?: Adam | null;
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

/** Write a checkpoint into `dir` (created if needed; an existing checkpoint there is replaced). */
export function saveCheckpoint(dir: string, args: SaveCheckpointArgs): CheckpointManifest {
  assertLittleEndian();
  fs.mkdirSync(dir, { recursive: true });
  const weights = bytesOf(args.model.getWeights());
  const files: CheckpointManifest['files'] = { [WEIGHTS_FILE]: { sha256: sha256(weights), bytes: weights.length } };
  writeAtomic(path.join(dir, WEIGHTS_FILE), weights);
  let optimizer: CheckpointManifest['optimizer'] = null;
  if (args.optimizer) {
    const st = args.optimizer.getState();
    const both = new Float32Array(st.m.length + st.v.length);
    both.set(st.m, 0);
    both.set(st.v, st.m.length);
    const buf = bytesOf(both);
    writeAtomic(path.join(dir, OPTIMIZER_FILE), buf);
    files[OPTIMIZER_FILE] = { sha256: sha256(buf), bytes: buf.length };
    optimizer = { kind: 'adam', step: st.step, config: st.config, schedule: st.schedule };
  } else if (fs.existsSync(path.join(dir, OPTIMIZER_FILE))) {
    fs.rmSync(path.join(dir, OPTIMIZER_FILE));
  }
  const manifest: CheckpointManifest = {
    format: 'marsrl-checkpoint',
    version: 1,
    step: args.step,
    savedAt: new Date().toISOString(),
    model: {
      config: { ...args.model.config },
      params: args.model.specs.map(({ name, shape, offset, size }) => ({ name, shape, offset, size })),
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
  writeAtomic(path.join(dir, CHECKPOINT_MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

/** Read and verify a checkpoint's manifest without loading tensors. */
export function readCheckpointManifest(dir: string): CheckpointManifest {
  const file = path.join(dir, CHECKPOINT_MANIFEST);
  if (!fs.existsSync(file)) throw new Error(`no checkpoint in ${dir} (missing ${CHECKPOINT_MANIFEST})`);
  const m = JSON.parse(fs.readFileSync(file, 'utf8')) as CheckpointManifest;
  if (m.format !== 'marsrl-checkpoint' || m.version !== 1) throw new Error(`${file} is not a MarsRL checkpoint (format ${String(m.format)}, version ${String(m.version)})`);
  return m;
}

function readFloats(dir: string, name: string, manifest: CheckpointManifest, expected: number): Float32Array {
  const buf = fs.readFileSync(path.join(dir, name));
  const info = manifest.files[name];
  if (!info) throw new Error(`checkpoint manifest does not list ${name}`);
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
