/**
 * Where the final answer is in a response or a reference (issue #34). The rules, first that finds
 * something wins (the module comment of math-answer.ts gives the reasons and sources):
 *  1. the last box group or the last "final answer is …" statement, whichever ends later;
 *  2. the last `#### …` line (GSM8K);
 *  3. the last "Answer: …" / "the answer is …" / "Answer $…$";
 *  4. the last math environment (`$…$`, `\(…\)`, `\[…\]`, `$$…$$`) with a percent sign after it;
 *  5. the whole text, when it is short and one line (a bare answer: `5`, `28 percent`).
 */
import { matchingBrace, mathSpans, withoutMathDelimiters } from './latex';

export type AnswerSource = 'boxed' | 'hashes' | 'answer-line' | 'math' | 'whole';

export interface ExtractedAnswer {
  /** The answer text as written (without the box, the `####` or the `Answer:`), trimmed; null when none. */
  answer: string | null;
  /** Which rule found it; null when none did. */
  source: AnswerSource | null;
}

/** Longest text read as a bare answer by rule 5, and most words of prose in it: "28 percent" and
 * "18 dollars" are answers, "I think it is about twelve" and "no idea" are not. */
const MAX_WHOLE_ANSWER = 120;
const MAX_WHOLE_WORDS = 2;

/** A bare answer: one word ("Evelyn", "odd"), or at most two words beside a number or math ("28 percent"); "no idea" is not one. */
function isBareAnswer(text: string): boolean {
  const words = proseWords(text);
  return words <= 1 || (words <= MAX_WHOLE_WORDS && /[\d\\=+*/^<>()-]/.test(text));
}

/** Words of two or more letters outside LaTeX commands and `\text{…}`. */
function proseWords(text: string): number {
  return text.replace(/\\[A-Za-z]+(?:\s*\{[^{}]*\})?/g, ' ').match(/[A-Za-z]{2,}/g)?.length ?? 0;
}

const BOX_COMMAND = /\\(?:boxed|fbox)(?![A-Za-z])/g;

interface Box {
  content: string;
  /** Index of the backslash of `\boxed`. */
  start: number;
  /** Index just after the closing brace. */
  end: number;
}

/** The box whose command ends at `after`, or null when its braces never close or it is empty. */
function boxAt(text: string, start: number, after: number): Box | null {
  let at = after;
  while (at < text.length && (text[at] === ' ' || text[at] === '\t')) at++;
  if (text[at] === '{') {
    const close = matchingBrace(text, at);
    if (close === -1) return null;
    const content = text.slice(at + 1, close).trim();
    return content === '' ? null : { content, start, end: close + 1 };
  }
  if (at === after) return null; // `\boxedx` is another command
  const bare = /^[^\s$]+/.exec(text.slice(at));
  if (!bare) return null;
  const content = bare[0].replace(/[.,;]+$/, '');
  return content === '' ? null : { content, start, end: at + content.length };
}

/** Every well-formed box of a text, in order. */
function boxes(text: string): Box[] {
  const found: Box[] = [];
  for (const m of text.matchAll(BOX_COMMAND)) {
    const box = boxAt(text, m.index ?? 0, (m.index ?? 0) + m[0].length);
    if (box && (found.length === 0 || box.start >= found[found.length - 1].end)) found.push(box);
  }
  return found;
}

/** The content of the last well-formed `\boxed{…}` / `\fbox{…}` / `\boxed x`, or null. */
export function lastBoxed(text: string): string | null {
  const all = boxes(text);
  return all.length === 0 ? null : all[all.length - 1].content;
}

/**
 * Whether the text between two boxes only joins them: math delimiters, spacing, commas,
 * semicolons, and at most a short label ending in "and" / "or" ("\quad \text{and} \quad",
 * "\text{ for part (a) and }"). "is wrong, the answer is" does not join: the earlier box was
 * taken back.
 */
