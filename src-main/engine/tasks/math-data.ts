/**
 * Math problems from a user's file (issue #14): JSONL (one object per line) or Parquet (the format
 * Hugging Face datasets ship), with the reference final answer extracted from the answer column.
 *
 * Columns:
 *  - the question: `question` (GSM8K), `problem` (MATH, AIME, DAPO-style exports) or `query`
 *    (MarsRL's own test corpus), the first of these a file has;
 *  - the answer: `answer`, or `ans_box` (MarsRL's corpus); a string or a number;
 *  - optionally `solution`: a worked solution (MATH), used as the Solver's warm-start target.
 * The reference final answer is read from the answer column: the text after the last `####`
 * (GSM8K writes its worked solution and then `#### 72`; the part before becomes the solution when
 * there is no solution column), else the last `\boxed{…}` (MATH), else the whole trimmed value
 * (AIME's bare integers). A file whose columns include no question or no answer column is refused
 * naming the columns it has; so is a record whose question or answer is empty.
 *
 * Parquet is read synchronously (the config check and the trainer's data loading are synchronous)
 * with hyparquet's own page decoder, column by column: the flat (non-nested) columns named above,
 * every row group, codecs UNCOMPRESSED and SNAPPY (hyparquet's own), GZIP and BROTLI (Node's zlib).
 * Its output is tested against hyparquet's asynchronous `parquetReadObjects` on the same files.
 * The file is read range by range (footer, then column chunks), so the config check, which needs
 * the first record only, reads the footer and the first row group of a large file, and a JSONL
 * check reads up to the first line.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { parquetMetadata, parquetSchema, type Compressors, type FileMetaData } from 'hyparquet';
import { readColumn } from 'hyparquet/src/column.js';
import { DEFAULT_PARSERS } from 'hyparquet/src/convert.js';
import { getTreePath, isFlatColumn } from 'hyparquet/src/schema.js';
import { lastBoxed } from './math-answer';
import { LIMITS, openRegularFile } from '../util/bounded-read';

export const QUESTION_COLUMNS = ['question', 'problem', 'query'] as const;
export const ANSWER_COLUMNS = ['answer', 'ans_box'] as const;
export const SOLUTION_COLUMN = 'solution';

export interface MathRecord {
  /** 1-based line (JSONL) or row (Parquet) number. */
  row: number;
  question: string;
  /** The reference final answer (extracted, see the file comment). */
  answer: string;
  /** A worked solution, when the file has one. */
  solution: string | null;
}

export type MathFileFormat = 'jsonl' | 'parquet';

/** `.parquet` / `.pq` files are Parquet, everything else is JSONL. */
export function mathFileFormat(file: string): MathFileFormat {
  return /\.(parquet|pq)$/i.test(file) ? 'parquet' : 'jsonl';
}

const MAX_REPORTED_ERRORS = 20;

/**
 * The reference final answer and the worked solution it carries, from an answer value:
 * GSM8K's `…working… #### 72` gives ("72", "…working…"); MATH's `… \boxed{\frac12}` gives
 * ("\frac12", whole text); a bare value gives itself and no solution.
 */
export function referenceAnswer(value: string): { answer: string; solution: string | null } {
  const text = value.trim();
  const hashes = text.lastIndexOf('####');
  if (hashes !== -1) {
    const answer = text.slice(hashes + 4).trim();
    const before = text.slice(0, hashes).trim();
    return { answer, solution: before === '' ? null : before };
  }
  const boxed = lastBoxed(text);
  // A value that is only a box (`\boxed{5}`, `$\boxed{5}$`) carries no working-out.
  if (boxed !== null) return { answer: boxed, solution: /^\$*\s*\\(?:boxed|fbox)/.test(text) ? null : text };
  return { answer: text, solution: null };
}

function columnsError(source: string, found: readonly string[]): string {
  const missing: string[] = [];
  if (!QUESTION_COLUMNS.some((c) => found.includes(c))) missing.push(`question column (one of ${QUESTION_COLUMNS.join(', ')})`);
  if (!ANSWER_COLUMNS.some((c) => found.includes(c))) missing.push(`answer column (one of ${ANSWER_COLUMNS.join(', ')})`);
  return `${source}: no ${missing.join(' and no ')}; the file's columns are ${found.length > 0 ? found.map((c) => JSON.stringify(c)).join(', ') : '(none)'}. Rename the columns or pick another file`;
}

