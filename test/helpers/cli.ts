import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const MARSRL_BIN = path.join(REPO_ROOT, 'bin', 'marsrl.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment a `marsrl` child gets: the tester's, less the database and home a developer may
 * have set, plus the test's own.
 */
function marsrlEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...process.env, MARSRL_DB: undefined, MARSRL_HOME: undefined, ...env };
}

/** Run `marsrl ARGS` as a user would: a separate Node process through the bin entry. */
export function marsrl(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO_ROOT): CliResult {
  const result = spawnSync(process.execPath, [MARSRL_BIN, ...args], {
    cwd,
    env: marsrlEnv(env),
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * `marsrl ARGS` in a child process without blocking this one: for tests whose counterpart (a fake
 * Ray dashboard, a model server) runs in the test process and must go on answering meanwhile.
 */
export function marsrlAsync(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO_ROOT): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [MARSRL_BIN, ...args], { cwd, env: marsrlEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

/**
 * `marsrl ARGS --db DB` in this process, through the CLI's `main` with its output captured: for
 * tests that check many invocations against one database and need no separate process.
 */
export async function marsrlInProcess(db: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const { code, out, err } = await captureMain([...args, '--db', db], {});
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** The CLI's `main` in this process, each text it writes to out and err captured apart. */
async function captureMain(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string[]; err: string[] }> {
  const { main } = await import('../../src-main/cli/main');
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { env, out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out, err };
}

/**
 * `marsrl ARGS` in this process, through the CLI's `main` with the environment `marsrl` gives its
 * child (no --db added): for commands that need no database, checked many times in one file, where
 * a separate Node process each time (about two CPU seconds of start-up) tests nothing more. The
 * exit code is what `main` returns, the one bin/marsrl.js sets; --json output arrives on stdout as
 * the bin prints it (every command writes through its context).
 */
export async function marsrlMain(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const { code, out, err } = await captureMain(args, marsrlEnv(env));
  // Each text is a line, as the bin's console writes it.
  const lines = (texts: string[]) => texts.map((t) => `${t}\n`).join('');
  return { code, stdout: lines(out), stderr: lines(err) };
}
