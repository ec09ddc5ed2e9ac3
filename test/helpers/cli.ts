import { spawnSync } from 'node:child_process';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const MARSRL_BIN = path.join(REPO_ROOT, 'bin', 'marsrl.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `marsrl ARGS` as a user would: a separate Node process through the bin entry. */
export function marsrl(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO_ROOT): CliResult {
  const result = spawnSync(process.execPath, [MARSRL_BIN, ...args], {
    cwd,
    env: { ...process.env, MARSRL_DB: undefined, MARSRL_HOME: undefined, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
