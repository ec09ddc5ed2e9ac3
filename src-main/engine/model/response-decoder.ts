/**
 * An answer's text built token by token, for `marsrl serve-model` (issue #16), which needs the
 * text after every sampled token: stop sequences are matched in it and streamed deltas cut from
 * it. Decoding the whole answer again at every step is quadratic in its length: with Qwen3's
 * tokenizer that cost 0.4 ms a token over a 4 000-token answer and 2.6 ms a token over a
 * 16 000-token one (42 s of the engine thread for that answer), against about 2 µs a token here
 * (`npm run bench -- serve`, its text table).
 *
 * The text equals the whole answer decoded at once (`PolicyTokenizer.responseText`), and its
 * first `stable` characters never change as tokens are added, so a stream never has to take
 * back what it sent. Two things make the whole decode differ from joining per-token pieces:
 *  - a byte-level token can end inside a multi-byte UTF-8 character (Qwen's and Llama 3's
 *    tokenizers split many CJK characters and emoji into two or three tokens); decoded alone, its
 *    bytes come out as U+FFFD until the character's last byte arrives;
 *  - decoders look at neighbouring tokens (SentencePiece's Metaspace drops the first token's
 *    leading space; transformers' clean_up_tokenization_spaces drops a space before "." or "n't").
 * `WindowedDecoder` handles both as vLLM's incremental detokenizer and the tokenizers crate's
 * DecodeStream do: it decodes a short window that starts one committed step back (prefix and
 * read offsets) and keeps only what the window adds, holding back while the window ends in
 * U+FFFD. Space clean-up, which vLLM leaves out, is applied here (`CleanedText`), so served text
 * stays what in-process decoding writes.
 */

/** An answer's text as tokens are sampled. */
export interface ResponseDecoder {
  /** Add the next sampled token (a special token adds no text, as `responseText` skips it). */
  push(id: number): void;
  /** The text so far; characters whose bytes are not all sampled yet are not in it. */
  readonly text: string;
  /** How many leading characters of `text` no later token can change. */
  readonly stable: number;
  /** No more tokens: the whole text, incomplete characters written as U+FFFD as a whole decode writes them. */
  finish(): string;
}

/**
 * transformers' `clean_up_tokenization` (tokenization_utils_base.py), the replacements in its
 * order: a space before punctuation and English contractions is dropped when a tokenizer's
 * config sets clean_up_tokenization_spaces (Llama 3's does, Qwen's does not).
 */
const SPACE_CLEANUP: ReadonlyArray<readonly [string, string]> = [
  [' .', '.'],
  [' ?', '?'],
  [' !', '!'],
  [' ,', ','],
  [" ' ", "'"],
  [" n't", "n't"],
  [" 'm", "'m"],
  [" 's", "'s"],
  [" 've", "'ve"],
  [" 're", "'re"],
];
const CLEANUP_PATTERNS = SPACE_CLEANUP.map(([from]) => from);
const LONGEST_CLEANUP = Math.max(...CLEANUP_PATTERNS.map((from) => from.length));

export function cleanUpSpaces(text: string): string {
  let out = text;
  for (const [from, to] of SPACE_CLEANUP) out = out.replaceAll(from, to);
  return out;
}

/**
 * Whether no clean-up pattern can span position `at` of `raw`, whatever follows: every pattern
 * starts with a space and is at most LONGEST_CLEANUP long, and replacing one only drops spaces,
 * so with no space among the LONGEST_CLEANUP − 1 characters before `at` the clean-up of the text
 * is the clean-up of each side, joined.
 */
function separable(raw: string, at: number): boolean {
  for (let i = Math.max(0, at - (LONGEST_CLEANUP - 1)); i < at; i++) if (raw.charCodeAt(i) === 32) return false;
  return true;
}

/**
 * Raw decoder output, appended piece by piece, as its space-cleaned text. The clean-up of
 * everything before the last separable position is kept (`head`); only the tail after it is
 * cleaned again when text is added, so the cost per token stays flat in ordinary text.
 */
export class CleanedText {
  private raw = '';
  private headRaw = 0;
  private head = '';
  private done = false;
  text = '';
  stable = 0;

