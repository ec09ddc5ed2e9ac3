/**
 * config.json of a Hugging Face decoder checkpoint (issue #13): the architecture the Studio runs
 * (Llama, Qwen2, Qwen3), read field by field, and everything that would change the function the
 * checkpoint computes refused by name — a model that silently ignored a key would run, but not
 * the model its author trained.
 *
 * Sources of the fields and their defaults: transformers' configuration_llama.py,
 * configuration_qwen2.py and configuration_qwen3.py (read, not copied); rope scaling from
 * transformers' modeling_rope_utils.py (`linear`, `llama3`).
 */
import { BYTES_PER_FLOAT, formatCount, machineLimitText, machineMemoryBytes } from '../model/size-limits';
import { formatBytes } from '#shared/format';

export type HfArchitecture = 'LlamaForCausalLM' | 'Qwen2ForCausalLM' | 'Qwen3ForCausalLM';
export type HfModelType = 'llama' | 'qwen2' | 'qwen3';

export type HfRopeScaling =
  | null
  | { type: 'linear'; factor: number }
  | { type: 'llama3'; factor: number; lowFreqFactor: number; highFreqFactor: number; originalMaxPositions: number };

/** The architecture of a checkpoint, with every field the forward pass depends on. */
export interface HfArchConfig {
  architecture: HfArchitecture;
  modelType: HfModelType;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  /** Key/value heads (grouped-query attention when < numHeads). */
  numKvHeads: number;
  /** Per-head width; Qwen3 states it explicitly and it need not be hiddenSize / numHeads. */
  headDim: number;
  vocabSize: number;
  /** max_position_embeddings: the context the Studio allows. */
  maxPositions: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: HfRopeScaling;
  /** The LM head is the token embedding (no lm_head.weight is read). */
  tieWordEmbeddings: boolean;
  /** Biases on q_proj, k_proj, v_proj (always on for Qwen2; never elsewhere here). */
  attentionBias: boolean;
  /** Qwen3's per-head RMSNorm of queries and keys before RoPE. */
  qkNorm: boolean;
  torchDtype: string | null;
  bosTokenId: number | null;
  eosTokenId: number | number[] | null;
}

const ARCH_TYPES: Record<HfArchitecture, HfModelType> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

/** Keys that mark a mixture-of-experts model (Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek …). */
const MOE_KEYS = [
  'num_experts',
  'num_local_experts',
  'num_experts_per_tok',
  'moe_intermediate_size',
  'shared_expert_intermediate_size',
  'n_routed_experts',
  'n_shared_experts',
  'decoder_sparse_step',
  'mlp_only_layers',
];

function fail(file: string, key: string, msg: string): never {
  throw new Error(`${file}: ${key}: ${msg}`);
}

/**
 * Parse and check a config.json. `file` names it in errors. Refuses (naming the key): an unknown
 * or missing architecture / model_type, MoE keys, sliding-window attention switched on, rope
 * scaling other than none / linear / llama3, partial rotary embeddings, an activation other than
 * SiLU, o_proj or MLP biases, and head counts that do not divide.
 */
