/**
 * `marsrl serve-model` driven by the official `openai` npm package as an independent client, and
 * by the Studio's own endpoint client, serving the shipped quick checkpoints.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { GPT } from '../../src-main/engine/gpt/model';
import { sample } from '../../src-main/engine/model/sampling';
import { EndpointClient } from '../../src-main/engine/served/client';
import { EndpointPool } from '../../src-main/engine/served/pool';
import { loadCheckpointPolicy, type ServedPolicy } from '../../src-main/server/openai/policy';
import { createModelServer } from '../../src-main/server/openai/server';
import { startFaultServer } from './fault-server';
import { approvals } from '../helpers/key-approvals';
import { openAiClient, QUICK_CHECKPOINTS, servedModels } from '../helpers/model-server';

const TOKEN = 'serve-model-test-token-0123456789';
const QUESTION = 'sort 53819072';

let solver: ServedPolicy;
let verifier: ServedPolicy;
const served = servedModels({
  start: () => {
    solver = loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'solver'));
    verifier = loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'verifier'));
    // A window wide enough that four requests sent at once by one client land in one batch on a busy CI machine.
    return createModelServer({ policies: [solver, verifier], token: TOKEN, batchWindowMs: 40, log: () => {} });
  },
  apiKey: TOKEN,
});

/** The in-process answer the server must reproduce: the sampler on the same prompt and seed. */
function inProcess(policy: ServedPolicy, prompt: number[], n: number, opts: { seed: number; temperature: number; topP?: number; maxTokens: number }) {
  const maxNewTokens = Math.min(opts.maxTokens, policy.model.context - prompt.length);
  return sample(policy.model as GPT, Array.from({ length: n }, () => prompt), { maxNewTokens, seed: opts.seed, temperature: opts.temperature, topP: opts.topP ?? 1, stopTokens: [...policy.tokenizer.stopTokens] });
}

/** log π(token | prefix) of the policy itself, at temperature 1, recomputed over the whole sequence. */
function policyLogProbs(policy: ServedPolicy, prompt: number[], completion: number[]): number[] {
  const { stats, T, B } = policy.model.nextTokenStatsTimeMajor([[...prompt, ...completion]], { entropy: false });
  const all = stats.dataSync();
  stats.dispose();
  expect(B).toBe(1);
  return completion.map((_, j) => all[prompt.length - 1 + j]).slice(0, T);
}

