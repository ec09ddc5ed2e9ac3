/**
 * Batching of concurrent requests for `marsrl serve-model` (issue #16): requests arriving within
 * `windowMs` of each other (and up to `maxRows` choices in all) are decoded as one batch through
 * the policy seam's batched decode (prefill once, then one decodeStep per token for every row).
 *
 * Why not the sampler's DecodeState (engine/model/sampling.ts) as is: one state has one
 * temperature, top_p, seed and stop list, while concurrent API requests each bring their own, and
 * the API needs each step's logits (top_logprobs) and text-level stop sequences. This loop keeps
 * the sampler's exact conventions, so a served request equals in-process sampling:
 *  - the token for choice i, position j is drawn by `sampleFromLogits` with the uniform number
 *    `new Rng(seed, "tok:" + i + ":" + j)` (the sampler's per-stream rule, stream id = choice
 *    index), so `seed` + `n` reproduce `sample(model, n × [prompt], { seed, temperature, topP })`
 *    whatever else shares the batch;
 *  - left padding, positions after the padding, and compaction of the cache once half the rows
 *    are finished, as the sampler does.
 * Log-probabilities reported are log softmax(logits) at temperature 1 (the sampler's
 * `rawLogProbs`, vLLM's default `raw_logprobs`): the policy's own probability of the token.
 *
 * The loop yields to the event loop between steps, so streamed tokens go out as they are made
 * and new requests are accepted (they join the next batch).
 */
import type { PolicyModel, DecodeCache } from '../../engine/model/policy-model';
import { sampleFromLogits } from '../../engine/model/sampling';
import { Rng } from '../../engine/util/rng';
import type { ServedTokenizer } from './policy';

export interface DecodeParams {
  maxTokens: number;
  temperature: number;
  topP: number;
  seed: number;
  n: number;
  /** Text sequences that end a choice (not included in its text). */
  stop: string[];
  /** Alternatives per position to report (0 = none); logprobs of the chosen tokens are always kept. */
  topLogprobs: number;
  /** Keep only the k most likely tokens (vLLM's top_k); 0 or −1 keeps all. */
  topK?: number;
  /** Drop tokens less likely than min_p × the most likely one, after temperature (vLLM's min_p). */
  minP?: number;
}

export interface TokenInfo {
  id: number;
  /** The token's literal text (tokenizer.tokenText). */
  token: string;
  logprob: number;
  top: Array<{ token: string; logprob: number }>;
}

export interface ChoiceUpdate {
  index: number;
  /** Text that became final since the last update. */
  delta: string;
  /** Tokens whose text is (part of) `delta`. */
  tokens: TokenInfo[];
  finishReason: 'stop' | 'length' | null;
}

export interface DecodedChoice {
  index: number;
  text: string;
  tokens: TokenInfo[];
  /** Generated ids, the stop token included when one ended the choice. */
  ids: number[];
  finishReason: 'stop' | 'length';
}

export interface DecodeJob {
  prompt: number[];
  params: DecodeParams;
  /** Called as text becomes final (text held back while it may still begin a stop sequence). */
  onUpdate?: (update: ChoiceUpdate) => void;
  /** Aborted when the client went away: its rows stop at the next step, freeing the batch. */
  signal?: AbortSignal;
}

interface Row {
  job: PendingJob;
  choice: number;
  ids: number[];
  text: string;
  /** Characters of `text` already reported. */
  emitted: number;
  tokens: TokenInfo[];
  /** End offset (in `text`) of each token of `tokens`. */
  ends: number[];
  reported: number;
  finished: 'stop' | 'length' | null;
}

interface PendingJob extends DecodeJob {
  resolve: (choices: DecodedChoice[]) => void;
  reject: (error: Error) => void;
  rows: Row[];
}

export interface BatcherStats {
  batches: number;
  rows: number;
  steps: number;
  largestBatch: number;
  queued: number;
}

export class RequestBatcher {
  private readonly queue: PendingJob[] = [];
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private firstQueuedAt = 0;
  /** Requests in the last batch: how many to wait for before the next one starts. */
  private expectedJobs = 0;
  readonly stats: BatcherStats = { batches: 0, rows: 0, steps: 0, largestBatch: 0, queued: 0 };

  constructor(
    private readonly model: PolicyModel,
    private readonly tokenizer: ServedTokenizer,
    private readonly opts: { windowMs?: number; maxWaitMs?: number; maxRows?: number } = {},
  ) {}

