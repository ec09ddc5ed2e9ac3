/**
 * safetensors reader and writer (format: https://github.com/huggingface/safetensors, README
 * "Format"): an unsigned 64-bit little-endian header length N, N bytes of UTF-8 JSON
 * (`{name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?: {string: string}}`, offsets
 * relative to the end of the header, possibly padded with spaces), then the raw little-endian
 * data. The spec requires the byte buffer to be "entirely indexed" with no holes and no overlaps.
 *
 * Tensors are read one at a time with positioned reads (never a whole shard: Node's Buffer stops
 * at 4 GiB and a 7B shard is larger), and written one at a time so only one tensor is in memory.
 * Every malformed input is refused with the file and the key it concerns (issue #13).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileRefusedError, LIMITS, openRegularFile, readTextFile } from '../util/bounded-read';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

export interface SafetensorsTensor {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  file: string;
  /** absolute byte offset of the data in file */
  start: number;
  byteLength: number;
}

export interface SafetensorsFolder {
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
  files: string[];
}

export interface TensorToWrite {
  name: string;
  shape: number[];
  dtype: SafetensorsDtype;
  /** called once, when the tensor is written (so only one tensor is in memory at a time) */
  data: () => Float32Array | { raw: Uint8Array };
}

/** A malformed or unsupported safetensors / model file: names the file and the key. */
export class HfFormatError extends Error {
  constructor(
    readonly file: string,
    readonly key: string | null,
    message: string,
  ) {
    super(`${file}${key === null ? '' : ` (${key})`}: ${message}`);
    this.name = 'HfFormatError';
  }
}

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

/** Bytes per element of every dtype the spec names; only the first three are loadable. */
const DTYPE_BYTES: Record<string, number> = {
  F32: 4, F16: 2, BF16: 2,
  F64: 8, I64: 8, U64: 8, I32: 4, U32: 4, I16: 2, U16: 2, I8: 1, U8: 1, BOOL: 1,
  F8_E4M3: 1, F8_E5M2: 1, F8_E8M0: 1, F6_E2M3: 1, F6_E3M2: 1, F4: 1,
};
const SUPPORTED: readonly SafetensorsDtype[] = ['F32', 'F16', 'BF16'];

/** The safetensors crate refuses headers above 100 MB (a lying length would make us allocate it). */
const MAX_HEADER_BYTES = 100_000_000;
/** Positioned reads and writes go in pieces (readSync takes at most 2 GiB − 1 at once). */
const IO_CHUNK = 1 << 24;

if (os.endianness() !== 'LE') throw new Error('safetensors: this reader assumes a little-endian host');

export function dtypeBytes(dtype: SafetensorsDtype): number {
  return DTYPE_BYTES[dtype];
}

function isSupported(dtype: string): dtype is SafetensorsDtype {
  return (SUPPORTED as readonly string[]).includes(dtype);
}

function readFully(fd: number, target: Uint8Array, position: number, file: string, key: string): void {
  let done = 0;
  while (done < target.length) {
    const n = fs.readSync(fd, target, done, Math.min(IO_CHUNK, target.length - done), position + done);
    if (n === 0) throw new HfFormatError(file, key, `file ends at byte ${position + done}, ${target.length - done} bytes short of what the header says (truncated download?)`);
    done += n;
  }
}

/** Write all of `bytes` at the file's position, in chunks of at most IO_CHUNK. */
export function writeFully(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) done += fs.writeSync(fd, bytes, done, Math.min(IO_CHUNK, bytes.length - done));
}

/**
 * Write a weights file (safetensors, GGUF) through `write` under a temporary name beside it and
 * rename it into place once complete: a failure or a crash mid-write leaves no partial file
 * under the real name, and the temporary one is removed on a failure.
 */
