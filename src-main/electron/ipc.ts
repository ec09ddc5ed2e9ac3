/**
 * The IPC end of the StudioApi: one handler on one channel. It is deliberately thin; which
 * methods exist, and what their arguments must look like, is decided by the shared dispatcher
 * (src-main/api/dispatch.ts) so that IPC and `marsrl serve` can never drift apart.
 */
import type { IpcMainInvokeEvent } from 'electron';
import type { StudioIpcReply } from '#shared/contract';
import { toErrorShape } from '#shared/errors';
import { isAppUrl, type AppLocation } from './navigation';

/** Calls one StudioApi method with the renderer's unvalidated method name and arguments. */
export type StudioCall = (method: unknown, args: unknown) => Promise<unknown>;

/**
 * Only the app's own top-level page may call: a frame that navigated elsewhere, or a subframe
 * showing anything else, is refused even though it shares the preload.
 */
export function isTrustedSender(event: Pick<IpcMainInvokeEvent, 'senderFrame'>, location: AppLocation): boolean {
  const frame = event.senderFrame;
  return frame !== null && frame.parent === null && isAppUrl(frame.url, location);
}

/**
 * The body of the `ipcMain.handle` listener. This layer decides only who may call; what may be
 * called, with which arguments, is the dispatcher's check, shared with the HTTP bridge.
 */
export async function handleStudioCall(
  event: Pick<IpcMainInvokeEvent, 'senderFrame'>,
  method: unknown,
  args: unknown,
  location: AppLocation,
  call: StudioCall,
): Promise<StudioIpcReply> {
  if (!isTrustedSender(event, location)) {
    return { ok: false, error: { code: 'invalid_request', message: 'Call refused: the sender is not the app window.' } };
  }
  try {
    return { ok: true, value: await call(method, args) };
  } catch (error) {
    const shape = toErrorShape(error);
    // The renderer shows the message; the stack of an unexpected failure belongs in main's log.
    if (shape.code === 'internal') console.error(`[studio] ${String(method)} failed:`, error);
    return { ok: false, error: shape };
  }
}
