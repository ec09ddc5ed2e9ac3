/**
 * Whether two read answers are the same (issue #34): the comparison of forms, with every value
 * question put to a `ValueOracle` (compute-engine in the checker's thread, or the quick oracle that
 * decides plain numbers without it). The rules and their sources are in math-answer.ts's module
 * comment; each function here implements one of them.
 */
import { describe, kindName, nameKey, readItem, type Form, type Interval, type RelationOp } from './read';

/** The value questions a comparison asks. Implementations must be pure functions of their arguments. */
export interface ValueOracle {
  /** Whether two scalar expressions have the same value (exactly, or within float noise when one is a decimal). */
  sameValue(a: string, b: string): boolean;
  /** The value of an expression without free variables; NaN when it has some or is not a real number. */
  numeric(latex: string): number;
  /** The expression's free variables. */
  variables(latex: string): string[];
  /** The expression's real value with `point` substituted; NaN when undefined or not real. */
  valueAt(latex: string, point: Readonly<Record<string, number>>): number;
  /** The matrix an expression evaluates to (`A + B`), as rows of cells, or null when it is no matrix. */
  matrixOf(latex: string): string[][] | null;
}

export interface Verdict {
  equal: boolean;
  /** Why, in one line. */
  reason: string;
}

const yes = (reason: string): Verdict => ({ equal: true, reason });
const no = (reason: string): Verdict => ({ equal: false, reason });

/** Most items in a list compared item by item; longer lists are compared as text. */
const MAX_ITEMS = 40;

/** Compares the reference's form with the answer's. */
export function compareForms(reference: Form, answer: Form, oracle: ValueOracle): Verdict {
  const ref = canonical(reference);
  const ans = canonical(answer);
  if (ref.kind === 'empty') return no('the reference has no answer to compare with');
  if (ans.kind === 'empty') return no('the answer is empty');
  if (describe(ref) === describe(ans)) return yes(`${kindName(ref)}, written the same way`);
  return compareCanonical(ref, ans, oracle);
}

function compareCanonical(ref: Form, ans: Form, oracle: ValueOracle): Verdict {
  if (ref.kind === 'named' || ans.kind === 'named') return compareNamed(ref, ans, oracle);
  if (ref.kind === 'relation') return compareRelation(ref, ans, oracle);
  if (ref.kind === 'member' || ans.kind === 'member') return compareCanonical(ref.kind === 'member' ? canonical(ref.set) : ref, ans.kind === 'member' ? canonical(ans.set) : ans, oracle);
  if (ans.kind === 'relation') return answerRelation(ref, ans, oracle);
  if (ref.kind === 'value' && ans.kind === 'value') return compareValues(ref, ans, oracle);
  if (ref.kind === 'text' || ans.kind === 'text') {
    return ref.kind === 'text' && ans.kind === 'text' && ref.text === ans.text ? yes('the same text') : no(`${kindName(ref)} ${quote(ref)} against ${kindName(ans)} ${quote(ans)}`);
  }
  if (ref.kind === 'matrix' || ans.kind === 'matrix') return compareMatrices(ref, ans, oracle);
  if (ref.kind === 'intervals' || ans.kind === 'intervals') return compareIntervals(ref, ans, oracle);
  return compareCollections(ref, ans, oracle);
}

function quote(form: Form): string {
  return JSON.stringify(describe(form));
}

/**
 * One form per meaning: a list of one item is the item, a list of `x = a`, `x = b` is `x = a, b`,
 * and `x = …` naming one value of one name stays named (the comparison decides whether the name
 * matters).
 */
