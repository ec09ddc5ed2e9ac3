/**
 * GGUF export: files read back with @huggingface/gguf (metadata, tensor infos, tensor bytes),
 * llama.cpp (node-llama-cpp's CPU build) loads them, and its own tokenizer gives the same ids as
 * HfTokenizer on the mixed corpus for the real Qwen3 and Llama-3 vocabularies. The Llama q/k
 * permutation is checked against PyTorch doing the converter's reshape/swapaxes. (Logits against
 * llama.cpp: test/hf/llamacpp.test.ts.)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { gguf } from '@huggingface/gguf';
import { getLlama, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HfArchConfig } from '../../src-main/engine/hf/config';
import { exportGguf, hfFolderSource, OutputExistsError, type HfExportSource } from '../../src-main/engine/hf/export';
import { GGUF_ALIGNMENT, llama3RopeFactors, TOKEN_TYPE, writeGguf } from '../../src-main/engine/hf/gguf';
import { hfNamedTensors, loadHfModel } from '../../src-main/engine/hf/load';
import { writeRandomHfModel } from '../../src-main/engine/hf/random-model';
import { f16BitsToF32, f32ToF16Bits } from '../../src-main/engine/hf/safetensors';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { initBackend } from '../../src-main/engine/model/backend';
import { tempFolder } from '../helpers/tmp';
import { LLAMA3_TOKENIZER, MIXED_CORPUS, QWEN3_TOKENIZER } from './corpus';
import { leftPadded, llamaCppLogProbs, logSoftmax, makeCheckpoint, randomPrompts } from './fixtures';

const tmp = tempFolder('marsrl-gguf-');
let llama: Llama;
const models: Record<'llama' | 'qwen2' | 'qwen3', { dir: string; config: HfArchConfig; source: HfExportSource; gguf: string }> = {} as never;

beforeAll(async () => {
  const specs = {
    // Llama 3 rope scaling, untied head, grouped-query attention.
    llama: { arch: 'llama', tokenizerDir: LLAMA3_TOKENIZER, tie: false, dtype: 'F32', headDim: undefined, ropeScaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 32 } },
    // q/k/v bias, tied, BF16 weights.
    qwen2: { arch: 'qwen2', tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'BF16', headDim: undefined, ropeScaling: undefined },
    // q/k norm, head_dim (16) ≠ hidden / heads (8), tied; embedding padded past the tokenizer like Qwen's.
    qwen3: { arch: 'qwen3', tokenizerDir: QWEN3_TOKENIZER, tie: true, dtype: 'F32', headDim: 16, ropeScaling: undefined, vocabSize: 151680 },
  } as const;
  for (const [name, s] of Object.entries(specs) as Array<[keyof typeof specs, (typeof specs)[keyof typeof specs]]>) {
    const dir = path.join(tmp.dir, name);
    const config = writeRandomHfModel(dir, { layers: 2, hidden: 32, heads: 4, kvHeads: 2, intermediate: 48, seed: 7, context: 128, ...s, vocabSize: 'vocabSize' in s ? s.vocabSize : undefined });
    const source = hfFolderSource(dir);
    const file = path.join(tmp.dir, `${name}.gguf`);
    exportGguf(file, { ...source, dtype: 'f32', name: `tiny-${name}` });
    models[name] = { dir, config, source, gguf: file };
  }
  llama = await getLlama({ gpu: false, build: 'never' });
});
afterAll(async () => {
  await llama?.dispose();
});

/** The bytes of one tensor of a GGUF file, as the reader locates them. */
function tensorBytes(file: string, dataOffset: bigint, offset: bigint, bytes: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const out = Buffer.alloc(bytes);
    fs.readSync(fd, out, 0, bytes, Number(dataOffset + offset));
    return out;
  } finally {
    fs.closeSync(fd);
  }
}

