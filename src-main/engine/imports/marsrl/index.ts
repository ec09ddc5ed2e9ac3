/**
 * MarsRL's V-C reasoning system outputs (github.com/liushulinle/MarsRL, vc_reasoning_system.py and
 * extract_solution.py) as a Studio run: one folder is one source run (key '.'); each call file
 * `<idx>.json.<worker>` is one worker's Solver → Verifier → Corrector chain on input row `idx`,
 * imported as one episode of turns (episode.ts) once MarsRL's loop has ended it (chains.ts).
 * MarsRL inference has no training steps: every episode is step 0.
 *
 * Cursor: `{ files: { [file name]: { offset, line } } }` — for each file whose episode is
 * imported, the byte offset past its last complete line. Batches hold whole episodes.
 */
import path from 'node:path';
import { compareAgents } from '#shared/agents';
import type { ImportIssue } from '#shared/contract';
import { isFolder } from '../../util/is-folder';
import { ImportSourceError, type ImportBatch, type ImportEpisode, type ImportFormat, type ReadOptions, type ScanResult } from '../types';
import { chainTurns, chainEpisode } from './episode';
import { readChainFile, type FileCursor } from './chains';
import { callFiles, inputRows, looksLikeCallFile, rowOf, type CallFile } from './folder';

interface MarsCursor {
  files: Record<string, FileCursor>;
}

/**
 * A folder with a file named `<idx>.json.<worker>` whose first line is a call record. Empty call
 * files are passed over: Agent.init opens every worker's file before its first call returns.
 */
function detect(source: string): boolean {
  if (!isFolder(source)) return false;
  const first = callFiles(source).find((file) => file.size > 0);
  return first !== undefined && looksLikeCallFile(first.path);
}

/** The call files of the folder, or a clear error naming it. */
function filesOf(source: string): CallFile[] {
  if (!isFolder(source)) throw new ImportSourceError(`${source} is not a folder: a MarsRL output folder (the output_dir of vc_reasoning_system.py) is expected`, '');
  const files = callFiles(source);
  if (files.length === 0) throw new ImportSourceError(`no MarsRL call files (<idx>.json.<worker>, written by vc_reasoning_system.py) in ${source}`, '');
  return files;
}

const isFileCursor = (value: unknown): boolean => {
  const entry = value as FileCursor | null;
  return typeof entry === 'object' && entry !== null && Number.isSafeInteger(entry.offset) && Number.isSafeInteger(entry.line);
};

/** The saved cursor; one this reader did not write is refused (reading from the start again would import everything twice). */
function cursorOf(cursor: unknown): MarsCursor {
  if (cursor === null || cursor === undefined) return { files: {} };
  const files = (cursor as Partial<MarsCursor>).files;
  if (typeof files !== 'object' || files === null || !Object.values(files).every(isFileCursor)) {
    throw new Error(`not a MarsRL import cursor: ${JSON.stringify(cursor)?.slice(0, 200)} (expected { files: { "<idx>.json.<worker>": { offset, line } } })`);
  }
  return { files: { ...files } };
}

async function scan(source: string, options: { signal?: AbortSignal }): Promise<ScanResult> {
  const files = filesOf(source);
  const issues: ImportIssue[] = [];
  const agents = new Set<string>();
  let episodes = 0;
  let generations = 0;
  for (const file of files) {
    options.signal?.throwIfAborted();
    const read = await readChainFile(file, null);
    issues.push(...read.issues);
    if (read.chain === null) continue;
    episodes++;
    generations += read.chain.calls.length;
    for (const turn of chainTurns(file, read.chain.calls)) agents.add(turn.agent);
  }
  const name = path.basename(path.resolve(source));
  const run = {
    key: '.',
    name,
    steps: episodes > 0 ? 1 : 0,
    firstStep: episodes > 0 ? 0 : null,
    lastStep: episodes > 0 ? 0 : null,
    metricKeys: [],
    metricPoints: 0,
    generations,
    episodes,
    agents: [...agents].sort(compareAgents),
    config: { workers: new Set(files.map((file) => file.worker)).size, problems: new Set(files.map((file) => file.idx)).size },
    tags: [],
    startedAt: null,
    endedAt: null,
  };
  return { runs: [run], issues, files: files.length, bytes: files.reduce((sum, file) => sum + file.size, 0) };
}

function emptyBatch(bytesDone: number): ImportBatch {
  return { metrics: [], episodes: [], checkpoints: [], issues: [], cursor: null, bytesDone };
}

async function* read(source: string, runKey: string, cursor: unknown | null, options: ReadOptions): AsyncGenerator<ImportBatch> {
  if (runKey !== '.') throw new ImportSourceError(`a MarsRL folder is one source run ('.'), not "${runKey}"`, '');
  const files = filesOf(source);
  const rows = await inputRows(source);
  const state = cursorOf(cursor);
  let bytesDone = 0;
  let batch = emptyBatch(0);
  let records = 0;
  for (const file of files) {
    options.signal?.throwIfAborted();
    const fileRead = await readChainFile(file, state.files[file.name] ?? null);
    if (fileRead.cursor !== null) state.files[file.name] = fileRead.cursor;
    bytesDone += fileRead.bytes;
    batch.issues.push(...fileRead.issues);
    if (fileRead.chain !== null) {
      const episode: ImportEpisode = chainEpisode(file, fileRead.chain.calls, fileRead.chain.replay, rowOf(fileRead.chain.calls, rows));
      batch.episodes.push(episode);
      records += episode.turns.length;
    }
    if (records >= options.batchSize) {
      // The cursor is copied only when a batch goes out: copied per file, it cost the square of
      // the file count (a 100k-call folder has ~17k files).
      yield { ...batch, cursor: { files: { ...state.files } }, bytesDone };
      batch = emptyBatch(bytesDone);
      records = 0;
    }
  }
  if (batch.episodes.length > 0 || batch.issues.length > 0) yield { ...batch, cursor: { files: { ...state.files } }, bytesDone };
}

export const marsrlFormat: ImportFormat = {
  id: 'marsrl',
  label: 'MarsRL outputs (vc_reasoning_system.py)',
  derivesAccuracy: true,
  detect,
  scan,
  read,
};
