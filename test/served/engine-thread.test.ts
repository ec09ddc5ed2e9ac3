/**
 * serve-model's engine thread (engine.ts, engine-thread.ts): decoding in a worker thread of its
 * own gives the answers in-process sampling gives (greedy, seeded n, streamed), a client that goes
 * away stops its rows there, a folder that cannot be loaded fails the start naming it, and an
 * engine that stops fails its requests with the API's 500 shape instead of hanging them.
 */
import path from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import type { GPT } from '../../src-main/engine/gpt/model';
import { sample } from '../../src-main/engine/model/sampling';
import { ThreadEngine } from '../../src-main/server/openai/engine';
import { loadCheckpointPolicy, type ServedPolicy } from '../../src-main/server/openai/policy';
import { createModelServer } from '../../src-main/server/openai/server';
import { openAiClient, QUICK_CHECKPOINTS, servedModels } from '../helpers/model-server';
import { tempDir } from '../helpers/tmp';

const QUESTION = 'sort 53819072';

let solver: ServedPolicy;
let engine: ThreadEngine;
const served = servedModels({
  start: async () => {
    solver = loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'solver'));
    engine = await ThreadEngine.start({ sources: [{ dir: path.join(QUICK_CHECKPOINTS, 'solver') }, { dir: path.join(QUICK_CHECKPOINTS, 'verifier') }], backend: 'wasm', windowMs: 2 });
    const verifier = loadCheckpointPolicy(path.join(QUICK_CHECKPOINTS, 'verifier'));
    verifier.model.dispose();
    return createModelServer({ policies: [solver, verifier], engines: new Map(['solver', 'verifier'].map((id) => [id, engine.engineFor(id)])), log: () => {} });
  },
  cleanup: async () => {
    await engine?.close();
    solver?.model.dispose();
  },
});

function inProcess(prompt: number[], n: number, opts: { seed: number; temperature: number; maxTokens: number }) {
  const maxNewTokens = Math.min(opts.maxTokens, solver.model.context - prompt.length);
  return sample(solver.model as GPT, Array.from({ length: n }, () => prompt), { maxNewTokens, seed: opts.seed, temperature: opts.temperature, stopTokens: [...solver.tokenizer.stopTokens] }).map((s) => solver.tokenizer.responseText(s.tokens));
}

describe('serve-model with its engine thread', () => {
  it('answers as in-process sampling does: greedy, n seeded choices, concurrent requests, streamed chunks', async () => {
    const prompt = solver.tokenizer.chatPrompt([{ role: 'user', content: QUESTION }]);
    const greedy = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 0, max_tokens: 64 });
    expect(greedy.choices[0].message.content).toBe(inProcess(prompt, 1, { seed: 0, temperature: 0, maxTokens: 64 })[0]);
    const sampled = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 1, seed: 7, n: 3, max_tokens: 64 });
    expect(sampled.choices.map((c) => c.message.content)).toEqual(inProcess(prompt, 3, { seed: 7, temperature: 1, maxTokens: 64 }));
    const together = await Promise.all([1, 2, 3, 4].map((seed) => served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 1, seed, max_tokens: 64 })));
    together.forEach((r, i) => expect(r.choices[0].message.content).toBe(inProcess(prompt, 1, { seed: i + 1, temperature: 1, maxTokens: 64 })[0]));
    let streamed = '';
    const stream = await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 1, seed: 7, max_tokens: 64, stream: true });
    for await (const c of stream) streamed += c.choices[0]?.delta?.content ?? '';
    expect(streamed).toBe(inProcess(prompt, 1, { seed: 7, temperature: 1, maxTokens: 64 })[0]);
    // The counters come back from the engine with every answer.
    expect(served.server.batchers.get('solver')!.stats.rows).toBe(1 + 3 + 4 + 1);
    expect(served.server.batchers.get('verifier')!.stats.rows).toBe(0);
  });

  it('a client that goes away stops its rows in the engine', async () => {
    const before = served.server.batchers.get('solver')!.stats.steps;
    const controller = new AbortController();
    const stream = await served.client.completions.create({ model: 'solver', prompt: 'sort 1', max_tokens: 120, temperature: 1, seed: 3, stream: true }, { signal: controller.signal });
    let chunks = 0;
    await (async () => {
      for await (const _chunk of stream) {
        if (++chunks === 2) controller.abort();
      }
    })().catch(() => undefined);
    // The next answer's counters show the aborted request stopped long before its 120 tokens.
    await served.client.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], temperature: 0, max_tokens: 2 });
    expect(served.server.batchers.get('solver')!.stats.steps - before).toBeLessThan(60);
  });

  it('a folder it cannot load fails the start, naming the folder', async () => {
    const tmp = tempDir('marsrl-engine-');
    try {
      await expect(ThreadEngine.start({ sources: [{ dir: tmp.dir }], backend: 'wasm' })).rejects.toThrow(new RegExp(`engine thread could not start: ${tmp.dir.replace(/[/\\]/g, '.')}: not a Studio checkpoint folder`));
    } finally {
      tmp.cleanup();
    }
  });

  it('an engine that stops fails its requests with a 500 error, and later ones too', async () => {
    const own = await ThreadEngine.start({ sources: [{ dir: path.join(QUICK_CHECKPOINTS, 'solver') }], backend: 'wasm' });
    const s = await createModelServer({ policies: [solver], engines: new Map([['solver', own.engineFor('solver')]]), log: () => {} });
    const c = openAiClient(s.baseUrl);
    try {
      const pending = c.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], max_tokens: 120, temperature: 1 }).catch((e: unknown) => e);
      await own.close();
      const error = await pending;
      expect(error).toBeInstanceOf(OpenAI.InternalServerError);
      expect((error as Error).message).toMatch(/engine thread was stopped/);
      const later = await c.chat.completions.create({ model: 'solver', messages: [{ role: 'user', content: QUESTION }], max_tokens: 4 }).catch((e: unknown) => e);
      expect((later as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(500);
    } finally {
      await s.close();
    }
  });
});