export function writeFileAtomically(file: string, write: (fd: number) => void): void {
  const tmp = `${file}.partial-${process.pid}`;
  const fd = fs.openSync(tmp, 'w');
  try {
    write(fd);
    fs.closeSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  fs.renameSync(tmp, file);
}

/** Parse and check one safetensors file's header against the file's size. */
export function readSafetensorsHeader(file: string): { tensors: SafetensorsTensor[]; metadata: Record<string, string> } {
  let opened: { fd: number; size: number };
  try {
    // A regular file (issue #36): a FIFO or a device named model.safetensors is refused unread.
    opened = openRegularFile(file, { maxBytes: Number.MAX_SAFE_INTEGER, what: 'weights file' });
  } catch (error) {
    throw new HfFormatError(file, null, error instanceof FileRefusedError && error.code === 'ENOENT' ? 'file not found' : (error as Error).message.replace(`${file}: `, ''));
  }
  const { fd, size } = opened;
  if (size < 8) {
    fs.closeSync(fd);
    throw new HfFormatError(file, 'header length', `file is ${size} bytes, shorter than the 8-byte header length (truncated or not a safetensors file)`);
  }
  try {
    const lenBytes = new Uint8Array(8);
    readFully(fd, lenBytes, 0, file, 'header length');
    const headerLen = Number(new DataView(lenBytes.buffer).getBigUint64(0, true));
    if (headerLen > MAX_HEADER_BYTES) throw new HfFormatError(file, 'header length', `header length ${headerLen} exceeds the format's 100 MB limit (not a safetensors file?)`);
    if (8 + headerLen > size) throw new HfFormatError(file, 'header length', `header length ${headerLen} runs past the end of the ${size}-byte file (truncated?)`);
    const headerBytes = new Uint8Array(headerLen);
    readFully(fd, headerBytes, 8, file, 'header');
    let header: unknown;
    try {
      header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
    } catch (error) {
      throw new HfFormatError(file, 'header', `header is not valid UTF-8 JSON (${error instanceof Error ? error.message : String(error)})`);
    }
    if (header === null || typeof header !== 'object' || Array.isArray(header)) throw new HfFormatError(file, 'header', 'header must be a JSON object of tensors');
    const dataStart = 8 + headerLen;
    const dataSize = size - dataStart;
    const metadata: Record<string, string> = {};
    const tensors: SafetensorsTensor[] = [];
    const ranges: Array<{ name: string; begin: number; end: number }> = [];
    for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
      if (name === '__metadata__') {
        if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new HfFormatError(file, '__metadata__', 'must be an object of strings');
        for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
          if (typeof v !== 'string') throw new HfFormatError(file, `__metadata__.${k}`, `value must be a string, got ${JSON.stringify(v)}`);
          metadata[k] = v;
        }
        continue;
      }
      if (raw === null || typeof raw !== 'object') throw new HfFormatError(file, name, 'tensor entry must be an object {dtype, shape, data_offsets}');
      const entry = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      const dtype = entry.dtype;
      if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) throw new HfFormatError(file, `${name}.dtype`, `unknown dtype ${JSON.stringify(dtype)} (the format defines ${Object.keys(DTYPE_BYTES).join(', ')})`);
      if (!isSupported(dtype)) throw new HfFormatError(file, `${name}.dtype`, `dtype ${dtype} is not supported; model weights must be ${SUPPORTED.join(', ')}`);
      const shape = entry.shape;
      if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) throw new HfFormatError(file, `${name}.shape`, `shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`);
      const offsets = entry.data_offsets;
      if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0)) throw new HfFormatError(file, `${name}.data_offsets`, `must be [begin, end] non-negative integers, got ${JSON.stringify(offsets)}`);
      const [begin, end] = offsets as [number, number];
      if (end < begin) throw new HfFormatError(file, `${name}.data_offsets`, `end ${end} is before begin ${begin}`);
      const elements = (shape as number[]).reduce((a, b) => a * b, 1);
      const expected = elements * DTYPE_BYTES[dtype];
      if (end - begin !== expected) throw new HfFormatError(file, `${name}.data_offsets`, `byte range [${begin}, ${end}) holds ${end - begin} bytes but shape [${(shape as number[]).join(', ')}] × ${dtype} needs ${expected}`);
      if (end > dataSize) throw new HfFormatError(file, `${name}.data_offsets`, `data ends at byte ${end} of the data section but the file holds only ${dataSize} data bytes (truncated?)`);
      tensors.push({ name, dtype, shape: [...(shape as number[])], file, start: dataStart + begin, byteLength: end - begin });
      ranges.push({ name, begin, end });
    }
    // "The byte buffer needs to be entirely indexed, and cannot contain holes" (spec): a header
    // whose ranges overlap or leave gaps lies about where the tensors are.
    ranges.sort((a, b) => a.begin - b.begin || a.end - b.end);
    let cursor = 0;
    for (const r of ranges) {
      if (r.begin < cursor) throw new HfFormatError(file, `${r.name}.data_offsets`, `byte range [${r.begin}, ${r.end}) overlaps the previous tensor's (which ends at ${cursor})`);
      if (r.begin > cursor) throw new HfFormatError(file, `${r.name}.data_offsets`, `byte range starts at ${r.begin} but the previous tensor ends at ${cursor}: the data section has a hole`);
      cursor = r.end;
    }
    if (cursor !== dataSize) throw new HfFormatError(file, 'data_offsets', `tensors cover ${cursor} bytes but the data section holds ${dataSize} (trailing bytes not indexed by the header)`);
    return { tensors, metadata };
  } finally {
    fs.closeSync(fd);
  }
}

