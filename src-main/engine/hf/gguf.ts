/**
 * A GGUF v3 writer for the Hugging Face decoder family (issue #13), so a Studio policy leaves in
 * the file llama.cpp and Ollama load. No npm package writes GGUF tensors (`@huggingface/gguf`
 * reads; the tests use it to read our files back).
 *
 * Format (ggml docs/gguf.md): magic "GGUF", version 3, tensor count and key/value count (u64),
 * the key/values, the tensor infos (name, dims innermost first, ggml type, offset), padding to
 * `general.alignment` (32 by default), then each tensor's data at an aligned offset.
 *
 * What llama.cpp expects of `llama` / `qwen2` / `qwen3` files, learnt from llama.cpp's
 * convert_hf_to_gguf.py and gguf-py (read, not copied):
 *  - hyperparameters under `{arch}.*`; `attention.key_length`/`value_length` when head_dim is
 *    explicit (Qwen3's need not be hidden / heads); linear rope scaling as type + factor; Llama 3
 *    rope scaling as a `rope_freqs.weight` tensor of per-frequency divisors;
 *  - for `llama` only, q/k rows permuted from Hugging Face's rotate-half layout to the
 *    interleaved pairs llama.cpp's LLAMA rope rotates (`qwen2`/`qwen3` use the NeoX rotation);
 *  - 1-D tensors (norms, biases) stay F32 in an F16 file, as the converter keeps them;
 *  - the byte-level BPE vocabulary as `tokenizer.ggml.model = gpt2` with the `pre` name that
 *    selects llama.cpp's pre-tokenizer regex, token types, merges and special ids.
 */
import fs from 'node:fs';
import type { HfArchConfig } from './config';
import { hfTensorShapes } from './config';
import { f32ToF16Bits, HfFormatError, writeFileAtomically, writeFully } from './safetensors';
import type { HfNamedTensors } from './load';
import { HfTokenizer } from './tokenizer';
import { pushAll } from '../util/arrays';

export type { HfNamedTensors };

const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const GGUF_VERSION = 3;
export const GGUF_ALIGNMENT = 32;

const enum ValueType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

const enum GgmlType {
  F32 = 0,
  F16 = 1,
}

/** llama.cpp's LlamaFileType: ALL_F32 = 0, MOSTLY_F16 = 1. */
const FILE_TYPE = { f32: 0, f16: 1 } as const;

/** gguf-py TokenType. */
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

type KvValue =
  | { type: ValueType.UINT32 | ValueType.INT32 | ValueType.FLOAT32; value: number }
  | { type: ValueType.BOOL; value: boolean }
  | { type: ValueType.STRING; value: string }
  | { type: ValueType.ARRAY; itemType: ValueType.STRING; value: string[] }
  | { type: ValueType.ARRAY; itemType: ValueType.INT32; value: Int32Array };

const u32 = (value: number): KvValue => ({ type: ValueType.UINT32, value });
const f32 = (value: number): KvValue => ({ type: ValueType.FLOAT32, value });
const str = (value: string): KvValue => ({ type: ValueType.STRING, value });

/** Buffered little-endian writer for the header part of the file. */
class ByteSink {
  private chunks: Buffer[] = [];
  private current = Buffer.alloc(1 << 16);
  private at = 0;
  length = 0;

