/**
 * How StudioApi calls travel over Electron IPC, kept free of any `electron` import so that both
 * ends (the preload and main's handler) and the tests share it.
 *
 * Main never lets an exception escape ipcMain.handle: Electron would flatten it into
 * "Error invoking remote method 'studio:call': Error: …" and drop its code. It answers with a
 * reply envelope instead, which the preload turns back into a thrown Error.
 */
import { STUDIO_METHODS, type StudioBridge, type StudioErrorShape, type StudioEvent, type StudioIpcReply, type StudioMethod } from '#shared/contract';

/** Sends one call to main; the preload binds it to ipcRenderer.invoke on the studio channel. */
export type StudioInvoke = (method: StudioMethod, args: unknown[]) => Promise<StudioIpcReply>;

/** Listens for pushed events; returns the function that stops listening. */
export type StudioSubscribe = (listener: (event: StudioEvent) => void) => () => void;

/**
 * The Error a failed call rejects with. Only `message` survives contextBridge (Electron copies
 * an Error across worlds by its message alone), so the renderer sees the message; `code` and
 * `issues` are still attached for callers in the same world, such as tests.
 */
export class StudioCallError extends Error {
  readonly code: StudioErrorShape['code'];
  readonly issues: StudioErrorShape['issues'];

  constructor(shape: StudioErrorShape) {
    super(shape.message);
    this.name = 'StudioCallError';
    this.code = shape.code;
    this.issues = shape.issues;
  }
}

export function unwrapReply(reply: StudioIpcReply): unknown {
  if (reply.ok) return reply.value;
  throw new StudioCallError(reply.error);
}

/** Opens the desktop app's folder picker in main (see PICK_FOLDER_CHANNEL). */
export type StudioPickFolder = (title: string) => Promise<string | null>;

/**
 * One forwarding function per contract method plus the event subscription (and, in the desktop
 * app, the folder picker), and nothing else.
 */
export function buildStudioBridge(invoke: StudioInvoke, subscribe: StudioSubscribe, pickFolder?: StudioPickFolder): StudioBridge {
  const bridge: Record<string, unknown> = {};
  for (const method of STUDIO_METHODS) {
    bridge[method] = async (...args: unknown[]) => unwrapReply(await invoke(method, args));
  }
  bridge.onEvent = (listener: unknown) => {
    if (typeof listener !== 'function') throw new TypeError('onEvent needs a function');
    return subscribe(listener as (event: StudioEvent) => void);
  };
  if (pickFolder) {
    bridge.pickFolder = async (title: unknown) => {
      const chosen = await pickFolder(typeof title === 'string' ? title.slice(0, 200) : 'Choose a folder');
      return typeof chosen === 'string' ? chosen : null;
    };
  }
  return Object.freeze(bridge) as unknown as StudioBridge;
}
