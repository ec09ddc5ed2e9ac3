import { afterAll, beforeAll } from 'vitest';

/**
 * Something a test file shares among its tests (a database, a service, a fixture): opened before
 * the file's tests, closed after the file's own afterAll hooks (vitest runs them in reverse),
 * which may still use it. The returned getter works inside tests and later hooks.
 */
export function perFile<T>(name: string, open: () => T | Promise<T>, close: (value: T) => void, timeoutMs?: number): () => T {
  let value: T | undefined;
  beforeAll(async () => {
    value = await open();
  }, timeoutMs);
  afterAll(() => {
    if (value !== undefined) close(value);
  });
  return () => {
    if (value === undefined) throw new Error(`${name}: use it inside a test or a later hook`);
    return value;
  };
}
