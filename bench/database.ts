/**
 * `--db PATH` and `--keep`, which the store-backed benches (store, pipeline, ui, export) take
 * with one meaning: `--db` names a database the person keeps (written there, never removed);
 * without it the bench writes a fresh one in a temporary folder, removed at the end unless
 * `--keep` asks to look at it afterwards.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const DATABASE_OPTIONS = {
  db: { type: 'string' },
  keep: { type: 'boolean', default: false },
} as const;

export interface BenchDatabase {
  path: string;
  /** Removes the temporary folder unless the database is to be kept; returns the kept path, or null. */
  release(): string | null;
}

export function benchDatabase(values: { db?: string; keep: boolean }, bench: string): BenchDatabase {
  if (values.db) {
    const named = path.resolve(values.db);
    return { path: named, release: () => named };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `marsrl-bench-${bench}-`));
  const databasePath = path.join(dir, 'bench.db');
  return {
    path: databasePath,
    release: () => {
      if (values.keep) return databasePath;
      fs.rmSync(dir, { recursive: true, force: true });
      return null;
    },
  };
}
