/**
 * What the app's web contents may load. The window shows the app's own files and nothing
 * else: a navigation, redirect or request to anywhere outside them is refused, because a
 * renderer with a preload bridge must never end up displaying someone else's page.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AppLocation {
  /** Folder holding the built renderer (out/renderer); every file under it is the app's own. */
  rendererDir: string;
  /** The Vite dev server under `electron-vite dev`; absent in a built app. */
  devServerUrl?: string;
}

function parse(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

function isInside(dir: string, file: string): boolean {
  const relative = path.relative(path.resolve(dir), path.resolve(file));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** True for a page or frame of the app itself: the IPC handler and the navigation guard use it. */
export function isAppUrl(url: string, location: AppLocation): boolean {
  const parsed = parse(url);
  if (!parsed) return false;
  if (parsed.protocol === 'file:') {
    // A file URL with a host (file://server/share) is a network share, not our file.
    if (parsed.host !== '') return false;
    let file: string;
    try {
      file = fileURLToPath(parsed);
    } catch {
      return false;
    }
    return isInside(location.rendererDir, file);
  }
  if (location.devServerUrl) {
    const dev = parse(location.devServerUrl);
    return dev !== null && (parsed.protocol === 'http:' || parsed.protocol === 'ws:') && parsed.host === dev.host;
  }
  return false;
}

/**
 * Requests the session lets through: the app's files, inline data, and DevTools' own pages.
 * Everything else (http, https, ws to anywhere) is cancelled, so no remote content can load
 * even if some markup or a library asks for it.
 */
export function isAllowedRequest(url: string, location: AppLocation): boolean {
  const parsed = parse(url);
  if (!parsed) return false;
  if (parsed.protocol === 'data:' || parsed.protocol === 'blob:' || parsed.protocol === 'devtools:') return true;
  return isAppUrl(url, location);
}

/**
 * A link the renderer asked to open in a new window goes to the user's browser instead, but
 * only for https: an arbitrary scheme handed to the OS (file:, smb:, custom handlers) can run
 * programs.
 */
export function externalBrowserUrl(url: string): string | null {
  const parsed = parse(url);
  return parsed && parsed.protocol === 'https:' ? parsed.toString() : null;
}
