/**
 * Finding (and, when missing, building) the renderer `marsrl serve` hands to browsers. The
 * renderer is built by electron-vite like the desktop app's (`npm run build`), into out/renderer.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../engine/resources';
import { rendererBuilt } from './static-files';

export function defaultRendererDir(): string {
  return path.join(projectRoot(), 'out', 'renderer');
}

/** What a user runs to build the renderer by hand, from the project folder. */
export function buildInstructions(root = projectRoot()): string {
  return `cd ${JSON.stringify(root)} && npm run build`;
}

export type BuildOutcome = { ok: true } | { ok: false; reason: string };

/**
 * Runs `electron-vite build` from the project (the build step of `npm run build`, without its
 * typecheck). Its output goes to the terminal: it takes a few seconds and the user should see it.
 */
export function buildRenderer(root = projectRoot(), log: (line: string) => void = console.error): BuildOutcome {
  const cli = path.join(root, 'node_modules', 'electron-vite', 'bin', 'electron-vite.js');
  if (!fs.existsSync(cli)) {
    return { ok: false, reason: 'electron-vite is not installed here (a production install has no build tools)' };
  }
  // The first build takes about a minute on a laptop; say so, or it looks like a hang (issue 18).
  log('Building the interface for the browser (electron-vite build, once: about a minute; later starts reuse out/renderer)…');
  const result = spawnSync(process.execPath, [cli, 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' } });
  if (result.error) return { ok: false, reason: result.error.message };
  if (result.status !== 0) return { ok: false, reason: `electron-vite build exited with ${result.status ?? result.signal}` };
  if (!rendererBuilt(path.join(root, 'out', 'renderer'))) return { ok: false, reason: 'the build finished without writing out/renderer/index.html' };
  return { ok: true };
}
