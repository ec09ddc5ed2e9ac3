/**
 * safetensors: files whose bytes the test writes itself, malformed headers refused by file and
 * key, bit-exact round trips, and the F16/BF16 conversions against a hand-computed table and
 * against PyTorch (an independent implementation of both roundings).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ArrayToBf16,
  f32ToBf16Bits,
  f32ToF16Bits,
  HfFormatError,
  openSafetensors,
  readTensorBytes,
  readTensorF32,
  writeSafetensors,
} from '../../src-main/engine/hf/safetensors';
import { thrown } from '../helpers/errors';
import { tempFolder } from '../helpers/tmp';

const tmp = tempFolder('marsrl-st-');

/** A safetensors file assembled byte by byte: u64 LE header length, JSON header, data. */
function handMade(file: string, header: unknown, data: Uint8Array, headerText?: string): void {
  const json = Buffer.from(headerText ?? JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, json, Buffer.from(data)]));
}

function f32Bytes(values: number[]): Uint8Array {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
}

function u16Bytes(values: number[]): Uint8Array {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16LE(v, i * 2));
  return b;
}

function expectFormatError(fn: () => unknown, file: string, key: string | null, pattern: RegExp): void {
  const caught = thrown(fn);
  expect(caught).toBeInstanceOf(HfFormatError);
  const e = caught as HfFormatError;
  expect(e.file).toBe(file);
  expect(e.key).toBe(key);
  expect(e.message).toMatch(pattern);
  expect(e.message).toContain(file);
}

