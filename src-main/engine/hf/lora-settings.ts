/**
 * LoRA settings on the Hugging Face family (issue #14): the target modules a Llama / Qwen2 / Qwen3
 * layer has, their sizes, the checks a run config and the model make of rank / alpha / dropout /
 * targets, and PEFT's tensor names. No TensorFlow.js here, so the config check can use it
 * (lora.ts holds the adapters themselves).
 */
import type { HfArchConfig } from './config';
import type { HfLinearModule } from './model';

/** The linear modules of a layer, in the order adapters are laid out in the flat buffer. */
export const LORA_MODULES: readonly HfLinearModule[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
/** Default targets (issue #14): every linear of every layer. */
export const DEFAULT_LORA_TARGETS: readonly HfLinearModule[] = LORA_MODULES;

export interface LoraSettings {
  /** r: the adapters' inner dimension. */
  rank: number;
  /** lora_alpha: the update is scaled by alpha / rank. */
  alpha: number;
  /** lora_dropout: probability of dropping an adapter input in training passes. */
  dropout: number;
  /** Target modules (Hugging Face names, e.g. q_proj), adapted in every layer. */
  targets: HfLinearModule[];
}

/** Input and output size of each linear module, and the submodule that holds it. */
export function loraModuleShapes(c: HfArchConfig): Record<HfLinearModule, { inDim: number; outDim: number; parent: 'self_attn' | 'mlp' }> {
  const D = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  return {
    q_proj: { inDim: D, outDim: q, parent: 'self_attn' },
    k_proj: { inDim: D, outDim: kv, parent: 'self_attn' },
    v_proj: { inDim: D, outDim: kv, parent: 'self_attn' },
    o_proj: { inDim: q, outDim: D, parent: 'self_attn' },
    gate_proj: { inDim: D, outDim: I, parent: 'mlp' },
    up_proj: { inDim: D, outDim: I, parent: 'mlp' },
    down_proj: { inDim: I, outDim: D, parent: 'mlp' },
  };
}

/** A setting the model refuses: the field (rank, alpha, dropout, targets) and why, with the fix. */
export interface LoraProblem {
  field: 'rank' | 'alpha' | 'dropout' | 'targets';
  message: string;
}

/**
 * What is wrong with LoRA settings for a model (empty when nothing): a target the architecture
 * has no module of (naming the ones it has), a rank above min(in, out) of a target layer (a
 * rank-r product cannot exceed it, so such adapters only waste memory), a non-positive alpha, a
 * dropout outside [0, 1).
 */
export function loraSettingsProblems(c: HfArchConfig, s: { rank: number; alpha: number; dropout: number; targets: readonly string[] }): LoraProblem[] {
  const problems: LoraProblem[] = [];
  const shapes = loraModuleShapes(c);
  const known = new Set<string>(LORA_MODULES);
  const unknown = s.targets.filter((t) => !known.has(t));
  if (s.targets.length === 0) problems.push({ field: 'targets', message: `no target modules; give some of the modules ${c.architecture} has: ${LORA_MODULES.join(', ')}` });
  if (unknown.length > 0) {
    problems.push({ field: 'targets', message: `${unknown.map((t) => JSON.stringify(t)).join(', ')} ${unknown.length === 1 ? 'is not a module' : 'are not modules'} of ${c.architecture}; its linear modules are ${LORA_MODULES.join(', ')}` });
  }
  if (!Number.isInteger(s.rank) || s.rank < 1) problems.push({ field: 'rank', message: `rank must be a whole number ≥ 1 (got ${s.rank})` });
  else {
    for (const t of s.targets) {
      const m = shapes[t as HfLinearModule];
      if (!m) continue;
      const max = Math.min(m.inDim, m.outDim);
      if (s.rank > max) {
        problems.push({ field: 'rank', message: `rank ${s.rank} is larger than the ${t} layer allows (${m.outDim}×${m.inDim}, so at most min(in, out) = ${max}); use a rank ≤ ${max} or drop ${t} from the targets` });
        break;
      }
    }
  }
  if (!(s.alpha > 0) || !Number.isFinite(s.alpha)) problems.push({ field: 'alpha', message: `alpha must be a number > 0 (got ${s.alpha}); PEFT's usual choice is 2 × rank` });
  if (!(s.dropout >= 0 && s.dropout < 1)) problems.push({ field: 'dropout', message: `dropout must be in [0, 1) (got ${s.dropout})` });
  return problems;
}

/** Refused LoRA settings: `field` is the path of the offending setting. */
export class LoraSettingsError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'LoraSettingsError';
  }
}

/** The settings, checked against the model (first problem thrown, named under `where`). */
export function checkLoraSettings(c: HfArchConfig, s: { rank: number; alpha: number; dropout: number; targets: readonly string[] }, where = 'lora'): LoraSettings {
  const problems = loraSettingsProblems(c, s);
  if (problems.length > 0) throw new LoraSettingsError(`${where}.${problems[0].field}`, problems[0].message);
  // Kept in layer order whatever order they were given in (the flat buffer's order).
  return { rank: s.rank, alpha: s.alpha, dropout: s.dropout, targets: LORA_MODULES.filter((m) => s.targets.includes(m)) };
}

/** Hugging Face name of a layer's module, e.g. model.layers.3.self_attn.q_proj. */
export function hfModuleName(c: HfArchConfig, layer: number, module: HfLinearModule): string {
  return `model.layers.${layer}.${loraModuleShapes(c)[module].parent}.${module}`;
}

/** The names PEFT's save_pretrained gives a module's adapter tensors (the adapter name dropped). */
export function peftTensorNames(c: HfArchConfig, layer: number, module: HfLinearModule): { a: string; b: string } {
  const prefix = `base_model.model.${hfModuleName(c, layer, module)}`;
  return { a: `${prefix}.lora_A.weight`, b: `${prefix}.lora_B.weight` };
}

/** A run config's `lora` block (rank required; the rest as PEFT users usually set them). */
export interface LoraConfigBlock {
  rank: number;
  alpha?: number;
  dropout?: number;
  targets?: string[];
}

/** The settings a config block stands for: alpha 2 × rank, dropout 0, every linear when left out. */
export function loraSettingsFromBlock(block: LoraConfigBlock): { rank: number; alpha: number; dropout: number; targets: string[] } {
  return { rank: block.rank, alpha: block.alpha ?? 2 * block.rank, dropout: block.dropout ?? 0, targets: block.targets ?? [...DEFAULT_LORA_TARGETS] };
}
