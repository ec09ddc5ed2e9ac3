/**
 * The value questions of a comparison (compare.ts's ValueOracle), answered two ways (issue #34):
 *  - `quickOracle`: plain numbers only (`12`, `-0.5`, `1000.0`), in plain JavaScript; any other
 *    question throws NeedsEngine, and the comparison is handed to the checker's thread;
 *  - `EngineOracle`: @cortex-js/compute-engine, in the checker's thread (judge-thread.ts), which
 *    rewinds the engine to a checkpoint after every comparison, so nothing one comparison made the
 *    engine infer (a symbol read as a function, an assumed type) reaches the next.
 *
 * Numbers: when both are written exactly (integers, fractions, radicals, π) they must be equal
 * exactly (their difference evaluates to 0, or agrees to 15 significant digits at the engine's 21
 * when the engine cannot reduce it); when either is written as a decimal, a relative 1e-9 absorbs
 * float noise and nothing more (0.333 is not 1/3). The engine's own `isEqual` is not used for
 * numbers: it accepts anything within 1e-10 (1/3 against 0.3333333333).
 * Expressions with free variables: the same value at four fixed generic points (complex values
 * allowed, so `\sqrt{x^2}` is not `x`), else `simplify(a - b) = 0`.
 */
import type { ComputeEngine } from '@cortex-js/compute-engine';
import type { ValueOracle } from './compare';

export class NeedsEngine extends Error {
  constructor(what: string) {
    super(`needs the computer algebra engine: ${what}`);
    this.name = 'NeedsEngine';
  }
}

/** A value the engine is not asked to compute: text compared as text (see `tooCostly`). */
export class TooCostly extends Error {
  constructor(readonly latex: string) {
    super(`too costly to evaluate: ${latex.slice(0, 60)}`);
    this.name = 'TooCostly';
  }
}

const INTEGER = /^[-+]?\d+$/;
const PLAIN_NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)$/;
const FLOAT_NOISE = 1e-9;
const EXACT_DIGITS = 1e-15;
/** Longest expression handed to the engine. */
export const MAX_EXPRESSION_LENGTH = 400;

export function closeEnough(a: number, b: number, tolerance = FLOAT_NOISE): boolean {
  return Math.abs(a - b) <= tolerance * Math.max(1, Math.abs(a), Math.abs(b));
}

function isDecimal(latex: string): boolean {
  return /\d\.\d|(?<!\d)\.\d|\d\.(?!\d)/.test(latex);
}

/** Plain numbers: integers exactly (as big integers), decimals within float noise. */
function plainEqual(a: string, b: string): boolean {
  if (INTEGER.test(a) && INTEGER.test(b)) return BigInt(a.replace(/^\+/, '')) === BigInt(b.replace(/^\+/, ''));
  return closeEnough(Number(a), Number(b));
}

/** The oracle of the main thread: decides plain numbers, hands everything else on. */
export const quickOracle: ValueOracle = {
  sameValue(a, b) {
    const x = a.replace(/\s+/g, '');
    const y = b.replace(/\s+/g, '');
    if (PLAIN_NUMBER.test(x) && PLAIN_NUMBER.test(y)) return plainEqual(x, y);
    throw new NeedsEngine(`${a} against ${b}`);
  },
  numeric(latex) {
    const x = latex.replace(/\s+/g, '');
    if (PLAIN_NUMBER.test(x)) return Number(x);
    throw new NeedsEngine(latex);
  },
  variables(latex) {
    throw new NeedsEngine(latex);
  },
  valueAt(latex) {
    throw new NeedsEngine(latex);
  },
  matrixOf(latex) {
    throw new NeedsEngine(latex);
  },
};

/**
 * Inputs whose exact value would take the engine minutes (measured: `9^{9^{9^{9}}}` 37 s, `100000!`
 * and `\sum_{k=1}^{10^9} k` past any limit), refused before parsing: a power tower, an exponent or a
 * factorial argument of five digits or more, a sum or product whose bound has a power or five digits.
 */
