/**
 * Where rows go: a temporary file beside the target, in JSONL or Parquet, published by rename only
 * once complete. Memory is bounded by one write buffer (JSONL) or one row group (Parquet),
 * whatever the number of rows.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { ExportError } from './options';
import { parquetSchema, type ColumnSpec } from './schema';
import { isProcessAlive } from '../store/liveness';
import type { Row } from './formats';

export interface RowSink {
  /** `bytes` is an estimate of the row's text size, used to bound a Parquet row group. */
  write(row: Row, bytes: number): void;
  /** Flush and close; returns the file size. */
  finish(): number;
  /** Close without finishing (the caller removes the file). */
  abandon(): void;
}

/** A hidden temporary name in the target's folder, so the final rename never crosses filesystems. */
export function tempPathFor(target: string): string {
  const dir = path.dirname(target);
  return path.join(dir, `.${path.basename(target)}.${process.pid}-${crypto.randomBytes(4).toString('hex')}.tmp`);
}

/**
 * Remove temporary files an earlier export of the same target left when its process was killed
 * outright (SIGKILL, power loss), where no cleanup could run. Only files whose writer process no
 * longer exists are touched, so a concurrent export of the same target keeps its file.
 */
export function sweepStaleTemps(target: string): number {
  const dir = path.dirname(target);
  const prefix = `.${path.basename(target)}.`;
  let removed = 0;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const match = /^(\d+)-[0-9a-f]{8}\.tmp$/.exec(name.slice(prefix.length));
    if (!match) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || isProcessAlive(pid)) continue;
    removeQuietly(path.join(dir, name));
    removed++;
  }
  return removed;
}

export function removeQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // Already gone, or never created: either way nothing is left behind.
  }
}

/**
 * Move a finished temporary file to its target. Without `force` a hard link publishes it only if
 * the target still does not exist (atomic no-clobber: another process may have created it since
 * the start); filesystems without hard links fall back to check-then-rename.
 */
export function publish(temp: string, target: string, force: boolean): void {
  if (force) {
    fs.renameSync(temp, target);
    return;
  }
  try {
    fs.linkSync(temp, target);
    removeQuietly(temp);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new ExportError('output_exists', 'out', `out: ${target} was created by someone else during the export; pass --force (force: true) to replace it, or choose another path`);
    }
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS' && code !== 'EXDEV') throw error;
  }
  if (fs.existsSync(target)) {
    throw new ExportError('output_exists', 'out', `out: ${target} was created by someone else during the export; pass --force (force: true) to replace it, or choose another path`);
  }
  fs.renameSync(temp, target);
}

function openTemp(file: string): number {
  try {
    return fs.openSync(file, 'wx');
  } catch (error) {
    throw new ExportError('output_unwritable', 'out', `out: cannot create a file in ${path.dirname(file)}: ${(error as Error).message}`);
  }
}

const JSONL_BUFFER = 1 << 20;

/** A sink's temporary file: created exclusively, written whole and synced before it is published, closed once. */
abstract class TempFileSink implements RowSink {
  protected readonly fd: number;
  private closed = false;

  constructor(file: string) {
    this.fd = openTemp(file);
  }

  abstract write(row: Row, bytes: number): void;

  /** Writes everything still buffered; returns the file's size. */
  protected abstract flushAll(): number;

  /** Drops everything still buffered. */
  protected abstract drop(): void;

  finish(): number {
    const size = this.flushAll();
    fs.fsyncSync(this.fd);
    this.close();
    return size;
  }

  abandon(): void {
    this.drop();
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }
}

/** One JSON object per line, keys in column order, written in ~1 MB chunks. */
export class JsonlSink extends TempFileSink {
  private chunks: string[] = [];
  private pending = 0;
  private bytes = 0;

  write(row: Row): void {
    const line = `${JSON.stringify(row)}\n`;
    this.chunks.push(line);
    this.pending += line.length;
    if (this.pending >= JSONL_BUFFER) this.flush();
  }

  private flush(): void {
    if (this.chunks.length === 0) return;
    const buffer = Buffer.from(this.chunks.join(''), 'utf8');
    fs.writeSync(this.fd, buffer);
    this.bytes += buffer.length;
    this.chunks = [];
    this.pending = 0;
  }

  protected flushAll(): number {
    this.flush();
    return this.bytes;
  }

  protected drop(): void {
    this.chunks = [];
  }
}

/**
 * hyparquet-writer's ByteWriter, drained to a file descriptor whenever more than 1 MB is
 * buffered, so a row group streams to disk instead of growing one buffer for the whole file.
 */
function fdWriter(fd: number): ByteWriter {
  const writer = new ByteWriter(1 << 20);
  const drain = () => {
    if (writer.index === 0) return;
    fs.writeSync(fd, new Uint8Array(writer.buffer, 0, writer.index));
    writer.index = 0;
  };
  const grow = writer.ensure.bind(writer);
  writer.ensure = (size: number) => {
    if (writer.index > JSONL_BUFFER) drain();
    grow(size);
  };
  writer.finish = drain;
  return writer;
}

/**
 * Parquet through hyparquet-writer's incremental `ParquetWriter`: rows are buffered until a row
 * group is full (by rows, or by text bytes so long texts cannot blow memory), then transposed into
 * columns and encoded; the footer is written at the end. Snappy compression, statistics on.
 */
export class ParquetSink extends TempFileSink {
  private readonly writer: ByteWriter;
  private readonly pq: ParquetWriter;
  /** The row group being filled, already transposed: one array per column. */
  private data: unknown[][];
  private count = 0;
  private bufferedBytes = 0;

  constructor(
    file: string,
    private readonly columns: ColumnSpec[],
    private readonly groupRows: number,
    private readonly groupBytes: number,
    metadata: { key: string; value: string }[],
  ) {
    super(file);
    this.writer = fdWriter(this.fd);
    this.pq = new ParquetWriter({ writer: this.writer, schema: parquetSchema(columns), kvMetadata: metadata, createdBy: 'MarsRL Studio export (hyparquet-writer)' });
    this.data = columns.map(() => []);
  }

  write(row: Row, bytes: number): void {
    for (let c = 0; c < this.columns.length; c++) {
      const spec = this.columns[c];
      this.data[c].push(toParquetValue(spec, row[spec.name]));
    }
    this.count++;
    this.bufferedBytes += bytes;
    if (this.count >= this.groupRows || this.bufferedBytes >= this.groupBytes) this.flushGroup();
  }

  private flushGroup(): void {
    const n = this.count;
    if (n === 0) return;
    const columnData = this.columns.map((spec, c) => ({ name: spec.name, data: this.data[c], statistics: spec.statistics !== false }));
    this.data = this.columns.map(() => []);
    this.count = 0;
    this.bufferedBytes = 0;
    // The writer is synchronous (its flush hook is not async), so this returns once the group is on disk.
    void this.pq.write({ columnData, rowGroupSize: n });
  }

  protected flushAll(): number {
    this.flushGroup();
    void this.pq.finish();
    return this.writer.offset;
  }

  protected drop(): void {
    this.data = [];
  }
}

function toParquetValue(spec: ColumnSpec, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (spec.int64) return BigInt(value as number);
  if (spec.int64Fields && spec.int64Fields.length > 0) {
    const copy = { ...(value as Record<string, unknown>) };
    for (const f of spec.int64Fields) if (typeof copy[f] === 'number') copy[f] = BigInt(copy[f] as number);
    return copy;
  }
  return value;
}
