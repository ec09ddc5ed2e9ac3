/**
 * Loading a Hugging Face checkpoint folder into an HfModel (issue #13), and its weights back out
 * under Hugging Face names (for export).
 *
 * Memory: tensors are read one at a time in pieces of ~1M elements (never a whole shard, never
 * a whole tensor twice). Matrices are transposed on the way in ([out, in] → [in, out], see
 * model.ts); on tfjs-backend-wasm each piece is written straight into the tensor's memory on the
 * wasm heap, so loading holds little more than the model's float32 size (`npm run bench -- hf`
 * measures it).
 *
 * Refused, naming the file and the key: a folder without config.json, a config that does not
 * parse or is unsupported (config.ts), a missing or misshapen tensor, a tensor the architecture
 * has no place for, and a tokenizer with more ids than the embedding has rows.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { hfTensorShapesLazily, hfWeightsProblem, parseHfConfig, type HfArchConfig } from './config';
import { HfModel, hfParamSpecs, type HfModelOptions } from './model';
import { bf16ArrayToF32, dtypeBytes, f16ArrayToF32, HfFormatError, openSafetensors, readTensorF32, type SafetensorsTensor } from './safetensors';
import { HfTokenizer } from './tokenizer';
import { fileSha256 } from '../util/file-hash';
import { readSync } from '../model/readback';
import { LIMITS, readTextFile } from '../util/bounded-read';

/** Hugging Face named tensors (for export): HF shapes ([out, in] linears), data on demand. */
export type HfNamedTensors = Array<{ name: string; shape: number[]; data: () => Float32Array }>;

/** What a run records about the model it started from. */
export interface HfModelIdentity {
  path: string;
  /** sha256 of config.json's bytes. */
  configDigest: string;
  /** sha256 over the weights files, in name order (each file's name, size and sha256). */
  weightsDigest: string;
}

export interface LoadHfModelOptions extends HfModelOptions {
  /** Compute dtype; only float32 today (F16/BF16 checkpoints are widened on load). */
  dtype?: 'float32';
}

/** Read and parse config.json of a model folder. */
export function readHfConfig(dir: string): { config: HfArchConfig; json: Record<string, unknown>; file: string } {
  const file = path.join(dir, 'config.json');
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new HfFormatError(dir, null, 'not a folder (give the folder of a Hugging Face model: config.json, model.safetensors, tokenizer.json)');
  if (!fs.existsSync(file)) throw new HfFormatError(file, null, 'not found: a Hugging Face model folder has config.json beside its weights');
  let text: string;
  try {
    text = readTextFile(file, { maxBytes: LIMITS.settings, what: 'config.json' });
  } catch (e) {
    throw new HfFormatError(file, null, (e as Error).message.replace(`${file}: `, ''));
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new HfFormatError(file, null, `does not parse as JSON (${(e as Error).message})`);
  }
  return { config: parseHfConfig(json, file), json: json as Record<string, unknown>, file };
}

/** Tensors the architecture ignores: rotary caches some exports keep, a tied head's copy. */
function ignorable(name: string, c: HfArchConfig): boolean {
  return name.endsWith('.rotary_emb.inv_freq') || (c.tieWordEmbeddings && name === 'lm_head.weight');
}

/**
 * Check that the safetensors folder holds exactly the tensors the config implies, with its
 * shapes. Returns them by name.
 */
