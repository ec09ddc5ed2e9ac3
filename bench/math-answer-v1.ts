/**
 * The math answer checker as it was at 4ee5cee (issue #14), kept unchanged below this comment as the
 * baseline of `npm run bench -- math-answer` (issue #34): figures of the checker are measured
 * against it in the same run. It is not used anywhere else; its rules are superseded by
 * engine/tasks/math-answer.ts.
 */
/**
 * Final answers of math responses: where the answer is in a response, and whether two answers are
 * the same number or expression (issue #14).
 *
 * Extraction (`extractFinalAnswer`), first rule that finds something wins:
 *  1. the last `\boxed{…}` / `\fbox{…}` whose braces balance (nested braces allowed, as in
 *     `\boxed{\frac{1}{2}}`), or the brace-less `\boxed 5`: the convention of MATH, AIME and DAPO
 *     (their graders take the last box, e.g. verl's `last_boxed_only_string`);
 *  2. the last `#### n`: GSM8K's reference format;
 *  3. the last `Answer: …` or `final answer is …` (Minerva's "Final Answer: The final answer is
 *     $x$. I hope it is correct."), up to the end of its line; the first `$…$` span in it when there
 *     is one, and never the sentence after it.
 * A box outranks a later `Answer:` line: a model told to box its answer that also writes
 * "Answer: see above" has answered with the box.
 *
 * Comparison (`mathAnswersEqual`): both answers are normalised (`normalizeAnswer`), then compared
 * as values with @cortex-js/compute-engine: numbers exactly (a relative 1e-9 absorbs float noise,
 * nothing more, so a rounded 0.333 is not 1/3 and 3.14 is not π), expressions with free variables by
 * `simplify(a − b) = 0`, and anything the engine cannot read (names, words) as normalised text.
 * Conventions and where they come from:
 *  - thousands separators (`1,000`, `1{,}000`, `1\,000`) are dropped before parsing, since the
 *    engine reads `1,000` as the tuple (1, 0); only a number whose groups are all three digits
 *    counts as separated, so the tuple `(1,2)` stays a tuple;
 *  - units, `\text{…}` words, `\$`, degree signs and a trailing period are dropped, as the MATH
 *    normaliser (lm-eval's hendrycks_math, reused by DAPO) and Math-Verify both do, so `5 \text{ cm}`
 *    is 5 and `90^\circ` is 90;
 *  - `x = 5` is compared by its right-hand side (Math-Verify: "last = is considered");
 *  - a percentage is its value (`10\%` = 0.1) and, when only the reference carries a percent
 *    sign, the bare number is accepted too (`28\%` vs `28`, Math-Verify's percent tests); the
 *    converse (`0.28` vs `28`) is wrong;
 *  - `\dfrac`, `\tfrac`, `\cfrac` are `\frac`; `\left` / `\right` and LaTeX spacing are dropped.
 */
import { createRequire } from 'node:module';
import type { ComputeEngine } from '@cortex-js/compute-engine';

export type AnswerSource = 'boxed' | 'hashes' | 'answer-line';

export interface ExtractedAnswer {
  /** The answer text as written (without the box, the `####` or the `Answer:`), trimmed; null when none. */
  answer: string | null;
  /** Which rule found it; null when none did. */
  source: AnswerSource | null;
}

/** Longest answer text handed to the compute engine; longer ones are compared as text only. */
const MAX_PARSED_LENGTH = 300;
/** Relative tolerance for float noise only (see the file comment). */
const RELATIVE_TOLERANCE = 1e-9;

const BOX_COMMAND = /\\(?:boxed|fbox)(?![A-Za-z])/g;

/**
 * The content of the box that starts at `start` (the index just after `\boxed`/`\fbox`), or null
 * when its braces never close or nothing follows.
 */
function boxContent(text: string, start: number): string | null {
  let at = start;
  while (at < text.length && (text[at] === ' ' || text[at] === '\t')) at++;
  if (text[at] === '{') {
    let depth = 0;
    for (let i = at; i < text.length; i++) {
      const ch = text[i];
      if (ch === '\\' && i + 1 < text.length && (text[i + 1] === '{' || text[i + 1] === '}')) {
        i++; // an escaped brace is text, not structure
        continue;
      }
      if (ch === '{') depth++;
      else if (ch === '}' && --depth === 0) return text.slice(at + 1, i).trim();
    }
    return null;
  }
  if (at === start) return null; // `\boxedx` is another command
  const bare = /^[^\s$]+/.exec(text.slice(at));
  return bare ? bare[0].replace(/[.,;]+$/, '') : null;
}

