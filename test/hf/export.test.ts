/**
 * Hugging Face folder export: HF → Studio (loadHfModel) → HF (hfNamedTensors + exportHfFolder)
 * is bit-exact in F32 and BF16, tensor by tensor; F16 is the round-to-nearest-even of the weights;
 * the tokenizer and generation files travel unchanged; the exported folder loads back and computes
 * the same logits; an existing output is refused without force and never half-replaced.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportHfFolder, hfFolderSource, OutputExistsError } from '../../src-main/engine/hf/export';
import { hfNamedTensors, loadHfModel } from '../../src-main/engine/hf/load';
import { writeRandomHfModel } from '../../src-main/engine/hf/random-model';
import { f32ToF16Bits, openSafetensors, readTensorBytes, readTensorF32 } from '../../src-main/engine/hf/safetensors';
import { initBackend } from '../../src-main/engine/model/backend';
import { tempFolder } from '../helpers/tmp';
import { LLAMA3_TOKENIZER, QWEN3_TOKENIZER } from './corpus';

const tmp = tempFolder('marsrl-hfexport-');
beforeAll(async () => {
  await initBackend('wasm');
});

/** Every tensor of two safetensors folders has the same dtype, shape and bytes. */
function expectSameTensors(a: string, b: string): void {
  const ta = openSafetensors(a).tensors;
  const tb = openSafetensors(b).tensors;
  expect([...tb.keys()].sort()).toEqual([...ta.keys()].sort());
  for (const [name, t] of ta) {
    const u = tb.get(name)!;
    expect([name, u.dtype, u.shape]).toEqual([name, t.dtype, t.shape]);
    expect(Buffer.from(readTensorBytes(u)).equals(Buffer.from(readTensorBytes(t))), name).toBe(true);
  }
}

describe('HF → Studio → HF', () => {
  it('is bit-exact in F32 (Llama, llama3 rope, untied) and BF16 (Qwen2, bias, tied; from shards)', () => {
    const cases = [
      { name: 'llama-f32', opts: { arch: 'llama', tokenizerDir: LLAMA3_TOKENIZER, tie: false, dtype: 'F32', ropeScaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 64 } } },
      { name: 'qwen2-bf16', opts: { arch: 'qwen2', tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'BF16', shards: 3 } },
      { name: 'qwen3-bf16', opts: { arch: 'qwen3', tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'BF16', headDim: 16 } },
    ] as const;
    for (const { name, opts } of cases) {
      const src = path.join(tmp.dir, `${name}-src`);
      writeRandomHfModel(src, { layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, seed: 5, ...opts });
      const { model, tokenizer } = loadHfModel(src);
      const out = path.join(tmp.dir, `${name}-out`);
      const configJson = JSON.parse(fs.readFileSync(path.join(src, 'config.json'), 'utf8')) as Record<string, unknown>;
      try {
        exportHfFolder(out, { config: model.config, configJson, tensors: hfNamedTensors(model), dtype: opts.dtype, tokenizerDir: tokenizer.dir });
      } finally {
        model.dispose();
      }
      expectSameTensors(src, out);
      expect(JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'))).toEqual(configJson);
      for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) {
        expect(fs.readFileSync(path.join(out, f)).equals(fs.readFileSync(path.join(src, f))), f).toBe(true);
      }
      expect(fs.existsSync(path.join(out, 'model.safetensors'))).toBe(true);
      if (!('shards' in opts)) expect(fs.readFileSync(path.join(out, 'model.safetensors')).equals(fs.readFileSync(path.join(src, 'model.safetensors')))).toBe(true);
    }
  });

  it('writes F16 as the rounded weights, and the exported F32 folder computes the same logits', () => {
    const src = path.join(tmp.dir, 'q3-src');
    writeRandomHfModel(src, { arch: 'qwen3', layers: 1, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'F32', seed: 9 });
    const source = hfFolderSource(src);
    exportHfFolder(path.join(tmp.dir, 'q3-f16'), { ...source, dtype: 'F16' });
    const f16 = openSafetensors(path.join(tmp.dir, 'q3-f16')).tensors;
    const orig = openSafetensors(src).tensors;
    const w = 'model.layers.0.mlp.down_proj.weight';
    const values = readTensorF32(orig.get(w)!);
    const halves = new Uint16Array(readTensorBytes(f16.get(w)!).slice().buffer);
    expect(f16.get(w)!.dtype).toBe('F16');
    for (let i = 0; i < values.length; i++) if (halves[i] !== f32ToF16Bits(values[i])) throw new Error(`element ${i}`);
    expect(JSON.parse(fs.readFileSync(path.join(tmp.dir, 'q3-f16', 'config.json'), 'utf8')).torch_dtype).toBe('float16');

    exportHfFolder(path.join(tmp.dir, 'q3-f32'), { ...source, dtype: 'F32' });
    const a = loadHfModel(src);
    const b = loadHfModel(path.join(tmp.dir, 'q3-f32'));
    try {
      const rows = [a.tokenizer.encode('Hello there, 12 apples'), b.tokenizer.encode('Hello there, 12 apples')];
      expect(rows[1]).toEqual(rows[0]);
      const la = a.model.lastLogits([rows[0]], [0]);
      const lb = b.model.lastLogits([rows[1]], [0]);
      expect(Buffer.from(lb.buffer).equals(Buffer.from(la.buffer))).toBe(true);
    } finally {
      a.model.dispose();
      b.model.dispose();
    }
  });

  it('refuses an existing output without force and leaves it untouched when an export fails', () => {
    const src = path.join(tmp.dir, 'q3-src');
    const source = hfFolderSource(src);
    const out = path.join(tmp.dir, 'taken');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'keep.txt'), 'mine');
    expect(() => exportHfFolder(out, { ...source, dtype: 'F32' })).toThrow(OutputExistsError);
    expect(() => exportHfFolder(out, { ...source, dtype: 'F32' })).toThrow(`${out} already exists; choose another --out or pass --force to replace it`);
    expect(fs.readdirSync(out)).toEqual(['keep.txt']);
    // A failure half-way (a tensor that cannot be produced) keeps the old output and leaves no temporary.
    const failing = source.tensors.map((t, i) => (i === 3 ? { ...t, data: () => { throw new Error('disk gone'); } } : t));
    expect(() => exportHfFolder(out, { ...source, tensors: failing, dtype: 'F32', force: true })).toThrow('disk gone');
    expect(fs.readdirSync(out)).toEqual(['keep.txt']);
    expect(fs.readdirSync(tmp.dir).filter((n) => n.includes('.partial-') || n.includes('.replaced-'))).toEqual([]);
    exportHfFolder(out, { ...source, dtype: 'F32', force: true });
    expect(fs.readdirSync(out).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    expectSameTensors(src, out);
  });
});
