/**
 * Batched autoregressive sampling with a key/value cache, and resumable (segment) decoding.
 *
 * Randomness: the uniform number that picks token j of sequence s is drawn from its own stream,
 * `new Rng(seed, "tok:" + streamId + ":" + j)`, so a sequence's sample does not depend on how the
 * batch is composed, on when other sequences finish, or on how decoding is split into segments.
 *
 * Batching: prompts of different lengths are left-padded so that every sequence's next token sits
 * in the same cache column; padded key positions are masked and each row's positions start after
 * its padding, so a padded row computes what it would alone (up to float rounding). A finished
 * sequence's row stays in the batch, ignored (a step costs about the same for 16 rows as for 8),
 * until half the rows are finished; then the cache is compacted to the live rows.
 *
 * Log-probabilities returned for each sampled token:
 *  - `logProbs`: under the distribution actually sampled from — softmax(logits / temperature),
 *    restricted to the top-p nucleus and renormalised (the behaviour policy of PPO). With top_p = 1
 *    it equals `model.sequenceLogProbs(seq, { temperature })`.
 *  - `rawLogProbs`: log softmax(logits) at temperature 1, no truncation (what
 *    `model.sequenceLogProbs(seq)` recomputes by default).
 * Temperature 0 means greedy decoding; its `logProbs` are 0 (the choice has probability 1).
 * Truncation order (as transformers' logits warpers and vLLM): temperature, then top-k, then top-p
 * on the distribution renormalised over the top k.
 *
 * Generic over the policy seam (PolicyModel): the GPT and the Hugging Face family decode through
 * the same functions; the cache belongs to the model that made it and is released through it.
 *
 * Every function that runs the model has an `…Async` twin for the webgpu backend, which can read
 * logits back only asynchronously (see readback.ts). Both run the same decoding logic, written once
 * as a generator that yields each model call (`ModelCall`); the drivers make the calls with the
 * model's synchronous or asynchronous methods.
 */
import { Rng } from '../util/rng';
import type { DecodeCache, PolicyModel } from './policy-model';
import { maxOf } from '../util/arrays';

export interface SampleOptions {
  /** Token budget per sequence (new tokens, across all segments). */
  maxNewTokens: number;
  /** Softmax temperature; 0 = greedy. Default 1. */
  temperature?: number;
  /** Nucleus sampling threshold in (0, 1]; 1 disables it. Default 1. */
  topP?: number;
  /** Keep only the k most likely tokens (before top-p); 0 disables it. Default 0. */
  topK?: number;
  /** Sampling stops after any of these tokens (which is kept as the last token). */
  stopTokens?: number[];
  /** Seed of the per-sequence random streams. Default: drawn from `rng`, else 0. */
  seed?: number;
  /**
   * Keep `rawLogProbs` (default true). False leaves them NaN where they would cost a pass over the
   * vocabulary of their own (greedy, temperatures other than 1); the tokens drawn are the same.
   */
  rawLogProbs?: boolean;
  /** Used only to draw `seed` when it is not given. */
  rng?: Rng;
  /** Use the key/value cache (default true); false recomputes the whole prefix every step. */
  useKvCache?: boolean;
  /** Stream id of each prompt's random numbers; default the prompt's index. */
  streamIds?: number[];
}

export type StopReason = 'stop' | 'budget' | 'context';

export interface SampledSequence {
  /** Generated tokens (not including the prompt). */
  tokens: number[];
  /** Behaviour log-probability of each generated token (see the module comment). */
  logProbs: number[];
  /** log softmax(logits) at temperature 1 of each generated token. */
  rawLogProbs: number[];
  /** True once the sequence is complete (stop token, budget or context exhausted). */
  finished: boolean;
  stopReason: StopReason | null;
}

export interface DecodeSequenceState extends SampledSequence {
  prompt: number[];
  streamId: number;
}

/**
 * Everything needed to continue decoding. Plain data except `cache`, which belongs to the process
 * and model that made it (on wasm/cpu its keys and values are JavaScript arrays; elsewhere it
 * holds tensors). Before sending a state to another process, drop the cache with
 * `releaseDecodeCache`: it is rebuilt from the tokens on the next segment. Dispose with
 * `disposeDecodeState`.
 */