export function canonical(form: Form): Form {
  if (form.kind === 'list') {
    // An item written twice is one answer (`2, 2` is 2).
    const seen = new Set<string>();
    const items = form.items
      .map(canonical)
      .filter((item) => item.kind !== 'empty')
      .filter((item) => (seen.has(describe(item)) ? false : (seen.add(describe(item)), true)));
    if (items.length === 1) return items[0];
    const named = items.every((i) => i.kind === 'named' && i.entries.length === 1);
    if (named && items.length > 0) {
      const names = new Set(items.map((i) => (i.kind === 'named' ? nameKey(i.entries[0].name) : '')));
      if (names.size === 1) {
        const first = items[0] as Extract<Form, { kind: 'named' }>;
        return { kind: 'named', entries: [{ name: first.entries[0].name, value: { kind: 'list', items: items.map((i) => (i.kind === 'named' ? i.entries[0].value : i)) } }] };
      }
    }
    return { kind: 'list', items };
  }
  if (form.kind === 'named') return { kind: 'named', entries: form.entries.map((e) => ({ name: e.name, value: canonical(e.value) })) };
  return form;
}

/**
 * Named values. The reference's `x = 5` is answered by `5` or `x = 5` (not `y = 5`); several named
 * values (`a_3 = 2, a_{37} = 19`) by the same names with the same values in any order, or by the
 * values alone in the reference's order. An answer `x = 5` against a reference `5` is its value.
 */
function compareNamed(ref: Form, ans: Form, oracle: ValueOracle): Verdict {
  if (ref.kind === 'named' && ans.kind === 'named') {
    if (ref.entries.length !== ans.entries.length) return no(`${ref.entries.length} named values against ${ans.entries.length}`);
    for (const entry of ref.entries) {
      const match = ans.entries.find((e) => nameKey(e.name) === nameKey(entry.name));
      if (!match) return no(`the reference names ${entry.name}, the answer does not`);
      const verdict = compareForms(entry.value, match.value, oracle);
      if (!verdict.equal) return no(`${entry.name}: ${verdict.reason}`);
    }
    return yes(ref.entries.length === 1 ? `the same value of ${ref.entries[0].name}` : 'the same named values');
  }
  const named = (ref.kind === 'named' ? ref : ans) as Extract<Form, { kind: 'named' }>;
  const other = ref.kind === 'named' ? ans : ref;
  if (other.kind === 'relation') {
    // `x = y + 2` against `x - (y+2) = 0`: both are equations.
    const equation = asEquation(named);
    if (!equation) return no(`${kindName(other)} against a named value`);
    return ref.kind === 'named' ? sameRelation(equation, other, oracle) : sameRelation(other, equation, oracle);
  }
  const values: Form = named.entries.length === 1 ? named.entries[0].value : { kind: 'tuple', items: named.entries.map((e) => e.value) };
  const verdict = ref.kind === 'named' ? compareForms(values, other, oracle) : compareForms(other, values, oracle);
  return verdict.equal ? yes(`${verdict.reason} (the value named ${named.entries.map((e) => e.name).join(', ')})`) : verdict;
}

/** `x = v` as the equation it also is, when it names one value. */
function asEquation(named: Extract<Form, { kind: 'named' }>): Extract<Form, { kind: 'relation' }> | null {
  if (named.entries.length !== 1 || named.entries[0].value.kind !== 'value') return null;
  return { kind: 'relation', sides: [named.entries[0].name, named.entries[0].value.latex], ops: ['='] };
}

/** Values, with MATH's and Math-Verify's percent conventions. */
function compareValues(ref: Extract<Form, { kind: 'value' }>, ans: Extract<Form, { kind: 'value' }>, oracle: ValueOracle): Verdict {
  const value = (f: typeof ref) => (f.percent ? `\\frac{${f.latex}}{100}` : f.latex);
  if (ref.percent === ans.percent) return oracle.sameValue(ref.latex, ans.latex) ? yes('the same value') : no(`${quote(ref)} and ${quote(ans)} are different values`);
  if (oracle.sameValue(value(ref), value(ans))) return yes('the same value (a percentage is its value)');
  // The reference 28% accepts a bare 28 (Math-Verify); a bare 20 of MATH (whose boxes omit the sign) accepts 20%.
  if (ref.percent && oracle.sameValue(ref.latex, ans.latex)) return yes('the percentage of the reference, without its sign');
  if (ans.percent && Math.abs(oracle.numeric(ref.latex)) >= 1 && oracle.sameValue(ref.latex, ans.latex)) return yes('the reference figure as a percentage');
  return no(`${quote(ref)} and ${quote(ans)} are different values`);
}

