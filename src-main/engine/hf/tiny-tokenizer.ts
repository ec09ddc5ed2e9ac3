/**
 * The tiny-qwen tokenizer (issue #14): a small byte-level BPE vocabulary the Studio trains on the
 * texts a task's agents read and write, written as real Hugging Face files (tokenizer.json,
 * tokenizer_config.json with a ChatML `chat_template`, generation_config.json), so the tiny model
 * goes through exactly the path a downloaded Qwen takes: `@huggingface/tokenizers` encodes,
 * `@huggingface/jinja` renders the template, hf/tokenizer.ts reads the stop ids.
 *
 * The layout is Qwen2/Qwen3's own (their tokenizer.json): NFC normaliser; a Split pre-tokeniser
 * with Qwen's regex (letters with one leading non-letter, each digit alone — Qwen writes numbers
 * digit by digit —, punctuation runs, newlines, spaces) followed by GPT-2's ByteLevel mapping;
 * a BPE model over the 256 byte symbols plus the learned merges; ByteLevel decoder. Every text
 * therefore round-trips, whatever the vocabulary learned. The added tokens are Qwen's ChatML ones
 * (`<|endoftext|>` pad, `<|im_start|>`, `<|im_end|>` end of turn, and the non-special `<think>`
 * / `</think>` that Qwen3's template writes when thinking is off).
 *
 * The chat template is Qwen3's for what the Studio sends (a system and user messages, earlier
 * assistant turns, a generation prompt, `enable_thinking`), without tools: on those conversations
 * it renders the same text as Qwen3's template (checked in test/hf/tiny-tokenizer.test.ts).
 *
 * BPE training is the textbook algorithm (Sennrich et al. 2016, "Neural Machine Translation of
 * Rare Words with Subword Units", Algorithm 1) on pre-tokenised pieces: merge the most frequent
 * adjacent pair, ties broken by the pair's text so the result depends only on the corpus.
 */
import fs from 'node:fs';
import path from 'node:path';
import { GENERATION_CONFIG, TOKENIZER_CONFIG, TOKENIZER_JSON } from './tokenizer';

/** Qwen2/Qwen3's pre-tokeniser regex, as their tokenizer.json writes it (Rust regex syntax). */
export const QWEN_SPLIT_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * The same regex in JavaScript syntax for training: JS has no inline `(?i:…)` group, so the
 * contractions are spelled with both cases of each letter; everything else is unchanged.
 */
const TRAINING_SPLIT = /'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

export const IM_START = '<|im_start|>';
export const IM_END = '<|im_end|>';
export const END_OF_TEXT = '<|endoftext|>';

/** Added tokens after the BPE vocabulary, with Qwen3's flags. */
const ADDED_TOKENS: ReadonlyArray<{ content: string; special: boolean }> = [
  { content: END_OF_TEXT, special: true },
  { content: IM_START, special: true },
  { content: IM_END, special: true },
  { content: '<think>', special: false },
  { content: '</think>', special: false },
];

/** Qwen3's chat template restricted to system/user/assistant messages (no tools). */
export const TINY_CHATML_TEMPLATE = [
  "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}",
  '{%- set ns = namespace(last_query_index=messages|length - 1) %}',
  "{%- for message in messages %}{%- if message.role == 'user' %}{%- set ns.last_query_index = loop.index0 %}{%- endif %}{%- endfor %}",
  '{%- for message in messages %}',
  "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}",
  "{%- elif message.role == 'assistant' %}",
  "{%- if loop.index0 > ns.last_query_index and loop.last %}{{- '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' + message.content }}{%- else %}{{- '<|im_start|>assistant\\n' + message.content }}{%- endif %}",
  "{{- '<|im_end|>\\n' }}",
  '{%- endif %}',
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}",
].join('');

/**
 * GPT-2's reversible map from bytes to printable characters (the ByteLevel pre-tokeniser's
 * alphabet): printable Latin-1 bytes stand for themselves, the others are moved to U+0100 on.
 */
export function byteToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const out = new Array<string>(256);
  let next = 0;
  for (let b = 0; b < 256; b++) out[b] = keep.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + next++);
  return out;
}

/** The pieces the pre-tokeniser makes of a text, in the byte-level alphabet. */
export function byteLevelPieces(text: string, alphabet = byteToUnicode()): string[] {
  const encoder = new TextEncoder();
  return (text.normalize('NFC').match(TRAINING_SPLIT) ?? []).map((piece) => [...encoder.encode(piece)].map((b) => alphabet[b]).join(''));
}

export interface TrainedBpe {
  /** Token text → id: the 256 byte symbols (ids 0–255, in byte order), then one token per merge. */
  vocab: Record<string, number>;
  /** Merges in rank order, as `[left, right]` (tokenizer.json's list form). */
  merges: Array<[string, string]>;
}

/**
 * Learn up to `maxMerges` merges from `corpus` (each text weighted by how often it occurs in the
 * list); stops early when no pair occurs at least `minCount` times.
 */
