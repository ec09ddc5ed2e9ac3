/**
 * What a call fails with, for tests that check an error's fields (code, field, file), not only
 * its message. A call that does not fail gives undefined (the test's own expectations then fail),
 * or, for a StudioApi call, fails the test here.
 */
import { callStudio } from '../../src-main/api/dispatch';
import { toErrorShape } from '#shared/errors';
import type { StudioApi } from '#shared/contract';

export function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

export async function rejection(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** The error shape a StudioApi call is refused with, as IPC and HTTP send it. */
export async function refusal(service: StudioApi, method: unknown, args: unknown): Promise<ReturnType<typeof toErrorShape>> {
  const error = await rejection(() => callStudio(service, method, args));
  if (error === undefined) throw new Error(`${String(method)}(${JSON.stringify(args)}) was not refused`);
  return toErrorShape(error);
}