export interface DecodeState {
  seed: number;
  temperature: number;
  topP: number;
  /** 0 (or absent, in states made before top-k existed) disables it. */
  topK?: number;
  /** False: raw log-probabilities are not computed (SampleOptions.rawLogProbs); absent means kept. */
  rawLogProbs?: boolean;
  stopTokens: number[];
  maxNewTokens: number;
  useKvCache: boolean;
  sequences: DecodeSequenceState[];
  cache: {
    kv: DecodeCache | null;
    /** The model whose cache `kv` is (it alone can release it). */
    model: PolicyModel;
    /** Sequence index of each cache row; −1 for a finished sequence whose row is kept, ignored. */
    rows: number[];
    /** Next-token logits of each cache row [rows·V], computed with weights `version`. */
    logits: Float32Array;
    version: number;
  } | null;
}

export function startDecode(prompts: number[][], opts: SampleOptions): DecodeState {
  if (!Number.isInteger(opts.maxNewTokens) || opts.maxNewTokens < 0) throw new Error(`maxNewTokens must be a non-negative integer, got ${opts.maxNewTokens}`);
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  if (!(temperature >= 0)) throw new Error(`temperature must be >= 0, got ${temperature}`);
  if (!(topP > 0 && topP <= 1)) throw new Error(`topP must be in (0, 1], got ${topP}`);
  const topK = opts.topK ?? 0;
  if (!Number.isInteger(topK) || topK < 0) throw new Error(`topK must be a non-negative integer (0 disables it), got ${opts.topK}`);
  if (opts.streamIds && opts.streamIds.length !== prompts.length) throw new Error('streamIds must have one entry per prompt');
  const seed = opts.seed ?? (opts.rng ? opts.rng.nextUint32() : 0);
  return {
    seed,
    temperature,
    topP,
    topK,
    rawLogProbs: opts.rawLogProbs ?? true,
    stopTokens: [...(opts.stopTokens ?? [])],
    maxNewTokens: opts.maxNewTokens,
    useKvCache: opts.useKvCache ?? true,
    sequences: prompts.map((p, i) => {
      if (p.length === 0) throw new Error(`prompt ${i} is empty (start it with <bos> or a role token)`);
      const done = opts.maxNewTokens === 0;
      return {
        prompt: [...p],
        streamId: opts.streamIds ? opts.streamIds[i] : i,
        tokens: [],
        logProbs: [],
        rawLogProbs: [],
        finished: done,
        stopReason: done ? 'budget' : null,
      };
    }),
    cache: null,
  };
}

/** Dispose the tensors a decode state holds (its plain data stays readable). */
export function disposeDecodeState(state: DecodeState): void {
  releaseDecodeCache(state);
}

/** Drop the key/value cache (tensors) of a state; decoding rebuilds it from the tokens when resumed. */
export function releaseDecodeCache(state: DecodeState): void {
  if (state.cache?.kv) state.cache.model.disposeCache(state.cache.kv);
  state.cache = null;
}

/**
 * Decode at most `maxTokens` more tokens for every unfinished sequence. Returns the indices of the
 * sequences that finished in this segment and the (same, updated) state. If the model's weights
 * changed since the state's cache was built, the cache is rebuilt from the tokens so far with the
 * new weights; otherwise a split decode equals an uninterrupted one exactly.
 */
export function decodeSegment(model: PolicyModel, state: DecodeState, maxTokens: number): { finished: number[]; state: DecodeState } {
  return driveSync(segmentSteps(model, state, maxTokens));
}

/** `decodeSegment` for every backend, WebGPU included. */
export function decodeSegmentAsync(model: PolicyModel, state: DecodeState, maxTokens: number): Promise<{ finished: number[]; state: DecodeState }> {
  return driveAsync(segmentSteps(model, state, maxTokens));
}

/** A model call the decoding logic needs made, in both forms; the driver picks one and sends back the result. */
interface ModelCall<R> {
  sync: () => R;
  async: () => Promise<R>;
}

type Steps<R> = Generator<ModelCall<unknown>, R, unknown>;

/** Yield one call and receive its result, typed. */
function* call<R>(c: ModelCall<R>): Generator<ModelCall<unknown>, R, unknown> {
  return (yield c as ModelCall<unknown>) as R;
}

function driveSync<R>(steps: Steps<R>): R {
  let r = steps.next();
  while (!r.done) r = steps.next(r.value.sync());
  return r.value;
}

async function driveAsync<R>(steps: Steps<R>): Promise<R> {
  let r = steps.next();
  while (!r.done) r = steps.next(await r.value.async());
  return r.value;
}

