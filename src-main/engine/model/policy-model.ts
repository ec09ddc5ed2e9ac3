/**
 * The policy seam (issue #13): what rollout, evaluation, training, checkpoints, serving and the UI
 * need from a policy's model and its tokenizer, so that no caller knows which family it has.
 * Families behind it: the Studio's own GPT with its character tokenizer (engine/gpt),
 * the Hugging Face decoder family (Llama / Qwen2 / Qwen3, engine/hf), and — inference only —
 * a served endpoint (issue #16), which implements `PolicyTokenizer` but decodes remotely.
 *
 * Conventions every implementation keeps (tested for each family):
 *  - token batches are number[][] rows of equal length [B][T]; `leftPad[b]` leading tokens of
 *    row b are padding, masked as keys, and the row's positions start after them;
 *  - logits handed to the sampler are plain Float32Array [rows·vocabSize] for the last position
 *    only: never the whole [tokens × vocabulary] block (152k-token vocabularies);
 *  - a resumed decode (a cache rebuilt from the tokens so far) equals an uninterrupted one, and
 *    the cache is rebuilt whenever `version` changed since it was made;
 *  - `nextTokenStatsTimeMajor` is differentiable with respect to `variables` (the trainable
 *    parameters only: all weights for full fine-tuning, the adapters for LoRA);
 *  - no tensor outlives the call that made it unless it is returned (tests count tf.memory()).
 */
import type * as tf from '@tensorflow/tfjs-core';

/** One trainable parameter in the flat buffer that `getWeights`/`setWeights` and gradients use. */
export interface ParamSpec {
  name: string;
  shape: number[];
  /** Offset (in float32 elements) of this parameter in the flat buffer. */
  offset: number;
  size: number;
  /** Whether AdamW weight decay applies (matrices and embeddings; not norm gains or biases). */
  decay: boolean;
}

/**
 * An incremental-decoding cache. Opaque to callers: only the model that made it reads it. It
 * records the `version` of the weights it was computed with, the filled length and each row's
 * left padding.
 */
export interface DecodeCache {
  readonly version: number;
  readonly length: number;
  readonly leftPad: readonly number[];
}

export type ModelFamily = 'gpt' | 'hf';

export interface PolicyModel<C extends DecodeCache = DecodeCache> {
  readonly family: ModelFamily;
  readonly vocabSize: number;
  /** Longest sequence (prompt + response) the model accepts, in tokens. */
  readonly context: number;
  /**
   * Weights version: changes whenever a trainable value changed (optimizer step, setWeights).
   * Unique across the models of a process, so a cache never mistakes another model's for its own.
   */
  readonly version: number;

  /** Trainable variables, in `specs` order. */
  readonly variables: tf.Variable[];
  readonly specs: ParamSpec[];
  /** Total size of the trainable flat buffer. */
  readonly numParams: number;

  /**
   * Time-major next-token statistics: for t = 0..T−2, column t·B + b of the result holds
   * log π(tokens[b][t+1] | tokens[b][≤t]) in row 0 and the entropy of that distribution in row 1
   * (zeros when `entropy` is false). With `temperature` τ ≠ 1 both refer to softmax(logits / τ).
   * Returns [2, (T−1)·B]; differentiable with respect to `variables`.
   */
  nextTokenStatsTimeMajor(tokens: number[][], opts?: { temperature?: number; entropy?: boolean; leftPad?: number[] }): { stats: tf.Tensor2D; T: number; B: number };

  /**
   * Run prompt rows (equal length T, left-padded by `leftPad`) through the model, keeping keys
   * and values for up to `capacity` positions (≥ T). Returns the cache and the next-token logits
   * of each row, [B·V].
   */
  prefill(rows: number[][], leftPad: number[], capacity: number): { cache: C; logits: Float32Array };
  /**
   * Feed one token per row at the given positions (each row's position counts from the end of its
   * padding). Rows false in `live` are finished: their output is not computed. Consumes the old
   * cache; returns the extended one and the next-token logits [B·V].
   */
  decodeStep(tokens: Int32Array, positions: Int32Array, cache: C, live?: boolean[]): { cache: C; logits: Float32Array };
  /** Keep only the given rows of a cache (the old one is consumed). */
  selectCacheRows(cache: C, rows: number[]): C;
  /** Release a cache's tensors / buffers. */
  disposeCache(cache: C): void;
  /**
   * Join caches row-wise (rows in order) into one, right-aligned on the shortest time axis that
   * holds them (kv-join.ts), with room for `room` more positions; the inputs are consumed. What
   * continuous batching joins a running batch with (issue #16); a family without it is served
   * one batch at a time.
   */
  joinCaches?(caches: C[], room: number): C;
  /** Next-token logits [B·V] of the last position of each row, recomputed without a cache. */
  lastLogits(rows: number[][], leftPad: number[]): Float32Array;
  /**
   * Asynchronous twins of the calls that read values back (issue #15): WebGPU in Node has no
   * synchronous readback (see readback.ts), so the sampler uses these there. Both families have
   * them; a family without them reads back synchronously and is refused on webgpu by name.
   */
  prefillAsync?(rows: number[][], leftPad: number[], capacity: number): Promise<{ cache: C; logits: Float32Array }>;
  decodeStepAsync?(tokens: Int32Array, positions: Int32Array, cache: C, live?: boolean[]): Promise<{ cache: C; logits: Float32Array }>;
  lastLogitsAsync?(rows: number[][], leftPad: number[]): Promise<Float32Array>;
  getWeightsAsync?(): Promise<Float32Array>;

  /** Trainable weights as one flat buffer in `specs` order (to send between processes). */
  getWeights(): Float32Array;
  setWeights(flat: Float32Array): void;
  dispose(): void;
}

/** A chat message rendered by a model's chat template (the engine's vocabulary, shared with the agents' formats). */
export type { ChatMessage } from '../vocabulary';

/**
 * How a role's prompt and response become tokens for one policy. The GPT family writes
 * `<bos> prompt <role>` … `<eos>`; the Hugging Face family renders a chat conversation with the
 * model's own chat template and stops on the ids of generation_config.json.
 */
export interface PolicyTokenizer {
  readonly vocabSize: number;
  /** Filler id for right-padding training batches (masked out of every loss). */
  readonly padId: number;
  /** Ids that end a response (kept as the response's last token). */
  readonly stopTokens: readonly number[];
  /** A role's whole prompt, ready for the model (template, special tokens and all). */
  promptTokens(role: 'solver' | 'verifier' | 'corrector', promptText: string): number[];
  /** A response's target tokens for supervised warm start, ending with a stop token. */
  targetTokens(responseText: string): number[];
  /** The text of sampled response tokens (stop and other special tokens dropped). */
  responseText(tokens: readonly number[]): string;
}
