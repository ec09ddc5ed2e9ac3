/**
 * Where the StudioApi may write (issue #36). A relative path is under the per-user exports folder
 * (issue 18). Over the HTTP API, which anyone holding the server's token can call, a path must
 * also stay inside the Studio's own folders: its data folder (exports/ is in it) and the folder
 * of the database it serves (where runs/ keeps checkpoints). `../` out of them, an absolute path
 * elsewhere, or a symbolic link inside them pointing out are refused, naming the field and the
 * folders that are allowed. The desktop app's save dialog and the CLI write where their user
 * says: that is the person at the machine choosing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultDataDir, exportsDir } from '../engine/paths';
import { StudioError } from '#shared/errors';

/** `p` with every existing part resolved through symbolic links (the missing tail kept as written). */
function realPathOf(p: string): string {
  const missing: string[] = [];
  let at = path.resolve(p);
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...missing.reverse());
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return path.resolve(p);
      missing.push(path.basename(at));
      at = parent;
    }
  }
}

function inside(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The folders an HTTP caller may write in: the data folder and the served database's folder. */
export function writableRoots(databasePath: string): string[] {
  return [...new Set([defaultDataDir(), path.dirname(path.resolve(databasePath))])];
}

/**
 * The path to write for `given` (relative: under the exports folder). With `roots` (the HTTP API),
 * refused unless it stays inside one of them, links resolved.
 */
export function confinedOutput(given: string, field: string, roots: readonly string[] | null): string {
  const out = path.isAbsolute(given) ? given : path.join(exportsDir(), given);
  if (roots === null) return out;
  const real = realPathOf(out);
  if (roots.some((root) => inside(path.resolve(out), path.resolve(root)) && inside(real, realPathOf(root)))) return out;
  const message = `${given} is outside the Studio's folders (${roots.join(', ')}): over the HTTP API exports are written only inside them; give a name relative to the exports folder ${exportsDir()} (e.g. run-3.parquet), or export from the desktop app or with marsrl export`;
  throw new StudioError('invalid_request', `${field}: ${message}`, [{ path: field, message }]);
}