export function checkHfTensors(dir: string, c: HfArchConfig): Map<string, SafetensorsTensor> {
  const st = openSafetensors(dir);
  // The config's tensors one at a time, stopping at the first one missing: a config.json implying
  // millions of tensors (num_hidden_layers 1 000 000) is refused without listing them (issue #36);
  // `known` never outgrows the files' own tensors.
  const known = new Set<string>();
  for (const e of hfTensorShapesLazily(c)) {
    known.add(e.name);
    const t = st.tensors.get(e.name);
    if (!t) throw new HfFormatError(st.files.length === 1 ? st.files[0] : dir, e.name, `missing: config.json (${c.architecture}) implies this tensor [${e.shape.join(', ')}]`);
    if (t.shape.length !== e.shape.length || t.shape.some((d, i) => d !== e.shape[i])) {
      throw new HfFormatError(t.file, e.name, `shape [${t.shape.join(', ')}] disagrees with config.json, which implies [${e.shape.join(', ')}]`);
    }
  }
  for (const [name, t] of st.tensors) {
    if (!known.has(name) && !ignorable(name, c)) throw new HfFormatError(t.file, name, `${c.architecture} as config.json describes it has no such tensor (a different architecture or an unsupported option)`);
  }
  return st.tensors;
}

const PIECE_ELEMENTS = 1 << 20;

/**
 * Read `count` elements starting at element `at` of a tensor as float32, through `raw` (one
 * scratch buffer per tensor: a fresh one per piece would leave garbage the collector frees late,
 * and peak memory would count it).
 */
function readPiece(fd: number, t: SafetensorsTensor, at: number, count: number, out: Float32Array<ArrayBuffer>, raw: Uint8Array<ArrayBuffer>): void {
  const bytes = dtypeBytes(t.dtype);
  const want = count * bytes;
  let done = 0;
  while (done < want) {
    const n = fs.readSync(fd, raw, done, want - done, t.start + at * bytes + done);
    if (n <= 0) throw new HfFormatError(t.file, t.name, 'file ended inside this tensor (truncated download?)');
    done += n;
  }
  if (t.dtype === 'F32') out.set(new Float32Array(raw.buffer, 0, count));
  else if (t.dtype === 'BF16') bf16ArrayToF32(new Uint16Array(raw.buffer, 0, count), out);
  else f16ArrayToF32(new Uint16Array(raw.buffer, 0, count), out);
}

/**
 * Read buffers shared by every tensor of one load (fresh ones per tensor would leave up to 8 MB of
 * garbage per tensor that the collector frees late, and peak memory counts it).
 */
class Scratch {
  private pieceBuf = new Float32Array(0);
  private rawBuf = new Uint8Array(0);
  get(elements: number): { piece: Float32Array<ArrayBuffer>; raw: Uint8Array<ArrayBuffer> } {
    if (this.pieceBuf.length < elements) {
      this.pieceBuf = new Float32Array(elements);
      this.rawBuf = new Uint8Array(elements * 4);
    }
    return { piece: this.pieceBuf, raw: this.rawBuf };
  }
}

interface WasmHeapAccess {
  typedArrayFromHeap(t: tf.TensorInfo): Float32Array;
}

/**
 * A 2-D [out, in] tensor read transposed into a [in, out] float32 tensor, piece by piece. On wasm
 * the destination is the tensor's own memory on the heap (fetched again for each piece: the heap
 * may move when it grows).
 */
function readTransposed(t: SafetensorsTensor, scratch: Scratch): tf.Tensor2D {
  const [rows, cols] = t.shape;
  const onWasm = tf.getBackend() === 'wasm';
  // tf.fill runs the wasm Fill kernel on the heap; tf.zeros would first build the whole array in JS.
  const tensor = onWasm ? (tf.fill([cols, rows], 0, 'float32') as tf.Tensor2D) : null;
  const host = onWasm ? null : new Float32Array(rows * cols);
  const dest = () => (tensor ? (tf.backend() as unknown as WasmHeapAccess).typedArrayFromHeap(tensor) : host!);
  const piecesRows = Math.min(rows, Math.max(1, Math.floor(PIECE_ELEMENTS / cols)));
  const { piece, raw } = scratch.get(piecesRows * cols);
  const fd = fs.openSync(t.file, 'r');
  try {
    for (let r0 = 0; r0 < rows; r0 += piecesRows) {
      const n = Math.min(piecesRows, rows - r0);
      readPiece(fd, t, r0 * cols, n * cols, piece, raw);
      const out = dest();
      for (let r = 0; r < n; r++) {
        const src = r * cols;
        for (let c = 0; c < cols; c++) out[c * rows + r0 + r] = piece[src + c];
      }
    }
  } catch (e) {
    tensor?.dispose();
    throw e;
  } finally {
    fs.closeSync(fd);
  }
  return tensor ?? tf.tensor2d(host!, [cols, rows]);
}


