/**
 * How an answer's text is read into a structure before anything is compared (issue #34). The
 * reader declares nothing and evaluates nothing: it only splits the text, so it is a pure function
 * of the text. What each form means and how it compares is in math-answer.ts's module comment.
 */
import { depths, splitTopLevel, wrappedWhole } from './latex';
import { leaf, normalizeNotation } from './normalize';

/** A relation between two sides: `=`, `<`, `\le`, `>`, `\ge`, `\ne`. */
export type RelationOp = '=' | '<' | '\\le' | '>' | '\\ge' | '\\ne';

export interface Interval {
  /** Endpoints as LaTeX; `-\infty` / `\infty` for unbounded ends. */
  lo: string;
  hi: string;
  loOpen: boolean;
  hiOpen: boolean;
}

export type Form =
  | { kind: 'empty' }
  /** A scalar: a number or an expression, compared by value. */
  | { kind: 'value'; latex: string; percent: boolean }
  /** Words, names, a choice letter, a numeral in a base (`204_5`), a time (`12:00`): compared as text. */
  | { kind: 'text'; text: string }
  /** `(a, b, …)`: ordered. A pair is also the open interval it writes. */
  | { kind: 'tuple'; items: Form[] }
  /** `a, b, c` / `a and b` / `a or b`: the answers to a question that has several, in any order. */
  | { kind: 'list'; items: Form[] }
  /** `\{a, b\}`: a set. */
  | { kind: 'set'; items: Form[] }
  /** `[a, b)`, `(a, b] \cup \{c\}`: a union of intervals (a point is a closed interval of length 0). */
  | { kind: 'intervals'; parts: Interval[] }
  | { kind: 'matrix'; rows: Form[][] }
  /** An equation or inequality that is not an assignment: `2x + 4y - 3 = 0`, `x < 1`, `0 < f(x) < 1`. */
  | { kind: 'relation'; sides: string[]; ops: RelationOp[] }
  /** Named values: `x = 5` (one name), `a_3 = 2, a_{37} = 19`, `(p, q) = (3, 2)`, `n = 1, 2, 3`. */
  | { kind: 'named'; entries: { name: string; value: Form }[] }
  /** `x \in S`: the set S. */
  | { kind: 'member'; name: string; set: Form };

const EMPTY: Form = { kind: 'empty' };

const GREEK =
  'alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi|rho|sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Sigma|Phi|Psi|Omega';
const NAME = `(?:\\\\(?:${GREEK})|[A-Za-z]+)(?:_\\{?[A-Za-z0-9]+\\}?)?'*`;
/** What may stand on the left of an assignment: a name, `f(x)`, `|AB|`, `A:B`, `NO/BO`, `\frac{NO}{BO}`, `(p,q)`. */
const ASSIGNABLE = new RegExp(
  `^(?:${NAME}(?:\\(${NAME}(?:,${NAME})*\\))?|\\|${NAME}\\||${NAME}[:/]${NAME}|\\\\frac\\{${NAME}\\}\\{${NAME}\\}|\\(${NAME}(?:,${NAME})+\\))$`,
);

/** Whether `side` names the quantity asked for (see ASSIGNABLE), so `side = v` states its value. */
export function isAssignable(side: string): boolean {
  return ASSIGNABLE.test(side.replace(/\s+/g, ''));
}

/** A name written two ways reads the same: `a_{37}` is `a_37`, spaces do not count. */
export function nameKey(name: string): string {
  return name.replace(/\s+/g, '').replace(/_\{([^{}]*)\}/g, '_$1');
}

/** Reads an answer's text (already extracted) into a form. */
export function readAnswer(raw: string): Form {
  const s = normalizeNotation(raw);
  return s === '' ? EMPTY : readList(s);
}