/**
 * An equation or inequality reference. Only a relation answers it (a value is at most one of its
 * sides), except that an inequality of one term (`0 < f(x) < 1`, `x \ge 2`) is answered by the
 * interval it describes, and an inequality in one variable by the set where it holds.
 */
function compareRelation(ref: Extract<Form, { kind: 'relation' }>, ans: Form, oracle: ValueOracle): Verdict {
  if (ans.kind === 'relation') return sameRelation(ref, ans, oracle);
  const set = asIntervals(ans.kind === 'member' ? canonical(ans.set) : ans);
  const interval = relationIntervals(ref, oracle);
  if (!set || ref.ops.includes('=')) return no(`the reference is ${kindName(ref)} (${describe(ref)}); the answer ${quote(ans)} is ${kindName(ans)}, not ${kindName(ref)}`);
  // The interval of the inequality's term answers it, unless the answer names another variable (`z \in …` for `1 \le |z| \le 2`).
  const named = ans.kind === 'member' ? nameKey(ans.name) : null;
  if (interval && (named === null || named === nameKey(interval.term))) {
    const verdict = compareIntervals({ kind: 'intervals', parts: interval.parts }, set, oracle);
    if (verdict.equal || named !== null) return verdict;
  }
  return sameTruthSet(ref, set, oracle);
}

/**
 * An answer that is an equation against a reference that is not: its last side is what it states
 * (`2 + 3 = 5`, as Math-Verify reads `9 = 1` against 1). An inequality never answers a value, and
 * an inequality does not answer an interval: the question asked for interval notation
 * (Math-Verify's default, allow_set_relation_comp = False).
 */
function answerRelation(ref: Form, ans: Extract<Form, { kind: 'relation' }>, oracle: ValueOracle): Verdict {
  if (ans.ops.every((op) => op === '=')) {
    const verdict = compareForms(ref, readItem(ans.sides[ans.sides.length - 1]), oracle);
    return verdict.equal ? yes(`${verdict.reason} (the last side of the answer's equation)`) : verdict;
  }
  return no(`the answer is ${kindName(ans)} (${describe(ans)}); the reference is ${kindName(ref)}`);
}

/** A relation as `e < 0`, `e ≤ 0`, `e = 0` or `e ≠ 0` (e = lhs − rhs, sides swapped for > and ≥). */
function normalRelation(lhs: string, op: RelationOp, rhs: string): { e: string; op: '<' | '\\le' | '=' | '\\ne' } {
  const diff = (a: string, b: string) => `(${a})-(${b})`;
  if (op === '>') return { e: diff(rhs, lhs), op: '<' };
  if (op === '\\ge') return { e: diff(rhs, lhs), op: '\\le' };
  return { e: diff(lhs, rhs), op };
}

/** The two-sided relations of a chain, written left to right with < and ≤ (`5 > x > 1` is `1 < x < 5`). */
function chainLinks(rel: Extract<Form, { kind: 'relation' }>): { e: string; op: '<' | '\\le' | '=' | '\\ne' }[] {
  const descending = rel.ops.some((op) => op === '>' || op === '\\ge');
  const sides = descending && rel.ops.every((op) => op === '>' || op === '\\ge') ? [...rel.sides].reverse() : rel.sides;
  const ops = descending && rel.ops.every((op) => op === '>' || op === '\\ge') ? [...rel.ops].reverse().map((op) => (op === '>' ? '<' : '\\le') as RelationOp) : rel.ops;
  return ops.map((op, i) => normalRelation(sides[i], op, sides[i + 1]));
}

