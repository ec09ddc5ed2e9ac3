/**
 * One call file from where the last import left it → what to import now.
 *
 * The rule for a chain whose calls arrive over several reads: its episode is emitted once, when
 * MarsRL's own loop has ended it (chain.ts replays the loop), with all its calls; until then the
 * file's cursor does not move and the next read starts it from its first line again. So a problem
 * is never split into two episodes and nothing is imported twice. After the episode, the cursor is
 * the byte offset past the file's last complete line; a line that comes after it is not MarsRL's
 * (its worker has returned) and is reported, never added to the episode.
 *
 * A damaged chain — a line that is not a call record, or calls out of MarsRL's order — cannot be
 * replayed to its end: it is imported as read (outcome `unknown`) at once, with an issue per line.
 */
import type { ImportIssue } from '#shared/contract';
import type { MarsCall } from './calls';
import { replayChain, type Replay } from './chain';
import { readCalls, type CallFile } from './folder';

/** Where a file's chain was left: past its last complete line (only files whose episode is imported have one). */
export interface FileCursor {
  offset: number;
  /** Number of the next line. */
  line: number;
}

export interface FileRead {
  /** The chain to import now (null: nothing new, or MarsRL is still running it). */
  chain: { calls: MarsCall[]; replay: Replay } | null;
  issues: ImportIssue[];
  /** The file's cursor after this read (unchanged while the chain runs). */
  cursor: FileCursor | null;
  /** Bytes consumed by this read (0 while the chain runs: they will be read again). */
  bytes: number;
}

/** A file whose episode was imported before: anything after the cursor is reported, not imported. */
async function readAfterChain(file: CallFile, cursor: FileCursor): Promise<FileRead> {
  if (file.size < cursor.offset) {
    const message = `the file is shorter (${file.size} bytes) than when it was imported (${cursor.offset}): MarsRL rewrote it (a rerun into the same folder opens it anew); import the new run into a new Studio run`;
    return { chain: null, issues: [{ file: file.name, position: `byte ${file.size}`, message }], cursor, bytes: 0 };
  }
  const read = await readCalls(file, cursor.offset, cursor.line);
  const issues = [...read.issues, ...read.calls.map((call) => afterEnd(file, call, 'its chain was imported before'))];
  return { chain: null, issues, cursor: read.end, bytes: read.end.offset - cursor.offset };
}

function afterEnd(file: CallFile, call: MarsCall, why: string): ImportIssue {
  return { file: file.name, position: `line ${call.line}`, message: `a ${call.callReason} call after MarsRL's loop ended the chain (${why}); not imported` };
}

/** What to import from one call file, given its cursor (null: never imported). */
export async function readChainFile(file: CallFile, cursor: FileCursor | null): Promise<FileRead> {
  if (cursor !== null) return readAfterChain(file, cursor);
  const read = await readCalls(file, 0, 1);
  const replay = replayChain(read.calls);
  const damaged = read.issues.length > 0 || replay.unexpected !== null;
  if (read.calls.length === 0) return { chain: null, issues: [...read.issues, { file: file.name, position: '', message: 'no complete call yet' }], cursor: null, bytes: 0 };
  if (replay.outcome === null && !damaged) {
    const message = `MarsRL has not ended this chain yet (${read.calls.length} calls): it is imported once its loop ends it`;
    return { chain: null, issues: [{ file: file.name, position: '', message }], cursor: null, bytes: 0 };
  }
  const issues = [...read.issues];
  if (replay.unexpected !== null) {
    const call = read.calls[replay.unexpected.index];
    issues.push({ file: file.name, position: `line ${call.line}`, message: `a ${call.callReason} call where MarsRL's loop makes a ${replay.unexpected.expected} call: the chain is imported as written, without an outcome` });
  }
  const used = replay.outcome === null ? read.calls.length : replay.used;
  issues.push(...read.calls.slice(used).map((call) => afterEnd(file, call, replay.outcome ?? 'ended')));
  return { chain: { calls: read.calls.slice(0, used), replay }, issues, cursor: read.end, bytes: read.end.offset };
}
