/**
 * Notation that does not change an answer's value, removed before it is read (issue #34; the
 * reasons and sources are in math-answer.ts's module comment). Two stages: `normalizeNotation`
 * for the whole answer (delimiters, spacing, LaTeX variants, separators), then `leaf` for one
 * item of it (units, text, percent, a trailing period).
 */
import { replaceCommand } from './latex';

/** Unit and filler words dropped after a number (the MATH normaliser's list, plus common currencies). */
export const UNIT_WORDS = new Set(
  (
    'square ways integers dollars dollar mph inches inch hours hour km units unit points feet foot minutes minute digits cents cent degrees degree ' +
    'cm mm m kg g gm pounds pound meters meter metres metre meals edges students miles mile seconds second days day weeks week years year ' +
    'liters liter litres litre ml l apples people percent pct euros euro yards yard tickets items pages marbles boxes sq'
  ).split(' '),
);

const TEXT_COMMANDS = ['text', 'textnormal', 'textbf', 'textit', 'textrm', 'textsf', 'mathrm', 'mathbf', 'mathit', 'mathsf', 'mbox', 'hbox'];

/** Unicode forms of LaTeX commands (the first column is what models and datasets write). */
const UNICODE: [RegExp, string][] = [
  [/[−–]/g, '-'],
  [/×/g, '\\times '],
  [/÷/g, '\\div '],
  [/·/g, '\\cdot '],
  [/π/g, '\\pi '],
  [/√/g, '\\sqrt '],
  [/≤/g, '\\le '],
  [/≥/g, '\\ge '],
  [/≠/g, '\\ne '],
  [/≈/g, '\\approx '],
  [/∞/g, '\\infty '],
  [/∪/g, '\\cup '],
  [/∈/g, '\\in '],
  [/±/g, '\\pm '],
  [/²/g, '^2'],
  [/³/g, '^3'],
];

/** Relations in their LaTeX spelling: `>=`, `\geq`, `\geqslant` are all `\ge`. */
const RELATION_SPELLINGS: [RegExp, string][] = [
  [/\\(?:leqslant|leq|le)(?![A-Za-z])|<=/g, ' \\le '],
  [/\\(?:geqslant|geq|ge)(?![A-Za-z])|>=/g, ' \\ge '],
  [/\\(?:neq|ne)(?![A-Za-z])|!=/g, ' \\ne '],
  [/\\lt(?![A-Za-z])/g, ' < '],
  [/\\gt(?![A-Za-z])/g, ' > '],
];

/** Commands a string escaped twice leaves behind (`\\le` for `\le`); only outside arrays, where `\\` is a row break. */
const DOUBLE_ESCAPED = /\\\\(?=(?:le|leq|ge|geq|ne|neq|frac|dfrac|tfrac|sqrt|pi|cdot|times|infty|in|cup|pm|boxed|text|left|right)(?![A-Za-z]))/g;

/** Delimiters, spacing, LaTeX variants and separators of a whole answer. */
export function normalizeNotation(raw: string): string {
  let s = raw.replace(/\s/g, ' ').trim();
  for (const [pattern, replacement] of UNICODE) s = s.replace(pattern, replacement);
  if (!s.includes('\\begin')) s = s.replace(DOUBLE_ESCAPED, '\\');
  s = s
    .replace(/\\(?:boxed|fbox)\s*\{/g, '{') // a box left inside an answer is its content
    .replace(/(?<!\\)\$+/g, ' ')
    .replace(/\\\[|\\\]|\\\(|\\\)/g, ' ')
    .replace(/\\[dtc]frac(?![A-Za-z])/g, '\\frac')
    .replace(/\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![A-Za-z])\s*\.?/g, '')
    .replace(/\\(?:displaystyle|textstyle|limits)(?![A-Za-z])/g, '');
  // Degrees (`90^\circ`, `90^{\circ}`, `90°`) are the number: the engine would read `^\circ` as π/180.
  s = s.replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![A-Za-z])|°/g, '');
  // Money, then thousands separators written in LaTeX (`14{,}916`, `11,\! 111`).
  s = s.replace(/\\\$/g, '').replace(/(\d)\s*\{\s*,\s*\}\s*(?=\d)/g, '$1,').replace(/(\d),\\[!,;]\s*(?=\d)/g, '$1,').replace(/(\d)\\[!,](?=\d{3})/g, '$1,');
  s = s.replace(/\\%/g, '%');
  for (const [pattern, replacement] of RELATION_SPELLINGS) s = s.replace(pattern, replacement);
  // Spacing; `\quadx` (spacing glued to a name) is spacing then the name.
  // A row break `\\` followed by a space is not the spacing command `\ `.
  s = s.replace(/\\q?quad/g, ' ').replace(/(?<!\\)\\[,;:! ]/g, ' ').replace(/~/g, ' ');
  s = textCommands(s);
  s = s.replace(/\\+$/, '').replace(/\s+/g, ' ').trim();
  return joinThousands(s);
}

