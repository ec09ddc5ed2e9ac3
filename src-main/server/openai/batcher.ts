/**
 * Continuous batching of concurrent requests for `marsrl serve-model` (issue #16): requests that
 * arrive within `windowMs` of each other start a batch together (prefill once, then one
 * decodeStep per token for every row), and requests that arrive while it decodes join it at the
 * next step (their prompts prefilled on their own, the caches joined: PolicyModel.joinCaches,
 * kv-join.ts), up to `maxRows` choices in all. A finished row leaves at once; nobody waits for the
 * batch's longest answer. This is what keeps serving overhead low in a closed loop (a reasoning
 * system's agents, clients that send their next request when the last one returns): the next
 * request's HTTP round trip overlaps the other rows' decoding instead of delaying a new batch.
 *
 * Why not the sampler's DecodeState (engine/model/sampling.ts) as is: one state has one
 * temperature, top_p, seed and stop list, while concurrent API requests each bring their own, and
 * the API needs each step's logits (top_logprobs) and text-level stop sequences. This loop keeps
 * the sampler's exact conventions, so a served request equals in-process sampling:
 *  - the token for choice i, position j is drawn by `sampleFromLogits` with the uniform number
 *    `new Rng(seed, "tok:" + i + ":" + j)` (the sampler's per-stream rule, stream id = choice
 *    index), so `seed` + `n` reproduce `sample(model, n × [prompt], { seed, temperature, topP })`
 *    whatever else shares the batch, and whenever the request joined it;
 *  - left padding, positions after the padding, and compaction of the cache once half the rows
 *    are finished, as the sampler does.
 *  - top_k is the sampler's (exactly k tokens, ties to the lower id), applied by it.
 * Log-probabilities reported are log softmax(logits) at temperature 1 (the sampler's
 * `rawLogProbs`, vLLM's default `raw_logprobs`): the policy's own probability of the token.
 * Per token the loop does what in-process sampling does and little more: the answer's text is
 * built token by token (response-decoder.ts) rather than decoded whole at every step, and
 * top_logprobs are found in one pass; `npm run bench -- serve` prints both sides' host work.
 *
 * The loop yields to the event loop between steps, so streamed tokens go out as they are made
 * and new requests are accepted.
 */
import type { PolicyModel, DecodeCache } from '../../engine/model/policy-model';
import { largestIds, sampleFromLogits } from '../../engine/model/sampling';
import { Rng } from '../../engine/util/rng';
import { unfinishedPrefix, type ResponseDecoder } from '../../engine/model/response-decoder';
import type { ServedTokenizer } from './policy';
import { maxOf, pushAll } from '../../engine/util/arrays';

export interface DecodeParams {
  maxTokens: number;
  temperature: number;
  topP: number;
  seed: number;
  n: number;
  /** Text sequences that end a choice (not included in its text). */
  stop: string[];
  /** Alternatives per position to report (0 = none). */
  topLogprobs: number;
  /**
   * Whether the chosen tokens' log-probabilities are wanted (default true). Without them a token
   * costs one pass over the logits fewer (greedy: the max alone); `TokenInfo.logprob` is NaN.
   */
  logprobs?: boolean;
  /** Keep only the k most likely tokens (vLLM's top_k); 0 or −1 keeps all. */
  topK?: number;
  /** Drop tokens less likely than min_p × the most likely one, after temperature (vLLM's min_p). */
  minP?: number;
  /**
   * Keep decoding through the end-of-sequence token until maxTokens (vLLM's and SGLang's
   * ignore_eos): fixed-length outputs, as serving benchmarks use them.
   */
  ignoreEos?: boolean;
  /**
   * The first minTokens tokens can be neither a stop token (its logits are masked) nor end in a
   * stop sequence (vLLM's min_tokens: stop strings are matched only in the text later tokens add).
   */
  minTokens?: number;
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
  /** The answer's text as its tokens come (its first `decoder.stable` characters final). */
  decoder: ResponseDecoder;
  text: string;
  /** Characters of `text` already reported. */
  emitted: number;
  tokens: TokenInfo[];
  /** End offset (in `text`) of each token of `tokens`. */
  ends: number[];
  reported: number;
  finished: 'stop' | 'length' | null;
  /** Length of `text` once the first minTokens tokens are out: a stop sequence must end after it. */
  stopFloor: number;
}

