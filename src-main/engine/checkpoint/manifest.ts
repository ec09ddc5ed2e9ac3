/**
 * A checkpoint's manifest (checkpoint.json), read and checked without the tensor backend: what the
 * run manager checks before a run is recorded (a policy's `init`), and what the inspectors and
 * exporters read first. Loading and saving tensors stay in checkpoint.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatBytes } from '#shared/format';
import { hfConfigJson, hfWeightsProblem, parseHfConfig, type HfArchConfig } from '../hf/config';
import type { LoraSettings, PEFT_WEIGHTS } from '../hf/lora';
import type { TokenizerJSON } from '../gpt/tokenizer';
import { validateConfig as validateGptConfig, type GPTConfig } from '../gpt/config';
import type { LrSchedule } from '../model/optim';
import type { OptimizerConfig } from '../config/schema';
import { formatCount, gptParameterCount, machineLimitText, machineMemoryBytes } from '../model/size-limits';
import { resourcesDir } from '../resources';
import { LIMITS, readTextFile } from '../util/bounded-read';

export const CHECKPOINT_MANIFEST = 'checkpoint.json';
export const HF_WEIGHTS_FILE = 'weights.safetensors';
export const HF_TOKENIZER_DIR = 'tokenizer';

export interface CheckpointManifest {
  format: 'marsrl-checkpoint';
  version: 1;
  /** Absent in GPT checkpoints (and every checkpoint written before issue #13). */
  family?: 'gpt';
  step: number;
  savedAt: string;
  model: {
    config: GPTConfig;
    params: Array<{ name: string; shape: number[]; offset: number; size: number }>;
    numParams: number;
    dtype: 'float32';
    byteOrder: 'little';
  };
  tokenizer: TokenizerJSON;
  /** Configuration snapshot of the run (whatever the caller passes, JSON). */
  config: unknown;
  optimizer: null | {
    kind: 'adam';
    step: number;
    config: OptimizerConfig;
    schedule?: LrSchedule;
  };
  /** SHA-256 of each binary file, checked on load. */
  files: Record<string, { sha256: string; bytes: number }>;
  extra?: unknown;
}

/** The base model a Hugging Face policy started from (what a run records; see load.ts). */
export interface HfBaseIdentity {
  path: string;
  configDigest: string;
  weightsDigest: string;
}

/** How a Hugging Face policy renders its prompts (hfPolicyTokenizer's arguments). */
export interface HfPromptSettings {
  systemPrompts: Partial<Record<'solver' | 'verifier' | 'corrector', string>>;
  enableThinking: boolean;
}

export interface HfCheckpointManifest {
  format: 'marsrl-checkpoint';
  version: 1;
  family: 'hf';
  step: number;
  savedAt: string;
  model: {
    base: HfBaseIdentity;
    config: HfArchConfig;
    params: Array<{ name: string; shape: number[]; offset: number; size: number }>;
    numParams: number;
    dtype: 'float32';
    /**
     * The trainable weights: one F32 tensor per parameter, named and shaped as `params`
     * (weights.safetensors); for a LoRA checkpoint the adapters as PEFT writes them
     * (adapter_model.safetensors, PEFT's [r, in] / [out, r] shapes, beside adapter_config.json).
     */
    weights: typeof HF_WEIGHTS_FILE | typeof PEFT_WEIGHTS;
  };
  tokenizer: { kind: 'hf'; dir: typeof HF_TOKENIZER_DIR; prompts: HfPromptSettings };
  /** A LoRA policy (issue #14): its settings and the frozen base the adapters sit on. */
  lora?: { settings: LoraSettings; base: LoraBaseIdentity };
  config: unknown;
  optimizer: CheckpointManifest['optimizer'];
  files: Record<string, { sha256: string; bytes: number }>;
  extra?: unknown;
}

/**
 * The frozen base a LoRA policy's adapters sit on: a Hugging Face folder, or a Studio checkpoint
 * of the hf family holding full weights (a warm start given as `init`). The digests identify the
 * weights: they key the process's shared base and are checked when it is loaded.
 */
