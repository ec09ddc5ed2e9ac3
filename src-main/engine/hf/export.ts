/**
 * A policy of the Hugging Face family written back out (issue #13): as a Hugging Face folder
 * (config.json, model.safetensors in F32/F16/BF16, the tokenizer's files, generation_config.json)
 * that transformers and vLLM load, or as a GGUF file (gguf.ts) for llama.cpp and Ollama.
 *
 * An existing output is never overwritten without `force`; the new output is written beside it
 * under a temporary name and renamed into place only once complete, so a failed export loses
 * nothing already there.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { HfArchConfig } from './config';
import { writeGguf } from './gguf';
import { checkHfTensors, readHfConfig, type HfNamedTensors } from './load';
import { HfFormatError, readTensorF32, SINGLE_FILE, writeSafetensors, type SafetensorsDtype } from './safetensors';
import { GENERATION_CONFIG, HfTokenizer, TOKENIZER_FILES } from './tokenizer';

/** An export target that exists and `force` was not given. */
export class OutputExistsError extends Error {
  constructor(readonly outputPath: string) {
    super(`${outputPath} already exists; choose another --out or pass --force to replace it`);
    this.name = 'OutputExistsError';
  }
}

const TORCH_DTYPE: Record<SafetensorsDtype, string> = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' };

/** A model folder read for export without loading it into the engine: tensors stream from disk. */
export interface HfExportSource {
  config: HfArchConfig;
  configJson: Record<string, unknown>;
  tensors: HfNamedTensors;
  tokenizerDir: string;
}

/**
 * Open a Hugging Face model folder as an export source: config.json parsed and checked,
 * every tensor's presence and shape checked against it, the tokenizer checked against the
 * embedding (each failure names the file and the key).
 */
export function hfFolderSource(dir: string): HfExportSource {
  const { config, json, file } = readHfConfig(dir);
  const tokenizer = HfTokenizer.fromFolder(dir);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new HfFormatError(path.join(dir, 'tokenizer.json'), 'model.vocab', `the tokenizer has ${tokenizer.vocabSize} ids but ${file} vocab_size (the embedding's rows) is ${config.vocabSize}: the tokenizer does not belong to these weights`);
  }
  const byName = checkHfTensors(dir, config);
  const tensors: HfNamedTensors = [];
  for (const [name, t] of byName) {
    if (config.tieWordEmbeddings && name === 'lm_head.weight') continue;
    if (name.endsWith('.rotary_emb.inv_freq')) continue;
    tensors.push({ name, shape: t.shape, data: () => readTensorF32(t) });
  }
  return { config, configJson: json, tensors, tokenizerDir: dir };
}

function refuseExisting(out: string, force: boolean | undefined): void {
  if (fs.existsSync(out) && !force) throw new OutputExistsError(out);
}

/** Put a finished temporary output in place of `out` (removing what was there only now). */
function commit(tmp: string, out: string): void {
  if (fs.existsSync(out)) {
    const old = `${out}.replaced-${process.pid}`;
    fs.renameSync(out, old);
    fs.renameSync(tmp, out);
    fs.rmSync(old, { recursive: true, force: true });
  } else fs.renameSync(tmp, out);
}

/**
 * Write a Hugging Face folder: config.json (torch_dtype set to the written dtype),
 * model.safetensors, the tokenizer files of `tokenizerDir`, and its generation_config.json (or
 * one made from the config's bos/eos ids).
 */
export function exportHfFolder(out: string, args: { config: HfArchConfig; configJson: object; tensors: HfNamedTensors; dtype: SafetensorsDtype; tokenizerDir: string; force?: boolean }): void {
  refuseExisting(out, args.force);
  const tmp = `${out}.partial-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  try {
    const configJson = { ...(args.configJson as Record<string, unknown>), torch_dtype: TORCH_DTYPE[args.dtype] };
    fs.writeFileSync(path.join(tmp, 'config.json'), `${JSON.stringify(configJson, null, 2)}\n`);
    for (const f of TOKENIZER_FILES) {
      const src = path.join(args.tokenizerDir, f);
      if (fs.existsSync(src)) fs.copyFileSync(src, path.join(tmp, f));
    }
    const generation = path.join(args.tokenizerDir, GENERATION_CONFIG);
    if (fs.existsSync(generation)) fs.copyFileSync(generation, path.join(tmp, GENERATION_CONFIG));
    else {
      const gen: Record<string, unknown> = {};
      if (args.config.bosTokenId !== null) gen.bos_token_id = args.config.bosTokenId;
      if (args.config.eosTokenId !== null) gen.eos_token_id = args.config.eosTokenId;
      fs.writeFileSync(path.join(tmp, GENERATION_CONFIG), `${JSON.stringify(gen, null, 2)}\n`);
    }
    writeSafetensors(
      path.join(tmp, SINGLE_FILE),
      args.tensors.map((t) => ({ name: t.name, shape: t.shape, dtype: args.dtype, data: t.data })),
      { format: 'pt' },
    );
    commit(tmp, out);
  } catch (error) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw error;
  }
}

/** Write a GGUF file (F32, or F16 matrices) that llama.cpp loads; refuses an existing path without `force`. */
export function exportGguf(out: string, args: { config: HfArchConfig; tensors: HfNamedTensors; dtype: 'f32' | 'f16'; tokenizerDir: string; name?: string; force?: boolean }): void {
  refuseExisting(out, args.force);
  if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new Error(`${out} is a folder; a GGUF export is one file (give --out PATH.gguf)`);
  const tmp = `${out}.partial-${process.pid}`;
  try {
    writeGguf(tmp, args);
    commit(tmp, out);
  } catch (error) {
    fs.rmSync(tmp, { force: true });
    throw error;
  }
}