interface PendingJob extends DecodeJob {
  /** performance.now() at submit. */
  queuedAt: number;
  resolve: (choices: DecodedChoice[]) => void;
  reject: (error: Error) => void;
  rows: Row[];
}

export interface BatcherStats {
  /** Batches started on an idle model (each prefilled from scratch). */
  batches: number;
  rows: number;
  /** Requests admitted into a batch that was already decoding (continuous batching). */
  joined: number;
  /** Prefill calls: batch starts and joins (each prefills every request it admits at once). */
  prefills: number;
  /** decodeStep calls (one token for every live row). */
  steps: number;
  /** Rows decoded, summed over steps (÷ steps: the mean batch). */
  rowSteps: number;
  largestBatch: number;
  queued: number;
}

/** Counters of a batcher that has served nothing yet. */
export function emptyBatcherStats(): BatcherStats {
  return { batches: 0, rows: 0, joined: 0, prefills: 0, steps: 0, rowSteps: 0, largestBatch: 0, queued: 0 };
}

/** The running batch: cache row r decodes `slots[r]` (null once finished, until compacted away). */
interface Running {
  cache: DecodeCache | null;
  slots: Array<Row | null>;
  jobs: PendingJob[];
}

export class RequestBatcher {
  private readonly queue: PendingJob[] = [];
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private firstQueuedAt = 0;
  readonly stats: BatcherStats = emptyBatcherStats();

  constructor(
    private readonly model: PolicyModel,
    private readonly tokenizer: ServedTokenizer,
    private readonly opts: { windowMs?: number; maxWaitMs?: number; maxRows?: number; joinWaitMs?: number } = {},
  ) {}

