import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { RequestBatcher, type DecodeParams } from '../../src-main/server/openai/batcher';
import { loadCheckpointPolicy, type ServedPolicy } from '../../src-main/server/openai/policy';

let policy: ServedPolicy;
beforeAll(async () => {
  await initBackend('wasm');
  policy = loadCheckpointPolicy(path.resolve(__dirname, '../../resources/checkpoints/quick/solver'));
});

const params = (seed: number): DecodeParams => ({ maxTokens: 8, temperature: 1, topP: 1, seed, n: 1, stop: [], topLogprobs: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('RequestBatcher scheduling', () => {
  it('after a batch of J requests waits (up to maxWaitMs) for J to come back, then lowers J when fewer come', async () => {
    const b = new RequestBatcher(policy.model, policy.tokenizer, { windowMs: 2, maxWaitMs: 300 });
    const prompt = policy.tokenizer.chatPrompt([{ role: 'user', content: 'sort 12' }]);
    await Promise.all([0, 1, 2].map((i) => b.submit({ prompt, params: params(i) })));
    expect(b.stats.batches).toBe(1);
    // The three come back 10 ms apart, wider than the 2 ms quiet window: still one batch.
    const again: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      again.push(b.submit({ prompt, params: params(10 + i) }));
      await sleep(10);
    }
    await Promise.all(again);
    expect(b.stats.batches).toBe(2);
    expect(b.stats.rows).toBe(6);
    // Only one comes back: it waits out maxWaitMs once, then J is 1 and the next starts at once.
    let t = Date.now();
    await b.submit({ prompt, params: params(20) });
    expect(Date.now() - t).toBeGreaterThanOrEqual(250);
    t = Date.now();
    await b.submit({ prompt, params: params(21) });
    expect(Date.now() - t).toBeLessThan(250);
    expect(b.stats.batches).toBe(4);
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