/** The content of the last well-formed `\boxed{…}` / `\fbox{…}` / `\boxed x`, or null. */
export function lastBoxed(text: string): string | null {
  const starts = [...text.matchAll(BOX_COMMAND)].map((m) => (m.index ?? 0) + m[0].length);
  for (let i = starts.length - 1; i >= 0; i--) {
    const content = boxContent(text, starts[i]);
    if (content !== null && content !== '') return content;
  }
  return null;
}

const ANSWER_MARKERS = ['final answer is', 'final answer:', 'answer is:', 'answer:'];

/** The text after the last `Answer:` / `final answer is` marker of the last line that has one. */
function answerLine(text: string): string | null {
  const lines = text.split(/\r?\n/);
  for (let l = lines.length - 1; l >= 0; l--) {
    const lower = lines[l].toLowerCase();
    let best = -1;
    let bestLength = 0;
    for (const marker of ANSWER_MARKERS) {
      const at = lower.lastIndexOf(marker);
      if (at > best || (at === best && at !== -1 && marker.length > bestLength)) {
        best = at;
        bestLength = marker.length;
      }
    }
    if (best === -1) continue;
    let rest = lines[l].slice(best + bestLength).trim();
    const math = /\$([^$]+)\$/.exec(rest) ?? /\\\((.+?)\\\)/.exec(rest);
    if (math) rest = math[1];
    else rest = rest.replace(/\.\s+\S.*$/, ''); // "42. I hope it is correct." → "42"
    rest = rest.replace(/[.\s]+$/, '').trim();
    if (rest !== '') return rest;
  }
  return null;
}

