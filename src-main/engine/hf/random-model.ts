/**
 * A Hugging Face checkpoint folder with random weights and a real tokenizer (issue #13): what the
 * tests and `npm run bench -- hf` load, since no model weights can be downloaded here. The folder
 * is laid out exactly as one from the Hub: config.json, generation_config.json, the tokenizer's
 * files, and model.safetensors (or model-0000k-of-0000n.safetensors + model.safetensors.index.json).
 *
 * Weight scales are chosen so the function is far from trivial (next-token distributions with
 * logits of standard deviation ~2.5, not the near-uniform ones of a 0.02 initialisation), so
 * equality against another engine says something about every part of the forward pass.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Rng } from '../util/rng';
import { hfConfigJson, hfTensorShapes, type HfArchConfig, type HfModelType, type HfRopeScaling } from './config';
import { INDEX_FILE, SINGLE_FILE, writeSafetensors, type SafetensorsDtype, type TensorToWrite } from './safetensors';

export interface RandomHfModelOptions {
  arch: HfModelType;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  /** Per-head width (default hidden / heads). */
  headDim?: number;
  intermediate: number;
  /** A folder holding tokenizer.json and tokenizer_config.json (copied). */
  tokenizerDir: string;
  tie: boolean;
  dtype: SafetensorsDtype;
  ropeScaling?: HfRopeScaling;
  ropeTheta?: number;
  seed: number;
  /** max_position_embeddings (default 256). */
  context?: number;
  /** Number of safetensors shards (default 1: a single model.safetensors). */
  shards?: number;
  /** Embedding rows (default: the tokenizer's largest id + 1; real checkpoints often pad it). */
  vocabSize?: number;
}

/** Files of a tokenizer folder that a Hugging Face loader reads (copied when present). */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'vocab.json', 'merges.txt'];

interface TokenizerFacts {
  size: number;
  bos: number | null;
  eos: number[];
}

/** Vocabulary size and special ids from tokenizer.json / tokenizer_config.json. */
function tokenizerFacts(dir: string): TokenizerFacts {
  const tokPath = path.join(dir, 'tokenizer.json');
  const cfgPath = path.join(dir, 'tokenizer_config.json');
  const tok = JSON.parse(fs.readFileSync(tokPath, 'utf8')) as { model: { vocab: Record<string, number> }; added_tokens?: Array<{ id: number; content: string }> };
  const cfg = fs.existsSync(cfgPath) ? (JSON.parse(fs.readFileSync(cfgPath, 'utf8')) as Record<string, unknown>) : {};
  const ids = new Map<string, number>(Object.entries(tok.model.vocab));
  for (const t of tok.added_tokens ?? []) ids.set(t.content, t.id);
  let size = 0;
  for (const id of ids.values()) size = Math.max(size, id + 1);
  const idOf = (v: unknown): number | null => {
    const s = typeof v === 'string' ? v : typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string' ? (v as { content: string }).content : null;
    return s === null ? null : (ids.get(s) ?? null);
  };
  const eos = [idOf(cfg.eos_token), idOf(cfg.pad_token)].filter((x): x is number => x !== null);
  return { size, bos: idOf(cfg.bos_token), eos: [...new Set(eos)] };
}

/** The architecture config the options describe. */
export function randomHfConfig(opts: RandomHfModelOptions, vocabSize: number, facts: Pick<TokenizerFacts, 'bos' | 'eos'>): HfArchConfig {
  const architecture = ({ llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' } as const)[opts.arch];
  return {
    architecture,
    modelType: opts.arch,
    hiddenSize: opts.hidden,
    intermediateSize: opts.intermediate,
    numLayers: opts.layers,
    numHeads: opts.heads,
    numKvHeads: opts.kvHeads,
    headDim: opts.headDim ?? opts.hidden / opts.heads,
    vocabSize,
    maxPositions: opts.context ?? 256,
    rmsNormEps: 1e-6,
    ropeTheta: opts.ropeTheta ?? (opts.arch === 'llama' ? 500000 : 1000000),
    ropeScaling: opts.ropeScaling ?? null,
    tieWordEmbeddings: opts.tie,
    attentionBias: opts.arch === 'qwen2',
    qkNorm: opts.arch === 'qwen3',
    torchDtype: { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[opts.dtype],
    bosTokenId: facts.bos,
    eosTokenId: facts.eos.length === 1 ? facts.eos[0] : facts.eos,
  };
}

/** Standard deviation of each tensor's random values (see the module comment). */
function scaleOf(name: string, shape: number[], c: HfArchConfig): { mean: number; std: number } {
  if (name.endsWith('norm.weight')) return { mean: 1, std: 0.15 };
  if (name.endsWith('.bias')) return { mean: 0, std: 0.3 };
  if (name === 'model.embed_tokens.weight' || name === 'lm_head.weight') return { mean: 0, std: 2.5 / Math.sqrt(c.hiddenSize) };
  return { mean: 0, std: 1 / Math.sqrt(shape[1]) }; // linears [out, in]: unit-variance outputs
}

/**
 * Write a random checkpoint folder (created if needed; existing files of the same names are
 * replaced). Deterministic in `seed`. Returns the config written.
 */
export function writeRandomHfModel(dir: string, opts: RandomHfModelOptions): HfArchConfig {
  const facts = tokenizerFacts(opts.tokenizerDir);
  const vocabSize = opts.vocabSize ?? facts.size;
  if (vocabSize < facts.size) throw new Error(`vocabSize ${vocabSize} is smaller than the tokenizer's ${facts.size} ids`);
  const config = randomHfConfig(opts, vocabSize, facts);
  fs.mkdirSync(dir, { recursive: true });
  for (const f of TOKENIZER_FILES) {
    const src = path.join(opts.tokenizerDir, f);
    if (fs.existsSync(src)) fs.copyFileSync(src, path.join(dir, f));
  }
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(hfConfigJson(config), null, 2) + '\n');
  const gen: Record<string, unknown> = { eos_token_id: config.eosTokenId };
  if (config.bosTokenId !== null) gen.bos_token_id = config.bosTokenId;
  fs.writeFileSync(path.join(dir, 'generation_config.json'), JSON.stringify(gen, null, 2) + '\n');

  const tensors: TensorToWrite[] = hfTensorShapes(config).map(({ name, shape }) => ({
    name,
    shape,
    dtype: opts.dtype,
    data: () => {
      const { mean, std } = scaleOf(name, shape, config);
      const rng = new Rng(opts.seed, `hf-random/${name}`);
      const out = new Float32Array(shape.reduce((a, b) => a * b, 1));
      for (let i = 0; i < out.length; i++) out[i] = mean + std * rng.normal();
      return out;
    },
  }));
  const per = Math.ceil(tensors.length / Math.max(1, Math.min(opts.shards ?? 1, tensors.length)));
  const shards = Math.ceil(tensors.length / per); // no empty shard
  const metadata = { format: 'pt' };
  if (shards === 1) {
    writeSafetensors(path.join(dir, SINGLE_FILE), tensors, metadata);
    return config;
  }
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  for (let s = 0; s < shards; s++) {
    const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = tensors.slice(s * per, (s + 1) * per);
    for (const t of part) {
      weightMap[t.name] = file;
      totalSize += t.shape.reduce((a, b) => a * b, 1) * (opts.dtype === 'F32' ? 4 : 2);
    }
    writeSafetensors(path.join(dir, file), part, metadata);
  }
  fs.writeFileSync(path.join(dir, INDEX_FILE), JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2) + '\n');
  return config;
}
