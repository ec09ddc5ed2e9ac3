import fs from 'node:fs';
import { resolveDatabasePath } from '../engine/paths';
import { openStore, type Store } from '../engine/store';
import { createStudioService } from '../api/service';
import type { StudioApi } from '#shared/contract';
import type { RunRow } from '../engine/store/types';
import { parseCommand, printedHelp, runRef, UsageError, type OptionSpec } from './args';

export interface CommandContext {
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Returns the process exit code. */
  run(argv: string[], ctx: CommandContext): Promise<number>;
}

/** What `parseCommand` read from a command's arguments: its flags and positionals. */
export type ParsedCommand<O extends OptionSpec> = ReturnType<typeof parseCommand<O>>;

export interface CommandSpec<O extends OptionSpec> {
  name: string;
  summary: string;
  usage: string;
  /** The command's own flags; `--db`, `--json` and `--help` are every command's (COMMON_OPTIONS). */
  options: O;
  /** How many positionals the command takes (any number when absent). */
  maxPositionals?: number;
  /** Runs once the flags are read and `--help` is answered; returns the process exit code. */
  run(parsed: ParsedCommand<O>, ctx: CommandContext): Promise<number>;
}

/**
 * A command whose flags are read strictly (an unknown flag or one positional too many is a
 * UsageError showing the usage) and whose `--help` prints the usage and exits 0 before anything
 * else runs: the same for every command, written once.
 */
export function defineCommand<O extends OptionSpec>(spec: CommandSpec<O>): Command {
  const { name, summary, usage, options, maxPositionals } = spec;
  return {
    name,
    summary,
    usage,
    async run(argv, ctx) {
      const parsed = parseCommand(argv, options, usage, maxPositionals);
      if (printedHelp(parsed.values, usage, ctx)) return 0;
      return spec.run(parsed, ctx);
    },
  };
}

/**
 * Refuses a database a read-only command was pointed at but that is not there (issue 18: `runs
 * --db typo.db` created an empty database and its folders, then answered "No runs"), and an empty
 * file (SQLite would silently make it a database). The per-user default is created on first use:
 * that is the app's "no set-up" promise; a path the user typed is not.
 */
export function assertDatabaseExists(databasePath: string, explicit: boolean): void {
  const stat = fs.statSync(databasePath, { throwIfNoEntry: false });
  if (!stat) {
    if (explicit) throw new Error(`No database at ${databasePath}: check the path, or start a run first (marsrl run --db PATH). Nothing was created.`);
    return;
  }
  if (!stat.isFile()) throw new Error(`No database at ${databasePath}: it is a ${stat.isDirectory() ? 'folder' : 'special file'}, not a database file.`);
  if (stat.size === 0) throw new Error(`No database at ${databasePath}: the file is empty (0 bytes), not a MarsRL Studio database. It was left as it is.`);
}

/**
 * The store and service a read-only command (runs, show, compare, export) works on: `--db PATH`
 * beats MARSRL_DB beats the per-user default. A path given by flag or variable must exist.
 */
export function openCliStudio(dbFlag: string | undefined, env: NodeJS.ProcessEnv): { store: Store; service: StudioApi; databasePath: string } {
  const databasePath = resolveDatabasePath(dbFlag, env);
  assertDatabaseExists(databasePath, Boolean(dbFlag || env.MARSRL_DB));
  const store = openStore(databasePath);
  return { store, service: createStudioService({ store, databasePath, transport: 'direct' }), databasePath };
}

/** The RUN a command takes as its one positional: given, and an id or a name, else a UsageError. */
export function runArgument(positionals: string[], command: string, usage: string): string {
  const ref = positionals[0];
  if (!ref) throw new UsageError(`${command} needs a RUN (id or name)`, usage);
  return runRef(ref, 'RUN', usage);
}

/** The run `ref` names; null after saying where runs are listed when there is none (the command exits 1). */
export function findRunOrSay(store: Store, ref: string, databasePath: string, ctx: Pick<CommandContext, 'err'>): RunRow | null {
  const run = store.runs.find(ref);
  if (!run) ctx.err(`No run ${JSON.stringify(ref)} in ${databasePath}. List runs with: marsrl runs`);
  return run ?? null;
}

/** What a command on one stored run works on: the store, the service and the run. */
export interface CliRun {
  store: Store;
  service: StudioApi;
  databasePath: string;
  run: RunRow;
}

/**
 * Runs a command's work on the run `ref` names and closes the store after, however the work
 * ends; exit code 1, after saying where runs are listed, when there is no such run.
 */
export async function withCliRun(dbFlag: string | undefined, ctx: CommandContext, ref: string, work: (opened: CliRun) => Promise<number>): Promise<number> {
  const studio = openCliStudio(dbFlag, ctx.env);
  try {
    const run = findRunOrSay(studio.store, ref, studio.databasePath, ctx);
    return run ? await work({ ...studio, run }) : 1;
  } finally {
    studio.store.close();
  }
}
