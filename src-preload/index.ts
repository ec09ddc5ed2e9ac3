/**
 * The preload: exposes the typed StudioApi on `window.studio` and nothing more. It runs
 * sandboxed, so it can only use the few Electron modules the sandbox provides; everything it
 * needs from this repository is bundled into one CommonJS file by electron-vite.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { STUDIO_IPC_CHANNEL } from './api';
import { buildStudioBridge, type StudioIpcReply } from './bridge';

const studio = buildStudioBridge(
  (method, args) => ipcRenderer.invoke(STUDIO_IPC_CHANNEL, method, args) as Promise<StudioIpcReply>,
);

contextBridge.exposeInMainWorld('studio', studio);