/** The identity of a model folder (see HfModelIdentity). */
export function hfModelIdentity(dir: string): HfModelIdentity {
  const st = openSafetensors(dir);
  const files = [...st.files].sort();
  const h = crypto.createHash('sha256');
  for (const f of files) h.update(`${path.basename(f)}\n${fs.statSync(f).size}\n${fileSha256(f)}\n`);
  return {
    path: path.resolve(dir),
    configDigest: crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, 'config.json'))).digest('hex'),
    weightsDigest: h.digest('hex'),
  };
}

/**
 * Load a Hugging Face model folder: config, tokenizer, weights (F32/F16/BF16, single file or
 * sharded) and its identity. The backend must be initialised first.
 */
export function loadHfModel(dir: string, opts: LoadHfModelOptions = {}): { model: HfModel; tokenizer: HfTokenizer; identity: HfModelIdentity } {
  if (opts.dtype !== undefined && opts.dtype !== 'float32') throw new Error(`dtype ${String(opts.dtype)} is not supported (float32 only; F16/BF16 weights are widened on load)`);
  const { config, file } = readHfConfig(dir);
  const tokenizer = HfTokenizer.fromFolder(dir);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new HfFormatError(path.join(dir, 'tokenizer.json'), 'vocab', `the tokenizer has ${tokenizer.vocabSize} ids but ${file} vocab_size (the embedding's rows) is ${config.vocabSize}: the tokenizer does not belong to these weights`);
  }
  const identity = hfModelIdentity(dir);
  const { decodeMode, headChunkRows } = opts;
  return { model: loadHfWeights(dir, config, { decodeMode, headChunkRows }), tokenizer, identity };
}

/** The weights of a folder as an HfModel of `config` (tensors checked against it first). */
export function loadHfWeights(dir: string, config: HfArchConfig, opts: HfModelOptions = {}): HfModel {
  // Refused before a tensor is listed or allocated when the float32 weights cannot fit (issue #36).
  const tooLarge = hfWeightsProblem(config);
  if (tooLarge) throw new HfFormatError(path.join(dir, 'config.json'), tooLarge.key, tooLarge.message);
  const tensors = checkHfTensors(dir, config);
  const scratch = new Scratch();
  return new HfModel(
    config,
    (spec) => {
      const t = tensors.get(spec.name)!;
      return spec.shape.length === 2 ? readTransposed(t, scratch) : tf.tensor1d(readTensorF32(t));
    },
    opts,
  );
}

/**
 * The model's current weights under Hugging Face names and shapes (the inverse of loading), for
 * export. Read through `readSync`, so on webgpu a caller wraps the writer in `withReadAhead`.
 */
export function hfNamedTensors(model: HfModel): HfNamedTensors {
  const byName = new Map(model.specs.map((s, i) => [s.name, model.variables[i]]));
  return hfParamSpecs(model.config).map((s) => {
    const v = byName.get(s.name)!;
    if (s.shape.length === 1) return { name: s.name, shape: s.shape, data: () => readSync(v, 'withReadAhead around the export').slice() };
    const [inDim, outDim] = s.shape;
    return {
      name: s.name,
      shape: [outDim, inDim],
      data: () => {
        const src = readSync(v, 'withReadAhead around the export');
        const out = new Float32Array(src.length);
        for (let i = 0; i < inDim; i++) for (let o = 0; o < outDim; o++) out[o * inDim + i] = src[i * outDim + o];
        return out;
      },
    };
  });
}