describe('marsrl serve-model through the official openai client', () => {
  it('lists the served policies and refuses requests without the token (401, API error shape)', async () => {
    const models = await served.client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['solver', 'verifier']);
    const anonymous = openAiClient(served.server.baseUrl, 'wrong-token-wrong-token');
    const error = await anonymous.models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  });

  it('GET /metrics gives each policy’s batching counters, behind the token', async () => {
    const metrics = `${served.server.url}/metrics`;
    expect((await fetch(metrics)).status).toBe(401);
    const before = served.server.batchers.get('solver')!.stats.rows;
    await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 0, max_tokens: 4 });
    const body = (await (await fetch(metrics, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { models: Record<string, { rows: number; prefills: number }>; eventLoop: { active: number } };
    expect(Object.keys(body.models)).toEqual(['solver', 'verifier']);
    expect(body.models.solver.rows).toBe(before + 1);
    expect(body.models.solver.prefills).toBeGreaterThan(0);
    expect(body.eventLoop.active).toBeGreaterThan(0);
  });

  it('chat: greedy answer equals in-process greedy decoding; usage counts tokens', async () => {
    const r = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 0, max_tokens: 64 });
    const prompt = solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]);
    const [expected] = inProcess(solver, prompt, 1, { seed: 0, temperature: 0, maxTokens: 64 });
    expect(r.choices[0].message.content).toBe(solver.tokenizer.responseText(expected.tokens));
    expect(r.choices[0].message.content).toMatch(/ A:\d+$/);
    expect(r.choices[0].finish_reason).toBe(expected.stopReason === 'stop' ? 'stop' : 'length');
    expect(r.usage).toEqual({ prompt_tokens: prompt.length, completion_tokens: expected.tokens.length, total_tokens: prompt.length + expected.tokens.length });
    expect(r.object).toBe('chat.completion');
  });

  it('n and seed: every choice equals in-process sampling with the same seed and stream ids', async () => {
    const r = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 1, top_p: 0.9, n: 4, seed: 42, max_tokens: 64 });
    const prompt = solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]);
    const expected = inProcess(solver, prompt, 4, { seed: 42, temperature: 1, topP: 0.9, maxTokens: 64 });
    expect(r.choices.map((c) => c.message.content)).toEqual(expected.map((e) => solver.tokenizer.responseText(e.tokens)));
    expect(new Set(r.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
    const again = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 1, top_p: 0.9, n: 4, seed: 42, max_tokens: 64 });
    expect(again.choices.map((c) => c.message.content)).toEqual(r.choices.map((c) => c.message.content));
  });

  it('logprobs equal the policy’s own log-probabilities of the sampled tokens; top_logprobs are sorted and hold the greedy token', async () => {
    const r = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 1, seed: 7, max_tokens: 40, logprobs: true, top_logprobs: 3 });
    const content = r.choices[0].logprobs!.content!;
    const text = r.choices[0].message.content!;
    expect(content.map((t) => t.token).join('')).toBe(text);
    const prompt = solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]);
    const ids = solver.tokenizer.encodeText(text);
    const own = policyLogProbs(solver, prompt, ids);
    content.forEach((t, j) => expect(t.logprob).toBeCloseTo(own[j], 4));
    for (const t of content) {
      expect(t.top_logprobs).toHaveLength(3);
      const lps = t.top_logprobs.map((a) => a.logprob);
      expect([...lps].sort((a, b) => b - a)).toEqual(lps);
      expect(t.logprob).toBeLessThanOrEqual(lps[0] + 1e-9);
    }
    // Under temperature 0 the chosen token is the top alternative at every position.
    const greedy = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 0, max_tokens: 20, logprobs: true, top_logprobs: 1 });
    for (const t of greedy.choices[0].logprobs!.content!) expect(t.top_logprobs[0].token).toBe(t.token);
  });

  it('completions: raw text continued, stop sequences cut the text, logprobs in the completions layout', async () => {
    const prompt = `<bos>${QUESTION}<solver>`;
    const ids = solver.tokenizer.encodeText(prompt);
    expect(ids).toEqual(solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]));
    const full = await served.client.completions.create({ model: 'solver', prompt, temperature: 0, max_tokens: 64, logprobs: 2 });
    const text = full.choices[0].text;
    expect(full.object).toBe('text_completion');
    expect(full.choices[0].logprobs!.tokens!.join('')).toBe(text);
    const own = policyLogProbs(solver, ids, solver.tokenizer.encodeText(text));
    full.choices[0].logprobs!.token_logprobs!.forEach((lp, j) => expect(lp).toBeCloseTo(own[j], 4));
    expect(Object.keys(full.choices[0].logprobs!.top_logprobs![0])).toHaveLength(2);
    // Stop at " A:" (the answer's marker): the text ends just before it, finish_reason "stop".
    const stopped = await served.client.completions.create({ model: 'solver', prompt, temperature: 0, max_tokens: 64, stop: [' A:', 'never'] });
    expect(text).toContain(' A:');
    expect(stopped.choices[0].text).toBe(text.slice(0, text.indexOf(' A:')));
    expect(stopped.choices[0].finish_reason).toBe('stop');
    const short = await served.client.completions.create({ model: 'solver', prompt, temperature: 0, max_tokens: 3 });
    expect(short.choices[0].text).toBe(text.slice(0, 3));
    expect(short.choices[0].finish_reason).toBe('length');
  });

  it('streams chat chunks (SSE) whose concatenation equals the non-streamed answer, usage last', async () => {
    const args = { model: 'solver', messages: [{ role: 'user' as const, content: QUESTION }], temperature: 1, seed: 3, max_tokens: 64, n: 2 };
    const whole = await served.client.chat.completions.create(args);
    const stream = await served.client.chat.completions.create({ ...args, stream: true, stream_options: { include_usage: true } });
    const texts = ['', ''];
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    const finish: Array<string | null> = [null, null];
    for await (const c of stream) {
      chunks++;
      for (const ch of c.choices) {
        texts[ch.index] += ch.delta.content ?? '';
        if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
      }
      if (c.usage) usage = c.usage;
    }
    expect(texts).toEqual(whole.choices.map((c) => c.message.content));
    expect(chunks).toBeGreaterThan(10);
    expect(finish).toEqual(whole.choices.map((c) => c.finish_reason));
    expect(usage).toEqual(whole.usage);
  });

  it('top_k and min_p (vLLM extensions): top_k 1 and min_p 1 decode greedily, top_k 3 stays in the top three', async () => {
    const messages = [{ role: 'user' as const, content: QUESTION }];
    const greedy = await served.client.chat.completions.create({ model: 'solver', messages, temperature: 0, max_tokens: 64 });
    // Fields beyond OpenAI's go in the body as vLLM's clients send them.
    const extra = (body: Record<string, unknown>) => body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const k1 = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 1.5, seed: 5, n: 3, max_tokens: 64, top_k: 1 }));
    expect(k1.choices.map((c) => c.message.content)).toEqual(Array(3).fill(greedy.choices[0].message.content));
    const p1 = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 1.5, seed: 5, n: 3, max_tokens: 64, min_p: 1 }));
    expect(p1.choices.map((c) => c.message.content)).toEqual(Array(3).fill(greedy.choices[0].message.content));
    const k3 = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 2, seed: 9, n: 4, max_tokens: 64, top_k: 3, logprobs: true, top_logprobs: 3 }));
    const plain = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 2, seed: 9, n: 4, max_tokens: 64, logprobs: true, top_logprobs: 3 }));
    let outside = 0;
    for (const c of plain.choices) for (const t of c.logprobs!.content!) if (!t.top_logprobs.some((a) => a.token === t.token)) outside++;
    expect(outside).toBeGreaterThan(0); // at temperature 2 plain sampling leaves the top three …
    for (const c of k3.choices) for (const t of c.logprobs!.content!) expect(t.top_logprobs.map((a) => a.token)).toContain(t.token); // … top_k 3 never does
    const bad = await served.client.chat.completions.create(extra({ model: 'solver', messages, top_k: 2.5 })).catch((e: unknown) => e);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('top_k');
  });

  it('ignore_eos and min_tokens (vLLM extensions): decoding runs through the stop token, and min_tokens holds it and stop sequences off', async () => {
    const messages = [{ role: 'user' as const, content: QUESTION }];
    const extra = (body: Record<string, unknown>) => body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const prompt = solver.tokenizer.chatPrompt(messages);
    const eos = solver.tokenizer.stopTokens[0];
    const eosText = solver.tokenizer.tokenText(eos);
    const natural = await served.client.chat.completions.create({ model: 'solver', messages, temperature: 0, max_tokens: 64, logprobs: true });
    const naturalLength = natural.usage!.completion_tokens - 1; // the stop token is counted, not shown
    expect(natural.choices[0].finish_reason).toBe('stop');

    // ignore_eos: the plain sampler without stop tokens is the reference, stop token and all.
    const fixed = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 0, max_tokens: 64, ignore_eos: true, logprobs: true }));
    const [through] = sample(solver.model as GPT, [prompt], { maxNewTokens: 64, seed: 0, temperature: 0, stopTokens: [] });
    expect(fixed.usage!.completion_tokens).toBe(64);
    expect(fixed.choices[0].finish_reason).toBe('length');
    expect(fixed.choices[0].message.content).toBe(solver.tokenizer.responseText(through.tokens));
    expect(fixed.choices[0].message.content!.startsWith(natural.choices[0].message.content!)).toBe(true);
    expect(fixed.choices[0].logprobs!.content![naturalLength].token).toBe(eosText);
    const sampled = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 1, seed: 11, n: 3, max_tokens: 50, ignore_eos: true }));
    expect(sampled.usage!.completion_tokens).toBe(150);

    // min_tokens: the stop token is masked for the first min_tokens tokens, so where greedy
    // decoding ended, the most likely token is the stop token and the one chosen is the runner-up.
    const held = await served.client.chat.completions.create(extra({ model: 'solver', messages, temperature: 0, max_tokens: 64, min_tokens: naturalLength + 3, logprobs: true, top_logprobs: 2 }));
    const content = held.choices[0].logprobs!.content!;
    expect(held.usage!.completion_tokens).toBeGreaterThanOrEqual(naturalLength + 3);
    expect(content.slice(0, naturalLength + 3).some((t) => t.token === eosText)).toBe(false);
    expect(content.slice(0, naturalLength).map((t) => t.token)).toEqual(natural.choices[0].logprobs!.content!.map((t) => t.token));
    expect(content[naturalLength].top_logprobs[0].token).toBe(eosText);
    expect(content[naturalLength].token).toBe(content[naturalLength].top_logprobs[1].token);

    // Stop sequences count only where they end in the text after the first min_tokens tokens
    // (vLLM's rule): " A:" ending on the last protected token is passed over, ending one later it cuts.
    const raw = `<bos>${QUESTION}<solver>`;
    const whole = (await served.client.completions.create({ model: 'solver', prompt: raw, temperature: 0, max_tokens: 64 })).choices[0].text;
    const marker = whole.indexOf(' A:');
    expect(marker).toBeGreaterThan(0);
    expect(solver.tokenizer.encodeText(whole.slice(0, marker + 3))).toHaveLength(marker + 3); // one token per character
    const withStop = (minTokens: number) => served.client.completions.create({ model: 'solver', prompt: raw, temperature: 0, max_tokens: 64, stop: [' A:'], ...({ min_tokens: minTokens } as object) });
    expect((await withStop(marker + 3)).choices[0].text).toBe(whole);
    const cut = await withStop(marker + 2);
    expect(cut.choices[0].text).toBe(whole.slice(0, marker));
    expect(cut.choices[0].finish_reason).toBe('stop');

    for (const [body, param] of [
      [{ min_tokens: 10, max_tokens: 5 }, 'min_tokens'],
      [{ min_tokens: -1 }, 'min_tokens'],
      [{ ignore_eos: 'yes' }, 'ignore_eos'],
    ] as const) {
      const bad = await served.client.chat.completions.create(extra({ model: 'solver', messages, ...body })).catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
      expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
    }
  });

  it('answers a bad request with 400 naming the field, and an unknown model with 404', async () => {
    const bad = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 5 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    const b = bad as InstanceType<typeof OpenAI.BadRequestError>;
    expect(b.status).toBe(400);
    expect(b.param).toBe('temperature');
    expect(b.type).toBe('invalid_request_error');
    expect(b.message).toMatch(/temperature must be between 0 and 2/);

    const outside = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: 'Sort THESE' }] }).catch((e: unknown) => e);
    expect((outside as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages');
    expect((outside as Error).message).toMatch(/character "S" \(U\+0053\) at position 0/);

    const missing = await served.client.chat.completions.create({ model: 'qwen3-235b', messages: [{ role: 'user', content: QUESTION }] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).param).toBe('model');
  });

  it('refuses a body over the limit with 413 and keeps serving; paths with a query or dot segments route as URL resolves them; ids are distinct', async () => {
    const small = await createModelServer({ policies: [solver], token: TOKEN, maxBodyBytes: 2000, log: () => {} });
    try {
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const huge = JSON.stringify({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], padding: 'x'.repeat(50_000) });
      const over = await fetch(`${small.baseUrl}/chat/completions`, { method: 'POST', headers, body: huge });
      expect(over.status).toBe(413);
      expect(((await over.json()) as { error: { message: string; type: string } }).error).toMatchObject({ type: 'invalid_request_error', message: 'the body is over 2000 bytes' });
      const body = JSON.stringify({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], max_tokens: 4 });
      const ids = new Set<string>();
      // A query string and a dot segment name the chat route, as URL resolves them.
      for (const route of ['/v1/chat/completions?trace=1', '/v1/x/../chat/completions', '/v1/./chat/completions']) {
        const ok = await fetch(`${small.url}${route}`, { method: 'POST', headers, body });
        expect(ok.status, route).toBe(200);
        ids.add(((await ok.json()) as { id: string }).id);
      }
      expect(ids.size).toBe(3);
      // URL keeps percent-escapes in a path, so an escaped route is not the chat route.
      expect((await fetch(`${small.url}/v1/chat/%63ompletions`, { method: 'POST', headers, body })).status).toBe(404);
      for (const id of ids) expect(id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
      const malformed = await fetch(`${small.baseUrl}/chat/completions`, { method: 'POST', headers, body: '{"model": "solver", ' });
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { error: { message: string } }).error.message).toMatch(/^the body is not valid JSON/);
    } finally {
      await small.close();
    }
  });

  it('batches concurrent requests into one decode, each answer unchanged by its batch mates', async () => {
    const stats = served.server.batchers.get('verifier')!.stats;
    const before = { batches: stats.batches, rows: stats.rows };
    const questions = ['sort 12', 'sort 53819072', 'sort 9081726354', 'sort 4404'];
    const verifierPrompt = (q: string) => `${q}|A:${q.slice(5).split('').sort().join('')}`;
    const answers = await Promise.all(questions.map((q, i) => served.client.chat.completions.create({ model: 'verifier', messages: [{ role: 'user', content: verifierPrompt(q) }], temperature: 1, seed: 100 + i, max_tokens: 64 })));
    expect(stats.batches - before.batches).toBe(1);
    expect(stats.rows - before.rows).toBe(4);
    questions.forEach((q, i) => {
      const prompt = verifier.tokenizer.chatPrompt([{ role: 'user', content: verifierPrompt(q) }]);
      const [alone] = inProcess(verifier, prompt, 1, { seed: 100 + i, temperature: 1, maxTokens: 64 });
      expect(answers[i].choices[0].message.content).toBe(verifier.tokenizer.responseText(alone.tokens));
    });
  });

  it('the Studio’s own endpoint client talks to it: chat, n, logprobs, streaming and the probe', async () => {
    const own = new EndpointClient({ name: 'studio-solver', baseUrl: served.server.baseUrl, model: 'solver', apiKeyEnv: 'MARSRL_SERVE_TEST_TOKEN', env: { MARSRL_SERVE_TEST_TOKEN: TOKEN }, keyApprovals: approvals({ MARSRL_SERVE_TEST_TOKEN: ['127.0.0.1'] }), probePrompt: 'sort 12', sampling: { temperature: 1, seed: 42, n: 4, top_p: 0.9, max_tokens: 64 } });
    const report = await own.probe();
    expect(report.error).toBeNull();
    expect(report.models).toEqual(['solver', 'verifier']);
    // serve-model implements every feature the probe asks for.
    expect(report.missing).toEqual([]);
    const r = await own.chat([{ role: 'user', content: QUESTION }]);
    const prompt = solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]);
    const expected = inProcess(solver, prompt, 4, { seed: 42, temperature: 1, topP: 0.9, maxTokens: 64 });
    expect(r.choices.map((c) => c.text)).toEqual(expected.map((e) => solver.tokenizer.responseText(e.tokens)));
    expect(r.usage?.completionTokens).toBe(expected.reduce((a, e) => a + e.tokens.length, 0));
    const shown = ['', '', '', ''];
    const streamed = await own.chat([{ role: 'user', content: QUESTION }], { onChunk: (c) => (shown[c.index] += c.delta), sampling: { logprobs: true } });
    expect(shown).toEqual(r.choices.map((c) => c.text));
    expect(streamed.choices.map((c) => c.text)).toEqual(shown);
    expect(streamed.choices[0].logprobs?.map((l) => l.token).join('')).toBe(shown[0]);
    // Completions through the same client: the completions logprobs layout, normalised.
    const done = await own.complete(`<bos>${QUESTION}<solver>`, { sampling: { n: 1, temperature: 0, logprobs: true, top_logprobs: 2 } });
    const text = done.choices[0].text;
    expect(text).toMatch(/ A:\d+$/);
    const lps = done.choices[0].logprobs!;
    expect(lps.map((l) => l.token).join('')).toBe(text);
    const mine = policyLogProbs(solver, solver.tokenizer.encodeText(`<bos>${QUESTION}<solver>`), solver.tokenizer.encodeText(text));
    lps.forEach((l, j) => expect(l.logprob).toBeCloseTo(mine[j], 4));
    expect(lps[0].top).toHaveLength(2);
  });
});