function* segmentSteps(model: PolicyModel, state: DecodeState, maxTokens: number): Steps<{ finished: number[]; state: DecodeState }> {
  const finished: number[] = [];
  const V = model.vocabSize;
  const context = model.context;
  const stop = new Set(state.stopTokens);
  for (let step = 0; step < maxTokens; step++) {
    yield* ensureLogits(model, state);
    const c = state.cache;
    if (!c) break; // nothing left to decode
    // Sample one token for every live row.
    for (let r = 0; r < c.rows.length; r++) {
      if (c.rows[r] < 0) continue;
      const seq = state.sequences[c.rows[r]];
      const j = seq.tokens.length;
      const u = new Rng(state.seed, `tok:${seq.streamId}:${j}`).next();
      const { token, logProb, rawLogProb } = sampleFromLogits(c.logits.subarray(r * V, (r + 1) * V), state.temperature, state.topP, u, state.topK ?? 0, state.rawLogProbs !== false);
      seq.tokens.push(token);
      seq.logProbs.push(logProb);
      seq.rawLogProbs.push(rawLogProb);
      let reason: StopReason | null = null;
      if (stop.has(token)) reason = 'stop';
      else if (seq.tokens.length >= state.maxNewTokens) reason = 'budget';
      else if (seq.prompt.length + seq.tokens.length >= context) reason = 'context';
      if (reason) {
        seq.finished = true;
        seq.stopReason = reason;
        finished.push(c.rows[r]);
        c.rows[r] = -1;
      }
    }
    const live = c.rows.flatMap((s, r) => (s >= 0 ? [r] : []));
    if (live.length === 0) {
      releaseDecodeCache(state);
      break;
    }
    // Feed the new tokens of the live rows, so their next logits are ready.
    if (c.kv) {
      if (2 * live.length <= c.rows.length) {
        c.kv = model.selectCacheRows(c.kv, live);
        c.rows = live.map((r) => c.rows[r]);
      }
      const B = c.rows.length;
      const tokens = new Int32Array(B);
      const positions = new Int32Array(B);
      c.rows.forEach((s, r) => {
        if (s < 0) return; // a finished row: token 0 at position 0, output ignored
        const seq = state.sequences[s];
        tokens[r] = seq.tokens[seq.tokens.length - 1];
        positions[r] = seq.prompt.length + seq.tokens.length - 1;
      });
      const kv = c.kv;
      const liveRows = c.rows.map((s) => s >= 0);
      const out = yield* call({ sync: () => model.decodeStep(tokens, positions, kv, liveRows), async: async () => (model.decodeStepAsync ? model.decodeStepAsync(tokens, positions, kv, liveRows) : model.decodeStep(tokens, positions, kv, liveRows)) });
      c.kv = out.cache;
      c.logits = out.logits;
    } else {
      c.rows = live.map((r) => c.rows[r]);
      const { rows, leftPad } = paddedRows(state, c.rows);
      c.logits = yield* call({ sync: () => model.lastLogits(rows, leftPad), async: async () => (model.lastLogitsAsync ? model.lastLogitsAsync(rows, leftPad) : model.lastLogits(rows, leftPad)) });
      c.version = model.version;
    }
  }
  return { finished, state };
}

/** Sample complete continuations of `prompts` (a convenience over startDecode/decodeSegment). */
export function sample(model: PolicyModel, prompts: number[][], opts: SampleOptions): SampledSequence[] {
  const state = startDecode(prompts, opts);
  try {
    while (state.sequences.some((s) => !s.finished)) decodeSegment(model, state, Number.MAX_SAFE_INTEGER);
  } finally {
    disposeDecodeState(state);
  }
  return finalSequences(state);
}

/** `sample` for every backend, WebGPU included. */
export async function sampleAsync(model: PolicyModel, prompts: number[][], opts: SampleOptions): Promise<SampledSequence[]> {
  const state = startDecode(prompts, opts);
  try {
    while (state.sequences.some((s) => !s.finished)) await decodeSegmentAsync(model, state, Number.MAX_SAFE_INTEGER);
  } finally {
    disposeDecodeState(state);
  }
  return finalSequences(state);
}

function finalSequences(state: DecodeState): SampledSequence[] {
  return state.sequences.map(({ tokens, logProbs, rawLogProbs, finished, stopReason }) => ({ tokens, logProbs, rawLogProbs, finished, stopReason }));
}

