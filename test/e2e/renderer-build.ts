/**
 * The renderer the end-to-end tests load, built from the current sources with the same Vite
 * setup as electron-vite's renderer build, into test-results/ (never over a developer's out/).
 * Builds are cached by a hash of the sources, and written to a temporary folder then renamed, so
 * test files running in parallel share one build without a lock.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../helpers/cli';

const SOURCES = ['src-renderer', 'src-shared'];

function filesUnder(entry: string): string[] {
  const full = path.join(REPO_ROOT, entry);
  if (fs.statSync(full).isFile()) return [entry];
  return fs.readdirSync(full, { withFileTypes: true }).flatMap((d) => filesUnder(path.join(entry, d.name)));
}

export function rendererSourceHash(): string {
  const hash = crypto.createHash('sha256');
  for (const file of SOURCES.flatMap(filesUnder).sort()) {
    hash.update(file);
    hash.update(fs.readFileSync(path.join(REPO_ROOT, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

export async function builtRenderer(): Promise<string> {
  const cache = path.join(REPO_ROOT, 'test-results', 'e2e-renderer');
  const final = path.join(cache, rendererSourceHash());
  if (fs.existsSync(path.join(final, 'index.html'))) return final;
  fs.mkdirSync(cache, { recursive: true });
  const tmp = `${final}.tmp-${process.pid}`;
  const [{ build }, { default: vue }] = await Promise.all([import('vite'), import('@vitejs/plugin-vue')]);
  await build({
    configFile: false,
    root: path.join(REPO_ROOT, 'src-renderer'),
    base: './',
    plugins: [vue()],
    logLevel: 'error',
    // ECharts alone is over Vite's 500 kB advice; the bundle is loaded once, from disk or loopback.
    build: { outDir: tmp, emptyOutDir: true, reportCompressedSize: false, chunkSizeWarningLimit: 4096 },
  });
  try {
    fs.renameSync(tmp, final);
  } catch {
    // Another test process finished the same build first.
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  // Builds of older sources are never used again.
  for (const entry of fs.readdirSync(cache)) {
    if (entry !== path.basename(final) && !entry.includes('.tmp-')) fs.rmSync(path.join(cache, entry), { recursive: true, force: true });
  }
  return final;
}
