/**
 * What a test file's fixture (a server, a browser session) starts in its own beforeAll: read
 * before then, a value names what is missing instead of passing on `undefined`.
 */
export function startedBy(owner: string): <T>(value: T | undefined, what: string) => T {
  return (value, what) => {
    if (value === undefined) throw new Error(`${owner}'s ${what} is not started yet (use it inside a test or a later hook)`);
    return value;
  };
}