export function parseHfConfig(json: unknown, file: string): HfArchConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail(file, '(top level)', 'config.json must be a JSON object');
  const j = json as Record<string, unknown>;

  const archs = j.architectures;
  if (!Array.isArray(archs) || archs.length !== 1 || typeof archs[0] !== 'string') {
    fail(file, 'architectures', `expected a list with one architecture (one of ${Object.keys(ARCH_TYPES).join(', ')}), got ${JSON.stringify(archs)}`);
  }
  const architecture = archs[0] as string;
  if (!(architecture in ARCH_TYPES)) {
    fail(file, 'architectures', `${architecture} is not supported (supported: ${Object.keys(ARCH_TYPES).join(', ')})`);
  }
  const arch = architecture as HfArchitecture;
  const modelType = ARCH_TYPES[arch];
  if (j.model_type !== modelType) fail(file, 'model_type', `${JSON.stringify(j.model_type)} does not match ${arch} (expected "${modelType}")`);

  for (const k of MOE_KEYS) {
    if (k in j && j[k] !== null && j[k] !== 0) fail(file, k, 'mixture-of-experts models are not supported');
  }

  const int = (key: string, fallback?: number): number => {
    const v = j[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) fail(file, key, `must be a positive integer, got ${JSON.stringify(j[key])}`);
    return v;
  };
  const num = (key: string, fallback?: number): number => {
    const v = j[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(file, key, `must be a positive number, got ${JSON.stringify(j[key])}`);
    return v;
  };
  const bool = (key: string, fallback: boolean): boolean => {
    const v = j[key] ?? fallback;
    if (typeof v !== 'boolean') fail(file, key, `must be true or false, got ${JSON.stringify(j[key])}`);
    return v;
  };

  const hiddenSize = int('hidden_size');
  const numHeads = int('num_attention_heads');
  const numKvHeads = int('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) fail(file, 'num_key_value_heads', `${numKvHeads} must divide num_attention_heads (${numHeads})`);
  if (j.head_dim === undefined || j.head_dim === null) {
    if (hiddenSize % numHeads !== 0) fail(file, 'head_dim', `absent, and num_attention_heads (${numHeads}) does not divide hidden_size (${hiddenSize}); state head_dim`);
  }
  const headDim = int('head_dim', hiddenSize / numHeads);
  if (headDim % 2 !== 0) fail(file, 'head_dim', `must be even for rotary embeddings, got ${headDim}`);

  const act = j.hidden_act ?? 'silu';
  if (act !== 'silu') fail(file, 'hidden_act', `${JSON.stringify(act)} is not supported (only "silu", the SwiGLU of Llama and Qwen)`);
  if (j.mlp_bias === true) fail(file, 'mlp_bias', 'MLP biases are not supported');
  const prf = j.partial_rotary_factor;
  if (prf !== undefined && prf !== null && prf !== 1) fail(file, 'partial_rotary_factor', `only 1 (rotary embedding on the whole head) is supported, got ${JSON.stringify(prf)}`);
  if (j.use_sliding_window === true) fail(file, 'use_sliding_window', 'sliding-window attention is not supported; the checkpoint needs it switched on');

  // Qwen2's q/k/v projections always have biases (modeling_qwen2.py hard-codes bias=True; no key
  // switches them); Llama and Qwen3 have `attention_bias`, which would also put one on o_proj.
  const attentionBias = modelType === 'qwen2';
  if (modelType !== 'qwen2' && bool('attention_bias', false)) fail(file, 'attention_bias', 'attention biases (q/k/v/o_proj) are supported only in Qwen2ForCausalLM');

  const ropeScaling = parseRopeScaling(j.rope_scaling, file);
  const maxPositions = int('max_position_embeddings');

  const eos = j.eos_token_id;
  let eosTokenId: number | number[] | null = null;
  if (typeof eos === 'number') eosTokenId = eos;
  else if (Array.isArray(eos) && eos.every((e) => typeof e === 'number')) eosTokenId = eos as number[];
  else if (eos !== undefined && eos !== null) fail(file, 'eos_token_id', `must be a token id or a list of them, got ${JSON.stringify(eos)}`);
  const bos = j.bos_token_id;
  if (bos !== undefined && bos !== null && typeof bos !== 'number') fail(file, 'bos_token_id', `must be a token id, got ${JSON.stringify(bos)}`);
  const dtype = j.torch_dtype ?? j.dtype ?? null;

  return {
    architecture: arch,
    modelType,
    hiddenSize,
    intermediateSize: int('intermediate_size'),
    numLayers: int('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: int('vocab_size'),
    maxPositions,
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta: num('rope_theta', 10000),
    ropeScaling,
    tieWordEmbeddings: bool('tie_word_embeddings', false),
    attentionBias,
    qkNorm: modelType === 'qwen3',
    torchDtype: typeof dtype === 'string' ? dtype : null,
    bosTokenId: typeof bos === 'number' ? bos : null,
    eosTokenId,
  };
}

function parseRopeScaling(v: unknown, file: string): HfRopeScaling {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v)) fail(file, 'rope_scaling', `must be an object or null, got ${JSON.stringify(v)}`);
  const r = v as Record<string, unknown>;
  const type = r.rope_type ?? r.type;
  const factor = (key: string): number => {
    const x = r[key];
    if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) fail(file, `rope_scaling.${key}`, `must be a positive number, got ${JSON.stringify(x)}`);
    return x;
  };
  if (type === 'default') return null;
  if (type === 'linear') return { type: 'linear', factor: factor('factor') };
  if (type === 'llama3') {
    const s = {
      type: 'llama3' as const,
      factor: factor('factor'),
      lowFreqFactor: factor('low_freq_factor'),
      highFreqFactor: factor('high_freq_factor'),
      originalMaxPositions: factor('original_max_position_embeddings'),
    };
    if (!(s.highFreqFactor > s.lowFreqFactor)) fail(file, 'rope_scaling.high_freq_factor', `must exceed low_freq_factor (${s.lowFreqFactor}), got ${s.highFreqFactor}`);
    return s;
  }
  fail(file, 'rope_scaling.rope_type', `${JSON.stringify(type)} is not supported (supported: none, "linear", "llama3"; yarn, dynamic and longrope change the function)`);
}

/** Hugging Face tensor names and shapes ([out, in] for linears) the config implies, in file order. */
export function hfTensorShapes(c: HfArchConfig): Array<{ name: string; shape: number[] }> {
  return [...hfTensorShapesLazily(c)];
}