/** The final answer of a response, by the precedence in the file comment. */
export function extractFinalAnswer(text: string): ExtractedAnswer {
  const boxed = lastBoxed(text);
  if (boxed !== null) return { answer: boxed, source: 'boxed' };
  const hashes = [...text.matchAll(/####[ \t]*([^\n]*)/g)].map((m) => m[1].trim()).filter((a) => a !== '');
  if (hashes.length > 0) return { answer: hashes[hashes.length - 1], source: 'hashes' };
  const line = answerLine(text);
  if (line !== null) return { answer: line, source: 'answer-line' };
  return { answer: null, source: null };
}

/** Unit and filler words dropped after a number (the MATH normaliser's list, plus common currencies). */
const UNIT_WORDS = new Set(
  (
    'square ways integers dollars dollar mph inches inch hours hour km units unit points feet foot minutes minute digits cents cent degrees degree ' +
    'cm mm m kg g gm pounds pound meters meter metres metre meals edges students miles mile seconds second days day weeks week years year ' +
    'liters liter litres litre ml l apples people percent pct euros euro yards yard tickets items pages marbles boxes'
  ).split(' '),
);

/** `\cmd{…}` with balanced braces replaced by `replace(content)`. */
function replaceCommand(text: string, command: string, replace: (content: string) => string): string {
  let out = text;
  for (let guard = 0; guard < 50; guard++) {
    const at = out.indexOf(`\\${command}{`);
    if (at === -1) return out;
    const open = at + command.length + 1;
    let depth = 0;
    let close = -1;
    for (let i = open; i < out.length; i++) {
      if (out[i] === '{') depth++;
      else if (out[i] === '}' && --depth === 0) {
        close = i;
        break;
      }
    }
    if (close === -1) return out;
    out = out.slice(0, at) + replace(out.slice(open + 1, close)) + out.slice(close + 1);
  }
  return out;
}

const INTEGER = /^[-+]?\d+$/;
const PLAIN_NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)$/;
const THOUSANDS = /^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$/;

export interface NormalizedAnswer {
  /** LaTeX ready for the engine (or for a text comparison). */
  latex: string;
  /** Whether the answer was written as a percentage. */
  percent: boolean;
}

/** Normalises an answer's notation (see the file comment); the value is left alone. */
export function normalizeAnswer(raw: string): NormalizedAnswer {
  let s = raw.trim();
  // Unwrap a box and math delimiters: a reference may be written `\boxed{…}` or `$…$`.
  const boxed = lastBoxed(s);
  if (boxed !== null && /^\s*\$?\s*\\(?:boxed|fbox)/.test(s)) s = boxed;
  s = s.replace(/^\$+|\$+$/g, '').replace(/^\\\(|\\\)$/g, '').replace(/^\\\[|\\\]$/g, '').trim();
  s = s
    .replace(/−/g, '-')
    .replace(/×/g, '\\times ')
    .replace(/÷/g, '\\div ')
    .replace(/π/g, '\\pi ')
    .replace(/√/g, '\\sqrt ')
    .replace(/\\[dtc]frac/g, '\\frac')
    .replace(/\\left(?![a-zA-Z])|\\right(?![a-zA-Z])/g, '')
    .replace(/\\displaystyle/g, '');
  // Degrees: `90^\circ`, `90^{\circ}`, `90°` are 90 (the engine would read `^\circ` as π/180).
  s = s.replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°/g, '');
  // Money and thousands separators written in LaTeX.
  s = s.replace(/\\\$/g, '').replace(/(\d)\{,\}(?=\d{3})/g, '$1,').replace(/(\d)\\[,!; ](?=\d{3})/g, '$1,');
  // LaTeX spacing.
  s = s.replace(/\\[,!;: ]/g, ' ').replace(/~/g, ' ');
  // Right-hand side of the last top-level `=` (`x = 5`, `k = \frac{1}{3}`).
  const eq = s.lastIndexOf('=');
  if (eq !== -1 && !/[<>!\\]$/.test(s.slice(0, eq))) s = s.slice(eq + 1);
  // Text: a unit word goes, any other word is kept as the answer's text.
  s = s.replace(/\\(?:text|mathrm|mbox)\{\s*([a-zA-Z]+)\s*\}\s*\^\s*\{?\d\}?/g, (whole, word: string) => (UNIT_WORDS.has(word.toLowerCase()) ? ' ' : whole));
  const unwrapText = (content: string) => (UNIT_WORDS.has(content.trim().toLowerCase()) || content.trim() === '' ? ' ' : ` ${content.trim()} `);
  for (const cmd of ['text', 'textbf', 'textit', 'mathrm', 'mathbf', 'mbox', 'operatorname']) s = replaceCommand(s, cmd, unwrapText);
  s = s.trim().replace(/[.。]+$/, '').trim();
  let percent = false;
  if (/\\?%\s*$/.test(s) || /\s(percent|pct)\s*$/i.test(s)) {
    percent = true;
    s = s.replace(/\\?%\s*$/, '').replace(/\s(percent|pct)\s*$/i, '').trim();
  }
  // Trailing unit words after a number (`5 cm`, `12 dollars`, `3 m^2`); a glued letter (`2x`) is a variable.
  for (let guard = 0; guard < 4; guard++) {
    const unit = /^(.*\d[^a-zA-Z]*?)\s+([a-zA-Z]+)(\^\{?\d\}?)?\s*$/.exec(s);
    if (!unit || !UNIT_WORDS.has(unit[2].toLowerCase())) break;
    s = unit[1].trim();
  }
  s = s.replace(/\s+/g, ' ').trim();
  const compact = s.replace(/\s/g, '');
  if (THOUSANDS.test(compact)) s = compact.replace(/,/g, '');
  else if (/^[-+]?\d{1,3}( \d{3})+(\.\d+)?$/.test(s)) s = compact; // `1 000`
  return { latex: s, percent };
}

let engine: ComputeEngine | null = null;
/**
 * The engine, loaded on first use: the package takes 0.3–0.5 s to import, and this module is
 * reached from the config schema (through the prompt templates), which every CLI command and
 * worker loads whether or not it ever checks a math answer.
 */
function computeEngine(): ComputeEngine {
  if (engine === null) {
    const { ComputeEngine: Engine } = createRequire(import.meta.url)('@cortex-js/compute-engine') as typeof import('@cortex-js/compute-engine');
    engine = new Engine();
  }
  return engine;
}

