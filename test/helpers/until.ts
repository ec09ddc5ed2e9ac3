/** Waiting in a test for something another process does. */

/** Resolves once `condition()` holds, reading it every 100 ms; throws after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
