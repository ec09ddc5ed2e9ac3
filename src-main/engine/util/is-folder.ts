import { statSync } from 'node:fs';

/** The path names a folder; false for a file, a missing path or one that cannot be read. */
export function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