/** Make sure the state holds next-token logits for its active rows computed with the current weights. */
function* ensureLogits(model: PolicyModel, state: DecodeState): Steps<void> {
  const version = model.version;
  if (state.cache && state.cache.version === version) return;
  releaseDecodeCache(state);
  const active = state.sequences.map((s, i) => (s.finished ? -1 : i)).filter((i) => i >= 0);
  if (active.length === 0) return;
  for (const i of active) {
    const len = state.sequences[i].prompt.length + state.sequences[i].tokens.length;
    if (len >= model.context) throw new Error(`sequence ${i} has ${len} tokens, which fills the model context (${model.context}); nothing can be decoded`);
  }
  const { rows, leftPad } = paddedRows(state, active);
  if (state.useKvCache) {
    // Room for every position a live row may still feed.
    const room = Math.max(
      ...active.map((i) => {
        const q = state.sequences[i];
        return Math.min(state.maxNewTokens - q.tokens.length, model.context - q.prompt.length - q.tokens.length);
      }),
    );
    const capacity = rows[0].length + room;
    const { cache, logits } = yield* call({ sync: () => model.prefill(rows, leftPad, capacity), async: async () => (model.prefillAsync ? model.prefillAsync(rows, leftPad, capacity) : model.prefill(rows, leftPad, capacity)) });
    state.cache = { kv: cache, model, rows: active, logits, version: cache.version };
  } else {
    const logits = yield* call({ sync: () => model.lastLogits(rows, leftPad), async: async () => (model.lastLogitsAsync ? model.lastLogitsAsync(rows, leftPad) : model.lastLogits(rows, leftPad)) });
    state.cache = { kv: null, model, rows: active, logits, version };
  }
}

/** Prompt + generated tokens of the given sequences, left-padded (with their first token) to equal length. */
function paddedRows(state: DecodeState, seqIdx: number[]): { rows: number[][]; leftPad: number[] } {
  const full = seqIdx.map((i) => [...state.sequences[i].prompt, ...state.sequences[i].tokens]);
  const T = maxOf(full, (r) => r.length);
  // Padding positions are masked as keys, so any valid id works as filler.
  const leftPad = full.map((r) => T - r.length);
  return { rows: full.map((r, i) => [...new Array<number>(leftPad[i]).fill(r[0]), ...r]), leftPad };
}

/**
 * Draw one token from logits with temperature, top-k and top-p, given a uniform u in [0, 1).
 * Computed in float64. Returns the token, its log-probability under the distribution sampled
 * from, and its log-probability under softmax(logits).
 *
 * Candidate order: index order without truncation; most likely first (ties by index) with it.
 * The nucleus (Holtzman et al. 2020) is the shortest prefix of that order whose mass reaches
 * top_p of the (top-k) total. Only the candidates that can be in it are sorted: tokens are
 * binned by the binary exponent of their weight, the fewest top bins holding enough mass give a
 * threshold, and every token at or above it is sorted — O(V + n log n) for a nucleus of n
 * instead of O(V·n), with the same prefix, the same sums in the same order and so the same
 * result as selecting by repeated maximum.
 *
 * `raw` false leaves the raw log-probability out (NaN) where it costs a pass of exp over the
 * vocabulary of its own (greedy, and temperatures other than 1): a served request that asks for
 * no logprobs needs only the token. The token drawn is the same either way.
 */
export function sampleFromLogits(logits: ArrayLike<number>, temperature: number, topP: number, u: number, topK = 0, raw = true): { token: number; logProb: number; rawLogProb: number } {
  const V = logits.length;
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < V; i++) {
    if (logits[i] > max) {
      max = logits[i];
      argmax = i;
    }
  }
  // At temperature 1 (RL's usual) the sampling weights are the raw softmax's terms: one pass of
  // exp over the vocabulary instead of two (Qwen3's 151 936 logits: about 1 ms each here).
  const w = temperature === 0 ? null : new Float64Array(V);
  let sumRaw = 0;
  if (w && temperature === 1) {
    for (let i = 0; i < V; i++) {
      w[i] = Math.exp(logits[i] - max);
      sumRaw += w[i];
    }
  } else if (raw) for (let i = 0; i < V; i++) sumRaw += Math.exp(logits[i] - max);
  else sumRaw = NaN;
  const rawLse = max + Math.log(sumRaw);
  if (!w) return { token: argmax, logProb: 0, rawLogProb: logits[argmax] - rawLse };

  let total = sumRaw;
  if (temperature !== 1) {
    total = 0;
    for (let i = 0; i < V; i++) {
      w[i] = Math.exp((logits[i] - max) / temperature);
      total += w[i];
    }
  }
  if (!(topK > 0 && topK < V) && !(topP < 1)) {
    // Every token, in id order: scanned directly, without building an index array of the
    // vocabulary (Int32Array.from over 151 936 ids cost more than the sampling itself).
    let target = u * total;
    let token = V - 1;
    for (let i = 0; i < V; i++) {
      target -= w[i];
      if (target < 0) {
        token = i;
        break;
      }
    }
    return { token, logProb: Math.log(w[token] / total), rawLogProb: logits[token] - rawLse };
  }
  let order: Int32Array;
  let n: number;
  let kept: number;
  const byWeight = largestFirst(w);
  if (topK > 0 && topK < V) {
    order = largestIds(w, topK);
    total = 0;
    for (let k = 0; k < order.length; k++) total += w[order[k]];
    n = order.length;
    kept = total;
    if (topP < 1) ({ n, kept } = nucleusPrefix(order, w, topP * total));
  } else {
    // top_p < 1 (the early return took the case with neither).
    order = nucleusCandidates(w, topP * total).sort(byWeight);
    ({ n, kept } = nucleusPrefix(order, w, topP * total));
    if (n === order.length && order.length < V && kept < topP * total) {
      // Rounding left the candidates' running sum short of the target: fall back to all tokens.
      order = Int32Array.from({ length: V }, (_, i) => i).sort(byWeight);
      ({ n, kept } = nucleusPrefix(order, w, topP * total));
    }
  }
  let target = u * kept;
  let token = order[n - 1];
  for (let k = 0; k < n; k++) {
    target -= w[order[k]];
    if (target < 0) {
      token = order[k];
      break;
    }
  }
  return { token, logProb: Math.log(w[token] / kept), rawLogProb: logits[token] - rawLse };
}

