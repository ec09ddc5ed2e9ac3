/**
 * TFRecord framing, as TensorBoard's summary/writer/record_writer.py writes it (little-endian):
 *
 *   uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
 *
 * and as its event_file_loader.py reads it: a record cut short at the end of a file that is
 * still being written is not an error, it is read again once the writer has flushed the rest
 * (the loader retries from the record's start). Reading is streamed through one window of the
 * file, so a large event file is never held in memory.
 */
import fs from 'node:fs';
import { maskedCrc32c } from './crc32c';

const HEADER_BYTES = 12;
const FOOTER_BYTES = 4;
const WINDOW_BYTES = 1 << 20;

/** A bad record: the message names the file and the byte offset where the record starts. */
export class TFRecordError extends Error {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`${file}: ${reason} (record at byte ${offset})`);
    this.name = 'TFRecordError';
  }
}

export type RecordItem =
  /** `next` is the offset just past this record: where a reader resumes after it. */
  | { kind: 'record'; offset: number; next: number; data: Buffer }
  /** A record that cannot be used; `fatal` when nothing after it in the file can be framed. */
  | { kind: 'issue'; error: TFRecordError; fatal: boolean }
  /** The end of this read: resume at `resumeAt`; `pending` when an incomplete record waits there. */
  | { kind: 'end'; resumeAt: number; pending: boolean };

export interface RecordReadOptions {
  /**
   * True when no more bytes will be written (TensorBoard's directory watcher treats a file as
   * finished once a later file exists): an incomplete last record is then an issue, not pending.
   */
  finished: boolean;
  /** Bytes read from disk at a time (tests use small windows to cross their edges). */
  windowBytes?: number;
}

/** Reads the file through a window; a range past the window re-reads from that range's start. */
class FileWindow {
  private buffer = Buffer.alloc(0);
  private at = 0;

  constructor(
    private readonly fd: number,
    private readonly windowBytes: number,
  ) {}

  bytes(offset: number, length: number): Buffer | null {
    if (offset < this.at || offset + length > this.at + this.buffer.length) {
      const buffer = Buffer.alloc(Math.max(length, this.windowBytes));
      const bytesRead = fs.readSync(this.fd, buffer, 0, buffer.length, offset);
      this.buffer = buffer.subarray(0, bytesRead);
      this.at = offset;
    }
    const start = offset - this.at;
    return start + length <= this.buffer.length ? this.buffer.subarray(start, start + length) : null;
  }
}

/**
 * The records of `file` from byte `start`, up to the size the file has when the read begins.
 * A data CRC mismatch skips that record (its length was sound); a length whose CRC fails stops
 * the file, since nothing after it can be framed. Reads block one window (1 MiB) at a time: the
 * follower polls synchronously; the importer uses the async form.
 */
export function* readRecordsSync(file: string, start: number, options: RecordReadOptions): Generator<RecordItem> {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const window = new FileWindow(fd, options.windowBytes ?? WINDOW_BYTES);
    if (start > size) {
      // Event files only grow; a shorter one was rewritten. Said once: reading goes on from its new end.
      yield { kind: 'issue', error: new TFRecordError(file, start, `the file is now ${size} bytes, shorter than where the last read stopped: it was rewritten, not appended to; only records added after its current end will be read`), fatal: true };
      yield { kind: 'end', resumeAt: size, pending: false };
      return;
    }
    let pos = start;
    for (;;) {
      const step = frameAt(window, file, pos, size, options.finished);
      if (step.kind === 'end') {
        yield step;
        return;
      }
      if (step.kind === 'issue' && step.fatal) {
        yield step;
        yield { kind: 'end', resumeAt: size, pending: false };
        return;
      }
      yield step;
      pos = step.next;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** readRecordsSync for async readers (the importer), letting other work run between windows' worth of records. */
export async function* readRecords(file: string, start: number, options: RecordReadOptions): AsyncGenerator<RecordItem> {
  let n = 0;
  for (const item of readRecordsSync(file, start, options)) {
    yield item;
    if (++n % 1000 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

type Framed = Extract<RecordItem, { kind: 'record' | 'end' }> | (Extract<RecordItem, { kind: 'issue' }> & { next: number });

/** What is at `pos`: a record, a bad one, or the end of what can be read now. */
function frameAt(window: FileWindow, file: string, pos: number, size: number, finished: boolean): Framed {
  if (pos >= size) return { kind: 'end', resumeAt: pos, pending: false };
  const incomplete = (reason: string): Framed =>
    finished ? { kind: 'issue', error: new TFRecordError(file, pos, reason), fatal: true, next: size } : { kind: 'end', resumeAt: pos, pending: true };
  const header = size - pos >= HEADER_BYTES ? window.bytes(pos, HEADER_BYTES) : null;
  if (header === null) return incomplete(`truncated record: ${size - pos} bytes left, fewer than the ${HEADER_BYTES}-byte header`);
  if (maskedCrc32c(header, 0, 8) !== header.readUInt32LE(8)) {
    return { kind: 'issue', error: new TFRecordError(file, pos, 'corrupted record length (length CRC mismatch); the rest of the file cannot be read'), fatal: true, next: size };
  }
  const length = Number(header.readBigUInt64LE(0));
  const next = pos + HEADER_BYTES + length + FOOTER_BYTES;
  if (next > size) return incomplete(`truncated record: its header says ${length} data bytes but the file ends ${size - pos - HEADER_BYTES} bytes after it`);
  const body = window.bytes(pos + HEADER_BYTES, length + FOOTER_BYTES);
  if (body === null) return incomplete('truncated record: the file shrank while it was read');
  if (maskedCrc32c(body, 0, length) !== body.readUInt32LE(length)) {
    return { kind: 'issue', error: new TFRecordError(file, pos, `data CRC mismatch in a record of ${length} bytes; record skipped`), fatal: false, next };
  }
  return { kind: 'record', offset: pos, next, data: body.subarray(0, length) };
}

/** One record's bytes, framed as record_writer.py frames them. */
export function frameRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(HEADER_BYTES + data.length + FOOTER_BYTES);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out, 0, 8), 8);
  out.set(data, HEADER_BYTES);
  out.writeUInt32LE(maskedCrc32c(data), HEADER_BYTES + data.length);
  return out;
}
