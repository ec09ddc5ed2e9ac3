/**
 * A tiny Qwen3 model made from scratch for a task (issue #14, the `tiny-qwen` preset): the
 * tokenizer learned on the texts the task's agents read and write (tiny-tokenizer.ts), a
 * Qwen3ForCausalLM config.json (q/k norm, grouped-query attention, tied embeddings as the small
 * Qwen3 checkpoints have), and freshly initialised weights in model.safetensors — the Hugging
 * Face layout, so `marsrl pretrain` warm-starts it on the same path a downloaded Qwen takes.
 *
 * Initialisation for training, not for tests (random-model.ts scales weights up so that forward
 * passes are far from trivial): GPT-2's scheme (Radford et al. 2019, §2.3), normal(0, 0.02) for
 * embeddings and linears with the residual-stream outputs (o_proj, down_proj) scaled by
 * 1/√(2·layers), norms at 1.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Role } from '#shared/agents';
import { textFormatOf } from '../agents/prompts';
import type { Problem, TaskFamily } from '../tasks/types';
import { Rng } from '../util/rng';
import { hfConfigJson, hfTensorShapes, type HfArchConfig } from './config';
import { SINGLE_FILE, writeSafetensors } from './safetensors';
import { writeTinyTokenizer, type TinyTokenizerFacts } from './tiny-tokenizer';

/** The sizes of a tiny Qwen3 (config `pretrain.hf_scratch`). */
export interface TinyQwenSizes {
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  /** max_position_embeddings. */
  context: number;
  /** Most BPE merges the tokenizer learns. */
  merges: number;
}

/**
 * The texts a tokenizer for `family` should cover: for each problem its question, the Solver's
 * reference solution, a constructed mistake, the Verifier's findings on both, and every role's
 * rendered prompt (system and user messages) — plus `extra` (system prompts a policy adds).
 */
export function taskCorpus(family: TaskFamily, problems: readonly Problem[], seed: number, extra: readonly string[] = []): string[] {
  const rng = new Rng(seed, 'tiny-qwen/corpus');
  const format = textFormatOf(family);
  const texts: string[] = [...extra];
  for (const problem of problems) {
    const reference = family.solverTarget(problem);
    const wrong = family.corruptSolution(problem, reference, rng);
    const report = family.verifierTarget(problem, wrong);
    texts.push(reference, wrong, report, family.verifierTarget(problem, reference), family.correctorTarget(problem, wrong, report));
    const prompts: Record<Role, string> = {
      solver: format.solverPrompt(problem),
      verifier: format.verifierPrompt(problem, wrong),
      corrector: format.correctorPrompt(problem, wrong, report),
    };
    texts.push(...Object.values(prompts));
  }
  return texts;
}

/** The Qwen3ForCausalLM architecture of the sizes, for a vocabulary of `vocabSize` ids. */
export function tinyQwenConfig(sizes: TinyQwenSizes, tokens: Pick<TinyTokenizerFacts, 'vocabSize' | 'padId' | 'imEndId'>): HfArchConfig {
  return {
    architecture: 'Qwen3ForCausalLM',
    modelType: 'qwen3',
    hiddenSize: sizes.hidden,
    intermediateSize: sizes.intermediate,
    numLayers: sizes.layers,
    numHeads: sizes.heads,
    numKvHeads: sizes.kvHeads,
    headDim: sizes.headDim,
    vocabSize: tokens.vocabSize,
    maxPositions: sizes.context,
    rmsNormEps: 1e-6,
    ropeTheta: 1_000_000,
    ropeScaling: null,
    tieWordEmbeddings: true,
    attentionBias: false,
    qkNorm: true,
    torchDtype: 'float32',
    bosTokenId: tokens.padId,
    eosTokenId: tokens.imEndId,
  };
}

/**
 * Write a tiny Qwen3 folder at `dir`: tokenizer learned on `corpus`, config.json, freshly
 * initialised model.safetensors (deterministic in `seed`). Returns the architecture written.
 */
export function writeTinyQwenModel(dir: string, args: { sizes: TinyQwenSizes; corpus: readonly string[]; seed: number }): HfArchConfig {
  const { sizes } = args;
  if (sizes.heads % sizes.kvHeads !== 0) throw new Error(`tiny qwen: heads (${sizes.heads}) must be a multiple of kv_heads (${sizes.kvHeads})`);
  const tokens = writeTinyTokenizer(dir, { corpus: args.corpus, maxMerges: sizes.merges, context: sizes.context });
  const config = tinyQwenConfig(sizes, tokens);
  fs.writeFileSync(path.join(dir, 'config.json'), `${JSON.stringify(hfConfigJson(config), null, 2)}\n`);
  const residualScale = 1 / Math.sqrt(2 * sizes.layers);
  writeSafetensors(
    path.join(dir, SINGLE_FILE),
    hfTensorShapes(config).map(({ name, shape }) => ({
      name,
      shape,
      dtype: 'F32' as const,
      data: () => {
        const out = new Float32Array(shape.reduce((a, b) => a * b, 1));
        if (name.endsWith('norm.weight')) return out.fill(1);
        const std = 0.02 * (/o_proj|down_proj/.test(name) ? residualScale : 1);
        const rng = new Rng(args.seed, `tiny-qwen/${name}`);
        for (let i = 0; i < out.length; i++) out[i] = std * rng.normal();
        return out;
      },
    })),
    { format: 'pt' },
  );
  return config;
}