  /** Queue a request; resolves with its choices once every one of them finished. */
  submit(job: DecodeJob): Promise<DecodedChoice[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...job, queuedAt: performance.now(), resolve, reject, rows: [] });
      this.stats.queued = this.queue.length;
      this.schedule();
    });
  }

  /**
   * When an idle model starts a batch: at once (`windowMs` 0, the default), or after a quiet
   * window (each arrival restarts it, capped by `maxWaitMs` from the first) so requests sent
   * within it share one prefill. What comes later joins the running batch at its next step anyway.
   * Measured with the serve bench (quick solver, 2 cores, two runs each, once answers went out
   * before the next step): no window served 133.6 / 95.0 requests/s to one client against 113.7 /
   * 81.1 with 2 ms, 410 / 414 to eight against 387 / 307, and 666 / 543 to 32 against 587 / 590.
   * While a batch
   * is decoding nothing waits: the loop admits what queued at its next step (`admit`), so a client
   * whose answer came back early is not held until the batch's longest row finishes, and the
   * milliseconds its next request spends in HTTP overlap other rows' decoding.
   */
  private schedule(): void {
    if (this.running) return;
    const windowMs = this.opts.windowMs ?? 0;
    if (windowMs <= 0) {
      // No window: start after this turn of the event loop (requests sent in one go still start
      // together), without a timer's 1 ms floor. Later arrivals join at the next step.
      this.immediate ??= setImmediate(() => {
        this.immediate = null;
        void this.drain();
      });
      return;
    }
    const now = Date.now();
    if (this.timer) clearTimeout(this.timer);
    else this.firstQueuedAt = now;
    const maxWaitMs = this.opts.maxWaitMs ?? Math.max(20, 10 * windowMs);
    const wait = Math.min(windowMs, Math.max(0, this.firstQueuedAt + maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.drain();
    }, wait);
  }

  private async drain(): Promise<void> {
    this.running = true;
    const run: Running = { cache: null, slots: [], jobs: [] };
    try {
      await this.decode(run);
    } catch (error) {
      for (const job of run.jobs) job.reject(error as Error);
    } finally {
      if (run.cache) this.model.disposeCache(run.cache);
      this.running = false;
    }
    if (this.queue.length > 0) this.schedule();
  }

  /**
   * Move queued requests into the batch, up to `maxRows` choices: prefill their prompts on their
   * own and join that cache to the running one (PolicyModel.joinCaches), finished rows dropped.
   * Without a running batch (or a model that cannot join caches) this is the batch's start.
   * Returns the admitted rows' place (they are the last cache rows, from `from`) and their
   * prefill logits, still to be sampled; null when nothing was admitted.
   */
  private admit(run: Running): { from: number; logits: Float32Array } | null {
    const model = this.model;
    if (run.cache !== null && !model.joinCaches) return null;
    const maxRows = this.opts.maxRows ?? 64;
    let rows = run.slots.filter((x) => x !== null).length;
    if (run.cache !== null && rows === 0) {
      // Every row finished (the loop yields once after the last answers): a request that queued
      // meanwhile starts a fresh batch at once, rather than joining an empty cache.
      if (this.queue.length === 0) return null;
      model.disposeCache(run.cache);
      run.cache = null;
      run.slots = [];
    }
    if (run.cache !== null && this.queue.length > 0 && !this.joinDue(rows, maxRows)) return null;
    const jobs: PendingJob[] = [];
    while (this.queue.length > 0 && (rows === 0 || rows + this.queue[0].params.n <= maxRows)) {
      const job = this.queue.shift()!;
      rows += job.params.n;
      jobs.push(job);
    }
    this.stats.queued = this.queue.length;
    if (jobs.length === 0) return null;
    this.stats.prefills++;
    const fresh: Row[] = [];
    for (const job of jobs) {
      job.rows = Array.from({ length: job.params.n }, (_, choice) => ({ job, choice, ids: [], decoder: this.tokenizer.responseDecoder(), text: '', emitted: 0, tokens: [], ends: [], reported: 0, finished: null, stopFloor: 0 }));
      pushAll(fresh, job.rows);
    }
    pushAll(run.jobs, jobs);
    this.stats.rows += fresh.length;
    const T = maxOf(fresh, (r) => r.job.prompt.length);
    const leftPad = fresh.map((r) => T - r.job.prompt.length);
    const padded = fresh.map((r, i) => [...new Array<number>(leftPad[i]).fill(r.job.prompt[0]), ...r.job.prompt]);
    // Positions the cache must still hold for a row: what it may yet generate.
    const remaining = (r: Row) => Math.max(0, Math.min(r.job.params.maxTokens, model.context - r.job.prompt.length) - r.ids.length);
    let logits: Float32Array;
    if (run.cache === null) {
      const out = model.prefill(padded, leftPad, T + maxOf(fresh, remaining));
      run.cache = out.cache;
      logits = out.logits;
      run.slots = fresh;
      this.stats.batches++;
    } else {
      // The running rows' last logits were sampled as they came: only their cache rows move.
      const keep = run.slots.flatMap((x, r) => (x !== null ? [r] : []));
      if (keep.length < run.slots.length) {
        run.cache = model.selectCacheRows(run.cache, keep);
        run.slots = keep.map((r) => run.slots[r]);
      }
      const out = model.prefill(padded, leftPad, T);
      const kept = run.slots as Row[];
      run.cache = model.joinCaches!([run.cache, out.cache], Math.max(maxOf(kept, remaining), maxOf(fresh, remaining)));
      logits = out.logits;
      run.slots = [...kept, ...fresh];
      this.stats.joined += jobs.length;
    }
    this.stats.largestBatch = Math.max(this.stats.largestBatch, run.slots.length);
    return { from: run.slots.length - fresh.length, logits };
  }

  /**
   * Whether queued requests join the running batch at this step or wait for more (`joinWaitMs`,
   * default 0: at once). A join is a prefill whose cost is mostly fixed (a lone 15-token prompt of
   * the quick GPT costs 1.3 ms, a batch of eight 2.4 ms, a decode step of eight rows 0.5 ms), and
   * a closed loop's requests come back one by one after their round trip; waiting, while the
   * batch decodes on, lets several share one prefill. A join is due once the queue holds a
   * quarter of the running rows, would fill the batch, or its oldest request waited joinWaitMs.
   */
  private joinDue(live: number, maxRows: number): boolean {
    const waitMs = this.opts.joinWaitMs ?? 0;
    if (waitMs <= 0) return true;
    const queuedRows = this.queue.reduce((a, j) => a + j.params.n, 0);
    if (queuedRows >= Math.min(maxRows - live, Math.ceil(live / 4))) return true;
    return performance.now() - this.queue[0].queuedAt >= waitMs;
  }

  /**
   * One iteration: admit what queued (its first tokens sampled from the prefill), one decodeStep
   * for every live row, sample, answer the requests whose rows all finished, then yield. The
   * yield comes right after the answers, before the next step: a finished response goes out (and
   * a closed-loop client's next request can come in and join) one step sooner than if the next
   * step ran first.
   */
  private async decode(run: Running): Promise<void> {
    const model = this.model;
    for (;;) {
      const admitted = this.admit(run);
      if (run.cache === null) return;
      if (admitted) {
        this.sampleRows(run, admitted.from, admitted.logits);
        this.finishJobs(run);
      }
      const { slots } = run;
      const live = slots.flatMap((x, r) => (x !== null ? [r] : []));
      if (live.length === 0) {
        // Every row finished. Requests that queued meanwhile start the next batch at once (admit
        // drops the empty cache; they waited already); with none, drain disposes it.
        if (this.queue.length === 0) return;
        continue;
      }
      if (2 * live.length <= slots.length) {
        run.cache = model.selectCacheRows(run.cache, live);
        run.slots = live.map((r) => slots[r]);
      }
      const tokens = new Int32Array(run.slots.length);
      const positions = new Int32Array(run.slots.length);
      run.slots.forEach((row, r) => {
        if (row === null) return;
        tokens[r] = row.ids[row.ids.length - 1];
        positions[r] = row.job.prompt.length + row.ids.length - 1;
      });
      this.stats.steps++;
      this.stats.rowSteps += live.length;
      const out = model.decodeStep(tokens, positions, run.cache, run.slots.map((x) => x !== null));
      run.cache = out.cache;
      this.sampleRows(run, 0, out.logits);
      this.finishJobs(run);
      // Let finished responses and streamed chunks go out, and new requests queue up.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Sample the next token of the live rows `from`… (their logits, [(slots.length − from) · V]);
   * a row that ends is set to null.
   */
  private sampleRows(run: Running, from: number, logits: Float32Array): void {
    const model = this.model;
    const V = model.vocabSize;
    const stopIds = this.tokenizer.stopTokens;
    const { slots } = run;
    for (let r = from; r < slots.length; r++) {
      const row = slots[r];
      if (row === null) continue;
      const p = row.job.params;
      if (row.job.signal?.aborted) {
        row.finished = 'length';
        slots[r] = null;
        continue;
      }
      const rowLogits = logits.subarray((r - from) * V, (r - from + 1) * V);
      const u = new Rng(p.seed, `tok:${row.choice}:${row.ids.length}`).next();
      const minTokens = p.minTokens ?? 0;
      const protectedToken = row.ids.length < minTokens;
      let sampling = withMinP(rowLogits, p);
      if (protectedToken && stopIds.length > 0) sampling = withoutTokens(sampling === rowLogits ? Float32Array.from(rowLogits) : sampling, stopIds);
      const wanted = p.logprobs !== false || p.topLogprobs > 0;
      const sampled = sampleFromLogits(sampling, p.temperature, p.topP, u, p.topK ?? 0, wanted && sampling === rowLogits);
      const token = sampled.token;
      // Reported log-probabilities stay the policy's own (untruncated, temperature 1): the
      // sampler's when it saw the logits as they are, else one more pass over them.
      const lse = !wanted ? NaN : sampling === rowLogits ? rowLogits[token] - sampled.rawLogProb : logSumExp(rowLogits);
      row.ids.push(token);
      if (stopIds.includes(token) && !p.ignoreEos) {
        row.finished = 'stop';
        row.text = row.decoder.finish();
      } else {
        row.decoder.push(token);
        const finishing = row.ids.length >= p.maxTokens || row.job.prompt.length + row.ids.length >= model.context;
        const text = finishing ? row.decoder.finish() : row.decoder.text;
        row.tokens.push({ id: token, token: this.tokenizer.tokenText(token), logprob: rowLogits[token] - lse, top: p.topLogprobs > 0 ? this.topOf(rowLogits, p.topLogprobs, lse) : [] });
        row.ends.push(text.length);
        row.text = text;
        if (protectedToken) row.stopFloor = text.length;
        const cut = protectedToken ? -1 : earliestStop(text, p.stop, Math.max(0, row.emitted - longest(p.stop)), row.stopFloor);
        if (cut >= 0) {
          row.text = text.slice(0, cut);
          row.finished = 'stop';
        } else if (finishing) {
          row.finished = 'length';
        }
      }
      this.report(row);
      if (row.finished) slots[r] = null;
    }
  }

  /** Resolve the requests whose choices have all finished. */
  private finishJobs(run: Running): void {
    run.jobs = run.jobs.filter((job) => {
      if (!job.rows.every((x) => x.finished)) return true;
      job.resolve(job.rows.map((x) => ({ index: x.choice, text: x.text, tokens: x.tokens.slice(0, x.reported), ids: x.ids, finishReason: x.finished! })));
      job.rows = [];
      return false;
    });
  }

  /** Report text that can no longer turn into a stop sequence, with the tokens it completes. */
  private report(row: Row): void {
    const p = row.job.params;
    // Text is final once no later token can change it (response-decoder.ts) nor complete a stop sequence in it.
    const safe = row.finished ? row.text.length : Math.min(row.decoder.stable, row.text.length - unfinishedPrefix(row.text, p.stop));
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

  /** The k most likely tokens, likeliest first (ties: lower id first), with log-probabilities under `lse`. */
  private topOf(logits: Float32Array, k: number, lse: number): Array<{ token: string; logprob: number }> {
    return Array.from(largestIds(logits, k), (id) => ({ token: this.tokenizer.tokenText(id), logprob: logits[id] - lse }));
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
 * The logits with min_p applied (excluded tokens at −∞; the logits themselves when min_p is off):
 * min_p keeps tokens whose probability at the sampling temperature is at least min_p × the
 * largest, i.e. logits within τ·ln(1/min_p) of the maximum (vLLM's min_p). Greedy decoding is
 * unchanged by it. top_k is the sampler's own (where vLLM's 0 or −1, and any k from the
 * vocabulary's size up, leave it off): both keep the largest logits, so which of the two goes
 * first does not change what is left.
 */
function withMinP(logits: Float32Array, p: DecodeParams): Float32Array {
  const V = logits.length;
  const minP = p.minP !== undefined && p.minP > 0 && p.temperature > 0 ? p.minP : 0;
  if (minP === 0) return logits;
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
  const floor = max + p.temperature * Math.log(minP);
  const out = Float32Array.from(logits);
  for (let i = 0; i < V; i++) if (out[i] < floor) out[i] = -Infinity;
  return out;
}

function longest(stops: readonly string[]): number {
  return stops.reduce((m, s) => Math.max(m, s.length), 0);
}

/** The logits with `ids` at −∞ (min_tokens keeps the stop tokens from being sampled). */
function withoutTokens(logits: Float32Array, ids: readonly number[]): Float32Array {
  for (const id of ids) if (id >= 0 && id < logits.length) logits[id] = -Infinity;
  return logits;
}

/** Index of the earliest stop sequence in `text` at or after `from` that ends after `endAfter`, or −1. */
function earliestStop(text: string, stops: readonly string[], from: number, endAfter = 0): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s, Math.max(from, endAfter - s.length + 1));
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}
