/**
 * The StudioApi's error: thrown by the API, the runner and the CLI, and sent across IPC and HTTP
 * as its shape (contract.ts, StudioErrorShape). Here, below all of them, so that the runner
 * throws it without importing the API above it (issue 37).
 */
import type { ConfigIssue, StudioErrorShape } from './contract';

/** An error meant for the caller of the StudioApi: its message is safe and useful to show. */
export class StudioError extends Error {
  constructor(
    readonly code: StudioErrorShape['code'],
    message: string,
    readonly issues?: ConfigIssue[],
  ) {
    super(message);
    this.name = 'StudioError';
  }

  toShape(): StudioErrorShape {
    return { code: this.code, message: this.message, ...(this.issues ? { issues: this.issues } : {}) };
  }
}

/** Anything thrown inside a handler, as the shape that crosses IPC/HTTP. Internal details stay in main's log. */
export function toErrorShape(error: unknown): StudioErrorShape {
  if (error instanceof StudioError) return error.toShape();
  return { code: 'internal', message: error instanceof Error ? error.message : String(error) };
}
