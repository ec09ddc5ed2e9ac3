/**
 * The few protobuf wire-format pieces event files need (protobuf's encoding guide: varint = 0,
 * fixed64 = 1, length-delimited = 2, fixed32 = 5). Reading skips fields it does not know, as any
 * protobuf reader must, so newer writers' fields (Event.source_metadata) do no harm.
 */
export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LENGTH = 2;
export const WIRE_FIXED32 = 5;

export class WireError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(`${message} at byte ${at} of the message`);
    this.name = 'WireError';
  }
}

/** Reads one message's bytes; every read checks it stays inside them. */
export class WireReader {
  private readonly view: DataView;
  pos: number;

  constructor(
    readonly bytes: Uint8Array,
    start = 0,
    readonly end = bytes.length,
    view?: DataView,
  ) {
    this.view = view ?? new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }

  /** A reader of the nested message at [start, end) of the same bytes. */
  sub(at: { start: number; end: number }): WireReader {
    return new WireReader(this.bytes, at.start, at.end, this.view);
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as a JS number: exact to 2^53; int64 negatives (ten bytes, two's complement) come back negative. */
  varint(): number {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new WireError('varint runs past the end', this.pos);
      const b = this.bytes[this.pos++];
      if (i < 4) lo |= (b & 0x7f) << (7 * i);
      else if (i === 4) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (7 * i - 32);
      if ((b & 0x80) === 0) return hi & 0x80000000 ? -((~hi >>> 0) * 2 ** 32 + (~lo >>> 0) + 1) : (hi >>> 0) * 2 ** 32 + (lo >>> 0);
    }
    throw new WireError('varint longer than 10 bytes', this.pos);
  }

  /** A field's key: its number and wire type. */
  tag(): { field: number; wire: number } {
    const key = this.varint();
    return { field: Math.floor(key / 8), wire: key & 7 };
  }

  double(): number {
    this.need(8);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  float(): number {
    this.need(4);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }

  /** A length-delimited field's bounds [start, end) within `bytes`; the reader moves past it. */
  delimited(): { start: number; end: number } {
    const length = this.varint();
    this.need(length);
    const start = this.pos;
    this.pos += length;
    return { start, end: this.pos };
  }

  string(): string {
    const { start, end } = this.delimited();
    if (Buffer.isBuffer(this.bytes)) return this.bytes.toString('utf8', start, end);
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + start, end - start).toString('utf8');
  }

  /** Moves past a field of a wire type this reader does not use. */
  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_FIXED64) this.advance(8);
    else if (wire === WIRE_LENGTH) this.delimited();
    else if (wire === WIRE_FIXED32) this.advance(4);
    else throw new WireError(`unknown wire type ${wire}`, this.pos);
  }

  private advance(n: number): void {
    this.need(n);
    this.pos += n;
  }

  private need(n: number): void {
    if (n < 0 || this.pos + n > this.end) throw new WireError(`field of ${n} bytes runs past the end`, this.pos);
  }
}

/** Builds one message; nested messages are encoded first and added as bytes. */
export class WireWriter {
  private buffer = Buffer.allocUnsafe(64);
  private length = 0;

  varintField(field: number, value: number): this {
    this.key(field, WIRE_VARINT);
    this.varint(value);
    return this;
  }

  doubleField(field: number, value: number): this {
    return this.fixedField(field, WIRE_FIXED64, 8, (buffer, at) => buffer.writeDoubleLE(value, at));
  }

  floatField(field: number, value: number): this {
    return this.fixedField(field, WIRE_FIXED32, 4, (buffer, at) => buffer.writeFloatLE(value, at));
  }

  /** A fixed-width field (wire type 1 or 5): its key, then `bytes` little-endian bytes. */
  private fixedField(field: number, wire: number, bytes: 4 | 8, write: (buffer: Buffer, at: number) => void): this {
    this.key(field, wire);
    this.room(bytes);
    write(this.buffer, this.length);
    this.length += bytes;
    return this;
  }

  bytesField(field: number, value: Uint8Array): this {
    this.key(field, WIRE_LENGTH);
    this.varint(value.length);
    this.room(value.length);
    this.buffer.set(value, this.length);
    this.length += value.length;
    return this;
  }

  stringField(field: number, value: string): this {
    return this.bytesField(field, Buffer.from(value, 'utf8'));
  }

  finish(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }

  private room(n: number): void {
    if (this.length + n <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + n));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  private byte(b: number): void {
    this.room(1);
    this.buffer[this.length++] = b;
  }

  private key(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** Integers to ±2^53 (steps, lengths, field keys); a negative int64 is its 64-bit two's complement (ten bytes). */
  private varint(value: number): void {
    if (!Number.isSafeInteger(value)) throw new RangeError(`cannot encode ${value} as a varint`);
    if (value >= 0 && value < 2 ** 31) {
      let n = value;
      while (n >= 0x80) {
        this.byte((n & 0x7f) | 0x80);
        n >>>= 7;
      }
      this.byte(n);
      return;
    }
    let v = value < 0 ? BigInt.asUintN(64, BigInt(value)) : BigInt(value);
    while (v >= 0x80n) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }
}
