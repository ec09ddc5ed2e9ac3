/** The code version stored with every run, so a result can be traced to the code that made it. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from './resources';

let cached: string | null = null;

export function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** `<package version>+<git commit>[-dirty]` when run from a checkout, else the package version. */
export function codeVersion(): string {
  if (cached) return cached;
  const version = packageVersion();
  try {
    const root = projectRoot();
    const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim() !== '';
    cached = `${version}+${commit}${dirty ? '-dirty' : ''}`;
  } catch {
    cached = version;
  }
  return cached;
}
