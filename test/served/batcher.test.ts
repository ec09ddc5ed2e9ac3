import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { RequestBatcher, type DecodeParams } from '../../src-main/server/openai/batcher';
import { HfServedTokenizer, loadCheckpointPolicy, type ServedPolicy } from '../../src-main/server/openai/policy';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { sample } from '../../src-main/engine/model/sampling';
import { ScriptedModel } from '../../bench/scripted-model';
import { LLAMA3_TOKENIZER, QWEN3_TOKENIZER } from '../hf/corpus';

let policy: ServedPolicy;
beforeAll(async () => {
  await initBackend('wasm');
  policy = loadCheckpointPolicy(path.resolve(__dirname, '../../resources/checkpoints/quick/solver'));
});

const params = (seed: number): DecodeParams => ({ maxTokens: 8, temperature: 1, topP: 1, seed, n: 1, stop: [], topLogprobs: 0 });

describe('RequestBatcher scheduling', () => {
  it('requests sent together start one batch; a request sent while it decodes joins it, and each answer is the one it gets alone', async () => {
    const b = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 2 });
    const prompts = ['sort 12', 'sort 53819072', 'sort 9081726354'].map((q) => policy.tokenizer.chatPrompt([{ role: 'user', content: q }]));
    const long = (seed: number) => ({ ...params(seed), maxTokens: 40 });
    const alone = async (prompt: number[], p: DecodeParams) => {
      const solo = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 0 });
      return (await solo.submit({ prompt, params: p }))[0];
    };
    const first = [b.submit({ prompt: prompts[0], params: long(1) }), b.submit({ prompt: prompts[1], params: long(2) })];
    // Sent once the batch has decoded some steps: it must join, not wait for the batch to end.
    while (b.stats.steps < 3) await new Promise((r) => setImmediate(r));
    const stepsBefore = b.stats.steps;
    const late = b.submit({ prompt: prompts[2], params: long(3) });
    const [a1, a2, a3] = await Promise.all([...first, late]);
    expect(b.stats.batches).toBe(1);
    expect(b.stats.joined).toBe(1);
    expect(b.stats.rows).toBe(3);
    expect(b.stats.steps).toBeGreaterThan(stepsBefore);
    expect(a1[0].text).toBe((await alone(prompts[0], long(1))).text);
    expect(a2[0].text).toBe((await alone(prompts[1], long(2))).text);
    const solo3 = await alone(prompts[2], long(3));
    expect(a3[0].ids).toEqual(solo3.ids);
    expect(a3[0].tokens.map((t) => t.logprob)).toEqual(solo3.tokens.map((t) => expect.closeTo(t.logprob, 5) as unknown as number));
    // Once it is idle, the next request starts a batch of its own.
    await b.submit({ prompt: prompts[0], params: params(4) });
    expect(b.stats.batches).toBe(2);
  });

  it('with joinWaitMs, late requests wait (the batch decoding on) until a quarter of its rows queue, then share one prefill', async () => {
    const b = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 2, joinWaitMs: 10_000 });
    const prompt = policy.tokenizer.chatPrompt([{ role: 'user', content: 'sort 53819072' }]);
    const long = (seed: number) => ({ ...params(seed), maxTokens: 100, stop: [] });
    const running = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => b.submit({ prompt, params: long(i) }));
    const stepTo = async (n: number) => {
      while (b.stats.steps < n) await new Promise((r) => setImmediate(r));
    };
    await stepTo(2);
    const late = [b.submit({ prompt, params: long(20) })];
    const at = b.stats.steps;
    await stepTo(at + 4);
    // One queued of the two (a quarter of eight) that make a join due: it waits.
    expect(b.stats.joined).toBe(0);
    late.push(b.submit({ prompt, params: long(21) }));
    await Promise.all([...running, ...late]);
    expect(b.stats.joined).toBe(2);
    expect(b.stats.prefills).toBe(2);
  });

  it('answers a request as soon as its last token is sampled, before the batch decodes another step, and a request queued then joins that step', async () => {
    const prompt = policy.tokenizer.chatPrompt([{ role: 'user', content: 'sort 53819072' }]);
    // Only length ends these (the stop token cannot: its logit is pushed down), so the short one needs exactly 3 tokens.
    const model = policy.model;
    const stopIds = new Set(policy.tokenizer.stopTokens);
    const withoutStop = Object.create(model) as typeof model;
    const noStop = <T extends { logits: Float32Array }>(out: T): T => {
      for (let r = 0; r * model.vocabSize < out.logits.length; r++) for (const id of stopIds) out.logits[r * model.vocabSize + id] = -1e9;
      return out;
    };
    const prefillsAtStep: number[] = [];
    withoutStop.prefill = (...args) => {
      prefillsAtStep.push(steps);
      return noStop(model.prefill(...args));
    };
    withoutStop.decodeStep = (...args) => {
      steps++;
      return noStop(model.decodeStep(...args));
    };
    let steps = 0;
    const batcher = new RequestBatcher(withoutStop, policy.tokenizer, { windowMs: 0 });
    const long = batcher.submit({ prompt, params: { ...params(1), maxTokens: 30 } });
    let next: Promise<unknown> | null = null;
    let stepsAtAnswer = -1;
    await batcher.submit({ prompt, params: { ...params(2), maxTokens: 3 } }).then(() => {
      stepsAtAnswer = steps;
      // A closed-loop caller's next request, sent from the answer's callback.
      next = batcher.submit({ prompt, params: { ...params(3), maxTokens: 3 } });
    });
    // Token 1 comes from the prefill, tokens 2 and 3 from two decode steps: no third step ran first.
    expect(stepsAtAnswer).toBe(2);
    await next;
    await long;
    // The next request was prefilled (and joined) before the step after the answer, not after it.
    expect(prefillsAtStep).toEqual([0, 2]);
    expect(batcher.stats.joined).toBe(1);
    expect(batcher.stats.batches).toBe(1);
  });

  it('a batch at maxRows admits more only as rows finish', async () => {
    const b = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 2, maxRows: 2 });
    const prompt = policy.tokenizer.chatPrompt([{ role: 'user', content: 'sort 4404' }]);
    const answers = await Promise.all([0, 1, 2, 3, 4].map((i) => b.submit({ prompt, params: { ...params(i), maxTokens: 6 + 6 * i } })));
    expect(b.stats.largestBatch).toBe(2);
    expect(b.stats.rows).toBe(5);
    // The first two start the batch; the others join it as rows leave (or start the next one).
    expect(b.stats.joined).toBeGreaterThanOrEqual(1);
    expect(b.stats.joined + b.stats.batches).toBeLessThanOrEqual(4);
    const solo = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 0 });
    for (let i = 0; i < 5; i++) expect(answers[i][0].ids).toEqual((await solo.submit({ prompt, params: { ...params(i), maxTokens: 6 + 6 * i } }))[0].ids);
  });

  it('stop sequences are held back while they may still begin, and cut where they occur', async () => {
    const b = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 1 });
    const prompt = policy.tokenizer.chatPrompt([{ role: 'user', content: 'sort 53819072' }]);
    const [free] = await b.submit({ prompt, params: { ...params(0), temperature: 0, maxTokens: 64 } });
    expect(free.text).toContain(' A:');
    const deltas: string[] = [];
    const [cut] = await b.submit({ prompt, params: { ...params(0), temperature: 0, maxTokens: 64, stop: [' A:'] }, onUpdate: (u) => deltas.push(u.delta) });
    expect(cut.text).toBe(free.text.slice(0, free.text.indexOf(' A:')));
    expect(deltas.join('')).toBe(cut.text);
    expect(cut.finishReason).toBe('stop');
    // No delta ever carried a prefix of the stop sequence that later turned out to be part of it.
    expect(deltas.some((d) => d.includes(' A'))).toBe(false);
  });
});

