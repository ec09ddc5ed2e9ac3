/**
 * Writes one event file as TensorBoard's own writers do (summary/writer/event_file_writer.py):
 * the file opens with an Event holding only `file_version: "brain.Event:2"`, then one Event per
 * scalar, each framed as record_writer.py frames it. Frames are buffered and written in blocks.
 */
import fs from 'node:fs';
import os from 'node:os';
import { encodeFileVersionEvent, encodeScalarEvent } from './events';
import { frameRecord } from './tfrecord';

const FLUSH_BYTES = 256 * 1024;

/**
 * The name torch's SummaryWriter (torch/utils/tensorboard/writer.py) and TensorFlow give an event
 * file: `events.out.tfevents.{10-digit seconds}.{hostname}.{pid}.{n}`. TensorBoard reads a run's
 * files in name order, so the time prefix orders them.
 */
export function eventFileName(seconds: number, n = 0, host = os.hostname(), pid = process.pid): string {
  return `events.out.tfevents.${String(Math.floor(seconds)).padStart(10, '0')}.${host}.${pid}.${n}`;
}

export class EventFileWriter {
  private readonly fd: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly tagged = new Set<string>();
  bytes = 0;
  scalars = 0;

  /** Creates `file` (it must not exist) and writes the file_version event stamped `wallTime` (seconds). */
  constructor(
    readonly file: string,
    wallTime: number,
  ) {
    this.fd = fs.openSync(file, 'wx');
    this.push(encodeFileVersionEvent(wallTime));
  }

  /** One scalar; the tag's first value carries the `scalars` plugin metadata. */
  scalar(tag: string, step: number, value: number, wallTime: number): void {
    const first = !this.tagged.has(tag);
    if (first) this.tagged.add(tag);
    this.push(encodeScalarEvent(wallTime, step, tag, value, first));
    this.scalars++;
  }

  flush(): void {
    if (this.pendingBytes === 0) return;
    fs.writeSync(this.fd, Buffer.concat(this.pending, this.pendingBytes));
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Flushes, syncs and closes; the file is complete after this. */
  close(): void {
    try {
      this.flush();
      fs.fsyncSync(this.fd);
    } finally {
      fs.closeSync(this.fd);
    }
  }

  /** Closes without flushing (the caller removes the file). */
  abandon(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
  }

  private push(event: Uint8Array): void {
    const frame = frameRecord(event);
    this.pending.push(frame);
    this.pendingBytes += frame.length;
    this.bytes += frame.length;
    if (this.pendingBytes >= FLUSH_BYTES) this.flush();
  }
}
