/**
 * The digest of an imported source (issue 39): SHA-256 over its files in a fixed order, so two
 * imports of the same bytes give the same digest and any change (a grown log, a renamed file)
 * gives another. Each file adds its path relative to the source (POSIX separators), its size and
 * then its bytes, streamed: `path NUL size NUL bytes`. The size frames the bytes, so no two
 * different sets of files can hash the same stream. A single-file source hashes that file under
 * the relative path ''.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Regular files under `root`, as sorted relative POSIX paths (symbolic links are not followed). */
export async function sourceFiles(root: string): Promise<string[]> {
  const stat = await fs.promises.lstat(root);
  if (!stat.isDirectory()) return [''];
  const out: string[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await fs.promises.readdir(dir, { withFileTypes: true })) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), rel);
      else if (entry.isFile()) out.push(rel);
    }
  };
  await walk(root, '');
  // Code-unit order, the same on every platform (no locale collation).
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export async function sourceDigest(root: string, signal?: AbortSignal): Promise<string> {
  const hash = crypto.createHash('sha256');
  for (const rel of await sourceFiles(root)) {
    signal?.throwIfAborted();
    const file = rel === '' ? root : path.join(root, ...rel.split('/'));
    const size = (await fs.promises.stat(file)).size;
    hash.update(`${rel}\0${size}\0`);
    let read = 0;
    // Only the bytes that were there when the file was measured: a log still growing hashes as measured.
    if (size > 0) {
      for await (const chunk of fs.createReadStream(file, { start: 0, end: size - 1 })) {
        hash.update(chunk as Buffer);
        read += (chunk as Buffer).length;
      }
    }
    if (read !== size) throw new Error(`${file} shrank while it was hashed (${read} of ${size} bytes)`);
  }
  return hash.digest('hex');
}
