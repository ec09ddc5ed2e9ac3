import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { perFile } from './per-file';

/** A fresh temporary folder, removed by the returned cleanup. */
export function tempDir(prefix = 'marsrl-test-'): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A fresh temporary folder for a test file: made before its tests, removed after them (read `dir` inside them). */
export function tempFolder(prefix?: string): { readonly dir: string } {
  const folder = perFile('tempFolder', () => tempDir(prefix), (tmp) => tmp.cleanup());
  return {
    get dir() {
      return folder().dir;
    },
  };
}
