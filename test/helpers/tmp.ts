import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temporary folder, removed by the returned cleanup. */
export function tempDir(prefix = 'marsrl-test-'): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
