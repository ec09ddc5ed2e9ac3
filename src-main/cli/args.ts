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

export function parseCommand<O extends OptionSpec>(argv: string[], options: O, usage: string, maxPositionals = Infinity) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON_OPTIONS, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    const message = (error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, '');
    throw new UsageError(message, usage);
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`, usage);
  }
  return parsed;
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
