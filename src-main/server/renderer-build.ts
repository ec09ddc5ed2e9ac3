/**
 * Finding (and, when missing, building) the renderer `marsrl serve` hands to browsers. The
 * renderer is built by electron-vite like the desktop app's (`npm run build`), into out/renderer.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { formatDuration } from '#shared/format';
import { projectRoot } from '../engine/resources';
import { rendererBuilt } from './static-files';

/**
 * Where electron-vite builds to: `<project>/out`, or MARSRL_BUILD_OUT (a packaging step, or a
 * test that must really build without touching the checkout's out/).
 */
export function buildOutDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.MARSRL_BUILD_OUT ? path.resolve(env.MARSRL_BUILD_OUT) : path.join(projectRoot(), 'out');
}

export function defaultRendererDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(buildOutDir(env), 'renderer');
}

/** What a user runs to build the renderer by hand, from the project folder. */
export function buildInstructions(root = projectRoot()): string {
  return `cd ${JSON.stringify(root)} && npm run build`;
}

export type BuildOutcome = { ok: true } | { ok: false; reason: string };

/** How often the build says it is still going, with the time so far. */
export const BUILD_TICK_MS = 5000;

/**
 * Runs `electron-vite build` from the project (the build step of `npm run build`, without its
 * typecheck) into `outDir`. The first build takes about a minute; so that it does not look like a
 * hang (issue 18) it says so up front, passes on the build's own phase lines as they come, and
 * every BUILD_TICK_MS prints the time so far.
 */
export async function buildRenderer(
  options: { root?: string; outDir?: string; log?: (line: string) => void; tickMs?: number } = {},
): Promise<BuildOutcome> {
  const root = options.root ?? projectRoot();
  const outDir = options.outDir ?? buildOutDir();
  const log = options.log ?? ((line: string) => console.error(line));
  const cli = path.join(root, 'node_modules', 'electron-vite', 'bin', 'electron-vite.js');
  if (!fs.existsSync(cli)) {
    return { ok: false, reason: 'electron-vite is not installed here (a production install has no build tools)' };
  }
  log(`Building the interface for the browser (electron-vite build, once: about a minute; later starts reuse ${outDir})…`);
  const started = Date.now();
  const elapsed = () => formatDuration((Date.now() - started) / 1000);
  const child = spawn(process.execPath, [cli, 'build', '--outDir', outDir], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' },
  });
  // The build's own lines, as they come: its phases (main, preload, renderer) and what it wrote.
  const relay = (stream: NodeJS.ReadableStream) => {
    let pending = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) log(`  build | ${line}`);
    });
    stream.on('end', () => {
      if (pending.trim()) log(`  build | ${pending}`);
    });
  };
  relay(child.stdout);
  relay(child.stderr);
  const ticker = setInterval(() => log(`  … still building the interface (${elapsed()} so far)`), options.tickMs ?? BUILD_TICK_MS);
  try {
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null } | Error>((resolve) => {
      child.once('error', resolve);
      child.once('close', (code, signal) => resolve({ code, signal }));
    });
    if (exit instanceof Error) return { ok: false, reason: exit.message };
    if (exit.code !== 0) return { ok: false, reason: `electron-vite build exited with ${exit.code ?? exit.signal}` };
  } finally {
    clearInterval(ticker);
  }
  if (!rendererBuilt(path.join(outDir, 'renderer'))) return { ok: false, reason: `the build finished without writing ${path.join(outDir, 'renderer', 'index.html')}` };
  log(`Built the interface in ${elapsed()}.`);
  return { ok: true };
}