/** Solution groups (`;`, "and", "or") of comma-separated items. */
function readList(s: string): Form {
  const groups = splitTopLevel(s, /;|\s+(?:and|or)\s+|(?<=[)\]}])\s*(?:and|or)\s*(?=[([{\\])/i).filter((g) => g !== '');
  if (groups.length === 0) return EMPTY;
  const forms = groups.map(readGroup);
  if (forms.length === 1) return forms[0];
  return mergeGroups(forms);
}

/** Several groups: named values of different names merge (`k = 45; n = 2`), anything else is a list. */
function mergeGroups(forms: Form[]): Form {
  if (forms.every((f) => f.kind === 'named')) {
    const entries = forms.flatMap((f) => (f.kind === 'named' ? f.entries : []));
    const names = entries.map((e) => nameKey(e.name));
    if (new Set(names).size === names.length) return { kind: 'named', entries };
    if (new Set(names).size === 1) return { kind: 'named', entries: [{ name: entries[0].name, value: { kind: 'list', items: entries.map((e) => e.value) } }] };
    return { kind: 'list', items: forms };
  }
  return { kind: 'list', items: forms.flatMap((f) => (f.kind === 'list' ? f.items : [f])) };
}

/** One group: comma-separated items; values after `n = 1` belong to n (`n = 1, 2, 3`). */
function readGroup(group: string): Form {
  const items = splitTopLevel(group, /,/)
    .map((item) => item.replace(/^(?:and|or)\s+/i, '').trim())
    .filter((item) => item !== '');
  if (items.length === 0) return EMPTY;
  const forms = items.map(readItem);
  if (forms.length === 1) return forms[0];
  if (forms[0].kind !== 'named' || forms[0].entries.length !== 1) return { kind: 'list', items: forms };
  const entries: { name: string; values: Form[] }[] = [];
  for (const form of forms) {
    if (form.kind === 'named' && form.entries.length === 1) {
      const name = form.entries[0].name;
      const known = entries.find((e) => nameKey(e.name) === nameKey(name));
      if (known) known.values.push(form.entries[0].value);
      else entries.push({ name, values: [form.entries[0].value] });
    } else {
      entries[entries.length - 1].values.push(form);
    }
  }
  return { kind: 'named', entries: entries.map((e) => ({ name: e.name, value: e.values.length === 1 ? e.values[0] : { kind: 'list', items: e.values } })) };
}

const RELATION = /\\le(?![A-Za-z])|\\ge(?![A-Za-z])|\\ne(?![A-Za-z])|<|>|=/g;

function relationOp(token: string): RelationOp {
  return token.trim() as RelationOp;
}

/** One item: ±, ≈, ∈, a relation, a union, a bracketed group, a matrix, text or a value. */
export function readItem(raw: string): Form {
  const item = raw.trim();
  if (item === '') return EMPTY;
  const pm = splitTopLevel(item, /\\pm(?![A-Za-z])|\\mp(?![A-Za-z])/);
  if (pm.length === 2) {
    const [a, b] = pm;
    const base = a === '' ? '' : `${a} `;
    return { kind: 'list', items: [readItem(`${base}- (${b})`), readItem(a === '' ? b : `${a} + (${b})`)] };
  }
  const approx = splitTopLevel(item, /\\approx(?![A-Za-z])/);
  if (approx.length > 1) {
    // `x \approx 11` names a value; after anything else an approximation is a remark: `\frac{\sqrt3}{3} \approx 0.577`.
    return isAssignable(approx[0]) ? readItem(`${approx[0]} = ${approx[1]}`) : readItem(approx[0]);
  }
  const member = splitTopLevel(item, /\\in(?![A-Za-z])/);
  if (member.length === 2 && member[0] !== '') return { kind: 'member', name: member[0], set: readItem(member[1]) };
  const relation = readRelation(item);
  if (relation) return relation;
  const union = splitTopLevel(item, /\\cup(?![A-Za-z])/);
  if (union.length > 1) return unionOf(union.map(readItem));
  return readBracketed(item) ?? readMatrix(item) ?? readLeaf(item);
}

/** `a = b`, `a < b ≤ c`, chains: an assignment when the left side names something, else a relation. */
function readRelation(item: string): Form | null {
  const level = depths(item);
  const sides: string[] = [];
  const ops: RelationOp[] = [];
  let start = 0;
  for (const m of item.matchAll(RELATION)) {
    const at = m.index ?? 0;
    if (level[at] !== 0) continue;
    sides.push(item.slice(start, at).trim());
    ops.push(relationOp(m[0]));
    start = at + m[0].length;
  }
  if (ops.length === 0) return null;
  sides.push(item.slice(start).trim());
  if (sides.some((side) => side === '')) return { kind: 'text', text: item };
  if (!ops.every((op) => op === '=')) return { kind: 'relation', sides, ops };
  if (isAssignable(sides[0])) return assignment(sides[0], sides[sides.length - 1]);
  // A worked calculation ending in its value: `1 + 1 = 2`, `5+5+1 = 7 = 11`.
  if (sides.length > 2) return readItem(sides[sides.length - 1]);
  return { kind: 'relation', sides, ops };
}

function assignment(name: string, valueText: string): Form {
  const value = readItem(valueText);
  const names = wrappedWhole(name);
  if (names && names.open === '(' && value.kind === 'tuple') {
    const parts = splitTopLevel(names.inner, /,/);
    if (parts.length === value.items.length) return { kind: 'named', entries: parts.map((p, i) => ({ name: p, value: value.items[i] })) };
  }
  return { kind: 'named', entries: [{ name, value }] };
}

function unionOf(parts: Form[]): Form {
  const intervals: Interval[] = [];
  for (const part of parts) {
    if (part.kind === 'intervals') intervals.push(...part.parts);
    else if (part.kind === 'tuple' && part.items.length === 2) intervals.push(intervalOf(part.items, true, true));
    else if (part.kind === 'set' || part.kind === 'list') {
      for (const point of part.items) intervals.push(intervalOf([point, point], false, false));
    } else if (part.kind === 'value') intervals.push(intervalOf([part, part], false, false));
    else return { kind: 'text', text: parts.map(describe).join(' \\cup ') };
  }
  return { kind: 'intervals', parts: intervals };
}

function latexOf(form: Form): string {
  return form.kind === 'value' ? form.latex : form.kind === 'text' ? form.text : describe(form);
}

function intervalOf(ends: Form[], loOpen: boolean, hiOpen: boolean): Interval {
  return { lo: latexOf(ends[0]), hi: latexOf(ends[1]), loOpen, hiOpen };
}

/** `\{…\}`, `{…}`, `(…)`, `[…)`: a set, a grouping, a tuple or an interval. */
function readBracketed(item: string): Form | null {
  const whole = wrappedWhole(item);
  if (!whole) return null;
  if (whole.open === '\\{') {
    const inner = readList(whole.inner);
    return { kind: 'set', items: inner.kind === 'list' ? inner.items : inner.kind === 'empty' ? [] : [inner] };
  }
  if (whole.open === '{') return readList(whole.inner);
  // `(0;-2;6)`: semicolons separate a tuple's items where a comma is the decimal sign.
  const commas = splitTopLevel(whole.inner, /,/);
  const items = commas.length === 1 && whole.open !== '{' ? splitTopLevel(whole.inner, /;/) : commas;
  // `\left[\begin{array}…\end{array}\right]` is the matrix inside.
  if (items.length === 1) return whole.open === '(' && whole.close === ')' ? readItem(whole.inner) : readMatrix(whole.inner);
  const forms = items.map(readItem);
  if (items.length === 2 && (whole.open !== '(' || whole.close !== ')')) return { kind: 'intervals', parts: [intervalOf(forms, whole.open === '(', whole.close === ')')] };
  return { kind: 'tuple', items: forms };
}

const MATRIX = /^\\begin\{(pmatrix|bmatrix|Bmatrix|vmatrix|Vmatrix|matrix|smallmatrix|array)\}(\{[^{}]*\})?([\s\S]*)\\end\{\1\}$/;

/** A matrix or vector environment as rows of cells; the other notations of a matrix are the same matrix. */
function readMatrix(item: string): Form | null {
  const m = MATRIX.exec(item.trim());
  // One environment only: `A + B` or `A B` of two matrices is an expression (compared by its value).
  if (!m || m[1] === 'vmatrix' || m[1] === 'Vmatrix' || /\\(?:begin|end)\{/.test(m[3])) return null;
  const rows = splitTopLevel(m[3], /\\\\/)
    .filter((row) => row.trim() !== '')
    .map((row) => splitTopLevel(row, /&/).map(readItem));
  return rows.length === 0 ? null : { kind: 'matrix', rows };
}

/** The empty set, the real line, a choice letter, words, a numeral in a base, a time, or a value. */
function readLeaf(item: string): Form {
  if (/^\\(?:emptyset|varnothing)$|^\\\{\s*\\\}$/.test(item)) return { kind: 'set', items: [] };
  if (/^\\mathbb\s*\{?R\}?$/.test(item)) return { kind: 'intervals', parts: [{ lo: '-\\infty', hi: '\\infty', loOpen: true, hiOpen: true }] };
  const choice = /^\(?([A-Za-z])\)?$/.exec(item);
  if (choice) return { kind: 'text', text: choice[1].toLowerCase() };
  const value = leaf(item);
  if (value.latex === '') return EMPTY;
  if (/^\d+_\{?\d+\}?$/.test(value.latex) || /^\d+:\d+$/.test(value.latex)) return { kind: 'text', text: value.latex };
  if (hasWords(value.latex)) return { kind: 'text', text: value.latex.replace(/\s+/g, ' ').toLowerCase() };
  return { kind: 'value', latex: value.latex, percent: value.percent };
}

/** A run of three letters outside a command is a word (a name, "Evelyn"), not a product of variables. */
export function hasWords(latex: string): boolean {
  return /(?<![\\A-Za-z])[A-Za-z]{3,}/.test(latex.replace(/\\(?:begin|end)\{[^{}]*\}|\\[A-Za-z]+/g, ' '));
}

/** A form as one line of text (for reasons, `--explain` and text comparisons of structures). */
export function describe(form: Form): string {
  switch (form.kind) {
    case 'empty':
      return '(nothing)';
    case 'value':
      return form.percent ? `${form.latex}%` : form.latex;
    case 'text':
      return form.text;
    case 'tuple':
      return `(${form.items.map(describe).join(', ')})`;
    case 'list':
      return form.items.map(describe).join('; ');
    case 'set':
      return `\\{${form.items.map(describe).join(', ')}\\}`;
    case 'intervals':
      return form.parts.map((p) => (p.lo === p.hi && !p.loOpen && !p.hiOpen ? `\\{${p.lo}\\}` : `${p.loOpen ? '(' : '['}${p.lo}, ${p.hi}${p.hiOpen ? ')' : ']'}`)).join(' \\cup ');
    case 'matrix':
      return `[${form.rows.map((r) => r.map(describe).join(' & ')).join(' \\\\ ')}]`;
    case 'relation':
      return form.sides.map((side, i) => (i === 0 ? side : `${form.ops[i - 1]} ${side}`)).join(' ');
    case 'named':
      return form.entries.map((e) => `${e.name} = ${describe(e.value)}`).join(', ');
    case 'member':
      return `${form.name} \\in ${describe(form.set)}`;
  }
}

/** The kind of a form in words, for reasons. */
export function kindName(form: Form): string {
  const names: Record<Form['kind'], string> = {
    empty: 'nothing',
    value: 'a value',
    text: 'text',
    tuple: 'a tuple',
    list: 'a list of answers',
    set: 'a set',
    intervals: 'an interval',
    matrix: 'a matrix',
    relation: form.kind === 'relation' && form.ops.every((op) => op === '=') ? 'an equation' : 'an inequality',
    named: 'a named value',
    member: 'a set',
  };
  return names[form.kind];
}
