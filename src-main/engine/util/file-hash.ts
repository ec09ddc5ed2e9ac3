import { createHash } from 'node:crypto';
import fs from 'node:fs';

/**
 * sha256 of a file, read in 4 MiB pieces: model weights reach gigabytes, and Node's Buffer stops
 * at 4 GiB (issue #13), so a file is never read whole.
 */
export function fileSha256(file: string): string {
  const hash = createHash('sha256');
  const piece = Buffer.allocUnsafe(1 << 22);
  const fd = fs.openSync(file, 'r');
  try {
    for (;;) {
      const n = fs.readSync(fd, piece, 0, piece.length, null);
      if (n <= 0) break;
      hash.update(piece.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return hash.digest('hex');
}