  constructor(private readonly cleanup: boolean) {}

  append(piece: string): void {
    this.raw += piece;
    this.update();
  }

  finish(): string {
    this.done = true;
    this.update();
    return this.text;
  }

  private update(): void {
    const raw = this.raw;
    if (!this.cleanup) {
      this.text = raw;
      this.stable = raw.length;
      return;
    }
    let cut = raw.length;
    while (cut > this.headRaw && !separable(raw, cut)) cut--;
    if (cut > this.headRaw) {
      this.head += cleanUpSpaces(raw.slice(this.headRaw, cut));
      this.headRaw = cut;
    }
    this.text = this.head + cleanUpSpaces(raw.slice(this.headRaw));
    this.stable = this.done ? this.text.length : this.head.length + cleanUpSpaces(raw.slice(this.headRaw, this.settled())).length;
  }

  /**
   * The raw position up to which later text cannot change the clean-up: before the start of the
   * longest suffix that may still grow into a pattern, and before any pattern occurrence that
   * crosses that point (" ' " holds a space inside it).
   */
  private settled(): number {
    const raw = this.raw;
    let at = raw.length - unfinishedPrefix(raw, CLEANUP_PATTERNS);
    for (let moved = true; moved && at > this.headRaw; ) {
      moved = false;
      for (let s = Math.max(this.headRaw, at - (LONGEST_CLEANUP - 1)); s < at; s++) {
        if (raw.charCodeAt(s) === 32 && SPACE_CLEANUP.some(([from]) => s + from.length > at && raw.startsWith(from, s))) {
          at = s;
          moved = true;
          break;
        }
      }
    }
    return Math.max(at, this.headRaw);
  }
}

/**
 * Length of the longest suffix of `text` that is a proper prefix of one of `patterns`: text that
 * may still grow into one (a clean-up pattern here, a stop sequence in the batcher).
 */
export function unfinishedPrefix(text: string, patterns: readonly string[]): number {
  let held = 0;
  for (const pattern of patterns) {
    for (let k = Math.min(pattern.length - 1, text.length); k > held; k--) {
      if (text.endsWith(pattern.slice(0, k))) {
        held = k;
        break;
      }
    }
  }
  return held;
}

/**
 * Incremental decoding over a decode function of the tokenizer's decoder alone (special tokens
 * skipped, no space clean-up). `prefix`…`read` are the ids of the last committed step, decoded
 * again in front of the new ones so that decoders which look at a token's neighbour (Metaspace's
 * first-token space) see the same context as in a whole decode.
 */
export class WindowedDecoder implements ResponseDecoder {
  private readonly ids: number[] = [];
  private prefix = 0;
  private read = 0;
  private prefixText = '';
  private readonly out: CleanedText;

  constructor(
    private readonly decodeRaw: (ids: number[]) => string,
    cleanup: boolean,
  ) {
    this.out = new CleanedText(cleanup);
  }

  get text(): string {
    return this.out.text;
  }

  get stable(): number {
    return this.out.stable;
  }

  push(id: number): void {
    this.ids.push(id);
    const window = this.decodeRaw(this.ids.slice(this.prefix));
    // A window ending in U+FFFD stops inside a character whose last bytes are still to come.
    if (window.length > this.prefixText.length && !window.endsWith('\uFFFD')) this.commit(window);
  }

  finish(): string {
    if (this.read < this.ids.length) {
      const window = this.decodeRaw(this.ids.slice(this.prefix));
      if (window.length > this.prefixText.length) this.commit(window);
    }
    return this.out.finish();
  }

  private commit(window: string): void {
    this.out.append(window.slice(this.prefixText.length));
    this.prefix = this.read;
    this.read = this.ids.length;
    this.prefixText = this.decodeRaw(this.ids.slice(this.prefix, this.read));
  }
}

/** A tokenizer whose tokens decode independently (the Studio GPT's characters): each token's text is appended. */
export class AppendDecoder implements ResponseDecoder {
  text = '';

  constructor(private readonly tokenText: (id: number) => string) {}

  get stable(): number {
    return this.text.length;
  }

  push(id: number): void {
    this.text += this.tokenText(id);
  }

  finish(): string {
    return this.text;
  }
}