/**
 * `\text{…}` and its kin: connectives become words the reader splits on ("6 \text{ and } 8"),
 * unit words and empty text go, other words stay as words (a name, "odd", "Evelyn").
 */
function textCommands(s: string): string {
  let out = s;
  // A squared unit in text (`5\text{cm}^2`) goes with its power.
  out = out.replace(/\\(?:text|mathrm|mbox)\s*\{\s*([a-zA-Z]+)\s*\}\s*\^\s*\{?\d\}?/g, (whole, word: string) => (UNIT_WORDS.has(word.toLowerCase()) ? ' ' : whole));
  for (const command of TEXT_COMMANDS) {
    out = replaceCommand(out, command, (content) => {
      const t = content.trim();
      if (t === '' || UNIT_WORDS.has(t.toLowerCase())) return ' ';
      return ` ${t} `;
    });
  }
  return replaceCommand(out, 'operatorname', (content) => ` ${content.trim()} `);
}

/**
 * Thousands separators between digits at the top level: `7,425,000`, `1,000.5`, `1 000` are one
 * number; `(3,100)` is a pair and `32, 349` (a space after the comma) is a list. Every group after
 * the first must be three digits, and the first must not be a lone 0 (`0,111` is no thousands).
 */
function joinThousands(s: string): string {
  return s
    .replace(/(?<![\d.,([{]|[\d]\s)([1-9]\d{0,2}(?:,\d{3})+)(?![\d,])(\.\d+)?/g, (whole, integer: string, decimal: string | undefined, offset: number) =>
      insideBrackets(s, offset) ? whole : integer.replace(/,/g, '') + (decimal ?? ''),
    )
    .replace(/(?<![\d.,])([1-9]\d{0,2}(?: \d{3})+)(?![\d.,])/g, (whole, integer: string, offset: number) => (insideBrackets(s, offset) ? whole : integer.replace(/ /g, '')));
}

function insideBrackets(s: string, offset: number): boolean {
  let depth = 0;
  for (let i = 0; i < offset; i++) {
    if ('([{'.includes(s[i])) depth++;
    else if (')]}'.includes(s[i])) depth = Math.max(0, depth - 1);
  }
  return depth > 0;
}

export interface Leaf {
  latex: string;
  /** Written as a percentage (`28\%`, `28 percent`, `28 pct`). */
  percent: boolean;
}

/**
 * One item's value notation: a trailing period, a percent sign or word, trailing unit words after
 * a number (`5 cm`, `3 m^2`), and a trailing remark in words after a number (`17 \text{ any
 * text}`: NeMo-Skills drops it) — never words that carry digits (`17 \text{ or } 18` is no value).
 */
export function leaf(item: string): Leaf {
  let s = item.trim().replace(/[.。]+$/, '').trim();
  let percent = false;
  const pct = /\s*(?:%|\bpercent(?:age)?|\bpct)\s*$/i.exec(s);
  if (pct && pct.index > 0) {
    percent = true;
    s = s.slice(0, pct.index).trim();
  }
  for (let guard = 0; guard < 4; guard++) {
    const unit = /^(.*\d[^a-zA-Z]*?)\s+([a-zA-Z]+)(\^\{?\d\}?)?\s*$/.exec(s);
    if (!unit || !UNIT_WORDS.has(unit[2].toLowerCase()) || /[a-zA-Z]$/.test(unit[1].trim())) break;
    s = unit[1].trim();
  }
  // A number followed by words only (no digits, no math) is that number: "17 any text".
  const remark = /^([-+]?\d[\d.,]*)\s+([A-Za-z][A-Za-z\s'-]*)$/.exec(s);
  if (remark && /[A-Za-z]{3}/.test(remark[2]) && !/\b(?:and|or)\b/i.test(remark[2])) s = remark[1];
  return { latex: s.replace(/\s+/g, ' ').trim(), percent };
}