function pickColumns(found: readonly string[]): { question: string; answer: string; solution: string | null } | null {
  const question = QUESTION_COLUMNS.find((c) => found.includes(c));
  const answer = ANSWER_COLUMNS.find((c) => found.includes(c));
  if (question === undefined || answer === undefined) return null;
  return { question, answer, solution: found.includes(SOLUTION_COLUMN) ? SOLUTION_COLUMN : null };
}

/** One raw row to a record, or the reason it is bad. */
function toRecord(row: number, raw: Record<string, unknown>, columns: { question: string; answer: string; solution: string | null }): MathRecord | string {
  const question = raw[columns.question];
  const answer = raw[columns.answer];
  if (typeof question !== 'string' || question.trim() === '') {
    return `${columns.question} ${question === undefined || question === null ? 'is missing' : 'must be a non-empty string'}`;
  }
  const answerText = typeof answer === 'number' || typeof answer === 'bigint' ? String(answer) : answer;
  if (typeof answerText !== 'string' || answerText.trim() === '') {
    return `${columns.answer} ${answer === undefined || answer === null ? 'is missing' : 'must be a non-empty string or a number'}`;
  }
  const reference = referenceAnswer(answerText);
  if (reference.answer === '') return `${columns.answer} has no final answer (nothing after ####, or an empty \\boxed{})`;
  const solutionValue = columns.solution === null ? undefined : raw[columns.solution];
  const solution = typeof solutionValue === 'string' && solutionValue.trim() !== '' ? solutionValue.trim() : reference.solution;
  return { row, question: question.trim(), answer: reference.answer, solution };
}

function failWith(source: string, errors: readonly string[], unit: string): never {
  const shown = errors.slice(0, MAX_REPORTED_ERRORS).join('\n  ');
  const more = errors.length > MAX_REPORTED_ERRORS ? `\n  … and ${errors.length - MAX_REPORTED_ERRORS} more` : '';
  throw new Error(`${source}: ${errors.length} bad ${unit}${errors.length === 1 ? '' : 's'}:\n  ${shown}${more}`);
}

/**
 * Parses JSONL text. `limit` stops after that many non-blank lines (the config check reads the
 * first record only). Throws one error naming every bad line (up to 20) or the missing columns.
 */
export function parseMathJsonl(text: string, source = 'JSONL input', limit = Infinity): MathRecord[] {
  const records: MathRecord[] = [];
  const errors: string[] = [];
  const lines = text.split(/\r?\n/);
  let read = 0;
  for (let index = 0; index < lines.length && read < limit; index++) {
    const line = index + 1;
    if (lines[index].trim() === '') continue;
    read++;
    let value: unknown;
    try {
      value = JSON.parse(lines[index]);
    } catch (error) {
      errors.push(`line ${line}: not valid JSON (${(error as Error).message})`);
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push(`line ${line}: expected an object with a question and an answer field`);
      continue;
    }
    const raw = value as Record<string, unknown>;
    const columns = pickColumns(Object.keys(raw));
    if (columns === null) {
      // The first record decides: a file whose first object lacks the columns is the wrong file.
      if (records.length === 0 && errors.length === 0) throw new Error(columnsError(`${source} (line ${line})`, Object.keys(raw)));
      errors.push(`line ${line}: ${columnsError('this line', Object.keys(raw)).replace(/^this line: /, '')}`);
      continue;
    }
    const record = toRecord(line, raw, columns);
    if (typeof record === 'string') errors.push(`line ${line}: ${record}`);
    else records.push(record);
  }
  if (errors.length > 0) failWith(source, errors, 'line');
  if (records.length === 0) throw new Error(`${source}: no problems (every line is blank)`);
  return records;
}

function nodeCompressors(): Compressors {
  return {
    GZIP: (input: Uint8Array) => new Uint8Array(zlib.gunzipSync(input)),
    BROTLI: (input: Uint8Array) => new Uint8Array(zlib.brotliDecompressSync(input)),
  };
}

