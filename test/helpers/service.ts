import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { openStore, type Store } from '../../src-main/engine/store';
import type { StudioApi } from '../../src-preload/api';
import { tempDir } from './tmp';

export interface ServiceInTemp {
  readonly store: Store;
  readonly service: StudioApi;
  /** The temp folder; the database is `api.db` in it. */
  readonly dir: string;
  readonly databasePath: string;
}

/**
 * The StudioApi service over a database in a fresh temp folder for a test file, reached over
 * `transport` ('http' as `marsrl serve` serves it, with its event hub; 'direct' as the CLI calls
 * it): opened before the file's tests, closed and removed after the file's own afterAll hooks
 * (vitest runs them in reverse), which may still use it. Read it inside tests or later hooks.
 */
export function serviceInTemp(transport: 'http' | 'direct', prefix?: string): ServiceInTemp {
  let tmp: ReturnType<typeof tempDir> | undefined;
  let store: Store | undefined;
  let service: StudioApi | undefined;
  beforeAll(() => {
    tmp = tempDir(prefix);
    const databasePath = path.join(tmp.dir, 'api.db');
    store = openStore(databasePath);
    service = createStudioService({ store, databasePath, transport, ...(transport === 'http' ? { hub: new EventHub() } : {}) });
  });
  afterAll(() => {
    store?.close();
    tmp?.cleanup();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('serviceInTemp: use it inside a test or a later hook');
    return value;
  };
  return {
    get store() {
      return started(store);
    },
    get service() {
      return started(service);
    },
    get dir() {
      return started(tmp).dir;
    },
    get databasePath() {
      return path.join(started(tmp).dir, 'api.db');
    },
  };
}