describe('GGUF writer', () => {
  it('writes the metadata llama.cpp reads for each architecture', async () => {
    for (const name of ['llama', 'qwen2', 'qwen3'] as const) {
      const { config: c, gguf: file } = models[name];
      const { metadata: m } = await gguf(file, { allowLocalFile: true });
      const md = m as unknown as Record<string, unknown>;
      expect(m.version).toBe(3);
      expect(md['general.architecture']).toBe(name);
      expect(md['general.name']).toBe(`tiny-${name}`);
      expect(md['general.file_type']).toBe(0);
      expect(md[`${name}.context_length`]).toBe(128);
      expect(md[`${name}.embedding_length`]).toBe(32);
      expect(md[`${name}.block_count`]).toBe(2);
      expect(md[`${name}.feed_forward_length`]).toBe(48);
      expect(md[`${name}.attention.head_count`]).toBe(4);
      expect(md[`${name}.attention.head_count_kv`]).toBe(2);
      expect(md[`${name}.attention.key_length`]).toBe(c.headDim);
      expect(md[`${name}.rope.dimension_count`]).toBe(c.headDim);
      expect(md[`${name}.rope.freq_base`]).toBe(Math.fround(c.ropeTheta));
      expect(md[`${name}.attention.layer_norm_rms_epsilon`]).toBe(Math.fround(c.rmsNormEps));
      expect(md['tokenizer.ggml.model']).toBe('gpt2');
      expect(md['tokenizer.ggml.pre']).toBe(name === 'llama' ? 'llama-bpe' : 'qwen2');
      const tokens = md['tokenizer.ggml.tokens'] as string[];
      expect(tokens).toHaveLength(c.vocabSize);
      expect(typeof md['tokenizer.chat_template']).toBe('string');
    }
    const q = (await gguf(models.qwen3.gguf, { allowLocalFile: true })).metadata as unknown as Record<string, unknown>;
    const tokens = q['tokenizer.ggml.tokens'] as string[];
    const types = q['tokenizer.ggml.token_type'] as number[];
    expect(tokens[9707]).toBe('Hello');
    expect([tokens[151644], types[151644]]).toEqual(['<|im_start|>', TOKEN_TYPE.CONTROL]);
    expect([tokens[151667], types[151667]]).toEqual(['<think>', TOKEN_TYPE.USER_DEFINED]); // an added, non-special token
    expect([tokens[151679], types[151679]]).toEqual(['[PAD151679]', TOKEN_TYPE.UNUSED]); // embedding rows past the tokenizer
    expect(types[9707]).toBe(TOKEN_TYPE.NORMAL);
    expect((q['tokenizer.ggml.merges'] as string[])[0]).toBe('Ġ Ġ');
    expect(q['tokenizer.ggml.eos_token_id']).toBe(151645);
    expect(q['tokenizer.ggml.padding_token_id']).toBe(151643);
    expect(q['tokenizer.ggml.add_bos_token']).toBe(false);
    expect(q['tokenizer.ggml.bos_token_id']).toBeUndefined();
    // eos comes from tokenizer_config (as llama.cpp's converter takes it), not the first of generation_config's list.
    const eosDir = path.join(tmp.dir, 'eos-order');
    fs.mkdirSync(eosDir);
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(QWEN3_TOKENIZER, f), path.join(eosDir, f));
    fs.writeFileSync(path.join(eosDir, 'generation_config.json'), JSON.stringify({ eos_token_id: [151643, 151645] }));
    writeGguf(path.join(tmp.dir, 'eos-order.gguf'), { ...models.qwen3.source, tokenizerDir: eosDir, dtype: 'f32' });
    const e = (await gguf(path.join(tmp.dir, 'eos-order.gguf'), { allowLocalFile: true })).metadata as unknown as Record<string, unknown>;
    expect(e['tokenizer.ggml.eos_token_id']).toBe(151645);
    const l = (await gguf(models.llama.gguf, { allowLocalFile: true })).metadata as unknown as Record<string, unknown>;
    expect(l['tokenizer.ggml.bos_token_id']).toBe(128000);
    expect((l['tokenizer.ggml.merges'] as string[]).length).toBe(280147);
  });

  it('lays out tensors with llama.cpp names, ggml dims and aligned offsets, the bytes unchanged', async () => {
    for (const name of ['qwen2', 'qwen3'] as const) {
      const { source, gguf: file, config: c } = models[name];
      const parsed = await gguf(file, { allowLocalFile: true });
      expect(Number(parsed.tensorDataOffset) % GGUF_ALIGNMENT).toBe(0);
      const infos = new Map(parsed.tensorInfos.map((t) => [t.name, t]));
      const expectedNames = ['token_embd.weight', 'output_norm.weight', ...Array.from({ length: 2 }, (_, i) => [`blk.${i}.attn_norm.weight`, `blk.${i}.attn_q.weight`, `blk.${i}.attn_k.weight`, `blk.${i}.attn_v.weight`, `blk.${i}.attn_output.weight`, `blk.${i}.ffn_norm.weight`, `blk.${i}.ffn_gate.weight`, `blk.${i}.ffn_up.weight`, `blk.${i}.ffn_down.weight`, ...(name === 'qwen2' ? [`blk.${i}.attn_q.bias`, `blk.${i}.attn_k.bias`, `blk.${i}.attn_v.bias`] : [`blk.${i}.attn_q_norm.weight`, `blk.${i}.attn_k_norm.weight`])]).flat()];
      expect([...infos.keys()].sort()).toEqual(expectedNames.sort()); // tied: no output.weight
      for (const t of parsed.tensorInfos) expect(Number(t.offset) % GGUF_ALIGNMENT).toBe(0);
      const q = infos.get('blk.0.attn_q.weight')!;
      expect(q.shape).toEqual([32n, BigInt(c.numHeads * c.headDim)]); // innermost first: [in, out]
      expect(q.dtype).toBe(0);
      for (const t of source.tensors) {
        const ggufName = t.name.replace('model.embed_tokens', 'token_embd').replace('model.norm', 'output_norm').replace(/^model\.layers\.(\d+)\./, 'blk.$1.')
          .replace('input_layernorm', 'attn_norm').replace('post_attention_layernorm', 'ffn_norm').replace('self_attn.q_proj', 'attn_q').replace('self_attn.k_proj', 'attn_k')
          .replace('self_attn.v_proj', 'attn_v').replace('self_attn.o_proj', 'attn_output').replace('self_attn.q_norm', 'attn_q_norm').replace('self_attn.k_norm', 'attn_k_norm')
          .replace('mlp.gate_proj', 'ffn_gate').replace('mlp.up_proj', 'ffn_up').replace('mlp.down_proj', 'ffn_down');
        const info = infos.get(ggufName);
        expect(info, ggufName).toBeDefined();
        const values = t.data();
        const bytes = tensorBytes(file, parsed.tensorDataOffset, info!.offset, values.byteLength);
        expect(bytes.equals(Buffer.from(values.buffer, values.byteOffset, values.byteLength)), ggufName).toBe(true);
      }
    }
  });

  it('permutes Llama q/k rows as llama.cpp’s converter does (checked with PyTorch) and writes the llama3 rope factors', async () => {
    const { source, gguf: file, config: c } = models.llama;
    const parsed = await gguf(file, { allowLocalFile: true });
    const infos = new Map(parsed.tensorInfos.map((t) => [t.name, t]));
    expect(infos.has('output.weight')).toBe(true); // untied
    const qSrc = source.tensors.find((t) => t.name === 'model.layers.1.self_attn.q_proj.weight')!.data();
    const kSrc = source.tensors.find((t) => t.name === 'model.layers.1.self_attn.k_proj.weight')!.data();
    const qOut = tensorBytes(file, parsed.tensorDataOffset, infos.get('blk.1.attn_q.weight')!.offset, qSrc.byteLength);
    const kOut = tensorBytes(file, parsed.tensorDataOffset, infos.get('blk.1.attn_k.weight')!.offset, kSrc.byteLength);
    expect(qOut.equals(Buffer.from(qSrc.buffer))).toBe(false);
    const inFile = path.join(tmp.dir, 'perm-in.bin');
    fs.writeFileSync(inFile, Buffer.concat([Buffer.from(qSrc.buffer), Buffer.from(kSrc.buffer)]));
    // The converter's permute: reshape(n_head, 2, rows/n_head/2, in).swapaxes(1, 2).reshape(rows, in).
    const script = [
      'import sys, numpy as np, torch',
      `H, KV, D, IN = ${c.numHeads}, ${c.numKvHeads}, ${c.headDim}, ${c.hiddenSize}`,
      'a = np.fromfile(sys.argv[1], dtype=np.float32)',
      'q = torch.from_numpy(a[:H*D*IN].reshape(H*D, IN)); k = torch.from_numpy(a[H*D*IN:].reshape(KV*D, IN))',
      'p = lambda w, n: w.reshape(n, 2, w.shape[0] // n // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)',
      'sys.stdout.buffer.write(p(q, H).contiguous().numpy().tobytes() + p(k, KV).contiguous().numpy().tobytes())',
    ].join('\n');
    const out = spawnSync('/usr/bin/python3', ['-c', script, inFile], { maxBuffer: 1 << 26 });
    expect(out.status, out.stderr?.toString()).toBe(0);
    expect(out.stdout.subarray(0, qSrc.byteLength).equals(qOut)).toBe(true);
    expect(out.stdout.subarray(qSrc.byteLength).equals(kOut)).toBe(true);
    // v is not permuted.
    const vSrc = source.tensors.find((t) => t.name === 'model.layers.1.self_attn.v_proj.weight')!.data();
    expect(tensorBytes(file, parsed.tensorDataOffset, infos.get('blk.1.attn_v.weight')!.offset, vSrc.byteLength).equals(Buffer.from(vSrc.buffer))).toBe(true);

    // rope_freqs: head_dim 8, θ = 500000, original context 32, low/high factors 1/4, factor 8.
    // Pair i has frequency θ^(-2i/8) and wavelength 2π/freq: i=0 → 6.28 (< 8 = 32/4: keep, 1),
    // i=1 → 2π·500000^0.25 ≈ 168.2 (> 32: ×8), i=2,3 → longer still (8).
    const rf = infos.get('rope_freqs.weight')!;
    expect(rf.shape).toEqual([4n]);
    const factors = new Float32Array(new Uint8Array(tensorBytes(file, parsed.tensorDataOffset, rf.offset, 16)).buffer);
    expect(Array.from(factors)).toEqual([1, 8, 8, 8]);
    expect(Array.from(llama3RopeFactors({ ...c, ropeScaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 256 } }))).toEqual(
      // i=1: wavelen 168.2 lies between 64 (256/4) and 256: smooth = (256/168.2 − 1)/3 = 0.1740; factor 1/((1−s)/8 + s) = 3.5289.
      [1, Math.fround(1 / ((1 - (256 / (2 * Math.PI * 500000 ** 0.25) - 1) / 3) / 8 + (256 / (2 * Math.PI * 500000 ** 0.25) - 1) / 3)), 8, 8],
    );
  });

  it('writes linear rope scaling as type and factor (and no rope_freqs tensor)', async () => {
    const { source } = models.llama;
    const file = path.join(tmp.dir, 'llama-linear.gguf');
    writeGguf(file, { ...source, config: { ...source.config, ropeScaling: { type: 'linear', factor: 4 } }, dtype: 'f32' });
    const parsed = await gguf(file, { allowLocalFile: true });
    const md = parsed.metadata as unknown as Record<string, unknown>;
    expect(md['llama.rope.scaling.type']).toBe('linear');
    expect(md['llama.rope.scaling.factor']).toBe(4);
    expect(parsed.tensorInfos.some((t) => t.name === 'rope_freqs.weight')).toBe(false);
    const llama3 = (await gguf(models.llama.gguf, { allowLocalFile: true })).metadata as unknown as Record<string, unknown>;
    expect(llama3['llama.rope.scaling.type']).toBeUndefined();
  });

  it('writes F16 matrices (1-D tensors stay F32) and refuses an existing path without force', async () => {
    const { source } = models.qwen2;
    const file = path.join(tmp.dir, 'qwen2-f16.gguf');
    exportGguf(file, { ...source, dtype: 'f16' });
    const parsed = await gguf(file, { allowLocalFile: true });
    expect((parsed.metadata as unknown as Record<string, unknown>)['general.file_type']).toBe(1);
    const infos = new Map(parsed.tensorInfos.map((t) => [t.name, t]));
    expect(infos.get('blk.0.attn_q.bias')!.dtype).toBe(0);
    expect(infos.get('blk.0.attn_norm.weight')!.dtype).toBe(0);
    const up = infos.get('blk.1.ffn_up.weight')!;
    expect(up.dtype).toBe(1);
    const src = source.tensors.find((t) => t.name === 'model.layers.1.mlp.up_proj.weight')!.data();
    const halves = new Uint16Array(new Uint8Array(tensorBytes(file, parsed.tensorDataOffset, up.offset, src.length * 2)).buffer);
    for (let i = 0; i < src.length; i++) if (halves[i] !== f32ToF16Bits(src[i])) throw new Error(`f16 element ${i}`);
    expect(Math.abs(f16BitsToF32(halves[0]) - src[0])).toBeLessThan(Math.abs(src[0]) * 2 ** -10);
    const model = await llama.loadModel({ modelPath: file });
    expect(model.tokenize('Hello world', false).length).toBe(2);
    await model.dispose();

    const before = fs.readFileSync(file);
    expect(() => exportGguf(file, { ...source, dtype: 'f32' })).toThrow(OutputExistsError);
    expect(() => exportGguf(file, { ...source, dtype: 'f32' })).toThrow(/qwen2-f16\.gguf already exists; choose another --out or pass --force/);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    exportGguf(file, { ...source, dtype: 'f32', force: true });
    expect((await gguf(file, { allowLocalFile: true })).metadata['general.file_type' as never]).toBe(0);
    expect(fs.readdirSync(tmp.dir).filter((n) => n.includes('.partial-') || n.includes('.replaced-'))).toEqual([]);
  });

  it('refuses a tokenizer larger than the embedding and a pre-tokenizer llama.cpp does not know', () => {
    const { source } = models.qwen3;
    expect(() => writeGguf(path.join(tmp.dir, 'small.gguf'), { ...source, config: { ...source.config, vocabSize: 1000 }, tensors: source.tensors.map((t) => (t.name === 'model.embed_tokens.weight' ? { ...t, shape: [1000, 32], data: () => new Float32Array(32000) } : t)), dtype: 'f32' })).toThrow(
      /tokenizer\.json \(model\.vocab\): the tokenizer has 151669 ids but the embedding has only 1000 rows/,
    );
    const other = path.join(tmp.dir, 'other-tok');
    fs.mkdirSync(other);
    const json = JSON.parse(fs.readFileSync(path.join(QWEN3_TOKENIZER, 'tokenizer.json'), 'utf8')) as { pre_tokenizer: { pretokenizers: Array<{ pattern?: { Regex: string } }> } };
    json.pre_tokenizer.pretokenizers[0].pattern = { Regex: "\\p{N}{1,2}|\\s+|[^\\s\\p{N}]+" };
    fs.writeFileSync(path.join(other, 'tokenizer.json'), JSON.stringify(json));
    fs.copyFileSync(path.join(QWEN3_TOKENIZER, 'tokenizer_config.json'), path.join(other, 'tokenizer_config.json'));
    expect(() => writeGguf(path.join(tmp.dir, 'other.gguf'), { ...source, tokenizerDir: other, dtype: 'f32' })).toThrow(/other-tok\/tokenizer\.json \(pre_tokenizer\): GGUF export knows the pre-tokenizers/);
    expect(fs.existsSync(path.join(tmp.dir, 'small.gguf')) || fs.existsSync(path.join(tmp.dir, 'other.gguf'))).toBe(false);
  });
});

