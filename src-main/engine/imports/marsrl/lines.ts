/**
 * Lines of a JSONL file MarsRL may still be appending to, read as a stream from a byte offset.
 *
 * MarsRL writes one call per line and flushes after each (vc_reasoning_system.py, Agent._call_llm:
 * `write(json.dumps(vllm_obj) + '\n')`, then `flush()`), so a line without its newline is one still
 * being written: it is not yielded, and the caller's offset stays before it for the next read.
 * Offsets are bytes (a cursor must survive UTF-8 text), counted on the raw chunks.
 */
import fs from 'node:fs';

export interface Line {
  /** 1-based line number in the file. */
  number: number;
  text: string;
  /** Byte offset just after this line's newline. */
  end: number;
}

const NEWLINE = 0x0a;

/** Complete lines from byte `start` (which begins line `firstNumber`), in order; a trailing unterminated line is left. */
export async function* completeLines(file: string, start: number, firstNumber: number): AsyncGenerator<Line> {
  let pending: Buffer[] = [];
  let chunkStart = start;
  let number = firstNumber;
  for await (const chunk of fs.createReadStream(file, { start }) as AsyncIterable<Buffer>) {
    let from = 0;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, from)) {
      pending.push(chunk.subarray(from, at));
      // Decoded once whole, so a character split between two chunks is read right.
      yield { number, text: Buffer.concat(pending).toString('utf8'), end: chunkStart + at + 1 };
      pending = [];
      number++;
      from = at + 1;
    }
    if (from < chunk.length) pending.push(chunk.subarray(from));
    chunkStart += chunk.length;
  }
}

/** The first line of a file (or its first `limit` bytes when no newline comes sooner), read without the rest. */
export function firstLine(file: string, limit = 4 * 2 ** 20): string {
  const fd = fs.openSync(file, 'r');
  try {
    const parts: Buffer[] = [];
    const chunk = Buffer.alloc(64 * 1024);
    for (let read = 0; read < limit; ) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, read);
      if (n === 0) break;
      const newline = chunk.subarray(0, n).indexOf(NEWLINE);
      parts.push(Buffer.from(chunk.subarray(0, newline === -1 ? n : newline)));
      if (newline !== -1) break;
      read += n;
    }
    return Buffer.concat(parts).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