  /** Queue a request; resolves with its choices once every one of them finished. */
  submit(job: DecodeJob): Promise<DecodedChoice[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...job, resolve, reject, rows: [] });
      this.stats.queued = this.queue.length;
      this.schedule();
    });
  }

  /**
   * When a batch starts. Callers that were answered together tend to come back together (a
   * reasoning loop's agents, clients in a closed loop), but their next requests arrive spread
   * over a few ms of HTTP handling: so after a batch of J requests the next one waits, up to
   * `maxWaitMs` from its first arrival, until J requests are queued. Otherwise (no batch yet, or
   * J reached) the window is a quiet period: each arrival restarts it, capped by `maxWaitMs`.
   * A wait that times out short lowers J to what came, so open-loop traffic stops waiting.
   */
  private schedule(): void {
    if (this.running) return;
    const now = Date.now();
    if (this.timer) clearTimeout(this.timer);
    else this.firstQueuedAt = now;
    const windowMs = this.opts.windowMs ?? 2;
    const maxWaitMs = this.opts.maxWaitMs ?? Math.max(20, 10 * windowMs);
    const left = Math.max(0, this.firstQueuedAt + maxWaitMs - now);
    const waitingForReturns = this.queue.length < this.expectedJobs;
    const wait = waitingForReturns ? left : Math.min(windowMs, left);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (waitingForReturns) this.expectedJobs = this.queue.length;
      void this.drain();
    }, wait);
  }

  private async drain(): Promise<void> {
    this.running = true;
    const maxRows = this.opts.maxRows ?? 64;
    const batch: PendingJob[] = [];
    let rows = 0;
    while (this.queue.length > 0 && (batch.length === 0 || rows + this.queue[0].params.n <= maxRows)) {
      const job = this.queue.shift()!;
      rows += job.params.n;
      batch.push(job);
    }
    this.stats.queued = this.queue.length;
    this.expectedJobs = batch.length;
    try {
      await this.decode(batch);
    } catch (error) {
      for (const job of batch) job.reject(error as Error);
    } finally {
      this.running = false;
    }
    if (this.queue.length > 0) this.schedule();
  }

  private async decode(batch: PendingJob[]): Promise<void> {
    const model = this.model;
    const V = model.vocabSize;
    const stopIds = new Set(this.tokenizer.stopTokens);
    const all: Row[] = [];
    for (const job of batch) {
      job.rows = Array.from({ length: job.params.n }, (_, choice) => ({ job, choice, ids: [], text: '', emitted: 0, tokens: [], ends: [], reported: 0, finished: null }));
      all.push(...job.rows);
    }
    this.stats.batches++;
    this.stats.rows += all.length;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, all.length);
    const T = Math.max(...all.map((r) => r.job.prompt.length));
    const leftPad = all.map((r) => T - r.job.prompt.length);
    const padded = all.map((r, i) => [...new Array<number>(leftPad[i]).fill(r.job.prompt[0]), ...r.job.prompt]);
    const room = Math.max(...all.map((r) => Math.min(r.job.params.maxTokens, model.context - r.job.prompt.length)));
    let { cache, logits } = model.prefill(padded, leftPad, T + room);
    // Cache row r holds all[rowOf[r]]; −1 marks a finished row kept until compaction.
    let rowOf = all.map((_, i) => i);
    try {
      for (;;) {
        for (let r = 0; r < rowOf.length; r++) {
          if (rowOf[r] < 0) continue;
          const row = all[rowOf[r]];
          const p = row.job.params;
          if (row.job.signal?.aborted) {
            row.finished = 'length';
            rowOf[r] = -1;
            continue;
          }
          const rowLogits = logits.subarray(r * V, (r + 1) * V);
          const u = new Rng(p.seed, `tok:${row.choice}:${row.ids.length}`).next();
          const { token } = sampleFromLogits(truncated(rowLogits, p), p.temperature, p.topP, u);
          // Reported log-probabilities stay the policy's own (untruncated, temperature 1).
          const rawLogProb = rowLogits[token] - logSumExp(rowLogits);
          row.ids.push(token);
          if (stopIds.has(token)) {
            row.finished = 'stop';
          } else {
            const text = this.tokenizer.responseText(row.ids);
            row.tokens.push({ id: token, token: this.tokenizer.tokenText(token), logprob: rawLogProb, top: p.topLogprobs > 0 ? this.topOf(rowLogits, p.topLogprobs) : [] });
            row.ends.push(text.length);
            row.text = text;
            const cut = earliestStop(text, p.stop, Math.max(0, row.emitted - longest(p.stop)));
            if (cut >= 0) {
              row.text = text.slice(0, cut);
              row.finished = 'stop';
            } else if (row.ids.length >= p.maxTokens || row.job.prompt.length + row.ids.length >= model.context) {
              row.finished = 'length';
            }
          }
          this.report(row);
          if (row.finished) rowOf[r] = -1;
        }
        this.stats.steps++;
        for (const job of batch) {
          if (job.rows.length > 0 && job.rows.every((x) => x.finished)) {
            job.resolve(job.rows.map((x) => ({ index: x.choice, text: x.text, tokens: x.tokens.slice(0, x.reported), ids: x.ids, finishReason: x.finished! })));
            job.rows = [];
          }
        }
        const live = rowOf.flatMap((s, r) => (s >= 0 ? [r] : []));
        if (live.length === 0) break;
        if (2 * live.length <= rowOf.length) {
          cache = model.selectCacheRows(cache, live);
          rowOf = live.map((r) => rowOf[r]);
        }
        const tokens = new Int32Array(rowOf.length);
        const positions = new Int32Array(rowOf.length);
        rowOf.forEach((s, r) => {
          if (s < 0) return;
          const row = all[s];
          tokens[r] = row.ids[row.ids.length - 1];
          positions[r] = row.job.prompt.length + row.ids.length - 1;
        });
        const out = model.decodeStep(tokens, positions, cache, rowOf.map((s) => s >= 0));
        cache = out.cache;
        logits = out.logits;
        // Let finished responses and streamed chunks go out, and new requests queue up.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      model.disposeCache(cache as DecodeCache);
    }
  }

  /** Report text that can no longer turn into a stop sequence, with the tokens it completes. */
  private report(row: Row): void {
    const p = row.job.params;
    const safe = row.finished ? row.text.length : row.text.length - heldBack(row.text, p.stop);
    let n = row.reported;
    while (n < row.tokens.length && row.ends[n] <= safe) n++;
    // A stop sequence cut inside a token keeps that token: it carries the last reported text.
    if (row.finished && n < row.tokens.length && safe > (n > 0 ? row.ends[n - 1] : 0)) n++;
    const delta = row.text.slice(row.emitted, safe);
    if (delta.length === 0 && n === row.reported && !row.finished) return;
    const update: ChoiceUpdate = { index: row.choice, delta, tokens: row.tokens.slice(row.reported, n), finishReason: row.finished };
    row.emitted = safe;
    row.reported = n;
    row.job.onUpdate?.(update);
  }

  private topOf(logits: Float32Array, k: number): Array<{ token: string; logprob: number }> {
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
    let sum = 0;
    for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
    const lse = max + Math.log(sum);
    const order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b);
    return order.slice(0, k).map((id) => ({ token: this.tokenizer.tokenText(id), logprob: logits[id] - lse }));
  }
}

