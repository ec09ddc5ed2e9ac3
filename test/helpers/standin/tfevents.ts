/**
 * A minimal TensorBoard event-file writer for the stand-in engine (issue 38), so a DrMAS stand-in
 * run leaves the files DrMAS's `_TensorboardAdapter` leaves (torch SummaryWriter.add_scalar per key
 * per step). TFRecord framing: u64 LE length, u32 LE masked CRC-32C of the length, data, u32 LE
 * masked CRC-32C of the data; masked = ((crc >>> 15) | (crc << 17)) + 0xa282ead8. Event proto:
 * wall_time (1, double), step (2, int64), file_version (3, string), summary (5) { value (1) { tag
 * (1, string), simple_value (2, float) } } (tensorboard/compat/proto/event.proto, summary.proto).
 * Reading them is issue 39's reader's job; the follower falls back to the console without it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32c(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function masked(buf: Uint8Array): number {
  const c = crc32c(buf);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}

function field(num: number, wire: number): number[] {
  return varint((num << 3) | wire);
}

function lenField(num: number, bytes: Uint8Array | number[]): number[] {
  return [...field(num, 2), ...varint(bytes.length), ...bytes];
}

function event(wallTime: number, step: number, body: number[]): Uint8Array {
  const wt = Buffer.alloc(8);
  wt.writeDoubleLE(wallTime);
  return Uint8Array.from([...field(1, 1), ...wt, ...field(2, 0), ...varint(step), ...body]);
}

function record(data: Uint8Array): Buffer {
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(data.length));
  const a = Buffer.alloc(4);
  a.writeUInt32LE(masked(len));
  const b = Buffer.alloc(4);
  b.writeUInt32LE(masked(data));
  return Buffer.concat([len, a, Buffer.from(data), b]);
}

export class EventWriter {
  readonly file: string;
  constructor(dir: string) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, `events.out.tfevents.${String(Math.floor(Date.now() / 1000)).padStart(10, '0')}.${os.hostname()}.${process.pid}.0`);
    fs.writeFileSync(this.file, record(event(Date.now() / 1000, 0, lenField(3, Buffer.from('brain.Event:2')))));
  }

  addScalar(tag: string, value: number, step: number): void {
    const f = Buffer.alloc(4);
    f.writeFloatLE(value);
    const val = [...lenField(1, Buffer.from(tag, 'utf8')), ...field(2, 5), ...f];
    const summary = lenField(1, val);
    fs.appendFileSync(this.file, record(event(Date.now() / 1000, step, lenField(5, summary))));
  }
}