/** The shortest prefix of `order` whose running sum reaches `target` (at least one token) and its mass. */
function nucleusPrefix(order: Int32Array, w: Float64Array, target: number): { n: number; kept: number } {
  let cum = 0;
  let n = 0;
  while (n < order.length && cum < target) cum += w[order[n++]];
  n = Math.max(1, n);
  let kept = 0;
  for (let k = 0; k < n; k++) kept += w[order[k]];
  return { n, kept };
}

/**
 * Every token whose weight is at least a threshold chosen so that those tokens hold at least
 * `target` of the mass (so they contain the nucleus, which is a most-likely-first prefix).
 * Weights are ≤ 1 (the maximum is 1), binned by ⌊−log2 w⌋.
 */
function nucleusCandidates(w: Float64Array, target: number): Int32Array {
  const BINS = 1100; // −log2 of the smallest positive double is 1074
  const mass = new Float64Array(BINS);
  const bin = (x: number) => (x > 0 ? Math.min(BINS - 1, Math.floor(-Math.log2(x))) : BINS - 1);
  for (let i = 0; i < w.length; i++) mass[bin(w[i])] += w[i];
  let cum = 0;
  let last = 0;
  while (last < BINS - 1 && cum + mass[last] < target) cum += mass[last++];
  // The smallest weight in the chosen bins is the threshold: every token at or above it is taken,
  // so the set is a prefix of the sorted order even if log2 rounded a weight into a lower bin.
  let threshold = Infinity;
  for (let i = 0; i < w.length; i++) if (bin(w[i]) <= last && w[i] < threshold) threshold = w[i];
  let count = 0;
  for (let i = 0; i < w.length; i++) if (w[i] >= threshold) count++;
  const out = new Int32Array(count);
  let j = 0;
  for (let i = 0; i < w.length; i++) if (w[i] >= threshold) out[j++] = i;
  return out;
}

/** Indices of the k largest weights (ties by lower index), in no particular order: a min-heap of size k. */
function topKIndices(w: ArrayLike<number>, k: number): Int32Array {
  const heap = new Int32Array(k);
  // "a is worse than b": smaller weight, or equal weight and larger index.
  const worse = (a: number, b: number) => w[a] < w[b] || (w[a] === w[b] && a > b);
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < k && worse(heap[l], heap[m])) m = l;
      if (r < k && worse(heap[r], heap[m])) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  };
  for (let i = 0; i < k; i++) heap[i] = i;
  for (let i = (k >> 1) - 1; i >= 0; i--) down(i);
  // Every index in the heap is below i, so an equal weight never displaces one: only a larger
  // weight than the root's gets in, and the root's weight is kept at hand.
  let floor = k > 0 ? w[heap[0]] : Infinity;
  for (let i = k; i < w.length; i++) {
    if (w[i] > floor) {
      heap[0] = i;
      down(0);
      floor = w[heap[0]];
    }
  }
  return heap;
}

/**
 * Ids of the k largest values, largest first, ties to the lower id: what top-k keeps, in the
 * order the sampler walks it (and serve-model reports top_logprobs in), without sorting them all.
 */
export function largestIds(values: ArrayLike<number>, k: number): Int32Array {
  return topKIndices(values, Math.min(k, values.length)).sort(largestFirst(values));
}

/** Orders ids by their value, largest first, ties to the lower id: the order top-k and top-p walk. */
function largestFirst(values: ArrayLike<number>): (a: number, b: number) => number {
  return (a, b) => (values[a] !== values[b] ? values[b] - values[a] : a - b);
}
