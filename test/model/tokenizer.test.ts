import { describe, expect, it } from 'vitest';
import { DEFAULT_CHARSET, Tokenizer } from '../../src-main/engine/gpt/tokenizer';

describe('Tokenizer', () => {
  const tok = new Tokenizer();

  it('puts the specials first and then one id per charset character', () => {
    expect(tok.padId).toBe(0);
    expect([tok.bosId, tok.eosId]).toEqual([1, 2]);
    expect(tok.roleIds).toEqual({ solver: 3, verifier: 4, corrector: 5 });
    expect(tok.vocabSize).toBe(6 + Array.from(DEFAULT_CHARSET).length);
    expect(tok.encode('0')).toEqual([6]);
  });

  it('round-trips text with special tokens', () => {
    const text = '<solver>sort 3 1 2\n<eos>';
    const ids = tok.encode(text);
    expect(ids[0]).toBe(tok.roleIds.solver);
    expect(ids[ids.length - 1]).toBe(tok.eosId);
    expect(ids.length).toBe(1 + 'sort 3 1 2\n'.length + 1);
    expect(tok.decode(ids)).toBe(text);
    expect(tok.decode(ids, { skipSpecial: true })).toBe('sort 3 1 2\n');
    // '<' not starting a special token is an ordinary character; specials can be disabled.
    expect(tok.decode(tok.encode('1<2'))).toBe('1<2');
    expect(tok.encode('<eos>', { allowSpecial: false }).length).toBe(5);
  });

  it('names an unknown character and its position', () => {
    expect(() => tok.encode('ab€c')).toThrow(/"€" \(U\+20AC\) at position 2/);
    expect(() => tok.encode('X')).toThrow(/"X"/);
    expect(() => tok.decode([tok.vocabSize])).toThrow(/outside the vocabulary/);
  });

  it('serialises to JSON and back', () => {
    const small = new Tokenizer('ab', ['<pad>', '<bos>', '<eos>', '<solver>', '<verifier>', '<corrector>', '<sep>']);
    const copy = Tokenizer.fromJSON(JSON.parse(JSON.stringify(small.toJSON())));
    expect(copy.vocabSize).toBe(9);
    expect(copy.encode('<sep>ba')).toEqual(small.encode('<sep>ba'));
    expect(copy.idOf('<sep>')).toBe(6);
    expect(() => new Tokenizer('aa')).toThrow(/repeated/);
    expect(() => new Tokenizer('ab', ['<pad>'])).toThrow(/must include/);
  });
});