export function tooCostly(latex: string): boolean {
  if (latex.length > MAX_EXPRESSION_LENGTH) return true;
  if (/\^\s*\{[^{}]*\^/.test(latex) || /\^\s*\d\s*\^/.test(latex)) return true;
  if (/\^\s*\{?\s*-?\d{5,}/.test(latex) || /\d{5,}\s*!/.test(latex) || /\{\s*\d{5,}\s*\}\s*!/.test(latex)) return true;
  if (/\\(?:sum|prod)[^}]*\^\s*\{?[^}]*(?:\^|\d{5,})/.test(latex)) return true;
  return false;
}

/** The operators whose value at a point is the function's value there (sampling is sound for them). */
const ELEMENTARY = new Set(
  (
    'Add Subtract Negate Multiply Divide Power Sqrt Root Abs Exp Ln Log Lb Lg Sin Cos Tan Sec Csc Cot Arcsin Arccos Arctan Arcsec Arccsc Arccot ' +
    'Sinh Cosh Tanh Rational Half Square Complex Pi ExponentialE ImaginaryUnit Hold Delimiter Sequence'
  ).split(' '),
);

/** Whether a MathJSON tree uses elementary operators only (numbers and variables as leaves). */
function elementary(json: unknown): boolean {
  if (typeof json === 'number' || typeof json === 'string') return true;
  if (Array.isArray(json)) return typeof json[0] === 'string' && ELEMENTARY.has(json[0]) && json.slice(1).every(elementary);
  return typeof json === 'object' && json !== null && 'num' in json;
}

type Expr = NonNullable<ReturnType<ComputeEngine['parse']>>;
/** The parts of an expression's tree a matrix is read from. */
interface Tree {
  operator: string;
  ops?: readonly Tree[];
  latex: string;
}

/** Fixed generic points for the free variables of an expression (never a small integer). */
const POINTS: readonly number[] = [0.7318, -1.2391, 2.0517, -0.5217, 1.8363, 0.4463, -0.8821, 1.3391];

interface Complex {
  re: number;
  im: number;
}

/** Answers a comparison's value questions with compute-engine. One instance per comparison. */
export class EngineOracle implements ValueOracle {
  private readonly parsed = new Map<string, Expr>();

  constructor(private readonly ce: ComputeEngine) {}

  private parse(latex: string): Expr {
    let expr = this.parsed.get(latex);
    if (expr === undefined) {
      if (tooCostly(latex)) throw new TooCostly(latex);
      expr = this.ce.parse(latex);
      this.parsed.set(latex, expr);
    }
    return expr;
  }

  private valid(latex: string): Expr | null {
    const expr = this.parse(latex);
    if (!expr.isValid) return null;
    const json = JSON.stringify(expr.json);
    return /"Error"|"LatexString"|^"'/.test(json) ? null : expr;
  }

  variables(latex: string): string[] {
    const expr = this.valid(latex);
    return expr ? [...(expr.unknowns ?? [])] : [];
  }

  private complexOf(expr: Expr): Complex {
    const v = expr.N();
    const re = v.re;
    const im = v.im;
    return { re: typeof re === 'number' ? re : NaN, im: typeof im === 'number' ? im : 0 };
  }

  numeric(latex: string): number {
    const expr = this.valid(latex);
    if (!expr || (expr.unknowns ?? []).length > 0) return NaN;
    const v = this.complexOf(expr);
    return Math.abs(v.im) > 1e-12 * Math.max(1, Math.abs(v.re)) ? NaN : v.re;
  }

  valueAt(latex: string, point: Readonly<Record<string, number>>): number {
    const expr = this.valid(latex);
    if (!expr) return NaN;
    const v = this.complexOf(expr.subs(point));
    return Math.abs(v.im) > 1e-12 * Math.max(1, Math.abs(v.re)) ? NaN : v.re;
  }

  matrixOf(latex: string): string[][] | null {
    const expr = this.valid(latex);
    if (!expr || !latex.includes('\\begin')) return null;
    const value = expr.evaluate() as unknown as Tree;
    const list = value.operator === 'Matrix' ? value.ops?.[0] : value;
    if (!list || list.operator !== 'List' || !list.ops?.every((row) => row.operator === 'List')) return null;
    return list.ops.map((row) => (row.ops ?? []).map((cell) => cell.latex));
  }

  sameValue(a: string, b: string): boolean {
    const x = a.replace(/\s+/g, '');
    const y = b.replace(/\s+/g, '');
    if (PLAIN_NUMBER.test(x) && PLAIN_NUMBER.test(y)) return plainEqual(x, y);
    const ea = this.valid(a);
    const eb = this.valid(b);
    if (!ea || !eb) return x.toLowerCase() === y.toLowerCase();
    const free = [...new Set([...(ea.unknowns ?? []), ...(eb.unknowns ?? [])])];
    if (free.length === 0) return this.sameNumber(ea, eb, isDecimal(a) || isDecimal(b));
    return this.sameFunction(ea, eb, free);
  }

  private sameNumber(a: Expr, b: Expr, decimal: boolean): boolean {
    const va = this.complexOf(a);
    const vb = this.complexOf(b);
    if ([va.re, va.im, vb.re, vb.im].some((v) => Number.isNaN(v))) return false;
    const near = (tolerance: number) => closeEnough(va.re, vb.re, tolerance) && closeEnough(va.im, vb.im, tolerance);
    if (decimal) return near(FLOAT_NOISE);
    if (!near(FLOAT_NOISE)) return false;
    const difference = this.ce.box(['Subtract', a, b]).evaluate();
    // An exact difference decides (10^{20} against 10^{20}+1 differ by 1, however small that is
    // beside them). The engine's `is(0)` is not asked: it allows its tolerance of 1e-10.
    const literal = difference as unknown as { isNumberLiteral?: boolean; isExact?: boolean };
    if (literal.isNumberLiteral === true && literal.isExact === true) return difference.json === 0;
    const d = this.complexOf(difference);
    return Math.hypot(d.re, d.im) <= EXACT_DIGITS * Math.max(1, Math.hypot(va.re, va.im));
  }

  private sameFunction(a: Expr, b: Expr, free: string[]): boolean {
    // Sampling is sound for elementary functions only: a sum with a symbolic bound evaluates to an
    // empty 0 at a fractional point, whatever its terms (`\sum_{k=0}^{n-1}` against `\sum_{k=0}^{n-2}`).
    if (!elementary(a.json) || !elementary(b.json)) return a.isEqual(b) === true;
    let agreed = 0;
    for (let round = 0; round < 4; round++) {
      const point = Object.fromEntries(free.map((name, i) => [name, POINTS[(round * 3 + i) % POINTS.length] * (1 + 0.13 * i)]));
      const va = this.complexOf(a.subs(point));
      const vb = this.complexOf(b.subs(point));
      const finite = [va.re, va.im, vb.re, vb.im].every(Number.isFinite);
      if (!finite) continue;
      if (!closeEnough(va.re, vb.re) || !closeEnough(va.im, vb.im)) return false;
      agreed++;
    }
    if (agreed >= 2) return true;
    // Nowhere defined at the points (an unknown function, `\sum` with a symbolic bound): structure.
    return a.isEqual(b) === true || this.ce.box(['Subtract', a, b]).simplify().is(0);
  }
}
