/**
 * The preload: exposes the typed StudioBridge (the StudioApi plus pushed events) on
 * `window.studio`, and nothing more. It runs sandboxed, so it can only use the few Electron
 * modules the sandbox provides; everything it needs from this repository is bundled into one
 * CommonJS file by electron-vite.
 */
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { PICK_FOLDER_CHANNEL, STUDIO_EVENT_CHANNEL, STUDIO_IPC_CHANNEL, type StudioEvent, type StudioIpcReply } from '#shared/contract';
import { buildStudioBridge } from './bridge';

const studio = buildStudioBridge(
  (method, args) => ipcRenderer.invoke(STUDIO_IPC_CHANNEL, method, args) as Promise<StudioIpcReply>,
  (listener) => {
    // Only the payload crosses over: the IpcRendererEvent would hand the page `sender`, an
    // object able to send on any channel.
    const forward = (_event: IpcRendererEvent, payload: StudioEvent): void => listener(payload);
    ipcRenderer.on(STUDIO_EVENT_CHANNEL, forward);
    return () => {
      ipcRenderer.removeListener(STUDIO_EVENT_CHANNEL, forward);
    };
  },
  (title) => ipcRenderer.invoke(PICK_FOLDER_CHANNEL, title) as Promise<string | null>,
);

contextBridge.exposeInMainWorld('studio', studio);
