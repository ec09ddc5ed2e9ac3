/// <reference types="vite/client" />
import type { StudioBridge } from '#shared/contract';

declare global {
  interface Window {
    /**
     * Set by the Electron preload. Absent when the renderer is served by `marsrl serve` to a
     * plain browser; src/api/client.ts decides what to use then.
     */
    studio?: StudioBridge;
  }
}

export {};
