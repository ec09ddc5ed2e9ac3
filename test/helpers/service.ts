import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import type { Store } from '../../src-main/engine/store';
import type { StudioApi } from '#shared/contract';
import { perFile } from './per-file';
import { storeInTemp } from './runs-db';

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
  const db = storeInTemp('api.db', prefix);
  const service = perFile(
    'serviceInTemp',
    (): StudioApi => createStudioService({ store: db.store, databasePath: db.databasePath, transport, ...(transport === 'http' ? { hub: new EventHub() } : {}) }),
    () => {},
  );
  return {
    get store() {
      return db.store;
    },
    get service() {
      return service();
    },
    get dir() {
      return db.dir;
    },
    get databasePath() {
      return db.databasePath;
    },
  };
}