/**
 * The same relation: the same links, each the same up to a factor (positive for inequalities,
 * nonzero for = and ≠): `x < 1` is `-x > -1`, `2x+4y-3=0` is `y = -\frac12 x + \frac34`, two
 * different equations `… = 0` are not the same.
 */
function sameRelation(ref: Extract<Form, { kind: 'relation' }>, ans: Extract<Form, { kind: 'relation' }>, oracle: ValueOracle): Verdict {
  const a = chainLinks(ref);
  const b = chainLinks(ans);
  if (a.length !== b.length) return no(`a chain of ${a.length} relations against ${b.length}`);
  for (let i = 0; i < a.length; i++) {
    if (a[i].op !== b[i].op) return no(`${describe(ref)} and ${describe(ans)} are different relations`);
    const factor = proportionality(a[i].e, b[i].e, oracle);
    const ok = factor !== null && (a[i].op === '=' || a[i].op === '\\ne' ? factor !== 0 : factor > 0);
    if (!ok) return no(`${describe(ref)} and ${describe(ans)} are not the same relation (not one multiple of the other)`);
  }
  return yes('the same relation (one is a multiple of the other)');
}

/** Points where two relations' sides are compared: generic values, none a small integer. */
const SAMPLE_POINTS: readonly number[][] = [
  [0.7318, -1.2391, 2.0517, 0.4463, -0.8821, 1.5093],
  [-0.5217, 1.8363, -0.3361, 2.4127, 0.9173, -1.3781],
  [1.3391, 0.2893, 1.1171, -1.7353, 0.6241, 2.2657],
  [-1.9037, -0.6709, 0.8317, 1.2281, -2.1543, 0.3967],
];

/** The constant c with a = c·b at every sample point, or null when there is none (or nothing was defined). */
function proportionality(a: string, b: string, oracle: ValueOracle): number | null {
  const names = [...new Set([...oracle.variables(a), ...oracle.variables(b)])];
  let factor: number | null = null;
  let defined = 0;
  for (const row of SAMPLE_POINTS) {
    const point = Object.fromEntries(names.map((n, i) => [n, row[i % row.length] * (1 + Math.floor(i / row.length) * 0.37)]));
    const va = oracle.valueAt(a, point);
    const vb = oracle.valueAt(b, point);
    if (!Number.isFinite(va) || !Number.isFinite(vb)) continue;
    if (Math.abs(vb) < 1e-12 || Math.abs(va) < 1e-12) {
      if (Math.abs(va) < 1e-12 && Math.abs(vb) < 1e-12) {
        defined++;
        continue;
      }
      return null;
    }
    const ratio = va / vb;
    if (factor === null) factor = ratio;
    else if (Math.abs(ratio - factor) > 1e-9 * Math.max(1, Math.abs(factor))) return null;
    defined++;
  }
  if (defined < 2) return null;
  return factor ?? 1;
}

/** `c1 < T < c2`, `T \ge c`, `c > T` with constant ends: the interval of T. */
function relationIntervals(rel: Extract<Form, { kind: 'relation' }>, oracle: ValueOracle): { term: string; parts: Interval[] } | null {
  if (rel.ops.some((op) => op === '=' || op === '\\ne')) return null;
  const constant = (side: string) => side.includes('\\infty') || Number.isFinite(oracle.numeric(side));
  const ascending = rel.ops.every((op) => op === '<' || op === '\\le');
  const descending = rel.ops.every((op) => op === '>' || op === '\\ge');
  if (!ascending && !descending) return null;
  const sides = descending ? [...rel.sides].reverse() : rel.sides;
  const ops = descending ? [...rel.ops].reverse() : rel.ops;
  const strict = ops.map((op) => op === '<' || op === '>');
  if (sides.length === 3 && constant(sides[0]) && constant(sides[2]) && !constant(sides[1])) {
    return { term: sides[1], parts: [{ lo: sides[0], hi: sides[2], loOpen: strict[0], hiOpen: strict[1] }] };
  }
  if (sides.length !== 2) return null;
  if (!constant(sides[0]) && constant(sides[1])) return { term: sides[0], parts: [{ lo: '-\\infty', hi: sides[1], loOpen: true, hiOpen: strict[0] }] };
  if (constant(sides[0]) && !constant(sides[1])) return { term: sides[1], parts: [{ lo: sides[0], hi: '\\infty', loOpen: strict[0], hiOpen: true }] };
  return null;
}