describe('llama.cpp on the exported files', () => {
  it('loads every architecture and tokenizes the mixed corpus exactly as HfTokenizer (Qwen3 and Llama-3 vocabularies)', async () => {
    const specialLines = {
      llama: ['<|begin_of_text|>system<|eot_id|>text<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>', 'a<|im_start|>b'],
      qwen2: [],
      qwen3: ['<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|>', 'x<|endoftext|>y<tool_call>z'],
    };
    for (const name of ['llama', 'qwen2', 'qwen3'] as const) {
      const model = await llama.loadModel({ modelPath: models[name].gguf });
      try {
        expect(model.fileInsights.totalLayers ?? model.fileInfo.metadata.general.architecture).toBeDefined();
        expect(String(model.fileInfo.metadata.general.architecture)).toBe(name);
        if (name === 'qwen2') continue; // same vocabulary as qwen3
        const tok = HfTokenizer.fromFolder(models[name].dir);
        const mismatches: string[] = [];
        for (const line of [...MIXED_CORPUS, ...specialLines[name]]) {
          const ours = tok.encode(line, { addSpecialTokens: false });
          const theirs = Array.from(model.tokenize(line, true));
          if (ours.join(',') !== theirs.join(',')) mismatches.push(`${JSON.stringify(line)}: ours ${ours.join(',')} llama.cpp ${theirs.join(',')}`);
        }
        expect(mismatches).toEqual([]);
        // The special lines really contain control tokens as single ids on both sides.
        const special = tok.encode(specialLines[name][0], { addSpecialTokens: false });
        expect(special.filter((id) => tok.isSpecial(id)).length).toBeGreaterThanOrEqual(3);
      } finally {
        await model.dispose();
      }
    }
  });
});