function logSumExp(logits: Float32Array): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  return max + Math.log(sum);
}

/**
 * The logits with top_k and min_p applied (excluded tokens at −∞), as vLLM applies them before
 * top_p: top_k keeps the k largest logits (ties at the k-th kept), min_p keeps tokens whose
 * probability at the sampling temperature is at least min_p × the largest, i.e. logits within
 * τ·ln(1/min_p) of the maximum. Greedy decoding is unchanged by either.
 */
function truncated(logits: Float32Array, p: DecodeParams): Float32Array {
  const V = logits.length;
  const topK = p.topK !== undefined && p.topK > 0 && p.topK < V ? p.topK : 0;
  const minP = p.minP !== undefined && p.minP > 0 && p.temperature > 0 ? p.minP : 0;
  if (topK === 0 && minP === 0) return logits;
  const out = Float32Array.from(logits);
  if (topK > 0) {
    const kth = Float32Array.from(logits).sort().reverse()[topK - 1];
    for (let i = 0; i < V; i++) if (out[i] < kth) out[i] = -Infinity;
  }
  if (minP > 0) {
    let max = -Infinity;
    for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
    const floor = max + p.temperature * Math.log(minP);
    for (let i = 0; i < V; i++) if (out[i] < floor) out[i] = -Infinity;
  }
  return out;
}

function longest(stops: readonly string[]): number {
  return stops.reduce((m, s) => Math.max(m, s.length), 0);
}

/** Index of the earliest stop sequence in `text` at or after `from`, or −1. */
function earliestStop(text: string, stops: readonly string[], from: number): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s, from);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}

/** Length of the longest suffix of `text` that is a proper prefix of some stop sequence. */
function heldBack(text: string, stops: readonly string[]): number {
  let held = 0;
  for (const s of stops) {
    for (let k = Math.min(s.length - 1, text.length); k > held; k--) {
      if (text.endsWith(s.slice(0, k))) {
        held = k;
        break;
      }
    }
  }
  return held;
}