/**
 * Random access to a Parquet file's bytes: a whole buffer, or a file read range by range (the
 * config check reads the footer and the first row group only, not a multi-gigabyte file).
 */
export interface ByteSource {
  byteLength: number;
  slice(start: number, end: number): ArrayBuffer;
}

export function bufferSource(buffer: ArrayBuffer): ByteSource {
  return { byteLength: buffer.byteLength, slice: (start, end) => buffer.slice(start, end) };
}

function fileSource(fd: number, size: number): ByteSource {
  return {
    byteLength: size,
    slice(start, end) {
      const bytes = Buffer.alloc(Math.max(0, end - start));
      let done = 0;
      while (done < bytes.length) {
        const n = fs.readSync(fd, bytes, done, bytes.length - done, start + done);
        if (n === 0) break;
        done += n;
      }
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + done) as ArrayBuffer;
    },
  };
}

/** The file metadata from the footer (`<metadata><u32 length>PAR1` at the end of the file). */
export function readParquetFooter(source: ByteSource): FileMetaData {
  if (source.byteLength < 12) throw new Error(`the file is ${source.byteLength} bytes, too short for Parquet`);
  const tail = new DataView(source.slice(source.byteLength - 8, source.byteLength));
  if (tail.getUint32(4, true) !== 0x31524150) throw new Error('no PAR1 magic at the end of the file');
  const metadataLength = tail.getUint32(0, true);
  if (metadataLength > source.byteLength - 8) throw new Error(`metadata length ${metadataLength} exceeds the file`);
  return parquetMetadata(source.slice(source.byteLength - 8 - metadataLength, source.byteLength));
}

/** Top-level column names of a Parquet file. */
export function parquetColumnNames(metadata: FileMetaData): string[] {
  return parquetSchema(metadata).children.map((child) => child.element.name);
}

/**
 * Reads the named flat columns of a Parquet file synchronously (see the file comment), at most
 * `limit` rows. Returns one object per row.
 */
export function readParquetColumnsSync(
  bytes: ArrayBuffer | ByteSource,
  columns: readonly string[],
  limit = Infinity,
  source = 'Parquet input',
  metadata: FileMetaData = readParquetFooter(bytes instanceof ArrayBuffer ? bufferSource(bytes) : bytes),
): Record<string, unknown>[] {
  const file = bytes instanceof ArrayBuffer ? bufferSource(bytes) : bytes;
  const tree = parquetSchema(metadata);
  const compressors = nodeCompressors();
  const total = Math.min(Number(metadata.num_rows), limit);
  const rows: Record<string, unknown>[] = [];
  let groupStart = 0;
  for (const group of metadata.row_groups) {
    if (groupStart >= total) break;
    const groupRows = Number(group.num_rows);
    const selectEnd = Math.min(groupRows, total - groupStart);
    const values = new Map<string, unknown[]>();
    for (const chunk of group.columns) {
      const meta = chunk.meta_data;
      if (meta === undefined) continue;
      const name = meta.path_in_schema[0];
      if (!columns.includes(name)) continue;
      const schemaPath = getTreePath(tree, meta.path_in_schema);
      if (!isFlatColumn(schemaPath)) throw new Error(`${source}: column "${name}" is nested (a list or a struct); a plain string column is needed`);
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      const end = start + Number(meta.total_compressed_size);
      const view = new DataView(file.slice(start, end));
      const decoder = {
        pathInSchema: meta.path_in_schema,
        type: meta.type,
        element: schemaPath[schemaPath.length - 1].element,
        schemaPath,
        codec: meta.codec,
        parsers: DEFAULT_PARSERS,
        compressors,
        utf8: true,
      };
      const { data } = readColumn({ view, offset: 0 }, { groupStart, selectStart: 0, selectEnd, groupRows }, decoder);
      const flat: unknown[] = [];
      for (const page of data) for (let j = 0; j < page.length; j++) flat.push(page[j]);
      values.set(name, flat.slice(0, selectEnd));
    }
    for (let i = 0; i < selectEnd; i++) {
      const row: Record<string, unknown> = {};
      for (const name of columns) row[name] = values.get(name)?.[i];
      rows.push(row);
    }
    groupStart += groupRows;
  }
  return rows;
}

