/**
 * Which runs a TensorBoard log folder holds, named as TensorBoard names them
 * (backend/event_processing/plugin_event_multiplexer.py AddRunsFromDirectory): every folder that
 * directly holds event files is one run, keyed by its path relative to the log folder ('.' for
 * the folder itself). A run's files are read in name order, as its directory watcher reads them;
 * the time in `events.out.tfevents.{time}.…` makes that the order they were written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isEventFileName } from '../../tfevents/scalars';
import { ImportSourceError } from '../types';

export interface TensorBoardSource {
  /** The folder runs are relative to (the imported folder, or the folder of the imported file). */
  root: string;
  /** True when one event file was imported: issues then name it as '' (the path itself). */
  single: boolean;
  /** Run key → its event files (names within the run's folder), in name order. */
  runs: Map<string, string[]>;
}

export function runDir(source: TensorBoardSource, key: string): string {
  return key === '.' ? source.root : path.join(source.root, ...key.split('/'));
}

/** The name an issue gives a file: relative to the imported path ('' when it is the path). */
export function issueFile(source: TensorBoardSource, key: string, name: string): string {
  if (source.single) return '';
  return key === '.' ? name : `${key}/${name}`;
}

export function locate(given: string): TensorBoardSource {
  const stat = fs.statSync(given, { throwIfNoEntry: false });
  if (!stat) throw new ImportSourceError(`${given} does not exist; give a TensorBoard log folder or an events.out.tfevents.* file`, '');
  if (stat.isFile()) {
    if (!isEventFileName(given)) throw new ImportSourceError(`${given} is not a TensorBoard event file (its name has no "tfevents"); give a log folder or an events.out.tfevents.* file`, '');
    return { root: path.dirname(path.resolve(given)), single: true, runs: new Map([['.', [path.basename(given)]]]) };
  }
  const root = path.resolve(given);
  const runs = new Map<string, string[]>();
  walk(root, '.', runs, Infinity);
  if (runs.size === 0) throw new ImportSourceError(`${given} holds no TensorBoard event files (events.out.tfevents.*) in it or any folder below it`, '');
  return { root, single: false, runs: new Map([...runs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
}

/** Cheap: does the path or a folder at most `depth` levels below it hold an event file? */
export function holdsEventFiles(given: string, depth = 3): boolean {
  const stat = fs.statSync(given, { throwIfNoEntry: false });
  if (!stat) return false;
  if (stat.isFile()) return isEventFileName(given);
  const runs = new Map<string, string[]>();
  walk(path.resolve(given), '.', runs, depth, true);
  return runs.size > 0;
}

function walk(dir: string, key: string, runs: Map<string, string[]>, depth: number, firstOnly = false): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  const files = entries.filter((e) => e.isFile() && isEventFileName(e.name)).map((e) => e.name);
  if (files.length > 0) {
    runs.set(key, files.sort());
    if (firstOnly) return;
  }
  if (depth <= 0) return;
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    walk(path.join(dir, e.name), key === '.' ? e.name : `${key}/${e.name}`, runs, depth - 1, firstOnly);
    if (firstOnly && runs.size > 0) return;
  }
}
