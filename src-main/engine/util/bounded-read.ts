/**
 * Reading a file the user (or a config, a model folder, a request) named, safely (issue #36):
 * it must be a regular file, of a size checked before a byte is read.
 *
 * Why open with O_NONBLOCK and check with fstat instead of stat-then-open: `open(2)` of a FIFO for
 * reading blocks until a writer appears, and the synchronous `fs.openSync` then freezes the whole
 * event loop (a FIFO named as `task.math_path` froze `marsrl serve` for every later request).
 * O_NONBLOCK makes that open return at once; fstat on the descriptor we hold then says what it
 * really is (no race between the check and the read), and anything but a regular file (FIFO,
 * socket, character or block device such as /dev/zero, folder) is refused by name. Symbolic links
 * are followed: a link to a dataset is a normal way to point at it, and the file it reaches is
 * what gets checked. Regular files are unaffected by O_NONBLOCK.
 */
import fs from 'node:fs';
import { formatBytes } from '#shared/format';

/** Sizes that give a clear refusal instead of V8's "Cannot create a string longer than …". */
export const LIMITS = {
  /** JSON and YAML settings files (config.json, tokenizer_config.json, run configs, manifests). */
  settings: 64 * 2 ** 20,
  /** tokenizer.json (Qwen's is 11 MB, Gemma's 33 MB). */
  tokenizer: 512 * 2 ** 20,
  /** A chat template (real ones are a few kB). */
  template: 2 ** 20,
  /** Text read whole into one string: V8's longest string is 2^29 − 24 UTF-16 units. */
  text: 2 ** 29 - 24,
} as const;

const FILE_TYPE_NAMES: Array<[(s: fs.Stats) => boolean, string]> = [
  [(s) => s.isDirectory(), 'a folder'],
  [(s) => s.isFIFO(), 'a named pipe (FIFO)'],
  [(s) => s.isSocket(), 'a socket'],
  [(s) => s.isCharacterDevice(), 'a character device'],
  [(s) => s.isBlockDevice(), 'a block device'],
];

/** What kind of file `stat` describes, in words ("a named pipe (FIFO)"), or null for a regular file. */
export function notRegularFile(stat: fs.Stats): string | null {
  if (stat.isFile()) return null;
  return FILE_TYPE_NAMES.find(([test]) => test(stat))?.[1] ?? 'not a regular file';
}

/** A file refused before it was read: its path and why, in one sentence. */
export class FileRefusedError extends Error {
  constructor(
    readonly file: string,
    readonly code: 'ENOENT' | 'EACCES' | 'NOT_REGULAR' | 'TOO_LARGE' | 'OTHER',
    message: string,
  ) {
    super(message);
    this.name = 'FileRefusedError';
  }
}

export interface OpenOptions {
  /** Largest size accepted, in bytes. */
  maxBytes: number;
  /** What the file is for, in the messages ("task file", "chat template"). */
  what?: string;
}

/**
 * Open `file` for reading if it is a regular file of at most `maxBytes`; the caller closes the
 * descriptor. Refusals name the file, what it is, and the limit.
 */
export function openRegularFile(file: string, { maxBytes, what = 'file' }: OpenOptions): { fd: number; size: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new FileRefusedError(file, 'ENOENT', `${file}: no such file`);
    if (code === 'EACCES' || code === 'EPERM') throw new FileRefusedError(file, 'EACCES', `${file}: not readable (permission denied)`);
    if (code === 'ENXIO') throw new FileRefusedError(file, 'NOT_REGULAR', `${file}: is a socket or a device, not a regular file; the ${what} must be a regular file`);
    throw new FileRefusedError(file, 'OTHER', `${file}: cannot open (${(error as Error).message})`);
  }
  try {
    const stat = fs.fstatSync(fd);
    const kind = notRegularFile(stat);
    if (kind === 'a folder') throw new FileRefusedError(file, 'NOT_REGULAR', `${file}: is a folder, not a file; the ${what} must be a regular file`);
    if (kind) throw new FileRefusedError(file, 'NOT_REGULAR', `${file}: is ${kind}, not a regular file; the ${what} must be a regular file (reading it could block or never end)`);
    if (stat.size > maxBytes) throw new FileRefusedError(file, 'TOO_LARGE', `${file}: is ${formatBytes(stat.size)}, over the ${formatBytes(maxBytes)} a ${what} may have`);
    return { fd, size: stat.size };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** The whole of a regular file of at most `maxBytes` (see `openRegularFile`). */
export function readRegularFile(file: string, options: OpenOptions): Buffer {
  const { fd, size } = openRegularFile(file, options);
  try {
    const buffer = Buffer.allocUnsafe(size);
    let done = 0;
    while (done < size) {
      const n = fs.readSync(fd, buffer, done, size - done, done);
      if (n === 0) break;
      done += n;
    }
    // A file that shrank while read is read as it is now.
    return done === size ? buffer : buffer.subarray(0, done);
  } finally {
    fs.closeSync(fd);
  }
}

/** A regular file's text (UTF-8), at most `maxBytes` (by default the longest string V8 makes). */
export function readTextFile(file: string, options: Partial<OpenOptions> = {}): string {
  return readRegularFile(file, { maxBytes: Math.min(options.maxBytes ?? LIMITS.text, LIMITS.text), what: options.what }).toString('utf8');
}