/** An answer that names a set of numbers, as intervals: `[a, b)`, `(a, b)`, `\{a, b\}`, a union. */
function asIntervals(form: Form): Extract<Form, { kind: 'intervals' }> | null {
  if (form.kind === 'intervals') return form;
  if (form.kind === 'tuple' && form.items.length === 2) {
    const [lo, hi] = form.items;
    if (lo.kind === 'value' && hi.kind === 'value') return { kind: 'intervals', parts: [{ lo: lo.latex, hi: hi.latex, loOpen: true, hiOpen: true }] };
  }
  if (form.kind === 'set') {
    const points = form.items.filter((i): i is Extract<Form, { kind: 'value' }> => i.kind === 'value');
    if (points.length === form.items.length) return { kind: 'intervals', parts: points.map((p) => ({ lo: p.latex, hi: p.latex, loOpen: false, hiOpen: false })) };
  }
  return null;
}

/** An endpoint's value: ±∞ or a number (NaN when it is not one). */
function endpoint(latex: string, oracle: ValueOracle): number {
  const t = latex.replace(/\s+/g, '');
  if (/^\+?\\infty$/.test(t)) return Infinity;
  if (/^-\\infty$/.test(t)) return -Infinity;
  return oracle.numeric(latex);
}

interface NumericInterval {
  lo: number;
  hi: number;
  loOpen: boolean;
  hiOpen: boolean;
  source: Interval;
}

/** Intervals with numeric ends, sorted, with touching pieces merged (`[0,1] \cup [1,2]` is `[0,2]`). */
function numericIntervals(parts: readonly Interval[], oracle: ValueOracle): NumericInterval[] | null {
  const out: NumericInterval[] = [];
  for (const part of parts) {
    const lo = endpoint(part.lo, oracle);
    const hi = endpoint(part.hi, oracle);
    if (Number.isNaN(lo) || Number.isNaN(hi)) return null;
    out.push({ lo, hi, loOpen: part.loOpen || lo === -Infinity, hiOpen: part.hiOpen || hi === Infinity, source: part });
  }
  out.sort((a, b) => a.lo - b.lo || Number(a.loOpen) - Number(b.loOpen));
  const merged: NumericInterval[] = [];
  for (const part of out) {
    const last = merged[merged.length - 1];
    if (last && (part.lo < last.hi || (part.lo === last.hi && !(part.loOpen && last.hiOpen)))) {
      if (part.hi > last.hi || (part.hi === last.hi && !part.hiOpen)) {
        last.hi = part.hi;
        last.hiOpen = part.hiOpen;
        last.source = { ...last.source, hi: part.source.hi, hiOpen: part.hiOpen };
      }
    } else merged.push({ ...part });
  }
  return merged;
}