describe('marsrl serve-model streaming details', () => {
  it('a streamed completion with a stop sequence and logprobs equals the non-streamed one', async () => {
    const args = { model: 'solver', prompt: `<bos>${QUESTION}<solver>`, temperature: 1, seed: 11, max_tokens: 64, stop: [' A:'], logprobs: 1 };
    const whole = await served.client.completions.create(args);
    const stream = await served.client.completions.create({ ...args, stream: true });
    let text = '';
    const tokens: string[] = [];
    const lps: number[] = [];
    let finish: string | null = null;
    for await (const c of stream) {
      for (const ch of c.choices) {
        text += ch.text;
        tokens.push(...(ch.logprobs?.tokens ?? []));
        lps.push(...(ch.logprobs?.token_logprobs ?? []));
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    expect(text).toBe(whole.choices[0].text);
    expect(text).not.toContain(' A:');
    expect(tokens.join('')).toBe(text);
    expect(lps).toEqual(whole.choices[0].logprobs!.token_logprobs);
    expect(finish).toBe(whole.choices[0].finish_reason);
  });

  it('a client that aborts a stream frees its row at the next step', async () => {
    const stats = served.server.batchers.get('solver')!.stats;
    const messages = [{ role: 'user' as const, content: QUESTION }];
    let before = stats.steps;
    await served.client.chat.completions.create({ model: 'solver', messages, temperature: 0, max_tokens: 64 });
    const fullSteps = stats.steps - before;
    expect(fullSteps).toBeGreaterThan(10);
    before = stats.steps;
    const stream = await served.client.chat.completions.create({ model: 'solver', messages, temperature: 0, max_tokens: 64, stream: true });
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) {
        stream.controller.abort();
        break;
      }
    }
    // The batcher stops soon after: wait for it to go idle, then count its steps.
    for (let i = 0; i < 100 && stats.steps - before < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect(stats.steps - before).toBeLessThan(fullSteps / 2);
  });
});

describe('serve-model as a replica in the pool', () => {
  it('a Studio policy behind the pool beside a hanging replica: failover, metrics, no key in the events', async () => {
    const hung = await startFaultServer({ model: 'solver', key: TOKEN, script: [{ kind: 'hang' }] });
    try {
      const events: Array<{ kind: string; message: string; data: Record<string, unknown> }> = [];
      const pool = new EndpointPool({
        endpoints: [{ name: 'studio', baseUrls: [hung.baseUrl, served.server.baseUrl], model: 'solver', apiKeyEnv: 'STUDIO_KEY', concurrency: 4, timeoutMs: 3000, retries: 2, sampling: { temperature: 0, max_tokens: 64 } }],
        agents: { solver: 'studio' },
        env: { STUDIO_KEY: TOKEN },
        keyApprovals: approvals({ STUDIO_KEY: ['127.0.0.1'] }),
        onEvent: (e) => events.push(e),
        sleep: async () => {},
      });
      const r = await pool.chat('solver', [{ role: 'user', content: QUESTION }]);
      const prompt = solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]);
      const [greedy] = inProcess(solver, prompt, 1, { seed: 0, temperature: 0, maxTokens: 64 });
      expect(r.choices[0].text).toBe(solver.tokenizer.responseText(greedy.tokens));
      expect(r.attempts).toBe(2);
      expect(events.map((e) => e.kind)).toEqual(['served/replica_down', 'served/retry']);
      const m = pool.metrics();
      expect(m['pool/studio/replicas_up']).toBe(1);
      expect(m['pool/studio/completion_tokens']).toBe(greedy.tokens.length);
      expect(JSON.stringify(events)).toContain('studio');
      expect(JSON.stringify(events)).not.toContain(TOKEN);
    } finally {
      await hung.close();
    }
  });
});