describe('RequestBatcher over a real tokenizer and vocabulary (scripted logits)', () => {
  const tokenizers = { qwen3: HfTokenizer.fromFolder(QWEN3_TOKENIZER), llama3: HfTokenizer.fromFolder(LLAMA3_TOKENIZER) };

  for (const [name, tok] of Object.entries(tokenizers)) {
    it(`${name}: streamed deltas add up to the answer's text, never half a character, never a space the clean-up takes back`, async () => {
      const served = new HfServedTokenizer(tok, { systemPrompts: {} });
      const ids = (text: string) => tok.encode(text, { addSpecialTokens: false });
      // "Hello" " " "." as three tokens: clean-up (Llama 3) turns the whole into "Hello."; the
      // parrot and abacus are split into byte tokens by both tokenizers.
      const script = [...ids('Hello'), ...ids(' '), ...ids('.'), ...ids(' world 🦜🧮 因此 don'), ...ids("'t"), ...ids(' stop')];
      const model = new ScriptedModel({ vocabSize: tok.vocabSize, context: 512, script });
      const prompt = served.chatPrompt([{ role: 'user', content: 'say it' }]);
      const deltas: string[] = [];
      const streamedTokens: number[] = [];
      const [answer] = await new RequestBatcher(model, served).submit({
        prompt,
        params: { ...params(3), maxTokens: script.length },
        onUpdate: (u) => {
          deltas.push(u.delta);
          streamedTokens.push(...u.tokens.map((t) => t.id));
        },
      });
      expect(answer.ids).toEqual(script);
      expect(answer.text).toBe(tok.decode(script, { skipSpecialTokens: true }));
      if (name === 'llama3') expect(answer.text.startsWith('Hello. world')).toBe(true);
      expect(deltas.join('')).toBe(answer.text);
      for (const d of deltas) expect(d).not.toContain('\uFFFD');
      expect(streamedTokens).toEqual(script);
      // A stop sequence is found in the text as the whole decode writes it.
      const [cut] = await new RequestBatcher(model, served).submit({ prompt, params: { ...params(3), maxTokens: script.length, stop: ['🧮'] } });
      expect(cut.text).toBe(answer.text.slice(0, answer.text.indexOf('🧮')));
    });
  }

  it('top_k samples as the in-process sampler does, and top_logprobs are the k largest of the whole vocabulary, as a full sort finds them', async () => {
    const tok = tokenizers.qwen3;
    const served = new HfServedTokenizer(tok, { systemPrompts: {} });
    const script = tok.encode('one two three four five six', { addSpecialTokens: false });
    // A low margin over the noise, so sampling at temperature 0.8 really draws among the top 20.
    const model = new ScriptedModel({ vocabSize: tok.vocabSize, context: 512, script, noiseSeed: 3, margin: 3 });
    const prompt = served.chatPrompt([{ role: 'user', content: 'count' }]);
    const p: DecodeParams = { ...params(5), maxTokens: 6, temperature: 0.8, topK: 20, n: 3, topLogprobs: 5, ignoreEos: true };
    const choices = await new RequestBatcher(model, served).submit({ prompt, params: p });
    const reference = sample(model, [prompt, prompt, prompt], { maxNewTokens: 6, temperature: 0.8, topK: 20, seed: 5 });
    for (const c of choices) {
      expect(c.ids).toEqual(reference[c.index].tokens);
      c.tokens.forEach((t, j) => expect(t.logprob).toBeCloseTo(reference[c.index].rawLogProbs[j], 5));
    }
    expect(new Set(choices.map((c) => c.ids.join())).size).toBeGreaterThan(1);
    // Without logprobs the same tokens are drawn (and none is reported), greedy or sampled.
    for (const q of [p, { ...p, temperature: 0 }]) {
      const [withLogprobs, without] = await Promise.all([new RequestBatcher(model, served).submit({ prompt, params: { ...q, topLogprobs: 0 } }), new RequestBatcher(model, served).submit({ prompt, params: { ...q, topLogprobs: 0, logprobs: false } })]);
      expect(without.map((c) => c.ids)).toEqual(withLogprobs.map((c) => c.ids));
      for (const t of without[0].tokens) expect(t.logprob).toBeNaN();
    }
    // The logits of each position, as the scripted model gives them, and a plain sort of them.
    const { logits: first, cache } = model.prefill([prompt], [0], prompt.length + 8);
    const rows = [first];
    for (let j = 1; j < 6; j++) rows.push(model.decodeStep(Int32Array.of(0), Int32Array.of(prompt.length + j - 1), cache).logits);
    rows.forEach((logits, j) => {
      const lse = Math.log(logits.reduce((a, x) => a + Math.exp(x), 0));
      const order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b).slice(0, 5);
      for (const c of choices) {
        expect(c.tokens[j].top.map((t) => t.token)).toEqual(order.map((id) => served.tokenText(id)));
        c.tokens[j].top.forEach((t, i) => expect(t.logprob).toBeCloseTo(logits[order[i]] - lse, 4));
      }
    });
  });
});