function openIndex(indexFile: string): SafetensorsFolder {
  let index: unknown;
  try {
    index = JSON.parse(readTextFile(indexFile, { maxBytes: LIMITS.settings, what: 'safetensors index' }));
  } catch (error) {
    throw new HfFormatError(indexFile, null, error instanceof SyntaxError ? `not valid JSON (${error.message})` : (error as Error).message.replace(`${indexFile}: `, ''));
  }
  const weightMap = (index as { weight_map?: unknown } | null)?.weight_map;
  if (weightMap === null || typeof weightMap !== 'object' || Array.isArray(weightMap)) throw new HfFormatError(indexFile, 'weight_map', 'missing: must map each tensor name to its shard file');
  const dir = path.dirname(indexFile);
  const byShard = new Map<string, string[]>();
  for (const [name, shard] of Object.entries(weightMap as Record<string, unknown>)) {
    if (typeof shard !== 'string' || shard.includes('/') || shard.includes('\\') || shard === '..') throw new HfFormatError(indexFile, `weight_map.${name}`, `must be a shard file name in the same folder, got ${JSON.stringify(shard)}`);
    const names = byShard.get(shard) ?? [];
    names.push(name);
    byShard.set(shard, names);
  }
  const tensors = new Map<string, SafetensorsTensor>();
  const metadata: Record<string, string> = {};
  const files: string[] = [];
  for (const [shard, names] of byShard) {
    const file = path.join(dir, shard);
    if (!fs.existsSync(file)) throw new HfFormatError(indexFile, `weight_map.${names[0]}`, `shard ${shard} is missing from ${dir} (${names.length} tensors live in it; download it again)`);
    const header = readSafetensorsHeader(file);
    Object.assign(metadata, header.metadata);
    const inShard = new Map(header.tensors.map((t) => [t.name, t]));
    for (const name of names) {
      const t = inShard.get(name);
      if (!t) throw new HfFormatError(file, name, `the index ${path.basename(indexFile)} places tensor ${name} in this shard, but its header does not have it`);
      tensors.set(name, t);
    }
    files.push(file);
  }
  return { tensors, metadata, files };
}

/** model.safetensors, or model.safetensors.index.json and its shards; headers checked against file sizes. */
export function openSafetensors(dirOrFile: string): SafetensorsFolder {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dirOrFile);
  } catch {
    throw new HfFormatError(dirOrFile, null, 'not found');
  }
  // Anything but a folder is read as a file, which refuses a FIFO or a device by name (issue #36).
  if (!stat.isDirectory()) {
    if (dirOrFile.endsWith('.index.json')) return openIndex(dirOrFile);
    const header = readSafetensorsHeader(dirOrFile);
    return { tensors: new Map(header.tensors.map((t) => [t.name, t])), metadata: header.metadata, files: [dirOrFile] };
  }
  const index = path.join(dirOrFile, INDEX_FILE);
  if (fs.existsSync(index)) return openIndex(index);
  const single = path.join(dirOrFile, SINGLE_FILE);
  if (fs.existsSync(single)) return openSafetensors(single);
  throw new HfFormatError(dirOrFile, null, `no ${SINGLE_FILE} or ${INDEX_FILE} in this folder (only safetensors weights are read; convert .bin/.pt checkpoints first)`);
}

/** A tensor's raw bytes (for bit-exact copies); reads only that tensor's range. */
export function readTensorBytes(t: SafetensorsTensor): Uint8Array {
  const out = new Uint8Array(t.byteLength);
  const fd = fs.openSync(t.file, 'r');
  try {
    readFully(fd, out, t.start, t.file, t.name);
  } finally {
    fs.closeSync(fd);
  }
  return out;
}

/** A tensor as float32 (F16/BF16 widened exactly); reads in pieces so only the output is held whole. */
export function readTensorF32(t: SafetensorsTensor): Float32Array {
  const bytes = dtypeBytes(t.dtype);
  const n = t.byteLength / bytes;
  const out = new Float32Array(n);
  const fd = fs.openSync(t.file, 'r');
  try {
    if (t.dtype === 'F32') {
      readFully(fd, new Uint8Array(out.buffer), t.start, t.file, t.name);
      return out;
    }
    const chunkElems = IO_CHUNK / 2;
    const scratch = new Uint16Array(Math.min(n, chunkElems));
    const scratchBytes = new Uint8Array(scratch.buffer);
    for (let at = 0; at < n; at += chunkElems) {
      const count = Math.min(chunkElems, n - at);
      readFully(fd, scratchBytes.subarray(0, count * 2), t.start + at * 2, t.file, t.name);
      const halves = scratch.subarray(0, count);
      if (t.dtype === 'BF16') bf16ArrayToF32(halves, out.subarray(at, at + count));
      else f16ArrayToF32(halves, out.subarray(at, at + count));
    }
    return out;
  } finally {
    fs.closeSync(fd);
  }
}