export function trainByteLevelBpe(corpus: readonly string[], maxMerges: number, minCount = 2): TrainedBpe {
  const alphabet = byteToUnicode();
  const counts = new Map<string, number>();
  for (const text of corpus) for (const piece of byteLevelPieces(text, alphabet)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
  // Each distinct piece once, as its current symbols, with its count.
  const words = [...counts].map(([piece, count]) => ({ symbols: [...piece], count }));
  const vocab: Record<string, number> = {};
  alphabet.forEach((symbol, id) => (vocab[symbol] = id));
  const merges: Array<[string, string]> = [];
  while (merges.length < maxMerges) {
    const pairs = new Map<string, { left: string; right: string; count: number }>();
    for (const word of words) {
      for (let i = 0; i + 1 < word.symbols.length; i++) {
        const key = `${word.symbols[i]} ${word.symbols[i + 1]}`;
        const entry = pairs.get(key);
        if (entry) entry.count += word.count;
        else pairs.set(key, { left: word.symbols[i], right: word.symbols[i + 1], count: word.count });
      }
    }
    let best: { key: string; left: string; right: string; count: number } | null = null;
    for (const [key, entry] of pairs) {
      if (!best || entry.count > best.count || (entry.count === best.count && key < best.key)) best = { key, ...entry };
    }
    if (!best || best.count < minCount) break;
    const merged = best.left + best.right;
    merges.push([best.left, best.right]);
    if (vocab[merged] === undefined) vocab[merged] = Object.keys(vocab).length;
    for (const word of words) {
      const next: string[] = [];
      for (let i = 0; i < word.symbols.length; i++) {
        if (i + 1 < word.symbols.length && word.symbols[i] === best.left && word.symbols[i + 1] === best.right) {
          next.push(merged);
          i++;
        } else next.push(word.symbols[i]);
      }
      word.symbols = next;
    }
  }
  return { vocab, merges };
}

export interface TinyTokenizerOptions {
  /** Texts the vocabulary is learned from (questions, solutions, verdicts, prompts). */
  corpus: readonly string[];
  /** Most merges learned (the vocabulary is 256 + merges + 5 added tokens at most). */
  maxMerges: number;
  /** model_max_length in tokenizer_config.json. */
  context: number;
  /** Least count of a pair worth a merge (default 2: a pair seen once is not a pattern). */
  minCount?: number;
}

/** What `writeTinyTokenizer` wrote: the vocabulary size and the ChatML ids. */
export interface TinyTokenizerFacts {
  vocabSize: number;
  padId: number;
  imStartId: number;
  imEndId: number;
  files: string[];
}

/**
 * Train the vocabulary on `corpus` and write tokenizer.json, tokenizer_config.json and
 * generation_config.json into `dir` (created if needed). Stop ids are Qwen3's pair:
 * `<|im_end|>` (end of an assistant turn) and `<|endoftext|>`.
 */
export function writeTinyTokenizer(dir: string, opts: TinyTokenizerOptions): TinyTokenizerFacts {
  if (!(Number.isInteger(opts.maxMerges) && opts.maxMerges >= 0)) throw new Error(`tiny tokenizer: maxMerges must be a non-negative integer (got ${opts.maxMerges})`);
  if (opts.corpus.length === 0) throw new Error('tiny tokenizer: the corpus is empty; give the texts the agents read and write');
  const { vocab, merges } = trainByteLevelBpe(opts.corpus, opts.maxMerges, opts.minCount ?? 2);
  const base = Object.keys(vocab).length;
  const added = ADDED_TOKENS.map((t, i) => ({ id: base + i, content: t.content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: t.special }));
  const idOf = (content: string) => added.find((t) => t.content === content)!.id;
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN_SPLIT_REGEX }, behavior: 'Isolated', invert: false }, byteLevel] },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
  const addedDecoder: Record<string, object> = {};
  for (const t of added) addedDecoder[String(t.id)] = { content: t.content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: t.special };
  const tokenizerConfig = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: addedDecoder,
    additional_special_tokens: [IM_START, IM_END],
    bos_token: null,
    chat_template: TINY_CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: IM_END,
    errors: 'replace',
    model_max_length: opts.context,
    pad_token: END_OF_TEXT,
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  const generation = { bos_token_id: idOf(END_OF_TEXT), eos_token_id: [idOf(IM_END), idOf(END_OF_TEXT)], pad_token_id: idOf(END_OF_TEXT) };
  fs.mkdirSync(dir, { recursive: true });
  const files = [TOKENIZER_JSON, TOKENIZER_CONFIG, GENERATION_CONFIG].map((f) => path.join(dir, f));
  fs.writeFileSync(files[0], JSON.stringify(tokenizerJson));
  fs.writeFileSync(files[1], `${JSON.stringify(tokenizerConfig, null, 2)}\n`);
  fs.writeFileSync(files[2], `${JSON.stringify(generation, null, 2)}\n`);
  return { vocabSize: base + added.length, padId: idOf(END_OF_TEXT), imStartId: idOf(IM_START), imEndId: idOf(IM_END), files };
}
