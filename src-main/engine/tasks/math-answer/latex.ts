/**
 * Scanning helpers for LaTeX answer text (issue #34): balanced groups, top-level splits and math
 * environments. Everything here is linear in the text (or a small multiple of it) and allocates
 * nothing per character, so the checker's time on a long adversarial answer is bounded before any
 * computer algebra runs.
 */

/** Openers and closers counted together: an interval `[0,1)` mixes them, so only depth matters. */
const OPEN = new Set(['(', '[', '{']);
const CLOSE = new Set([')', ']', '}']);

/**
 * The index of the `}` closing the `{` at `open`, or -1. An escaped brace (`\{`, `\}`) is text,
 * not structure.
 */
export function matchingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\\' && (text[i + 1] === '{' || text[i + 1] === '}')) {
      i++;
      continue;
    }
    if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return i;
  }
  return -1;
}

/**
 * Depth of every position, counting `(`, `[`, `{`, `\{` as openers and their closers together,
 * and `\begin{…}` … `\end{…}` as one more level (a matrix's `&` and `\\` are inside it).
 * Returns, for each index, the depth before that character.
 */
export function depths(text: string): Int32Array {
  const out = new Int32Array(text.length + 1);
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    out[i] = depth;
    const ch = text[i];
    if (ch === '\\') {
      if (text.startsWith('\\begin{', i)) depth++;
      else if (text.startsWith('\\end{', i)) depth = Math.max(0, depth - 1);
      else if (text[i + 1] === '{' || text[i + 1] === '}') {
        depth = text[i + 1] === '{' ? depth + 1 : Math.max(0, depth - 1);
        out[i + 1] = out[i];
        i++;
      }
      continue;
    }
    if (OPEN.has(ch)) depth++;
    else if (CLOSE.has(ch)) depth = Math.max(0, depth - 1);
  }
  out[text.length] = depth;
  return out;
}

/** Splits `text` at every top-level (depth 0) match of `separator`; the pieces are trimmed. */
export function splitTopLevel(text: string, separator: RegExp): string[] {
  const level = depths(text);
  const global = new RegExp(separator.source, separator.flags.includes('g') ? separator.flags : `${separator.flags}g`);
  const pieces: string[] = [];
  let start = 0;
  for (const match of text.matchAll(global)) {
    const at = match.index ?? 0;
    if (level[at] !== 0 || match[0].length === 0) continue;
    pieces.push(text.slice(start, at).trim());
    start = at + match[0].length;
  }
  pieces.push(text.slice(start).trim());
  return pieces;
}

/** Whether `text` is one group from its first character to its last (`(…)`, `[…)`, `\{…\}`, `{…}`). */
export function wrappedWhole(text: string): { open: string; close: string; inner: string } | null {
  const t = text.trim();
  if (t.length < 2) return null;
  const escaped = t.startsWith('\\{') && t.endsWith('\\}');
  const open = escaped ? '\\{' : t[0];
  const close = escaped ? '\\}' : t[t.length - 1];
  if (!escaped && (!OPEN.has(open) || !CLOSE.has(close))) return null;
  const level = depths(t);
  // The opening group must not close before the end: `(1)(2)` is not one group.
  for (let i = open.length; i < t.length - close.length; i++) if (level[i] === 0) return null;
  return { open, close, inner: t.slice(open.length, t.length - close.length).trim() };
}

/**
 * `\cmd{…}` (balanced braces) replaced by `replace(content)`, for every occurrence. A command
 * whose braces never close is left as it is.
 */
export function replaceCommand(text: string, command: string, replace: (content: string) => string): string {
  let out = text;
  let from = 0;
  for (;;) {
    const at = out.indexOf(`\\${command}`, from);
    if (at === -1) return out;
    let open = at + command.length + 1;
    if (/[A-Za-z]/.test(out[open] ?? '')) {
      from = open; // a longer command (`\textbf` when looking for `\text`)
      continue;
    }
    while (out[open] === ' ') open++;
    if (out[open] !== '{') {
      from = open;
      continue;
    }
    const close = matchingBrace(out, open);
    if (close === -1) return out;
    const replacement = replace(out.slice(open + 1, close));
    out = out.slice(0, at) + replacement + out.slice(close + 1);
    from = at + replacement.length;
  }
}

export interface MathSpan {
  /** The content between the delimiters. */
  content: string;
  start: number;
  end: number;
  display: boolean;
}

/**
 * The math environments of a text, in order: `$$…$$` and `\[…\]` (may span lines), `$…$` and
 * `\(…\)` (one line only, as Math-Verify reads them: "Answer $ \n 9 \n $" holds no answer). An
 * escaped dollar `\$` is money, not a delimiter.
 */
export function mathSpans(text: string): MathSpan[] {
  const spans: MathSpan[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\' && (text[i + 1] === '[' || text[i + 1] === '(')) {
      const closer = text[i + 1] === '[' ? '\\]' : '\\)';
      const end = text.indexOf(closer, i + 2);
      const content = end === -1 ? '' : text.slice(i + 2, end);
      if (end !== -1 && (closer === '\\]' || !content.includes('\n'))) {
        spans.push({ content, start: i, end: end + 2, display: closer === '\\]' });
        i = end + 2;
        continue;
      }
      i += 2;
      continue;
    }
    if (ch === '\\') {
      i += 2;
      continue;
    }
    if (ch === '$') {
      const display = text[i + 1] === '$';
      const opener = display ? 2 : 1;
      const end = findDollar(text, i + opener, display);
      if (end !== -1) {
        const content = text.slice(i + opener, end);
        if (display || !content.includes('\n')) {
          spans.push({ content, start: i, end: end + opener, display });
          i = end + opener;
          continue;
        }
      }
      i += opener;
      continue;
    }
    i++;
  }
  return spans;
}

function findDollar(text: string, from: number, display: boolean): number {
  for (let i = from; i < text.length; i++) {
    if (text[i] === '\\') {
      i++;
      continue;
    }
    if (text[i] !== '$') continue;
    if (!display) return i;
    if (text[i + 1] === '$') return i;
  }
  return -1;
}

/** The text with every math delimiter removed and the contents kept (`$5$ cm` → `5 cm`). */
export function withoutMathDelimiters(text: string): string {
  return text
    .replace(/\\\[|\\\]|\\\(|\\\)/g, ' ')
    .replace(/(?<!\\)\$+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