function tensorBytes(t: TensorToWrite, file: string): Uint8Array {
  const elements = t.shape.reduce((a, b) => a * b, 1);
  const expected = elements * dtypeBytes(t.dtype);
  const data = t.data();
  if (data instanceof Float32Array) {
    if (data.length !== elements) throw new HfFormatError(file, t.name, `has ${data.length} values but shape [${t.shape.join(', ')}] needs ${elements}`);
    if (t.dtype === 'F32') return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const halves = t.dtype === 'BF16' ? f32ArrayToBf16(data) : f32ArrayToF16(data);
    return new Uint8Array(halves.buffer);
  }
  if (data.raw.length !== expected) throw new HfFormatError(file, t.name, `raw data is ${data.raw.length} bytes but shape [${t.shape.join(', ')}] × ${t.dtype} needs ${expected}`);
  return data.raw;
}

/**
 * Write a safetensors file tensor by tensor, in the order given. The header is padded with spaces
 * to a multiple of 8 bytes (the spec's alignment, so readers can map the data as aligned arrays).
 * The file is written under a temporary name and renamed, so a failure leaves no partial file.
 */
export function writeSafetensors(file: string, tensors: TensorToWrite[], metadata?: Record<string, string>): void {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    if (t.name === '__metadata__' || t.name in header) throw new HfFormatError(file, t.name, 'tensor name used twice (or reserved)');
    if (!isSupported(t.dtype)) throw new HfFormatError(file, t.name, `dtype ${String(t.dtype)} cannot be written; use ${SUPPORTED.join(', ')}`);
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new HfFormatError(file, t.name, `shape must be non-negative integers, got ${JSON.stringify(t.shape)}`);
    const bytes = t.shape.reduce((a, b) => a * b, 1) * dtypeBytes(t.dtype);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  const jsonBytes = Buffer.byteLength(json, 'utf8');
  json += ' '.repeat((8 - ((8 + jsonBytes) % 8)) % 8);
  const headerBytes = Buffer.from(json, 'utf8');
  const lenBytes = new Uint8Array(8);
  new DataView(lenBytes.buffer).setBigUint64(0, BigInt(headerBytes.length), true);

  writeFileAtomically(file, (fd) => {
    writeFully(fd, lenBytes);
    writeFully(fd, headerBytes);
    for (const t of tensors) writeFully(fd, tensorBytes(t, file));
  });
}

// ---- dtype conversions (IEEE 754 binary16, bfloat16), round to nearest, ties to even ----------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float → bfloat16 bits: the top 16 bits of the float32, rounded to nearest even; NaN stays a quiet NaN with its sign. */
export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) & 0x8000) | 0x7fc0;
  // Adding 0x7FFF plus the lowest kept bit rounds ties to even; a carry into the exponent is the
  // correct rounding up (to infinity past the largest finite bfloat16).
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bfloat16 bits → float (exact: the 16 bits are the float32's top half). */
export function bf16BitsToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

/** float → IEEE binary16 bits, rounded to nearest even, with subnormals; overflow gives ±inf. */
export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | (mant !== 0 ? 0x7e00 : 0x7c00);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half: value = m · 2^-24 with m = (1.mant) · 2^(e−1+10); below 2^-25 rounds to 0.
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let rounded = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (rounded & 1) === 1)) rounded += 1;
    return sign | rounded;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, which is the right result (up to inf).
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h += 1;
  return sign | h;
}

/** IEEE binary16 bits → float (exact). */
export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

let f16Table: Float32Array | null = null;

/** Widen bfloat16 bit patterns into float32 (a shift; no rounding involved). */
export function bf16ArrayToF32(src: Uint16Array, out = new Float32Array(src.length)): Float32Array {
  const bits = new Uint32Array(out.buffer, out.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) bits[i] = src[i] << 16;
  return out;
}

/** Widen binary16 bit patterns into float32 through a 65 536-entry table (exact). */
export function f16ArrayToF32(src: Uint16Array, out = new Float32Array(src.length)): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToF32(h);
  }
  const table = f16Table;
  for (let i = 0; i < src.length; i++) out[i] = table[src[i]];
  return out;
}

/** float32 → bfloat16 bits for a whole array: f32ToBf16Bits inlined over the raw bits (hot in exports). */
export function f32ArrayToBf16(src: Float32Array): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i];
    out[i] = (b & 0x7fffffff) > 0x7f800000 ? ((b >>> 16) & 0x8000) | 0x7fc0 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
  }
  return out;
}

export function f32ArrayToF16(src: Float32Array): Uint16Array {
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = f32ToF16Bits(src[i]);
  return out;
}
