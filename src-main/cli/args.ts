/** Flag parsing for the CLI: strict, with errors that name the flag and show the usage. */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(usage ? `${message}\n\n${usage}` : message);
    this.name = 'UsageError';
  }
}

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  db: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies OptionSpec;

/** No flag of this CLI looks like a negative number, so `-5` is always a value. */
const NEGATIVE_NUMBER = /^-\d+(\.\d+)?$/;
/** Stands in for a negative-number positional while node's parser reads the rest. */
const NEGATIVE_MARK = '\u0000negative:';

/**
 * Node's parseArgs reads `-1` as an unknown short option and `--limit -5` as a missing value,
 * and answers in its own words (issue 18); a negative number is given to the flag before it or
 * kept as a positional, so the command's own range check names the allowed values.
 */
function withNegativeNumbers(argv: readonly string[], options: OptionSpec): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (token === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (!NEGATIVE_NUMBER.test(token)) {
      out.push(token);
      continue;
    }
    const previous = out[out.length - 1];
    const flag = previous?.startsWith('--') && !previous.includes('=') ? options[previous.slice(2)] : undefined;
    if (flag?.type === 'string') out[out.length - 1] = `${previous}=${token}`;
    else out.push(`${NEGATIVE_MARK}${token}`);
  }
  return out;
}

export function parseCommand<O extends OptionSpec>(argv: string[], options: O, usage: string, maxPositionals = Infinity) {
  let parsed;
  const all = { ...COMMON_OPTIONS, ...options };
  try {
    parsed = parseArgs({ args: withNegativeNumbers(argv, all), options: all, allowPositionals: true, strict: true });
  } catch (error) {
    const message = (error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, '');
    throw new UsageError(message, usage);
  }
  parsed.positionals = parsed.positionals.map((p) => (p.startsWith(NEGATIVE_MARK) ? p.slice(NEGATIVE_MARK.length) : p));
  if (parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`, usage);
  }
  return parsed;
}

/** `--help` prints the command's usage on stdout, and the command exits 0 without doing anything else. */
export function printedHelp(values: { help?: boolean }, usage: string, ctx: { out: (text: string) => void }): boolean {
  if (!values.help) return false;
  ctx.out(usage);
  return true;
}

/**
 * A run given by id or name: a number must be a positive id (`show -1` or `show 0` is a mistake,
 * not a name to look up).
 */
export function runRef(raw: string, what: string, usage: string): string {
  if (/^[-+]?\d+(\.\d+)?$/.test(raw) && !(Number.isInteger(Number(raw)) && Number(raw) >= 1 && !raw.startsWith('+'))) {
    throw new UsageError(`${what} must be a run id (a whole number from 1) or a run name (got ${JSON.stringify(raw)})`, usage);
  }
  return raw;
}

/** A flag that must be one of `choices` when given, e.g. --backend wasm. */
export function choiceFlag(name: string, raw: string | undefined, choices: readonly string[], usage: string): string | undefined {
  if (raw !== undefined && !choices.includes(raw)) throw new UsageError(`--${name} must be one of ${choices.join(', ')} (got ${JSON.stringify(raw)})`, usage);
  return raw;
}

/** A flag that must be a positive integer, e.g. --limit 20. */
export function intFlag(name: string, raw: string | undefined, min: number, max: number, usage: string): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`, usage);
  }
  return value;
}