describe('linear rope scaling in llama.cpp', () => {
  it('the exported scaling keys make llama.cpp compute the Studio model’s log-probs (and dropping them would not)', async () => {
    await initBackend('wasm');
    const ckpt = makeCheckpoint('llama', { layers: 1, ropeScaling: { type: 'linear', factor: 4 } });
    const { model } = loadHfModel(ckpt.dir);
    try {
      const V = model.vocabSize;
      const prompts = randomPrompts(5, [12, 7], V);
      const withKeys = path.join(ckpt.dir, 'linear.gguf');
      const withoutKeys = path.join(ckpt.dir, 'unscaled.gguf');
      writeGguf(withKeys, { config: model.config, tensors: hfNamedTensors(model), dtype: 'f32', tokenizerDir: ckpt.dir });
      writeGguf(withoutKeys, { config: { ...model.config, ropeScaling: null }, tensors: hfNamedTensors(model), dtype: 'f32', tokenizerDir: ckpt.dir });
      const { rows, leftPad } = leftPadded(prompts);
      const T = rows[0].length;
      const lg = model.logits(rows, { leftPad });
      const data = lg.dataSync();
      lg.dispose();
      const worst = async (file: string) => {
        const theirs = await llamaCppLogProbs(llama, file, prompts, V);
        let w = 0;
        prompts.forEach((p, b) => {
          for (let t = 0; t < p.length; t++) {
            const ours = logSoftmax(data, (b * T + leftPad[b] + t) * V, V);
            for (let v = 0; v < V; v++) w = Math.max(w, Math.abs(ours[v] - theirs[b][t][v]));
          }
        });
        return w;
      };
      expect(await worst(withKeys)).toBeLessThan(2e-3);
      expect(await worst(withoutKeys)).toBeGreaterThan(1e-2);
    } finally {
      model.dispose();
      ckpt.cleanup();
    }
  });
});