  private room(n: number): void {
    if (this.at + n <= this.current.length) return;
    this.chunks.push(this.current.subarray(0, this.at));
    this.current = Buffer.alloc(Math.max(1 << 16, n));
    this.at = 0;
  }
  /** One little-endian value of `bytes` bytes, written by `write` at the current position. */
  private fixed(bytes: number, write: (buf: Buffer, at: number) => void): void {
    this.room(bytes);
    write(this.current, this.at);
    this.at += bytes;
    this.length += bytes;
  }
  u32(v: number): void {
    this.fixed(4, (buf, at) => buf.writeUInt32LE(v, at));
  }
  i32(v: number): void {
    this.fixed(4, (buf, at) => buf.writeInt32LE(v, at));
  }
  u64(v: number): void {
    this.fixed(8, (buf, at) => buf.writeBigUInt64LE(BigInt(v), at));
  }
  f32(v: number): void {
    this.fixed(4, (buf, at) => buf.writeFloatLE(v, at));
  }
  u8(v: number): void {
    this.room(1);
    this.current[this.at++] = v;
    this.length += 1;
  }
  /** gguf_string: u64 byte length, UTF-8 bytes, no terminator. */
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.room(bytes.length);
    bytes.copy(this.current, this.at);
    this.at += bytes.length;
    this.length += bytes.length;
  }
  zeros(n: number): void {
    this.room(n);
    this.current.fill(0, this.at, this.at + n);
    this.at += n;
    this.length += n;
  }
  buffer(): Buffer {
    return Buffer.concat([...this.chunks, this.current.subarray(0, this.at)]);
  }
}

function writeKv(sink: ByteSink, key: string, v: KvValue): void {
  sink.string(key);
  sink.u32(v.type);
  switch (v.type) {
    case ValueType.UINT32:
      sink.u32(v.value);
      break;
    case ValueType.INT32:
      sink.i32(v.value);
      break;
    case ValueType.FLOAT32:
      sink.f32(v.value);
      break;
    case ValueType.BOOL:
      sink.u8(v.value ? 1 : 0);
      break;
    case ValueType.STRING:
      sink.string(v.value);
      break;
    case ValueType.ARRAY:
      sink.u32(v.itemType);
      sink.u64(v.value.length);
      if (v.itemType === ValueType.STRING) for (const s of v.value as string[]) sink.string(s);
      else for (const x of v.value as Int32Array) sink.i32(x);
      break;
  }
}

/** The GGUF tensor name of a Hugging Face one (llama.cpp's tensor map for these architectures). */
export function ggufTensorName(hfName: string): string {
  const fixed: Record<string, string> = {
    'model.embed_tokens.weight': 'token_embd.weight',
    'model.norm.weight': 'output_norm.weight',
    'lm_head.weight': 'output.weight',
  };
  if (fixed[hfName]) return fixed[hfName];
  const m = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(hfName);
  const parts: Record<string, string> = {
    input_layernorm: 'attn_norm',
    post_attention_layernorm: 'ffn_norm',
    'self_attn.q_proj': 'attn_q',
    'self_attn.k_proj': 'attn_k',
    'self_attn.v_proj': 'attn_v',
    'self_attn.o_proj': 'attn_output',
    'self_attn.q_norm': 'attn_q_norm',
    'self_attn.k_norm': 'attn_k_norm',
    'mlp.gate_proj': 'ffn_gate',
    'mlp.up_proj': 'ffn_up',
    'mlp.down_proj': 'ffn_down',
  };
  if (m && parts[m[2]]) return `blk.${m[1]}.${parts[m[2]]}.${m[3]}`;
  throw new Error(`GGUF export: tensor ${hfName} has no llama.cpp name (not a Llama/Qwen2/Qwen3 weight)`);
}

/**
 * Rows of a q/k projection (weight [heads·headDim, in] or bias [heads·headDim]) reordered from
 * Hugging Face's rotate-half layout (pairs (i, i + d/2)) to llama.cpp's interleaved one
 * (pairs (2i, 2i + 1)): new row h·d + 2j + s = old row h·d + s·d/2 + j. This is the permutation
 * llama.cpp's converter applies for `llama`, undoing the one transformers' conversion script made.
 */
export function permuteRotaryRows(data: Float32Array, heads: number, rowLength: number): Float32Array {
  const rows = data.length / rowLength;
  const d = rows / heads;
  const half = d / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      for (let s = 0; s < 2; s++) {
        const from = (h * d + s * half + j) * rowLength;
        const to = (h * d + 2 * j + s) * rowLength;
        out.set(data.subarray(from, from + rowLength), to);
      }
    }
  }
  return out;
}

