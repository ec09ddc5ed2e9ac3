/**
 * `marsrl`: the headless face of MarsRL Studio. Every command drives the same engine and store
 * as the desktop app, so runs started here appear in the window and the other way round.
 */
import { ConfigError } from '../engine/config/load';
import { SchemaTooNewError } from '../engine/store';
import { packageVersion } from '../engine/version';
import { UsageError } from './args';
import type { Command, CommandContext } from './context';
import { benchCommand } from './commands/bench';
import { configCommand } from './commands/config';
import { exportCommand } from './commands/export';
import { presetsCommand } from './commands/presets';
import { runsCommand, showCommand } from './commands/runs';
import { serveCommand } from './commands/serve';

export const COMMANDS: readonly Command[] = [presetsCommand, configCommand, runsCommand, showCommand, exportCommand, serveCommand, benchCommand];

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `marsrl ${packageVersion()} — MarsRL Studio from the terminal`,
    '',
    'Usage: marsrl COMMAND [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Common options: --db PATH (or MARSRL_DB) chooses the database; --json prints JSON; --help.',
    'Run `marsrl COMMAND --help` for a command’s options.',
  ].join('\n');
}

export async function main(argv: string[], ctx: CommandContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    ctx.out(overview());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    ctx.out(packageVersion());
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    ctx.err(`marsrl: unknown command ${JSON.stringify(name)}. Commands: ${COMMANDS.map((c) => c.name).join(', ')}.`);
    return 2;
  }
  try {
    return await command.run(rest, ctx);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) {
      ctx.err(`marsrl ${name}: ${error.message}`);
      return 2;
    }
    if (error instanceof SchemaTooNewError) {
      ctx.err(`marsrl ${name}: ${error.message}`);
      return 1;
    }
    ctx.err(`marsrl ${name}: ${error instanceof Error ? error.message : String(error)}`);
    if (ctx.env.MARSRL_DEBUG && error instanceof Error && error.stack) ctx.err(error.stack);
    return 1;
  }
}

/** The process entry (bin/marsrl.js imports this file). */
export async function runCli(): Promise<void> {
  const ctx: CommandContext = {
    env: process.env,
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  };
  process.exitCode = await main(process.argv.slice(2), ctx);
}