/** Intervals and sets of numbers: the same pieces with the same ends (each end compared as a value). */
function compareIntervals(ref: Form, ans: Form, oracle: ValueOracle): Verdict {
  if (ans.kind === 'relation') return no(`the reference is ${kindName(ref)} (${describe(ref)}) and the answer an inequality: interval notation was asked for`);
  const a = asIntervals(ref);
  const b = asIntervals(ans);
  if (!a || !b) return no(`${kindName(ref)} ${quote(ref)} against ${kindName(ans)} ${quote(ans)}`);
  const x = numericIntervals(a.parts, oracle);
  const y = numericIntervals(b.parts, oracle);
  if (!x || !y) return describe(a) === describe(b) ? yes('the same intervals') : no(`intervals whose ends are not numbers differ: ${quote(a)} and ${quote(b)}`);
  if (x.length !== y.length) return no(`${quote(ref)} and ${quote(ans)} are different sets (${x.length} pieces against ${y.length})`);
  for (let i = 0; i < x.length; i++) {
    const p = x[i];
    const q = y[i];
    if (p.loOpen !== q.loOpen || p.hiOpen !== q.hiOpen) return no(`${quote(ref)} and ${quote(ans)} differ in an end that is open in one and closed in the other`);
    if (!sameEnd(p.lo, p.source.lo, q.lo, q.source.lo, oracle) || !sameEnd(p.hi, p.source.hi, q.hi, q.source.hi, oracle)) {
      return no(`${quote(ref)} and ${quote(ans)} have different ends`);
    }
  }
  return yes('the same set of numbers');
}

function sameEnd(a: number, aLatex: string, b: number, bLatex: string, oracle: ValueOracle): boolean {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
  return oracle.sameValue(aLatex, bLatex);
}

/** Where the reference's inequality in one variable holds against the answer's set, point by point. */
function sameTruthSet(ref: Extract<Form, { kind: 'relation' }>, set: Extract<Form, { kind: 'intervals' }>, oracle: ValueOracle): Verdict {
  const variables = [...new Set(ref.sides.flatMap((s) => oracle.variables(s)))];
  const parts = numericIntervals(set.parts, oracle);
  if (variables.length !== 1 || !parts) return no(`the inequality ${quote(ref)} against the set ${quote(set)}: not one variable with numeric ends`);
  const name = variables[0];
  const inSet = (x: number) => parts.some((p) => (p.loOpen ? x > p.lo : x >= p.lo) && (p.hiOpen ? x < p.hi : x <= p.hi));
  const points = truthSamplePoints(ref, parts, oracle);
  let checked = 0;
  for (const x of points) {
    const holds = relationHolds(ref, { [name]: x }, oracle);
    if (holds === null) continue;
    checked++;
    if (holds !== inSet(x)) return no(`${quote(ref)} and ${quote(set)} differ at ${name} = ${x}`);
  }
  return checked >= 10 ? yes(`${quote(ref)} holds exactly on ${quote(set)} (checked at ${checked} points, every end of the answer's set among them)`) : no('too few points where the inequality is defined');
}

/** Sample points: every end of the answer's set and beside it, the reference's constants and their negatives, and a grid. */
function truthSamplePoints(ref: Extract<Form, { kind: 'relation' }>, parts: NumericInterval[], oracle: ValueOracle): number[] {
  const points = new Set<number>();
  // Beside each end at float-noise distance: an end rounded to 7 digits (1.4142135 for √2) is caught.
  const near = (v: number) => {
    if (!Number.isFinite(v)) return;
    const d = 1e-10 * Math.max(1, Math.abs(v));
    for (const p of [v - d, v, v + d]) points.add(p);
  };
  for (const p of parts) {
    near(p.lo);
    near(p.hi);
  }
  for (const side of ref.sides) {
    for (const m of side.matchAll(/\d+(?:\.\d+)?/g)) {
      const v = Number(m[0]);
      near(v);
      near(-v);
    }
    const whole = oracle.numeric(side);
    near(whole);
    near(-whole);
  }
  for (let x = -12; x <= 12; x += 0.25) points.add(x + 0.0137);
  for (const big of [50, 100, 1000, 1e6]) {
    points.add(big + 0.5);
    points.add(-big - 0.5);
  }
  return [...points].sort((a, b) => a - b);
}