/** Parses a Parquet file's bytes (see `parseMathJsonl` for `limit` and the errors). */
export function parseMathParquet(bytes: ArrayBuffer | ByteSource, source = 'Parquet input', limit = Infinity): MathRecord[] {
  const file = bytes instanceof ArrayBuffer ? bufferSource(bytes) : bytes;
  let metadata: FileMetaData;
  try {
    metadata = readParquetFooter(file);
  } catch (error) {
    throw new Error(`${source}: not a readable Parquet file (${(error as Error).message})`, { cause: error });
  }
  const found = parquetColumnNames(metadata);
  const columns = pickColumns(found);
  if (columns === null) throw new Error(columnsError(source, found));
  const wanted = [columns.question, columns.answer, ...(columns.solution ? [columns.solution] : [])];
  let rows: Record<string, unknown>[];
  try {
    rows = readParquetColumnsSync(file, wanted, limit, source, metadata);
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(message.startsWith(source) ? message : `${source}: cannot decode the Parquet data (${message})`, { cause: error });
  }
  const records: MathRecord[] = [];
  const errors: string[] = [];
  rows.forEach((raw, i) => {
    const record = toRecord(i + 1, raw, columns);
    if (typeof record === 'string') errors.push(`row ${i + 1}: ${record}`);
    else records.push(record);
  });
  if (errors.length > 0) failWith(source, errors, 'row');
  if (records.length === 0) throw new Error(`${source}: no problems (the file has no rows)`);
  return records;
}

/**
 * The task file open for reading: a regular file (a FIFO named as task.math_path froze `marsrl
 * serve` and the CLI, issue #36; links are followed to what they reach), of any size for Parquet
 * (read by pages) and at most what one string holds for JSONL read whole.
 */
function openFile(file: string, wholeText: boolean): { fd: number; size: number } {
  const opened = openRegularFile(file, { maxBytes: wholeText ? LIMITS.text : Number.MAX_SAFE_INTEGER, what: 'task file' });
  return opened;
}

/** The start of a text file holding at least `lines` non-blank lines (or the whole file). */
function leadingText(fd: number, size: number, lines: number): string {
  const chunk = 1 << 20;
  const parts: Buffer[] = [];
  let position = 0;
  let complete = 0;
  while (position < size && complete < lines) {
    const bytes = Buffer.alloc(Math.min(chunk, size - position));
    const n = fs.readSync(fd, bytes, 0, bytes.length, position);
    if (n === 0) break;
    parts.push(bytes.subarray(0, n));
    position += n;
    // Count complete non-blank lines read so far (a multi-byte character split across chunks only
    // ever sits in the unfinished last line).
    complete = Buffer.concat(parts).toString('utf8').split(/\r?\n/).slice(0, -1).filter((l) => l.trim() !== '').length;
  }
  return Buffer.concat(parts).toString('utf8');
}

/**
 * The records of a JSONL or Parquet file (by extension, see `mathFileFormat`); with a finite
 * `limit`, only as much of the file is read as the first `limit` records need.
 */
export function readMathFile(file: string, limit = Infinity): MathRecord[] {
  const { fd, size } = openFile(file, mathFileFormat(file) !== 'parquet' && !Number.isFinite(limit));
  try {
    if (mathFileFormat(file) === 'parquet') return parseMathParquet(fileSource(fd, size), file, limit);
    const text = Number.isFinite(limit) ? leadingText(fd, size, limit) : fs.readFileSync(fd, 'utf8');
    return parseMathJsonl(text, file, limit);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The config-time check of a math file: it exists, is readable, has the columns, and its first
 * record parses. Returns the problem in one sentence, or null when the file is usable. Relative
 * paths are resolved against `baseDir` (the working directory by default).
 */
export function checkMathFile(file: string, baseDir = process.cwd()): string | null {
  try {
    readMathFile(path.resolve(baseDir, file), 1);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}