/**
 * Llama 3 rope scaling as llama.cpp applies it: a divisor per frequency pair (θ_i / f_i), from
 * the same piecewise rule transformers' `_compute_llama3_parameters` uses — 1 above the high
 * frequency cutoff, `factor` below the low one, a smooth blend in between.
 */
export function llama3RopeFactors(c: HfArchConfig): Float32Array {
  const s = c.ropeScaling;
  if (s?.type !== 'llama3') throw new Error('llama3RopeFactors: config has no llama3 rope scaling');
  const half = c.headDim / 2;
  const lowFreqWavelen = s.originalMaxPositions / s.lowFreqFactor;
  const highFreqWavelen = s.originalMaxPositions / s.highFreqFactor;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    const freq = 1 / c.ropeTheta ** ((2 * i) / c.headDim);
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < highFreqWavelen) out[i] = 1;
    else if (wavelen > lowFreqWavelen) out[i] = s.factor;
    else {
      const smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}

/** llama.cpp's pre-tokenizer names for the Split regexes of the byte-level BPE tokenizers we export. */
const PRE_TOKENIZERS: Array<{ pre: string; regex: string }> = [
  {
    pre: 'llama-bpe',
    regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  },
  {
    pre: 'qwen2',
    regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  },
];

/** Which llama.cpp pre-tokenizer reproduces this tokenizer.json's pre-tokenisation. */
export function ggufPreTokenizer(tok: HfTokenizer): string {
  const file = `${tok.dir}/tokenizer.json`;
  const pre = tok.tokenizerJson.pre_tokenizer as { type?: string; pretokenizers?: Array<{ type?: string; pattern?: { Regex?: string } }> } | null;
  const split = pre?.type === 'Sequence' ? pre.pretokenizers?.find((p) => p.type === 'Split') : undefined;
  const regex = split?.pattern?.Regex;
  const known = PRE_TOKENIZERS.find((p) => p.regex === regex);
  if (!known) throw new HfFormatError(file, 'pre_tokenizer', 'GGUF export knows the pre-tokenizers of Llama 3 (llama-bpe) and Qwen2/Qwen3 (qwen2); this tokenizer splits text differently, so llama.cpp would tokenize it differently');
  return known.pre;
}

/** gguf-py's `does_token_look_special`: added tokens written like control tokens count as control. */
function looksSpecial(text: string): boolean {
  return ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text) || (text.startsWith('<|') && text.endsWith('|>')) || (text.startsWith('<｜') && text.endsWith('｜>')) || (text.startsWith('<start_of_') && text.endsWith('>'));
}