/** `hfTensorShapes` one at a time: a check can stop at the first mismatch without listing them all. */
export function* hfTensorShapesLazily(c: HfArchConfig): Generator<{ name: string; shape: number[] }> {
  const D = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  yield { name: 'model.embed_tokens.weight', shape: [c.vocabSize, D] };
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}.`;
    yield { name: `${p}input_layernorm.weight`, shape: [D] };
    yield { name: `${p}self_attn.q_proj.weight`, shape: [q, D] };
    if (c.attentionBias) yield { name: `${p}self_attn.q_proj.bias`, shape: [q] };
    yield { name: `${p}self_attn.k_proj.weight`, shape: [kv, D] };
    if (c.attentionBias) yield { name: `${p}self_attn.k_proj.bias`, shape: [kv] };
    yield { name: `${p}self_attn.v_proj.weight`, shape: [kv, D] };
    if (c.attentionBias) yield { name: `${p}self_attn.v_proj.bias`, shape: [kv] };
    yield { name: `${p}self_attn.o_proj.weight`, shape: [D, q] };
    if (c.qkNorm) {
      yield { name: `${p}self_attn.q_norm.weight`, shape: [c.headDim] };
      yield { name: `${p}self_attn.k_norm.weight`, shape: [c.headDim] };
    }
    yield { name: `${p}post_attention_layernorm.weight`, shape: [D] };
    yield { name: `${p}mlp.gate_proj.weight`, shape: [c.intermediateSize, D] };
    yield { name: `${p}mlp.up_proj.weight`, shape: [c.intermediateSize, D] };
    yield { name: `${p}mlp.down_proj.weight`, shape: [D, c.intermediateSize] };
  }
  yield { name: 'model.norm.weight', shape: [D] };
  if (!c.tieWordEmbeddings) yield { name: 'lm_head.weight', shape: [c.vocabSize, D] };
}

/** The config.json a Hugging Face loader reads for this architecture (inverse of parseHfConfig). */
export function hfConfigJson(c: HfArchConfig): Record<string, unknown> {
  const j: Record<string, unknown> = {
    architectures: [c.architecture],
    model_type: c.modelType,
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxPositions,
    rms_norm_eps: c.rmsNormEps,
    rope_theta: c.ropeTheta,
    rope_scaling: null,
    tie_word_embeddings: c.tieWordEmbeddings,
    hidden_act: 'silu',
    torch_dtype: c.torchDtype ?? 'float32',
    bos_token_id: c.bosTokenId,
    eos_token_id: c.eosTokenId,
  };
  if (c.ropeScaling?.type === 'linear') j.rope_scaling = { rope_type: 'linear', factor: c.ropeScaling.factor };
  if (c.ropeScaling?.type === 'llama3') {
    const s = c.ropeScaling;
    j.rope_scaling = {
      rope_type: 'llama3',
      factor: s.factor,
      low_freq_factor: s.lowFreqFactor,
      high_freq_factor: s.highFreqFactor,
      original_max_position_embeddings: s.originalMaxPositions,
    };
  }
  if (c.modelType !== 'qwen2') j.attention_bias = false;
  if (c.modelType !== 'llama') j.use_sliding_window = false;
  return j;
}

/**
 * Parameters of the architecture (lm_head counted only when untied), by arithmetic: listing the
 * tensors of a config.json with num_hidden_layers 1 000 000 allocated 2.8 GB before anything could
 * say it was too large (issue #36). Equal to the sum over `hfTensorShapes` (tested).
 */
export function hfParameterCount(c: HfArchConfig): number {
  const D = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const perLayer = 2 * D + 2 * q * D + 2 * kv * D + 3 * c.intermediateSize * D + (c.attentionBias ? q + 2 * kv : 0) + (c.qkNorm ? 2 * c.headDim : 0);
  return c.vocabSize * D * (c.tieWordEmbeddings ? 1 : 2) + D + c.numLayers * perLayer;
}

/** How many tensors `hfTensorShapes` lists, without listing them. */
export function hfTensorCount(c: HfArchConfig): number {
  const perLayer = 9 + (c.attentionBias ? 3 : 0) + (c.qkNorm ? 2 : 0);
  return 2 + (c.tieWordEmbeddings ? 0 : 1) + c.numLayers * perLayer;
}

/**
 * Why a Hugging Face architecture cannot be loaded here (its float32 weights alone exceed the
 * machine's memory), naming the config.json key that makes it large; null when it fits.
 */
export function hfWeightsProblem(c: HfArchConfig, memory = machineMemoryBytes()): { key: string; message: string } | null {
  const params = hfParameterCount(c);
  const bytes = params * BYTES_PER_FLOAT;
  if (bytes <= memory && Number.isFinite(bytes)) return null;
  const embedding = c.vocabSize * c.hiddenSize * (c.tieWordEmbeddings ? 1 : 2);
  const key = embedding > params / 2 ? 'vocab_size' : 'num_hidden_layers';
  const figure = key === 'vocab_size' ? `vocab_size ${formatCount(c.vocabSize)} × hidden_size ${formatCount(c.hiddenSize)}` : `num_hidden_layers ${formatCount(c.numLayers)} (hidden_size ${formatCount(c.hiddenSize)}, intermediate_size ${formatCount(c.intermediateSize)})`;
  return {
    key,
    message: `${figure} gives ${formatCount(params)} parameters: ${formatBytes(bytes)} as float32 (the Studio computes in float32) before anything else is held, and ${machineLimitText(memory)}; nothing was loaded`,
  };
}