function joins(between: string): boolean {
  const plain = between
    .replace(/\\(?:text|textnormal|mbox|mathrm)\s*\{([^{}]*)\}/g, ' $1 ')
    .replace(/\\q?quad(?![A-Za-z])|\\[,;:! ]|~/g, ' ')
    .replace(/\\\(|\\\)|\\\[|\\\]|\$/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
  // The next box's label may follow the connective: "\boxed{…} \) and \( y_2 = \boxed{…}".
  const unlabelled = plain.replace(/\s*(?:[a-z]|\\[a-z]+)(?:_\{?[a-z0-9]+\}?)?\s*=$/, '').trim();
  if (unlabelled === '') return plain === '';
  if (/^[,;]$/.test(unlabelled)) return true;
  return /^(?:[a-z]+ ){0,3}(?:\([a-z0-9]{1,3}\) )?(?:[,;] ?)?(?:and|or)$/.test(unlabelled) || /^[,;] ?(?:and|or)$/.test(unlabelled);
}

/** The last group of boxes (see `joins`), as one answer: `\boxed{1}, \boxed{2}` is `1; 2`, a list. */
function lastBoxGroup(text: string): { answer: string; end: number } | null {
  const all = boxes(text);
  if (all.length === 0) return null;
  let first = all.length - 1;
  while (first > 0 && joins(text.slice(all[first - 1].end, all[first].start))) first--;
  const group = all.slice(first);
  return { answer: group.map((b) => b.content).join('; '), end: group[group.length - 1].end };
}

/** Math environments run together by connectives: `$12$ and $13$` is `12; 13`, a list. */
function leadingMath(rest: string): string | null {
  const spans = mathSpans(rest);
  if (spans.length === 0 || rest.slice(0, spans[0].start).trim().replace(/^(?:\\?["'*])+/, '') !== '') return null;
  const parts = [spans[0].content];
  let end = spans[0].end;
  for (let i = 1; i < spans.length; i++) {
    const between = rest.slice(spans[i - 1].end, spans[i].start).trim().toLowerCase();
    if (!/^(?:,|;|,? ?and|,? ?or)$/.test(between)) break;
    parts.push(spans[i].content);
    end = spans[i].end;
  }
  const percent = /^\s*(\\?%|percent(?:age)?|pct)(?![a-z])/i.exec(rest.slice(end));
  const joined = parts.map((p) => p.trim()).filter((p) => p !== '').join('; ');
  return joined === '' ? null : percent ? `${joined}\\%` : joined;
}

/** A sentence's answer after its marker: a leading math run, else the words up to the sentence's end. */
function answerAfter(rest: string): string | null {
  let text = rest.replace(/^[\s:*]+/, '');
  const math = leadingMath(text);
  if (math !== null) return math;
  const line = text.split('\n')[0];
  // "The largest $n$ is 34." — the answer follows the sentence's last "is".
  const is = /.*\bis\b:?/s.exec(line.split(/\.\s+(?=[A-Z])/)[0]);
  text = is ? line.slice(is[0].length) : line;
  const again = leadingMath(text.replace(/^[\s:*]+/, ''));
  if (again !== null) return again;
  const words = text
    .replace(/\.\s+\S.*$/, '') // "42. I hope it is correct." → "42"
    .replace(/<\|[^|]*\|>.*$/, '') // a chat template's end-of-turn token
    .replace(/[.\s"*]+$/, '')
    .replace(/^["*\s]+/, '')
    .trim();
  if (words === '') return null;
  return numberInWords(words) ?? words;
}

/**
 * The one number of an answer sentence in words ("Jane started growing Sphere 3 hours ago" is 3),
 * with its percent sign; none when it has two numbers, or a negation ("not 5" answers nothing).
 */
function numberInWords(words: string): string | null {
  if (!/[A-Za-z]{2,}/.test(words) || /\b(?:not|no|never|cannot)\b|n't/i.test(words)) return null;
  const numbers = [...words.matchAll(/(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:\/\d+)?(\s*(?:%|percent\b))?/g)];
  if (numbers.length !== 1) return null;
  return numbers[0][0].replace(/\s*percent$/, '%').trim();
}

/** The last "final answer is …" statement (Minerva's "Final Answer: The final answer is $x$. I hope it is correct."). */
function finalAnswerStatement(text: string): { answer: string; start: number } | null {
  // Within one sentence: "Final Answer: Jane started 3 hours ago. I hope it is correct." states no "is".
  const matches = [...text.matchAll(/final answer\b(?:[^\n.]|\.(?=\d)){0,100}?\bis\b/gi)];
  for (let i = matches.length - 1; i >= 0; i--) {
    const m = matches[i];
    const answer = answerAfter(text.slice((m.index ?? 0) + m[0].length));
    if (answer !== null) return { answer, start: m.index ?? 0 };
  }
  return null;
}

/** The last `Answer: …`, `the answer is …` or `Answer $…$`. */
function answerLine(text: string): string | null {
  const matches = [...text.matchAll(/\banswer\b(\s*(?:is\b)?\s*:?)/gi)];
  for (let i = matches.length - 1; i >= 0; i--) {
    const m = matches[i];
    const rest = text.slice((m.index ?? 0) + m[0].length);
    const marked = /[:]|is/i.test(m[1]);
    // A bare "answer" counts only when math follows at once ("Answer \[ 9 \]").
    const answer = marked ? answerAfter(rest) : leadingMath(rest);
    if (answer !== null) return answer;
  }
  return null;
}

/** The last math environment of the text, with a percent sign written just after it. */
function lastMath(text: string): string | null {
  const spans = mathSpans(text).filter((s) => s.content.trim() !== '');
  if (spans.length === 0) return null;
  const last = spans[spans.length - 1];
  const percent = /^\s*(\\?%|percent(?:age)?|pct)(?![a-z])/i.test(text.slice(last.end));
  return `${last.content.trim()}${percent ? '\\%' : ''}`;
}

/** The final answer of a response, by the precedence in the file comment. */
export function extractFinalAnswer(text: string): ExtractedAnswer {
  const group = lastBoxGroup(text);
  const statement = finalAnswerStatement(text);
  if (statement && (!group || statement.start > group.end)) return { answer: statement.answer, source: 'answer-line' };
  if (group) return { answer: group.answer, source: 'boxed' };
  const hashes = [...text.matchAll(/####[ \t]*([^\n]*)/g)].map((m) => m[1].trim()).filter((a) => a !== '');
  if (hashes.length > 0) return { answer: hashes[hashes.length - 1], source: 'hashes' };
  const line = answerLine(text);
  if (line !== null) return { answer: line, source: 'answer-line' };
  const math = lastMath(text);
  if (math !== null) return { answer: math, source: 'math' };
  const whole = text.trim();
  // A box that is empty or never closes is a failed answer, not a bare one.
  if (whole !== '' && whole.length <= MAX_WHOLE_ANSWER && !whole.includes('\n') && isBareAnswer(whole) && !/\\(?:boxed|fbox)(?![A-Za-z])/.test(whole)) {
    const bare = withoutMathDelimiters(whole);
    if (bare !== '') return { answer: bare, source: 'whole' };
  }
  return { answer: null, source: null };
}

/**
 * A reference's answer: a dataset's reference is normally the answer itself (`\frac{1}{2}`,
 * `$28\%$`, `(3, \frac{\pi}{2})`); a reference that is a worked solution gives its boxes or its
 * "final answer is" statement, as a response would.
 */
export function referenceAnswer(reference: string): string | null {
  const group = lastBoxGroup(reference);
  const statement = finalAnswerStatement(reference);
  if (statement && (!group || statement.start > group.end)) return statement.answer;
  if (group) return group.answer;
  const whole = withoutMathDelimiters(reference);
  return whole === '' ? null : whole;
}
