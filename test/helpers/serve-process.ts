/** `marsrl serve` and `marsrl serve-model` as separate processes, the way a user starts them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { MARSRL_BIN, REPO_ROOT } from './cli';

/** A server process: `ready` resolves with the URL it printed, once it also says how to stop it. */
export interface ListeningProcess {
  child: ChildProcess;
  ready: Promise<string>;
  stdout(): string;
  stderr(): string;
  /** Ctrl-C, then the exit code. */
  stop(): Promise<number | null>;
}

export interface ServeProcess extends Omit<ListeningProcess, 'ready'> {
  url: string;
  port: number;
}

/**
 * Starts `marsrl COMMAND ARGS` with no database or token from this shell, and watches stdout for
 * `urlLine` (its first group is the URL). A process that exits or stays silent for `timeoutMs`
 * rejects `ready` with what it printed.
 */
export function startListening(command: string, args: string[], urlLine: RegExp, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): ListeningProcess {
  const child = spawn(process.execPath, [MARSRL_BIN, command, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, MARSRL_DB: undefined, MARSRL_TOKEN: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`marsrl ${command} did not print its URL in ${timeoutMs} ms:\n${out}\n${err}`));
    }, timeoutMs);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const match = urlLine.exec(out);
      if (match && out.includes('Ctrl-C')) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`marsrl ${command} exited with ${code} before it was ready:\n${out}\n${err}`));
    });
  });
  return {
    child,
    ready,
    stdout: () => out,
    stderr: () => err,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
}

/** Starts `marsrl serve ARGS` and resolves once it has printed its URL. */
export async function startServe(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<ServeProcess> {
  const { ready, ...serve } = startListening('serve', args, /Open: (\S+)/, env, timeoutMs);
  const url = await ready;
  return { ...serve, url, port: Number(new URL(url).port) };
}
