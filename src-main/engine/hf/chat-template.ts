/**
 * A model's chat template rendered under a time and allocation budget (issue #36).
 *
 * A chat template is code from the model folder, and model folders come from the internet. With
 * `@huggingface/jinja` as is, `{% for i in range(1000000000) %}` allocated a billion-entry list
 * (V8 out of memory: `marsrl model inspect`, `serve-model` and one `inspectModel` call to
 * `marsrl serve` died with exit 133), and nested loops ran for hours. Here the same parsed
 * template is run by an interpreter that:
 * - checks a deadline every 256 evaluated nodes or blocks (a loop's body is a block, run even
 *   when empty; a render of a real template evaluates a few thousand nodes in well under a
 *   millisecond);
 * - charges every value it builds against an allocation budget: a string by its length, a list
 *   or mapping by 64 units an item (a runtime value object and its slot take about that many
 *   bytes), so a template cannot keep building lists until the heap is full;
 * - gives `range` a bounded replacement that charges its length before it allocates.
 * Over either budget the render stops with `TemplateBudgetError`, which says which limit and by
 * how much; the caller names the file and key the template came from.
 *
 * Everything else is the library's own interpreter (the subclass only wraps `evaluate`, through
 * which every node passes), and the globals are those `Template.render` sets (setupGlobals in
 * @huggingface/jinja's runtime, which its index does not export).
 */
import { Environment, Interpreter, Template } from '@huggingface/jinja';

export interface TemplateBudget {
  /** Wall time of one render, ms. */
  timeMs: number;
  /** Allocation units of one render: characters of strings built, 64 a list or mapping item. */
  units: number;
}

/**
 * Room for a prompt of several megabytes (serve-model takes 4 MB bodies; a template touches a
 * message a few times as it renders it), far below what would strain a process.
 */
export const DEFAULT_TEMPLATE_BUDGET: TemplateBudget = { timeMs: 2000, units: 256 * 2 ** 20 };

const ITEM_UNITS = 64;

export class TemplateBudgetError extends Error {
  override readonly name = 'TemplateBudgetError';
}

type Statement = Parameters<Interpreter['evaluate']>[0];
type Value = ReturnType<Interpreter['evaluate']>;

class Meter {
  private used = 0;
  private ticks = 0;
  private readonly deadline: number;
  constructor(private readonly budget: TemplateBudget) {
    this.deadline = performance.now() + budget.timeMs;
  }

  tick(): void {
    if ((++this.ticks & 255) === 0 && performance.now() > this.deadline) {
      throw new TemplateBudgetError(`the template ran for over ${this.budget.timeMs} ms (${this.ticks} steps) and was stopped; a chat template should render in milliseconds (an endless or huge loop?)`);
    }
  }

  charge(units: number, what: string): void {
    this.used += units;
    if (this.used > this.budget.units) {
      throw new TemplateBudgetError(`the template built more than its budget allows (${what}; ${fmt(this.used)} units, at most ${fmt(this.budget.units)}: a character a unit, ${ITEM_UNITS} a list item) and was stopped`);
    }
  }

  chargeValue(value: Value): void {
    const v = (value as { value?: unknown } | undefined)?.value;
    if (typeof v === 'string') {
      if (v.length > 0) this.charge(v.length, `a string of ${fmt(v.length)} characters`);
    } else if (Array.isArray(v)) {
      if (v.length > 0) this.charge(v.length * ITEM_UNITS, `a list of ${fmt(v.length)} items`);
    } else if (v instanceof Map && v.size > 0) this.charge(v.size * ITEM_UNITS, `a mapping of ${fmt(v.size)} items`);
  }
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

class MeteredInterpreter extends Interpreter {
  constructor(
    env: Environment,
    private readonly meter: Meter,
  ) {
    super(env);
    // A loop whose body is empty evaluates no node per iteration, only a block: the block is
    // metered too. `evaluateBlock` is private in the library's types, so it is wrapped on the
    // instance (its own calls go through `this`) rather than overridden.
    const self = this as unknown as { evaluateBlock: (statements: unknown, environment: Environment) => Value };
    const block = self.evaluateBlock.bind(this);
    self.evaluateBlock = (statements, environment) => {
      meter.tick();
      return block(statements, environment);
    };
  }

  override evaluate(statement: Statement, environment: Environment): Value {
    this.meter.tick();
    const value = super.evaluate(statement, environment);
    this.meter.chargeValue(value);
    return value;
  }
}

/** Python's range, refusing before it allocates a list the budget cannot hold. */
function boundedRange(meter: Meter) {
  return (start: number, stop?: number, step = 1): number[] => {
    if (stop === undefined) {
      stop = start;
      start = 0;
    }
    if (![start, stop, step].every((x) => typeof x === 'number' && Number.isFinite(x))) throw new Error('range() takes finite numbers');
    if (step === 0) throw new Error('range() step must not be zero');
    const count = Math.max(0, Math.ceil((stop - start) / step));
    meter.charge(count * ITEM_UNITS, `range() of ${fmt(count)} numbers`);
    const out = new Array<number>(count);
    for (let i = 0; i < count; i++) out[i] = start + i * step;
    return out;
  };
}

/** The date, as the library's own strftime_now writes it (rendered by the library itself). */
function strftimeNow(format: string): string {
  return new Template('{{ strftime_now(f) }}').render({ f: String(format) });
}

/** A parsed chat template, rendered under a budget. Parsing errors throw from the constructor. */
export class BoundedTemplate {
  private readonly template: Template;

  constructor(source: string) {
    this.template = new Template(source);
  }

  render(variables: Record<string, unknown>, budget: TemplateBudget = DEFAULT_TEMPLATE_BUDGET): string {
    const meter = new Meter(budget);
    const env = new Environment();
    // The globals of @huggingface/jinja's setupGlobals, with range bounded.
    env.set('false', false);
    env.set('true', true);
    env.set('none', null);
    env.set('raise_exception', (message: unknown) => {
      throw new Error(String(message));
    });
    env.set('range', boundedRange(meter));
    env.set('strftime_now', strftimeNow);
    env.set('True', true);
    env.set('False', false);
    env.set('None', null);
    for (const [key, value] of Object.entries(variables)) env.set(key, value);
    const result = new MeteredInterpreter(env, meter).run(this.template.parsed);
    return (result as { value: string }).value;
  }
}
