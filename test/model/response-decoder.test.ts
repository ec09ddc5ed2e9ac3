import { describe, expect, it } from 'vitest';
import { HfTokenizer } from '../../src-main/engine/hf/tokenizer';
import { CleanedText, cleanUpSpaces } from '../../src-main/engine/model/response-decoder';
import { Rng } from '../../src-main/engine/util/rng';
import { LLAMA3_TOKENIZER, MIXED_CORPUS, QWEN3_TOKENIZER } from '../hf/corpus';

/** Text whose clean-up matters: spaces before punctuation and contractions, " ' ", doubled spaces. */
const SPACED = ["Hello , world . Is it ? Yes ! I do n't know , I 'm sure it 's what we 've seen and they 're here .", "a ' b ' ' c  .  , x n't 'm", 'x = 5 , y = 3 . so x - y = 2 !'];

describe('CleanedText', () => {
  it('is transformers’ space clean-up of the raw text at every step, and never changes its stable part, whatever the pieces', () => {
    const rng = new Rng(7, 'cleaned-text');
    const alphabet = [' ', ' ', ' ', '.', '?', '!', ',', "'", 'n', 't', 'm', 's', 'v', 'e', 'r', 'a'];
    for (let trial = 0; trial < 400; trial++) {
      const out = new CleanedText(true);
      let raw = '';
      const stableParts: string[] = [];
      const length = rng.int(1, 40);
      while (raw.length < length) {
        let piece = '';
        for (let k = rng.int(1, 3); k > 0; k--) piece += alphabet[rng.int(0, alphabet.length - 1)];
        raw += piece;
        out.append(piece);
        // The plain reference: the whole clean-up of everything so far.
        expect(out.text).toBe(cleanUpSpaces(raw));
        expect(out.stable).toBeLessThanOrEqual(out.text.length);
        stableParts.push(out.text.slice(0, out.stable));
      }
      const final = out.finish();
      expect(final).toBe(cleanUpSpaces(raw));
      expect(out.stable).toBe(final.length);
      for (const part of stableParts) expect(final.startsWith(part)).toBe(true);
    }
  });

  it('holds back only what may still change: a trailing space or the start of a contraction', () => {
    const out = new CleanedText(true);
    out.append('I am a cat');
    expect(out.stable).toBe('I am a cat'.length);
    out.append(' ');
    expect(out.text.slice(0, out.stable)).toBe('I am a cat');
    out.append("n'");
    expect(out.text.slice(0, out.stable)).toBe('I am a cat');
    out.append('t go');
    expect(out.text).toBe("I am a catn't go");
    expect(out.stable).toBe(out.text.length);
  });

  it('the clean-up is the one @huggingface/tokenizers applies for Llama 3 (clean_up_tokenization_spaces true)', () => {
    const tok = HfTokenizer.fromFolder(LLAMA3_TOKENIZER);
    for (const text of [...SPACED, ...MIXED_CORPUS]) {
      const ids = tok.encode(text, { addSpecialTokens: false });
      const decoder = tok.responseDecoder();
      for (const id of ids) decoder.push(id);
      // The engine's own decode cleans up; ours cleans the decoder's raw output.
      expect(decoder.finish()).toBe(tok.decode(ids, { skipSpecialTokens: true }));
    }
    expect(tok.decode(tok.encode('Hello , world .', { addSpecialTokens: false }))).toBe('Hello, world.');
  });
});

describe('WindowedDecoder (HfTokenizer.responseDecoder)', () => {
  const tokenizers = { qwen3: HfTokenizer.fromFolder(QWEN3_TOKENIZER), llama3: HfTokenizer.fromFolder(LLAMA3_TOKENIZER) };

  /** Push ids one by one; check each step against the whole decode, return the final text. */
  function follow(tok: HfTokenizer, ids: number[]): string {
    const decoder = tok.responseDecoder();
    const stableParts: string[] = [];
    for (let k = 0; k < ids.length; k++) {
      decoder.push(ids[k]);
      stableParts.push(decoder.text.slice(0, decoder.stable));
      // What the text may show of the whole decode so far: all of it but a character still being spelled.
      const whole = tok.decode(ids.slice(0, k + 1), { skipSpecialTokens: true });
      if (!whole.includes('\uFFFD')) expect(whole.startsWith(decoder.text)).toBe(true);
    }
    const final = decoder.finish();
    expect(final).toBe(tok.decode(ids, { skipSpecialTokens: true }));
    for (const part of stableParts) expect(final.startsWith(part)).toBe(true);
    return final;
  }

  for (const [name, tok] of Object.entries(tokenizers)) {
    it(`${name}: text built token by token equals the whole decode, multi-byte characters whole, the stable part never taken back`, () => {
      for (const text of [...MIXED_CORPUS, ...SPACED, '因此 ✅ 😀👍🏽 🦜🧮 𠀀 쀍 x_{3} = 21 \\cdot 6', MIXED_CORPUS.join('\n')]) {
        const ids = tok.encode(text, { addSpecialTokens: false });
        follow(tok, ids);
        // No step ever shows half a character: U+FFFD appears only where the text itself has one.
        const decoder = tok.responseDecoder();
        for (const id of ids) {
          decoder.push(id);
          expect(decoder.text).not.toContain('\uFFFD');
        }
      }
      // Some of these characters really are split across tokens (else the hold-back is untested).
      const emoji = tok.encode('🦜🧮𠀀쀍', { addSpecialTokens: false });
      expect(emoji.some((id) => tok.decode([id]).includes('\uFFFD'))).toBe(true);
    });

    it(`${name}: random token sequences (special tokens, stray bytes, invalid UTF-8) decode as the whole decode does`, () => {
      const rng = new Rng(11, `windowed-${name}`);
      const special = [...tok.addedTokens().keys()];
      for (let trial = 0; trial < 60; trial++) {
        const ids = Array.from({ length: rng.int(1, 60) }, () => (rng.next() < 0.1 ? special[rng.int(0, special.length - 1)] : rng.int(0, tok.vocabSize - 1)));
        follow(tok, ids);
      }
    });
  }
});
