import path from 'node:path';
import { beforeAll } from 'vitest';
import { openStore, type Store } from '../../src-main/engine/store';
import { perFile } from './per-file';
import { tempFolder } from './tmp';

export interface TempStore {
  readonly store: Store;
  readonly databasePath: string;
  /** The temp folder the database is in. */
  readonly dir: string;
}

/**
 * A database `file` in a fresh temp folder for a test file: opened before the file's tests,
 * closed and removed after them. Read it inside tests or later hooks.
 */
export function storeInTemp(file: string, prefix?: string): TempStore {
  const folder = tempFolder(prefix);
  const store = perFile('storeInTemp', () => openStore(path.join(folder.dir, file)), (opened) => opened.close());
  return {
    get store() {
      return store();
    },
    get databasePath() {
      return path.join(folder.dir, file);
    },
    get dir() {
      return folder.dir;
    },
  };
}

/** The database of a test file whose runs go through worker processes. */
export function runsDatabase(): TempStore {
  return storeInTemp('runs.db');
}

/**
 * A database `file` in a fresh temp folder, seeded and closed before the file's tests for the
 * `marsrl` child processes they start (each opens it itself); the folder is removed after them.
 */
export function seededDatabase(file: string, seed: (store: Store) => void, prefix?: string): { readonly path: string; readonly dir: string } {
  const folder = tempFolder(prefix);
  beforeAll(() => {
    const store = openStore(path.join(folder.dir, file));
    try {
      seed(store);
    } finally {
      store.close();
    }
  });
  return {
    get path() {
      return path.join(folder.dir, file);
    },
    get dir() {
      return folder.dir;
    },
  };
}
