/**
 * The one way the renderer reaches the engine. Components and stores call `studioClient()`
 * and never touch `window.studio` directly, so the transport can change underneath them.
 */
import type { StudioBridge } from '../../../src-preload/api';

export class StudioUnavailableError extends Error {
  constructor() {
    super('No StudioApi: this page was opened outside MarsRL Studio.');
    this.name = 'StudioUnavailableError';
  }
}

let provided: StudioBridge | null = null;

/** Installs a client explicitly (tests, and the HTTP client once it exists). */
export function provideStudioClient(client: StudioBridge | null): void {
  provided = client;
}

export function studioClient(): StudioBridge {
  if (provided) return provided;
  if (window.studio) return window.studio;
  // Seam for `marsrl serve` (a later issue): when the renderer is served over HTTP there is no
  // preload, and an HTTP + WebSocket client implementing StudioBridge against location.origin
  // (calls over HTTP, onEvent over the WebSocket) belongs here, built from STUDIO_METHODS like
  // the preload bridge.
  throw new StudioUnavailableError();
}

/** A message fit to show the user, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
