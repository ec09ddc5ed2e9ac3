/**
 * The one way the renderer reaches the engine. Components and stores call `studioClient()`
 * and never touch `window.studio` directly, so the transport can change underneath them:
 * Electron's preload bridge when it is there, otherwise (the page served by `marsrl serve`) an
 * HTTP + WebSocket client against the page's own origin.
 */
import type { StudioBridge } from '#shared/contract';
import { createHttpStudioClient, type ConnectionState, type HttpStudioClient } from './http';

export class StudioUnavailableError extends Error {
  constructor() {
    super('No StudioApi: this page was opened outside MarsRL Studio.');
    this.name = 'StudioUnavailableError';
  }
}

let provided: StudioBridge | null = null;
let http: HttpStudioClient | null = null;

/** Installs a client explicitly (tests, harnesses). */
export function provideStudioClient(client: StudioBridge | null): void {
  provided = client;
}

export function studioClient(): StudioBridge {
  if (provided) return provided;
  if (window.studio) return window.studio;
  if (window.location.protocol === 'http:' || window.location.protocol === 'https:') {
    http ??= createHttpStudioClient();
    return http;
  }
  throw new StudioUnavailableError();
}

/**
 * Follows the event socket when there is one (the HTTP transport). Electron's IPC cannot drop,
 * so there the listener is told once that events are live.
 */
export function onConnectionChange(listener: (state: ConnectionState, reconnected: boolean) => void): () => void {
  const client = studioClient();
  if ('onConnection' in client && typeof (client as HttpStudioClient).onConnection === 'function') {
    return (client as HttpStudioClient).onConnection(listener);
  }
  listener('open', false);
  return () => {};
}

/** A message fit to show the user, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
