/**
 * Character tokenizer for the built-in tasks: one token per character of a fixed charset, plus
 * special tokens (padding, sequence boundaries and one role token per agent). It is saved with
 * every model so a checkpoint decodes the same way wherever it is loaded.
 *
 * Ids: the special tokens first (in `specials` order, so `<pad>` is 0), then the charset characters.
 */

export const PAD = '<pad>';
export const BOS = '<bos>';
export const EOS = '<eos>';
export const ROLE_TOKENS = { solver: '<solver>', verifier: '<verifier>', corrector: '<corrector>' } as const;
export const DEFAULT_SPECIALS: readonly string[] = [PAD, BOS, EOS, ROLE_TOKENS.solver, ROLE_TOKENS.verifier, ROLE_TOKENS.corrector];

/**
 * Characters the built-in tasks write: digits, lower-case letters, space, newline and the
 * punctuation their prompts and answers use (sorting lists, arithmetic, verdicts).
 */
export const DEFAULT_CHARSET = '0123456789abcdefghijklmnopqrstuvwxyz \n+-*/=()[]<>,.:;?!#|_';

export interface TokenizerJSON {
  kind: 'char';
  version: 1;
  charset: string;
  specials: string[];
}

export class Tokenizer {
  readonly charset: string;
  readonly specials: readonly string[];
  readonly vocabSize: number;
  readonly padId: number;
  readonly bosId: number;
  readonly eosId: number;
  /** Role token ids, by role. */
  readonly roleIds: { solver: number; verifier: number; corrector: number };
  private readonly charToId = new Map<string, number>();
  private readonly idToPiece: string[];
  private readonly specialToId = new Map<string, number>();
  /** Specials sorted longest first, so that "<solver>" is matched before a shorter prefix could be. */
  private readonly specialsByLength: string[];

  constructor(charset: string = DEFAULT_CHARSET, specials: readonly string[] = DEFAULT_SPECIALS) {
    const chars = Array.from(charset);
    if (new Set(chars).size !== chars.length) {
      const dup = chars.find((c, i) => chars.indexOf(c) !== i);
      throw new Error(`Tokenizer charset has a repeated character ${JSON.stringify(dup)}`);
    }
    for (const s of [PAD, BOS, EOS, ...Object.values(ROLE_TOKENS)]) {
      if (!specials.includes(s)) throw new Error(`Tokenizer specials must include ${s}`);
    }
    if (new Set(specials).size !== specials.length) throw new Error('Tokenizer specials must be distinct');
    for (const s of specials) {
      if (Array.from(s).length < 2) throw new Error(`special token ${JSON.stringify(s)} must be longer than one character`);
    }
    this.charset = charset;
    this.specials = [...specials];
    this.idToPiece = [...specials, ...chars];
    specials.forEach((s, i) => this.specialToId.set(s, i));
    chars.forEach((c, i) => this.charToId.set(c, specials.length + i));
    this.vocabSize = this.idToPiece.length;
    this.padId = this.specialToId.get(PAD)!;
    this.bosId = this.specialToId.get(BOS)!;
    this.eosId = this.specialToId.get(EOS)!;
    this.roleIds = {
      solver: this.specialToId.get(ROLE_TOKENS.solver)!,
      verifier: this.specialToId.get(ROLE_TOKENS.verifier)!,
      corrector: this.specialToId.get(ROLE_TOKENS.corrector)!,
    };
    this.specialsByLength = [...specials].sort((a, b) => b.length - a.length);
  }

  /** Id of a special token by its literal, e.g. `idOf('<eos>')`. */
  idOf(special: string): number {
    const id = this.specialToId.get(special);
    if (id === undefined) throw new Error(`unknown special token ${JSON.stringify(special)}; known: ${this.specials.join(' ')}`);
    return id;
  }

  isSpecial(id: number): boolean {
    return id >= 0 && id < this.specials.length;
  }

  /**
   * Text to ids. Special tokens written literally (e.g. "<solver>") become their ids unless
   * `allowSpecial` is false. A character outside the charset throws, naming it and its position.
   */
  encode(text: string, opts: { allowSpecial?: boolean } = {}): number[] {
    const allowSpecial = opts.allowSpecial ?? true;
    const out: number[] = [];
    let i = 0;
    outer: while (i < text.length) {
      if (allowSpecial && text[i] === '<') {
        for (const s of this.specialsByLength) {
          if (text.startsWith(s, i)) {
            out.push(this.specialToId.get(s)!);
            i += s.length;
            continue outer;
          }
        }
      }
      const cp = text.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      const id = this.charToId.get(ch);
      if (id === undefined) {
        throw new Error(
          `Tokenizer: character ${JSON.stringify(ch)} (U+${cp.toString(16).toUpperCase().padStart(4, '0')}) at position ${i} is not in the charset ${JSON.stringify(this.charset)}`,
        );
      }
      out.push(id);
      i += ch.length;
    }
    return out;
  }

  /** Ids to text; special tokens appear literally unless `skipSpecial`. Unknown ids throw. */
  decode(ids: readonly number[], opts: { skipSpecial?: boolean } = {}): string {
    let s = '';
    for (const id of ids) {
      const piece = this.idToPiece[id];
      if (piece === undefined || !Number.isInteger(id)) throw new Error(`Tokenizer: id ${id} is outside the vocabulary (size ${this.vocabSize})`);
      if (opts.skipSpecial && this.isSpecial(id)) continue;
      s += piece;
    }
    return s;
  }

  toJSON(): TokenizerJSON {
    return { kind: 'char', version: 1, charset: this.charset, specials: [...this.specials] };
  }

  static fromJSON(json: TokenizerJSON): Tokenizer {
    if (!json || json.kind !== 'char' || json.version !== 1) {
      throw new Error(`unsupported tokenizer description: ${JSON.stringify(json)?.slice(0, 200)}`);
    }
    return new Tokenizer(json.charset, json.specials);
  }
}
