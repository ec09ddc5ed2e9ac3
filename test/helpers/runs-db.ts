import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openStore, type Store } from '../../src-main/engine/store';
import { tempDir } from './tmp';

/**
 * A database in a fresh temp folder for a test file whose runs go through worker processes:
 * opened before the file's tests, closed and removed after them. Read `store` and `databasePath`
 * inside tests or later hooks.
 */
export function runsDatabase(): { readonly store: Store; readonly databasePath: string } {
  let tmp: ReturnType<typeof tempDir> | undefined;
  let store: Store | undefined;
  beforeAll(() => {
    tmp = tempDir();
    store = openStore(path.join(tmp.dir, 'runs.db'));
  });
  afterAll(() => {
    store?.close();
    tmp?.cleanup();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('runsDatabase: use it inside a test or a later hook');
    return value;
  };
  return {
    get store() {
      return started(store);
    },
    get databasePath() {
      return path.join(started(tmp).dir, 'runs.db');
    },
  };
}