describe('safetensors reader', () => {
  it('reads a hand-made file with F32, F16 and BF16 tensors and metadata', () => {
    const file = path.join(tmp.dir, 'hand.safetensors');
    // F32 [2,2] = 1, -2, 0.5, 3 ; F16 [3] = 1 (0x3C00), -2 (0xC000), 65504 (0x7BFF); BF16 [2] = 1 (0x3F80), -0.5 (0xBF00)
    const data = Buffer.concat([f32Bytes([1, -2, 0.5, 3]), u16Bytes([0x3c00, 0xc000, 0x7bff]), u16Bytes([0x3f80, 0xbf00])]);
    handMade(file, {
      __metadata__: { format: 'pt' },
      b: { dtype: 'F16', shape: [3], data_offsets: [16, 22] },
      a: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] },
      c: { dtype: 'BF16', shape: [2], data_offsets: [22, 26] },
    }, data);
    const st = openSafetensors(file);
    expect(st.metadata).toEqual({ format: 'pt' });
    expect([...st.tensors.keys()].sort()).toEqual(['a', 'b', 'c']);
    const a = st.tensors.get('a')!;
    expect(a.shape).toEqual([2, 2]);
    expect(Array.from(readTensorF32(a))).toEqual([1, -2, 0.5, 3]);
    expect(Array.from(readTensorF32(st.tensors.get('b')!))).toEqual([1, -2, 65504]);
    expect(Array.from(readTensorF32(st.tensors.get('c')!))).toEqual([1, -0.5]);
    expect(Array.from(readTensorBytes(st.tensors.get('c')!))).toEqual([0x80, 0x3f, 0x00, 0xbf]);
  });

  it('opens a folder with model.safetensors and a sharded index', () => {
    const single = path.join(tmp.dir, 'single');
    fs.mkdirSync(single);
    handMade(path.join(single, 'model.safetensors'), { w: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f32Bytes([7]));
    expect(readTensorF32(openSafetensors(single).tensors.get('w')!)[0]).toBe(7);

    const sharded = path.join(tmp.dir, 'sharded');
    fs.mkdirSync(sharded);
    handMade(path.join(sharded, 'model-00001-of-00002.safetensors'), { x: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, f32Bytes([1, 2]));
    handMade(path.join(sharded, 'model-00002-of-00002.safetensors'), { y: { dtype: 'BF16', shape: [1], data_offsets: [0, 2] } }, u16Bytes([0x4040]));
    fs.writeFileSync(path.join(sharded, 'model.safetensors.index.json'), JSON.stringify({
      metadata: { total_size: 10 },
      weight_map: { x: 'model-00001-of-00002.safetensors', y: 'model-00002-of-00002.safetensors' },
    }));
    const st = openSafetensors(sharded);
    expect(st.files.map((f) => path.basename(f)).sort()).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect(Array.from(readTensorF32(st.tensors.get('x')!))).toEqual([1, 2]);
    expect(readTensorF32(st.tensors.get('y')!)[0]).toBe(3);

    // A missing shard names the index file and the first tensor that lives in it.
    fs.rmSync(path.join(sharded, 'model-00002-of-00002.safetensors'));
    expectFormatError(() => openSafetensors(sharded), path.join(sharded, 'model.safetensors.index.json'), 'weight_map.y', /shard model-00002-of-00002\.safetensors is missing/);
    // A folder with neither file.
    const empty = path.join(tmp.dir, 'empty');
    fs.mkdirSync(empty);
    expectFormatError(() => openSafetensors(empty), empty, null, /no model\.safetensors or model\.safetensors\.index\.json/);
  });

  it('refuses malformed files, naming the file and the key', () => {
    const f = (name: string) => path.join(tmp.dir, name);
    const w = { dtype: 'F32', shape: [2], data_offsets: [0, 8] };

    handMade(f('truncated.safetensors'), { w }, f32Bytes([1]));
    expectFormatError(() => openSafetensors(f('truncated.safetensors')), f('truncated.safetensors'), 'w.data_offsets', /only 4 data bytes \(truncated\?\)/);

    fs.writeFileSync(f('short.safetensors'), Buffer.from([1, 2, 3]));
    expectFormatError(() => openSafetensors(f('short.safetensors')), f('short.safetensors'), 'header length', /shorter than the 8-byte header length/);

    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(1000n);
    fs.writeFileSync(f('longheader.safetensors'), Buffer.concat([len, Buffer.from('{}')]));
    expectFormatError(() => openSafetensors(f('longheader.safetensors')), f('longheader.safetensors'), 'header length', /runs past the end/);

    handMade(f('badjson.safetensors'), null, new Uint8Array(0), '{"w": {"dtype": "F32",');
    expectFormatError(() => openSafetensors(f('badjson.safetensors')), f('badjson.safetensors'), 'header', /not valid UTF-8 JSON/);

    handMade(f('dtype.safetensors'), { w: { dtype: 'F33', shape: [2], data_offsets: [0, 8] } }, f32Bytes([1, 2]));
    expectFormatError(() => openSafetensors(f('dtype.safetensors')), f('dtype.safetensors'), 'w.dtype', /unknown dtype "F33"/);

    handMade(f('i64.safetensors'), { w: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8));
    expectFormatError(() => openSafetensors(f('i64.safetensors')), f('i64.safetensors'), 'w.dtype', /I64 is not supported/);

    handMade(f('shape.safetensors'), { w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, f32Bytes([1, 2]));
    expectFormatError(() => openSafetensors(f('shape.safetensors')), f('shape.safetensors'), 'w.data_offsets', /holds 8 bytes but shape \[3\] × F32 needs 12/);

    handMade(f('overlap.safetensors'), { a: w, b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, f32Bytes([1, 2]));
    expectFormatError(() => openSafetensors(f('overlap.safetensors')), f('overlap.safetensors'), 'b.data_offsets', /overlaps/);

    handMade(f('hole.safetensors'), { a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] } }, f32Bytes([1, 2, 3]));
    expectFormatError(() => openSafetensors(f('hole.safetensors')), f('hole.safetensors'), 'b.data_offsets', /hole/);

    handMade(f('trailing.safetensors'), { a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f32Bytes([1, 2]));
    expectFormatError(() => openSafetensors(f('trailing.safetensors')), f('trailing.safetensors'), 'data_offsets', /trailing bytes/);

    handMade(f('reversed.safetensors'), { a: { dtype: 'F32', shape: [0], data_offsets: [4, 0] } }, f32Bytes([1]));
    expectFormatError(() => openSafetensors(f('reversed.safetensors')), f('reversed.safetensors'), 'a.data_offsets', /before begin/);

    handMade(f('meta.safetensors'), { __metadata__: { n: 3 } }, new Uint8Array(0));
    expectFormatError(() => openSafetensors(f('meta.safetensors')), f('meta.safetensors'), '__metadata__.n', /must be a string/);

    // A file cut short after it was opened: the positioned read names the tensor.
    handMade(f('cut.safetensors'), { w }, f32Bytes([1, 2]));
    const t = openSafetensors(f('cut.safetensors')).tensors.get('w')!;
    fs.truncateSync(f('cut.safetensors'), fs.statSync(f('cut.safetensors')).size - 2);
    expectFormatError(() => readTensorF32(t), f('cut.safetensors'), 'w', /bytes short/);
  });
});

describe('safetensors writer', () => {
  it('aligns the header to 8 bytes and round-trips F32 and BF16 bit for bit', () => {
    const file = path.join(tmp.dir, 'rt.safetensors');
    const values = new Float32Array([1, -0, 3.1415927, 1e-40, -65504, 123456.789, Number.MIN_VALUE, 2 ** -149]);
    const bf16Raw = new Uint8Array(f32ArrayToBf16(new Float32Array([0.1, -7, 1e30, 3])).buffer);
    writeSafetensors(file, [
      { name: 'f32', shape: [2, 4], dtype: 'F32', data: () => values },
      { name: 'bf16', shape: [4], dtype: 'BF16', data: () => ({ raw: bf16Raw }) },
      { name: 'odd', shape: [1, 3], dtype: 'F16', data: () => new Float32Array([1, 0.5, -2]) },
    ], { format: 'pt' });
    const bytes = fs.readFileSync(file);
    const headerLen = Number(bytes.readBigUInt64LE(0));
    expect((8 + headerLen) % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, { data_offsets: number[] }>;
    expect(header.f32.data_offsets).toEqual([0, 32]);
    expect(header.bf16.data_offsets).toEqual([32, 40]);
    expect(header.odd.data_offsets).toEqual([40, 46]);
    expect(bytes.length).toBe(8 + headerLen + 46);

    const st = openSafetensors(file);
    expect(st.metadata).toEqual({ format: 'pt' });
    expect(Buffer.from(readTensorBytes(st.tensors.get('f32')!))).toEqual(Buffer.from(values.buffer));
    expect(Buffer.from(readTensorBytes(st.tensors.get('bf16')!))).toEqual(Buffer.from(bf16Raw));
    expect(Array.from(readTensorF32(st.tensors.get('odd')!))).toEqual([1, 0.5, -2]);

    // BF16 values written from float32 come back as exactly the rounded values: rewrite them.
    const widened = readTensorF32(st.tensors.get('bf16')!);
    const again = path.join(tmp.dir, 'rt2.safetensors');
    writeSafetensors(again, [{ name: 'bf16', shape: [4], dtype: 'BF16', data: () => widened }]);
    expect(Buffer.from(readTensorBytes(openSafetensors(again).tensors.get('bf16')!))).toEqual(Buffer.from(bf16Raw));
  });

  it('refuses data that does not match its shape and leaves no file behind', () => {
    const file = path.join(tmp.dir, 'bad-write.safetensors');
    expect(() => writeSafetensors(file, [{ name: 'w', shape: [3], dtype: 'F32', data: () => new Float32Array(2) }])).toThrow(/\(w\): has 2 values but shape \[3\] needs 3/);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.readdirSync(tmp.dir).some((n) => n.startsWith('bad-write'))).toBe(false);
  });
});

/** [float32 input, expected bits]: hand-computed from the bit layouts (sign | exponent | mantissa). */
const BF16_TABLE: Array<[number, number]> = [
  [0, 0x0000],
  [-0, 0x8000],
  [1, 0x3f80],
  [-2, 0xc000],
  [Infinity, 0x7f80],
  [-Infinity, 0xff80],
  // 1 + 2^-8 is exactly halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): ties to even → 0x3F80.
  [1 + 2 ** -8, 0x3f80],
  // 1 + 3·2^-8 is halfway between 0x3F81 (odd) and 0x3F82: → 0x3F82.
  [1 + 3 * 2 ** -8, 0x3f82],
  // just above the tie rounds up
  [1 + 2 ** -8 + 2 ** -20, 0x3f81],
  // largest float32 rounds past the largest bfloat16 to infinity
  [3.4028234663852886e38, 0x7f80],
  // float32 subnormal 2^-130 = 2^19 · 2^-149 = 0x00080000 keeps its top half exactly
  [2 ** -130, 0x0008],
  // smallest float32 subnormal 2^-149 (0x00000001) rounds to +0
  [2 ** -149, 0x0000],
  [0.1, 0x3dcd], // 0x3DCCCCCD: low half 0xCCCD > 0x8000 → round up
];

const F16_TABLE: Array<[number, number]> = [
  [0, 0x0000],
  [-0, 0x8000],
  [1, 0x3c00],
  [-2, 0xc000],
  [0.5, 0x3800],
  [65504, 0x7bff], // largest finite half
  [65519.99609375, 0x7bff], // below the midpoint 65520 → stays finite
  [65520, 0x7c00], // the tie between 65504 (odd mantissa 0x3FF) and 65536 (inf) → inf
  [Infinity, 0x7c00],
  [-Infinity, 0xfc00],
  [2 ** -14, 0x0400], // smallest normal
  [2 ** -24, 0x0001], // smallest subnormal
  [2 ** -25, 0x0000], // exactly half the smallest subnormal: tie to even → 0
  [3 * 2 ** -25, 0x0002], // 1.5 × smallest subnormal: tie between 1 (odd) and 2 → 2
  [2 ** -25 + 2 ** -40, 0x0001], // just above the tie
  [-(2 ** -24), 0x8001],
  [1 + 2 ** -11, 0x3c00], // tie between 0x3C00 (even) and 0x3C01 → 0x3C00
  [1 + 3 * 2 ** -11, 0x3c02], // tie between 0x3C01 (odd) and 0x3C02 → 0x3C02
  [2 ** -14 - 2 ** -25, 0x0400], // largest subnormal + half a step rounds up into the normals (ties to even 0x400)
  [1e-10, 0x0000],
];

describe('dtype conversions', () => {
  it('float32 → bfloat16 rounds to nearest even (hand-computed table)', () => {
    for (const [x, bits] of BF16_TABLE) expect([x, f32ToBf16Bits(x)]).toEqual([x, bits]);
    expect(Number.isNaN(bf16BitsToF32(f32ToBf16Bits(NaN)))).toBe(true);
    expect(bf16BitsToF32(0x3f80)).toBe(1);
    expect(bf16BitsToF32(0xc040)).toBe(-3);
    expect(Object.is(bf16BitsToF32(0x8000), -0)).toBe(true);
  });

  it('float32 → float16 rounds to nearest even with subnormals (hand-computed table)', () => {
    for (const [x, bits] of F16_TABLE) expect([x, f32ToF16Bits(x)]).toEqual([x, bits]);
    expect(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN)))).toBe(true);
    expect(f16BitsToF32(0x0001)).toBe(2 ** -24);
    expect(f16BitsToF32(0x7bff)).toBe(65504);
    expect(f16BitsToF32(0x7c00)).toBe(Infinity);
    expect(Number.isNaN(f16BitsToF32(0x7e00))).toBe(true);
    expect(Object.is(f16BitsToF32(0x8000), -0)).toBe(true);
    // Every finite half survives half → float → half.
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) continue;
      if (f32ToF16Bits(f16BitsToF32(h)) !== h) throw new Error(`f16 0x${h.toString(16)} does not round-trip`);
    }
  });

  it('agrees with PyTorch bit for bit on bfloat16 and float16 roundings', () => {
    // Values: the tables' inputs, powers of two across both ranges, and pseudo-random floats
    // spread over 80 binades, all exactly representable in float32.
    const values: number[] = [...BF16_TABLE.map(([x]) => x), ...F16_TABLE.map(([x]) => x)];
    let s = 12345;
    const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 4000; i++) values.push(Math.fround((rand() - 0.5) * 2 ** (Math.floor(rand() * 80) - 40)));
    for (let e = -30; e <= 20; e++) values.push(2 ** e, -(2 ** e) * 1.5);
    const f32s = new Float32Array(values.filter((v) => Number.isFinite(v) || Math.abs(v) === Infinity));
    const file = path.join(tmp.dir, 'torch-in.bin');
    fs.writeFileSync(file, Buffer.from(f32s.buffer));
    const script = [
      'import sys, torch, numpy as np',
      'x = torch.from_numpy(np.fromfile(sys.argv[1], dtype=np.float32))',
      'bf = x.to(torch.bfloat16).view(torch.int16).numpy().astype(np.uint16)',
      'hf = x.to(torch.float16).view(torch.int16).numpy().astype(np.uint16)',
      'sys.stdout.write(" ".join(map(str, bf.tolist())) + "\\n" + " ".join(map(str, hf.tolist())))',
    ].join('\n');
    const out = spawnSync('/usr/bin/python3', ['-c', script, file], { encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const [bfLine, hfLine] = out.stdout.split('\n');
    const torchBf = bfLine.split(' ').map(Number);
    const torchHf = hfLine.split(' ').map(Number);
    expect(torchBf.length).toBe(f32s.length);
    const mismatches: string[] = [];
    f32s.forEach((x, i) => {
      if (f32ToBf16Bits(x) !== torchBf[i]) mismatches.push(`bf16(${x}): ours 0x${f32ToBf16Bits(x).toString(16)} torch 0x${torchBf[i].toString(16)}`);
      if (f32ToF16Bits(x) !== torchHf[i]) mismatches.push(`f16(${x}): ours 0x${f32ToF16Bits(x).toString(16)} torch 0x${torchHf[i].toString(16)}`);
    });
    expect(mismatches).toEqual([]);
    // The array conversion (used by the writers) is the scalar one, NaN included.
    const withNaN = new Float32Array([...f32s, NaN, -NaN]);
    const bulk = f32ArrayToBf16(withNaN);
    withNaN.forEach((x, i) => {
      if (bulk[i] !== f32ToBf16Bits(x)) mismatches.push(`bulk bf16(${x})`);
    });
    expect(mismatches).toEqual([]);
  });
});