export interface LoraBaseIdentity {
  kind: 'folder' | 'checkpoint';
  path: string;
  /** folder: SHA-256 of config.json; checkpoint: of its base folder's config.json. */
  configDigest: string;
  /** folder: hfModelIdentity's digest of the safetensors files; checkpoint: SHA-256 of its weights.safetensors. */
  weightsDigest: string;
}

/** Read and verify a checkpoint's manifest (either family) without loading tensors. */
export function readAnyCheckpointManifest(dir: string): CheckpointManifest | HfCheckpointManifest {
  const file = path.join(dir, CHECKPOINT_MANIFEST);
  if (!fs.existsSync(file)) throw new Error(`no checkpoint in ${dir} (missing ${CHECKPOINT_MANIFEST})`);
  let m: CheckpointManifest | HfCheckpointManifest;
  try {
    m = JSON.parse(readTextFile(file, { maxBytes: LIMITS.settings, what: 'checkpoint manifest' })) as CheckpointManifest | HfCheckpointManifest;
  } catch (error) {
    throw new Error(error instanceof SyntaxError ? `${file} is not valid JSON (${error.message})` : (error as Error).message, { cause: error });
  }
  if (m === null || typeof m !== 'object' || m.format !== 'marsrl-checkpoint' || m.version !== 1) throw new Error(`${file} is not a MarsRL checkpoint (format ${String(m?.format)}, version ${String(m?.version)})`);
  if (m.family !== undefined && m.family !== 'gpt' && m.family !== 'hf') throw new Error(`${file}: family ${JSON.stringify(m.family)} is not one this version reads (gpt, hf)`);
  checkManifestModel(m, file);
  return m;
}

/**
 * The model a manifest describes, checked before anything is built from it (issue #36): its
 * numbers must describe a model (a checkpoint from elsewhere may say anything), and its float32
 * weights must fit this machine's memory. A checkpoint claiming a million layers is refused here,
 * not after its parameter list has been built.
 */
function checkManifestModel(m: CheckpointManifest | HfCheckpointManifest, file: string): void {
  const memory = machineMemoryBytes();
  if (m.family === 'hf') {
    let config: HfArchConfig;
    try {
      config = parseHfConfig(hfConfigJson(m.model.config), `${file} (model.config)`);
    } catch (error) {
      throw new Error(error instanceof TypeError ? `${file} (model.config): not a Hugging Face architecture (${error.message})` : (error as Error).message, { cause: error });
    }
    const problem = hfWeightsProblem(config, memory);
    if (problem) throw new Error(`${file} (model.config, ${problem.key}): ${problem.message}`);
    return;
  }
  const config = m.model?.config;
  try {
    validateGptConfig(config);
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message}`, { cause: error });
  }
  const params = gptParameterCount(config, config.vocabSize);
  if (params * 4 > memory) throw new Error(`${file} (model.config.n_layers): ${formatCount(params)} parameters (d_model ${config.d_model}, n_layers ${config.n_layers}) need ${formatBytes(params * 4)} as float32, and ${machineLimitText(memory)}; nothing was loaded`);
}

/** Read and verify a GPT checkpoint's manifest without loading tensors. */
export function readCheckpointManifest(dir: string): CheckpointManifest {
  const m = readAnyCheckpointManifest(dir);
  if (m.family === 'hf') throw new Error(`${path.join(dir, CHECKPOINT_MANIFEST)} is a checkpoint of a Hugging Face model; load it with loadHfCheckpoint`);
  return m;
}

/** The family of the checkpoint in `dir`. */
export function checkpointFamily(dir: string): 'gpt' | 'hf' {
  return readAnyCheckpointManifest(dir).family ?? 'gpt';
}

/**
 * Resolve a policy's `init` path: absolute, relative to the working directory, or relative to the
 * shipped resources folder (how presets name their starting checkpoints).
 */
export function resolveInitPath(init: string): string {
  const candidates = [path.resolve(init), path.join(resourcesDir(), init)];
  const found = candidates.find((c) => fs.existsSync(path.join(c, CHECKPOINT_MANIFEST)));
  if (!found) {
    throw new Error(`policy init checkpoint "${init}" not found (looked in ${candidates.join(' and ')}); run \`marsrl pretrain\` to make one or remove init`);
  }
  return found;
}
