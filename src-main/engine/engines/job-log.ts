/**
 * The Studio's copy of an attempt's Ray job log (issue 38): engine-run.ts appends what the
 * follower reads of it; the run page (the API's getEngineJobs) and `marsrl logs` show its end.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Where an attempt's copy of its job log lives, on this machine. */
export function jobLogFile(localRunDir: string, attempt: number): string {
  return path.join(localRunDir, `attempt-${attempt}`, 'job.log');
}

/** The end of a log is read from at most this many bytes, so a huge job log never fills an answer. */
const TAIL_BYTES = 256 * 1024;

/**
 * The last `lines` lines of a log (all of it for 0), and its size in bytes when read (where a
 * follower of the file goes on from); an empty text when the file is not there yet.
 */
export function readLogTail(file: string, lines: number): { text: string; size: number } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return { text: '', size: 0 };
  }
  try {
    const size = fs.fstatSync(fd).size;
    const start = lines === 0 ? 0 : Math.max(0, size - TAIL_BYTES);
    const buffer = Buffer.alloc(size - start);
    fs.readSync(fd, buffer, 0, buffer.length, start);
    const text = buffer.toString('utf8').replace(/\n$/, '');
    return { text: lines === 0 ? text : text.split('\n').slice(-lines).join('\n'), size };
  } finally {
    fs.closeSync(fd);
  }
}