/** Whether a chain holds at a point; null when a side is undefined there. */
function relationHolds(rel: Extract<Form, { kind: 'relation' }>, point: Record<string, number>, oracle: ValueOracle): boolean | null {
  const values = rel.sides.map((s) => oracle.valueAt(s, point));
  if (values.some((v) => !Number.isFinite(v))) return null;
  return rel.ops.every((op, i) => {
    const [a, b] = [values[i], values[i + 1]];
    switch (op) {
      case '<':
        return a < b;
      case '\\le':
        return a <= b;
      case '>':
        return a > b;
      case '\\ge':
        return a >= b;
      case '=':
        return a === b;
      case '\\ne':
        return a !== b;
    }
  });
}

/** Matrices: the same shape, cell by cell; an answer that is a matrix expression (`A + B`) is its value. */
function compareMatrices(ref: Form, ans: Form, oracle: ValueOracle): Verdict {
  const rows = (form: Form): Form[][] | null => {
    if (form.kind === 'matrix') return form.rows;
    if (form.kind === 'value') return oracle.matrixOf(form.latex)?.map((row) => row.map(readItem)) ?? null;
    if (form.kind === 'tuple' && form.items.length === 1) return rows(form.items[0]);
    return null;
  };
  const a = rows(ref);
  const b = rows(ans);
  if (!a || !b) return no(`${kindName(ref)} ${quote(ref)} against ${kindName(ans)} ${quote(ans)}`);
  if (a.length !== b.length || a.some((row, i) => row.length !== b[i].length)) return no('matrices of different shapes');
  for (let i = 0; i < a.length; i++) {
    for (let j = 0; j < a[i].length; j++) {
      const verdict = compareForms(a[i][j], b[i][j], oracle);
      if (!verdict.equal) return no(`the matrices differ in row ${i + 1}, column ${j + 1}: ${verdict.reason}`);
    }
  }
  return yes('the same matrix');
}

/**
 * Tuples, lists and sets. A tuple is ordered; a list (and a set) is a set of answers, in any order;
 * a list against a tuple is that tuple written without its parentheses (so the same order); a set
 * is not a tuple.
 */
function compareCollections(ref: Form, ans: Form, oracle: ValueOracle): Verdict {
  const items = (f: Form): Form[] => (f.kind === 'tuple' || f.kind === 'list' || f.kind === 'set' ? f.items : [f]);
  const a = items(ref);
  const b = items(ans);
  const collection = (f: Form) => f.kind === 'tuple' || f.kind === 'list' || f.kind === 'set';
  if (!collection(ref) || !collection(ans)) return no(`${kindName(ref)} ${quote(ref)} against ${kindName(ans)} ${quote(ans)}`);
  if ((ref.kind === 'set' && ans.kind === 'tuple') || (ref.kind === 'tuple' && ans.kind === 'set')) return no('a set against a tuple');
  if (a.length > MAX_ITEMS || b.length > MAX_ITEMS) return no(`more than ${MAX_ITEMS} items`);
  const ordered = ref.kind === 'tuple' || ans.kind === 'tuple';
  if (ordered) {
    if (a.length !== b.length) return no(`${a.length} items against ${b.length}`);
    for (let i = 0; i < a.length; i++) {
      const verdict = compareForms(a[i], b[i], oracle);
      if (!verdict.equal) return no(`item ${i + 1} differs: ${verdict.reason}`);
    }
    return yes('the same items in the same order');
  }
  return sameSet(a, b, oracle) ? yes('the same items, in any order') : no(`${quote(ref)} and ${quote(ans)} do not hold the same items`);
}

/**
 * Whether two lists hold the same items as sets: each item of one equals some item of the other
 * (an item written twice is one answer, as in Math-Verify's sets).
 */
function sameSet(a: Form[], b: Form[], oracle: ValueOracle): boolean {
  const equal = a.map((x) => b.map((y) => compareForms(x, y, oracle).equal));
  return a.every((_, i) => equal[i].some(Boolean)) && b.every((_, j) => equal.some((row) => row[j]));
}

