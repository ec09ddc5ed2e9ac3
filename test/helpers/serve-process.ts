/** `marsrl serve` as a separate process, the way a user starts it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { MARSRL_BIN, REPO_ROOT } from './cli';

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  port: number;
  stdout(): string;
  stderr(): string;
  /** Ctrl-C, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `marsrl serve ARGS` and resolves once it has printed its URL. */
export function startServe(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<ServeProcess> {
  const child = spawn(process.execPath, [MARSRL_BIN, 'serve', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, MARSRL_DB: undefined, MARSRL_TOKEN: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`marsrl serve did not print its URL in ${timeoutMs} ms:\n${out}\n${err}`));
    }, timeoutMs);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /Open: (\S+)/.exec(out);
      if (match && out.includes('Ctrl-C')) {
        clearTimeout(timer);
        resolve({
          child,
          url: match[1],
          port: Number(new URL(match[1]).port),
          stdout: () => out,
          stderr: () => err,
          stop: () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
            return exited;
          },
        });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`marsrl serve exited with ${code} before it was ready:\n${out}\n${err}`));
    });
  });
}
