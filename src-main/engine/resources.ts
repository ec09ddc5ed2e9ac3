/**
 * Where the shipped resources (presets, starting checkpoints) are. The same code runs from
 * source (tsx), from the electron-vite bundle in out/main and from an installed package, so
 * the folder is found by walking up from this module rather than by a fixed relative path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | null = null;

export function resourcesDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.MARSRL_RESOURCES) return path.resolve(env.MARSRL_RESOURCES);
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const candidate = path.join(dir, 'resources');
    if (fs.existsSync(path.join(candidate, 'presets'))) {
      cached = candidate;
      return candidate;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error('Cannot find the resources folder (resources/presets). Set MARSRL_RESOURCES to its path.');
}

/** The project's root folder (the one holding package.json and resources/). */
export function projectRoot(): string {
  return path.dirname(resourcesDir());
}
