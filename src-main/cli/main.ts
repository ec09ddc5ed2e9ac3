/**
 * `marsrl`: the headless face of MarsRL Studio. Every command drives the same engine and store
 * as the desktop app, so runs started here appear in the window and the other way round.
 */
import { ConfigError } from '../engine/config/load';
import { describeStoreFailure, SchemaTooNewError } from '../engine/store';
import { resolveDatabasePath } from '../engine/paths';
import { packageVersion } from '../engine/version';
import { inertText } from '../engine/util/inert';
import { UsageError } from './args';
import type { Command, CommandContext } from './context';

interface CommandEntry {
  name: string;
  summary: string;
  load: () => Promise<Command>;
}

/**
 * Commands load on first use: `marsrl runs` should not pay for TensorFlow.js, the HTTP server
 * or the Parquet writer (startup time and, for `export`, memory headroom).
 */
export const COMMANDS: readonly CommandEntry[] = [
  { name: 'presets', summary: 'list the shipped run presets', load: async () => (await import('./commands/presets')).presetsCommand },
  { name: 'config', summary: 'validate a config file or print a resolved config', load: async () => (await import('./commands/config')).configCommand },
  { name: 'run', summary: 'start a training run and follow it', load: async () => (await import('./commands/run')).runCommand },
  { name: 'resume', summary: 'continue an interrupted run from its last checkpoint', load: async () => (await import('./commands/run')).resumeCommand },
  { name: 'stop', summary: 'stop a run at its next safe point, whichever process owns it', load: async () => (await import('./commands/stop')).stopCommand },
  { name: 'logs', summary: "print an engine run's Ray job log (--follow to keep printing)", load: async () => (await import('./commands/logs')).logsCommand },
  { name: 'pretrain', summary: 'warm-start the policies of a config and save checkpoints', load: async () => (await import('./commands/pretrain')).pretrainCommand },
  { name: 'runs', summary: 'list runs in the store', load: async () => (await import('./commands/runs')).runsCommand },
  { name: 'show', summary: 'show one run in detail', load: async () => (await import('./commands/runs')).showCommand },
  { name: 'rejudge', summary: "judge a finished math run's turns again with today's answer checker; list what changed", load: async () => (await import('./commands/rejudge')).rejudgeCommand },
  { name: 'check-answer', summary: 'judge a response against a reference answer with the math checker (or a JSONL file)', load: async () => (await import('./commands/check-answer')).checkAnswerCommand },
  { name: 'compare', summary: 'compare runs side by side: summary table, deltas against a baseline', load: async () => (await import('./commands/compare')).compareCommand },
  { name: 'study', summary: 'run a study matrix (config values × seeds) and report it', load: async () => (await import('./commands/study')).studyCommand },
  { name: 'export', summary: 'export runs as datasets (trajectories, veRL, SFT, preference pairs)', load: async () => (await import('./commands/export')).exportCommand },
  { name: 'import', summary: 'import runs made elsewhere (MarsRL, veRL, DrMAS, TensorBoard, trackio, MLflow) as read-only runs', load: async () => (await import('./commands/import')).importCommand },
  { name: 'serve', summary: 'serve the interface to a web browser (HTTP + WebSocket)', load: async () => (await import('./commands/serve')).serveCommand },
  { name: 'model', summary: 'Hugging Face models: inspect a folder, export as hf or gguf, generate', load: async () => (await import('./commands/model')).modelCommand },
  { name: 'serve-model', summary: 'serve Studio policies on the OpenAI-compatible API', load: async () => (await import('./commands/serve-model')).serveModelCommand },
  { name: 'secrets', summary: 'approve the API key variables endpoints may send, host by host', load: async () => (await import('./commands/secrets')).secretsCommand },
  { name: 'doctor', summary: 'show the tensor backend and why others were skipped', load: async () => (await import('./commands/doctor')).doctorCommand },
  { name: 'credit', summary: "a run's counterfactual credit: rewards and advantages under every scheme and mode", load: async () => (await import('./commands/credit')).creditCommand },
  { name: 'problem', summary: 'one problem across the steps of a run and across runs: outcomes, episode trees, rewards, advantages', load: async () => (await import('./commands/problem')).problemCommand },
  { name: 'replay', summary: "run a stored episode's problem, a problem or a prompt through the chain again with any checkpoint or an endpoint", load: async () => (await import('./commands/replay')).replayCommand },
];

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

export async function main(argv: string[], given: CommandContext): Promise<number> {
  // Everything a command prints passes here: run names, notes, config strings and model text are
  // data, and a terminal control sequence in them is shown escaped, never executed (issue #36).
  const ctx: CommandContext = { ...given, out: (text) => given.out(inertText(text)), err: (text) => given.err(inertText(text)) };
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    ctx.out(overview());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    ctx.out(packageVersion());
    return 0;
  }
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry && name === 'bench') {
    // The benchmarks left the CLI (issue 37): they drive it from outside and ship with neither it
    // nor the app. Whoever typed the old command is told the new one.
    ctx.err(`marsrl: benchmarks are not a marsrl command; from a clone of the repository run: npm run bench -- ${rest.length ? rest.join(' ') : 'NAME [options]'}`);
    return 2;
  }
  if (!entry) {
    ctx.err(`marsrl: unknown command ${JSON.stringify(name)}. Commands: ${COMMANDS.map((c) => c.name).join(', ')}.`);
    return 2;
  }
  try {
    const command = await entry.load();
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
    const storeFailure = describeStoreFailure(error, databaseArgument(rest, ctx.env));
    if (storeFailure) {
      ctx.err(`marsrl ${name}: ${storeFailure}`);
      return 1;
    }
    ctx.err(`marsrl ${name}: ${error instanceof Error ? error.message : String(error)}`);
    if (ctx.env.MARSRL_DEBUG && error instanceof Error && error.stack) ctx.err(error.stack);
    return 1;
  }
}

/** The database a command was pointed at (--db PATH, --db=PATH, MARSRL_DB or the default), for messages. */
function databaseArgument(argv: string[], env: NodeJS.ProcessEnv): string {
  const i = argv.indexOf('--db');
  const inline = argv.find((a) => a.startsWith('--db='));
  return resolveDatabasePath(i >= 0 ? argv[i + 1] : inline?.slice('--db='.length), env);
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
