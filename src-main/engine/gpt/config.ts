/**
 * The Studio's GPT family, its configuration and parameter layout: what a config block, a
 * checkpoint manifest or a size check needs to know of a GPT without building one (no tensors
 * here, so the config checks load none of TensorFlow.js).
 */
import type { ModelConfig } from '../config/schema';
import type { ParamSpec } from '../model/policy-model';

/** The run config's model block plus the vocabulary size (which comes from the tokenizer). */
export interface GPTConfig extends ModelConfig {
  vocabSize: number;
}

export function validateConfig(c: GPTConfig): void {
  const ints: Array<keyof GPTConfig> = ['vocabSize', 'd_model', 'n_layers', 'n_heads', 'context', 'mlp_ratio'];
  for (const k of ints) {
    if (!Number.isInteger(c[k]) || (c[k] as number) < 1) throw new Error(`model config: ${k} must be a positive integer, got ${c[k]}`);
  }
  if (c.d_model % c.n_heads !== 0) throw new Error(`model config: n_heads (${c.n_heads}) must divide d_model (${c.d_model})`);
}

/** Parameter names and shapes in their fixed order (the order of the flat weight buffer). */
export function paramSpecs(c: GPTConfig): ParamSpec[] {
  const D = c.d_model;
  const list: Array<[string, number[]]> = [
    ['wte', [c.vocabSize, D]],
    ['wpe', [c.context, D]],
  ];
  for (let i = 0; i < c.n_layers; i++) {
    list.push(
      [`h${i}.ln1.g`, [D]],
      [`h${i}.attn.wqkv`, [D, 3 * D]],
      [`h${i}.attn.wproj`, [D, D]],
      [`h${i}.ln2.g`, [D]],
      [`h${i}.mlp.wfc`, [D, c.mlp_ratio * D]],
      [`h${i}.mlp.wproj`, [c.mlp_ratio * D, D]],
    );
  }
  list.push(['lnf.g', [D]], ['head', [D, c.vocabSize]]);
  let offset = 0;
  return list.map(([name, shape]) => {
    const size = shape.reduce((a, b) => a * b, 1);
    const spec = { name, shape, offset, size, decay: shape.length > 1 };
    offset += size;
    return spec;
  });
}
