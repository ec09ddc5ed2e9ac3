/**
 * Reading a file that another process is appending to (veRL's file logger, a dump being written
 * line by line): only `\n`-terminated lines are returned, the unterminated last fragment is held
 * back until its newline arrives, and the cursor says where to continue — so a restarted Studio
 * reads every line once. A file that shrank or whose first bytes changed was rewritten (veRL's
 * file logger truncates on every start); that is reported, never merged.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';

export interface LineCursor {
  /** Bytes consumed (always just after a newline). */
  offset: number;
  /** Lines consumed; the next line's number is `line + 1`. */
  line: number;
  /** sha256 of the first min(offset, HEAD_BYTES) bytes, to recognise a rewritten file. */
  head: string;
}

export interface FileLine {
  text: string;
  /** 1-based line number in the file. */
  line: number;
  /** Byte offset of the line's first byte. */
  offset: number;
}

export const HEAD_BYTES = 4096;
export const EMPTY_CURSOR: LineCursor = { offset: 0, line: 0, head: '' };

function headHash(fd: number, length: number): string {
  if (length === 0) return '';
  const buf = Buffer.alloc(Math.min(length, HEAD_BYTES));
  fs.readSync(fd, buf, 0, buf.length, 0);
  return crypto.createHash('sha256').update(buf).digest('hex');
}

export type ReadLinesResult =
  | { state: 'missing' }
  | { state: 'rewritten'; size: number }
  | { state: 'ok'; lines: FileLine[]; cursor: LineCursor; pendingBytes: number; size: number };

/**
 * The complete lines after `cursor`, at most `maxBytes` of them (a cursor can then be resumed).
 * `pendingBytes` counts bytes after the last newline (a line being written).
 */
export function readNewLines(file: string, cursor: LineCursor, maxBytes = 8 << 20): ReadLinesResult {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing' };
    throw error;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size < cursor.offset) return { state: 'rewritten', size };
    if (cursor.offset > 0 && headHash(fd, Math.min(cursor.offset, HEAD_BYTES)) !== cursor.head) return { state: 'rewritten', size };
    const want = Math.min(size - cursor.offset, maxBytes);
    const buf = Buffer.alloc(want);
    let got = 0;
    while (got < want) {
      const n = fs.readSync(fd, buf, got, want - got, cursor.offset + got);
      if (n === 0) break;
      got += n;
    }
    const lines: FileLine[] = [];
    let start = 0;
    let line = cursor.line;
    for (let i = 0; i < got; i++) {
      if (buf[i] !== 10) continue;
      line++;
      lines.push({ text: buf.toString('utf8', start, i), line, offset: cursor.offset + start });
      start = i + 1;
    }
    if (lines.length === 0 && got === maxBytes && got > 0) {
      // One line longer than the whole budget: hand it over whole rather than stall forever.
      const rest = size - cursor.offset;
      throw new Error(`${file}: a line at byte ${cursor.offset} is longer than ${maxBytes} bytes (${rest} bytes without a newline)`);
    }
    const offset = cursor.offset + start;
    const head = offset === cursor.offset ? cursor.head : cursor.offset >= HEAD_BYTES ? cursor.head : headHash(fd, Math.min(offset, HEAD_BYTES));
    return { state: 'ok', lines, cursor: { offset, line, head }, pendingBytes: size - offset, size };
  } finally {
    fs.closeSync(fd);
  }
}