/** The tokenizer.ggml.* keys of a byte-level BPE tokenizer padded to `vocabSize` embedding rows. */
export function ggufTokenizerKvs(tok: HfTokenizer, vocabSize: number): Array<[string, KvValue]> {
  const file = `${tok.dir}/tokenizer.json`;
  const model = tok.tokenizerJson.model as { type?: string; vocab: Record<string, number>; merges?: Array<string | [string, string]> };
  if (model.type !== 'BPE') throw new HfFormatError(file, 'model.type', `GGUF export writes byte-level BPE vocabularies (Llama 3, Qwen); this one is ${String(model.type)}`);
  if (tok.vocabSize > vocabSize) throw new HfFormatError(file, 'model.vocab', `the tokenizer has ${tok.vocabSize} ids but the embedding has only ${vocabSize} rows (config.json vocab_size)`);
  const pre = ggufPreTokenizer(tok);
  const tokens: string[] = new Array<string>(vocabSize);
  const types = new Int32Array(vocabSize);
  for (const [text, id] of Object.entries(model.vocab)) {
    tokens[id] = text;
    types[id] = TOKEN_TYPE.NORMAL;
  }
  for (const [id, t] of tok.addedTokens()) {
    tokens[id] = t.content;
    types[id] = t.special || looksSpecial(t.content) ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED;
  }
  // Embedding rows past the tokenizer (Qwen pads 151669 ids to 151936 rows) become unused tokens.
  for (let i = 0; i < vocabSize; i++) {
    if (tokens[i] === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = TOKEN_TYPE.UNUSED;
    }
  }
  const merges = (model.merges ?? []).map((m) => (typeof m === 'string' ? m : m.join(' ')));
  const kvs: Array<[string, KvValue]> = [
    ['tokenizer.ggml.model', str('gpt2')],
    ['tokenizer.ggml.pre', str(pre)],
    ['tokenizer.ggml.tokens', { type: ValueType.ARRAY, itemType: ValueType.STRING, value: tokens }],
    ['tokenizer.ggml.token_type', { type: ValueType.ARRAY, itemType: ValueType.INT32, value: types }],
    ['tokenizer.ggml.merges', { type: ValueType.ARRAY, itemType: ValueType.STRING, value: merges }],
  ];
  if (tok.bosId !== null) kvs.push(['tokenizer.ggml.bos_token_id', u32(tok.bosId)]);
  // The converter takes eos from tokenizer_config (Llama 3.1 Instruct: <|eot_id|>, not the first of
  // generation_config's list); llama.cpp also stops on every end-of-generation token it recognises.
  const eos = tok.configEosId ?? tok.eosIds[0];
  if (eos !== undefined) kvs.push(['tokenizer.ggml.eos_token_id', u32(eos)]);
  kvs.push(['tokenizer.ggml.padding_token_id', u32(tok.padId)]);
  kvs.push(['tokenizer.ggml.add_bos_token', { type: ValueType.BOOL, value: addsBos(tok) }]);
  if (tok.chatTemplate !== null) kvs.push(['tokenizer.chat_template', str(tok.chatTemplate)]);
  return kvs;
}

/** tokenizer_config's add_bos_token when given, else whether tokenizer.json's post-processor inserts BOS. */
function addsBos(tok: HfTokenizer): boolean {
  const cfg = tok.addBosTokenSetting;
  if (cfg !== null) return cfg;
  if (tok.bosId === null) return false;
  return tok.encode('a', { addSpecialTokens: true })[0] === tok.bosId;
}

interface PlannedTensor {
  name: string;
  /** ggml dims, innermost first (the reverse of the row-major shape). */
  ne: number[];
  type: GgmlType;
  bytes: number;
  offset: number;
  data: () => Float32Array;
}

const align = (n: number): number => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/**
 * Write a GGUF file for a Llama / Qwen2 / Qwen3 model: metadata, the tokenizer of `tokenizerDir`,
 * and the tensors (F32, or F16 for matrices). Shapes are checked against the config, naming the
 * tensor; the file is written under a temporary name and renamed.
 */
