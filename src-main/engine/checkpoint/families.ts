/**
 * The model families, one entry each (issue 37: a new model family is one folder, like gpt/ or
 * hf/, and one entry here). What a caller needs of a family beyond the policy seam
 * (model/policy-model.ts) is read from this table, so no layer below it knows which families
 * exist: this folder sits above every family.
 */
import type { GPT } from '../gpt/model';
import type { HfModel } from '../hf/model';
import type { LoraHfModel } from '../hf/lora';
import { BYTES_PER_FLOAT } from '../model/size-limits';
import type { ModelFamily, PolicyModel } from '../model/policy-model';

export interface ModelFamilyEntry {
  /**
   * Values a decode cache holds per position, for keys and again for values, over all layers:
   * d_model per layer for the GPT, num_kv_heads · head_dim per layer for the Hugging Face family
   * (grouped-query attention caches only the KV heads).
   */
  kvValuesPerPosition(model: PolicyModel): number;
}

export const MODEL_FAMILIES: Record<ModelFamily, ModelFamilyEntry> = {
  gpt: {
    kvValuesPerPosition(model) {
      const c = (model as unknown as GPT).config;
      return c.n_layers * c.d_model;
    },
  },
  hf: {
    kvValuesPerPosition(model) {
      const c = (model as unknown as HfModel | LoraHfModel).config;
      return c.numLayers * c.numKvHeads * c.headDim;
    },
  },
};

/**
 * Bytes of the key/value cache for `rows` sequences of up to `positions` tokens: a key and a value
 * per layer and position (gpu-memory.ts reserves them before a decode batch is built).
 */
export function kvCacheBytes(model: PolicyModel, rows: number, positions: number): number {
  const perPosition = MODEL_FAMILIES[model.family].kvValuesPerPosition(model);
  return 2 * perPosition * rows * positions * BYTES_PER_FLOAT;
}