type Expr = NonNullable<ReturnType<ComputeEngine['parse']>>;

interface Parsed {
  expr: Expr;
  /** Numeric value when the expression has no free variables and evaluates to a real number. */
  value: number | null;
  symbolic: boolean;
}

/** A run of three plain letters is a word (a name, "Evelyn"), not a product of variables. */
const WORD = /(?<![\\a-zA-Z])[a-zA-Z]{3,}/;

function parseLatex(latex: string): Parsed | null {
  if (latex === '' || latex.length > MAX_PARSED_LENGTH || WORD.test(latex)) return null;
  try {
    const expr = computeEngine().parse(latex);
    if (expr === null || !expr.isValid) return null;
    const json = JSON.stringify(expr.json);
    // A string, a tuple of words or an unknown command is not a value to compare numerically.
    if (/"Error"|"LatexString"|^"'/.test(json)) return null;
    const unknowns = expr.unknowns ?? [];
    if (unknowns.length > 0) return { expr, value: null, symbolic: true };
    const re = expr.N().re;
    const im = expr.N().im;
    const value = typeof re === 'number' && Number.isFinite(re) && (im === undefined || im === 0) ? re : null;
    return { expr, value, symbolic: false };
  } catch {
    return null;
  }
}

function closeEnough(a: number, b: number): boolean {
  return Math.abs(a - b) <= RELATIVE_TOLERANCE * Math.max(1, Math.abs(a), Math.abs(b));
}

function sameValue(a: Parsed, b: Parsed): boolean {
  if (a.value !== null && b.value !== null) return closeEnough(a.value, b.value);
  try {
    if (a.expr.isEqual(b.expr) === true) return true;
    if (a.symbolic || b.symbolic) {
      const difference = computeEngine().box(['Subtract', a.expr, b.expr]).simplify();
      return difference.is(0);
    }
  } catch {
    return false;
  }
  return false;
}

function textForm(latex: string): string {
  return latex.replace(/[\s{}]/g, '').toLowerCase();
}

/**
 * Whether `candidate` states the same answer as `reference` (see the file comment for every rule);
 * a null or empty candidate is wrong. Deterministic and symmetric except for the percent rule.
 */
export function mathAnswersEqual(reference: string, candidate: string | null): boolean {
  if (candidate === null) return false;
  const ref = normalizeAnswer(reference);
  const cand = normalizeAnswer(candidate);
  if (ref.latex === '' || cand.latex === '') return false;
  if (ref.percent === cand.percent && textForm(ref.latex) === textForm(cand.latex)) return true;
  // Plain decimals (most answers, every generated one) need no engine: the same rules, in numbers.
  if (!ref.percent && !cand.percent && INTEGER.test(ref.latex) && INTEGER.test(cand.latex)) {
    // Exactly, as integers: a float would call 20-digit neighbours equal.
    return BigInt(ref.latex.replace(/^\+/, '')) === BigInt(cand.latex.replace(/^\+/, ''));
  }
  if (PLAIN_NUMBER.test(ref.latex) && PLAIN_NUMBER.test(cand.latex)) {
    const r = Number(ref.latex);
    const c = Number(cand.latex);
    if (closeEnough(ref.percent ? r / 100 : r, cand.percent ? c / 100 : c)) return true;
    return ref.percent && !cand.percent && closeEnough(r, c);
  }
  const refParsed = parseLatex(ref.latex);
  const candParsed = parseLatex(cand.latex);
  if (refParsed && candParsed) {
    const scale = (p: Parsed, percent: boolean): Parsed =>
      percent && p.value !== null ? { ...p, value: p.value / 100, expr: computeEngine().box(['Divide', p.expr, 100]) } : p;
    const refValue = scale(refParsed, ref.percent);
    const candValue = scale(candParsed, cand.percent);
    if (sameValue(refValue, candValue)) return true;
    // `28\%` as the reference accepts a bare 28 (Math-Verify's convention).
    if (ref.percent && !cand.percent && sameValue(refParsed, candParsed)) return true;
    return false;
  }
  if (refParsed || candParsed) return false; // a value against words
  return ref.percent === cand.percent && textForm(ref.latex) === textForm(cand.latex);
}