export function writeGguf(file: string, args: { config: HfArchConfig; tensors: HfNamedTensors; dtype: 'f32' | 'f16'; tokenizerDir: string; name?: string }): void {
  const c = args.config;
  const arch = c.modelType;
  const tok = HfTokenizer.fromFolder(args.tokenizerDir);

  const expected = new Map(hfTensorShapes(c).map((t) => [t.name, t.shape]));
  const given = new Map(args.tensors.map((t) => [t.name, t]));
  for (const [name, shape] of expected) {
    const t = given.get(name);
    if (!t) throw new Error(`GGUF export: tensor ${name} is missing (config needs it with shape [${shape.join(', ')}])`);
    if (t.shape.join(',') !== shape.join(',')) throw new Error(`GGUF export: tensor ${name} has shape [${t.shape.join(', ')}] but the config implies [${shape.join(', ')}]`);
  }

  const kvs: Array<[string, KvValue]> = [
    ['general.architecture', str(arch)],
    ['general.type', str('model')],
    ['general.name', str(args.name ?? 'marsrl-export')],
    ['general.file_type', u32(FILE_TYPE[args.dtype])],
    ['general.quantization_version', u32(2)],
    [`${arch}.vocab_size`, u32(c.vocabSize)],
    [`${arch}.context_length`, u32(c.maxPositions)],
    [`${arch}.embedding_length`, u32(c.hiddenSize)],
    [`${arch}.block_count`, u32(c.numLayers)],
    [`${arch}.feed_forward_length`, u32(c.intermediateSize)],
    [`${arch}.attention.head_count`, u32(c.numHeads)],
    [`${arch}.attention.head_count_kv`, u32(c.numKvHeads)],
    [`${arch}.attention.layer_norm_rms_epsilon`, f32(c.rmsNormEps)],
    [`${arch}.attention.key_length`, u32(c.headDim)],
    [`${arch}.attention.value_length`, u32(c.headDim)],
    [`${arch}.rope.freq_base`, f32(c.ropeTheta)],
    [`${arch}.rope.dimension_count`, u32(c.headDim)],
  ];
  if (c.ropeScaling?.type === 'linear') {
    kvs.push([`${arch}.rope.scaling.type`, str('linear')]);
    kvs.push([`${arch}.rope.scaling.factor`, f32(c.ropeScaling.factor)]);
  }
  pushAll(kvs, ggufTokenizerKvs(tok, c.vocabSize));

  const planned: PlannedTensor[] = [];
  let offset = 0;
  const plan = (name: string, shape: number[], f16: boolean, data: () => Float32Array) => {
    const elements = shape.reduce((a, b) => a * b, 1);
    const type = f16 ? GgmlType.F16 : GgmlType.F32;
    const bytes = elements * (f16 ? 2 : 4);
    planned.push({ name, ne: [...shape].reverse(), type, bytes, offset, data });
    offset = align(offset + bytes);
  };
  if (c.ropeScaling?.type === 'llama3') {
    const factors = llama3RopeFactors(c);
    plan('rope_freqs.weight', [factors.length], false, () => factors);
  }
  for (const { name } of hfTensorShapes(c)) {
    const t = given.get(name)!;
    const permute = arch === 'llama' && /self_attn\.(q|k)_proj\.(weight|bias)$/.test(name);
    const heads = name.includes('q_proj') ? c.numHeads : c.numKvHeads;
    const rowLength = t.shape.length === 2 ? t.shape[1] : 1;
    const data = permute ? () => permuteRotaryRows(t.data(), heads, rowLength) : t.data;
    plan(ggufTensorName(name), t.shape, args.dtype === 'f16' && t.shape.length >= 2, data);
  }

  const head = new ByteSink();
  head.u32(GGUF_MAGIC);
  head.u32(GGUF_VERSION);
  head.u64(planned.length);
  head.u64(kvs.length);
  for (const [key, value] of kvs) writeKv(head, key, value);
  for (const t of planned) {
    head.string(t.name);
    head.u32(t.ne.length);
    for (const d of t.ne) head.u64(d);
    head.u32(t.type);
    head.u64(t.offset);
  }
  head.zeros(align(head.length) - head.length);

  writeFileAtomically(file, (fd) => {
    fs.writeSync(fd, head.buffer());
    let written = 0;
    for (const t of planned) {
      if (t.offset > written) {
        fs.writeSync(fd, Buffer.alloc(t.offset - written));
        written = t.offset;
      }
      const values = t.data();
      if (values.length * (t.type === GgmlType.F16 ? 2 : 4) !== t.bytes) throw new Error(`GGUF export: tensor ${t.name} produced ${values.length} values, expected ${t.bytes / (t.type === GgmlType.F16 ? 2 : 4)}`);
      let bytes: Uint8Array;
      if (t.type === GgmlType.F32) bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
      else {
        const halves = new Uint16Array(values.length);
        for (let i = 0; i < values.length; i++) halves[i] = f32ToF16Bits(values[i]);
        bytes = new Uint8Array(halves.buffer);
      }
      writeFully(fd, bytes);
      written += t.bytes;
    }
  });
}
