/**
 * Which trackio files a path names: a project database (`<project>.db`: trackio keeps one SQLite
 * file per project, `get_project_db_filename`, sqlite_storage.py:435, DB_EXT = ".db" at :51), or a
 * folder of them (trackio's own TRACKIO_DIR). A source run's key is the run's id for a single file,
 * `<file>/<run id>` in a folder.
 */
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isFolder } from '../../util/is-folder';
import { isSqliteFile, sqliteFileMatching } from '../sqlite';
import { ImportSourceError } from '../types';
import { looksLikeTrackio } from './schema';

export interface TrackioFile {
  /** Absolute path of the database. */
  path: string;
  /** Relative to the imported path: '' when the path is the file itself. */
  rel: string;
  /** How messages name it. */
  label: string;
}

export function isTrackioFile(path: string): boolean {
  return sqliteFileMatching(path, looksLikeTrackio);
}

/** The `.db` files directly in a folder that are trackio projects, by name. */
function trackioFilesIn(folder: string): TrackioFile[] {
  return readdirSync(folder)
    .filter((name) => name.endsWith('.db'))
    .sort()
    .filter((name) => isTrackioFile(join(folder, name)))
    .map((name) => ({ path: join(folder, name), rel: name, label: join(basename(folder), name) }));
}

export function detectTrackio(path: string): boolean {
  if (isFolder(path)) return trackioFilesIn(path).length > 0;
  return path.endsWith('.db') && isTrackioFile(path);
}

/** The files of a source, or an ImportSourceError when it holds none. */
export function trackioFiles(path: string): TrackioFile[] {
  if (!isFolder(path)) {
    if (!isSqliteFile(path)) throw new ImportSourceError(`${path}: not an SQLite database (a trackio project is <project>.db)`, path);
    return [{ path, rel: '', label: basename(path) }];
  }
  const files = trackioFilesIn(path);
  if (files.length === 0) throw new ImportSourceError(`${path}: no trackio project database (<project>.db with a "metrics" table) in this folder`, path);
  return files;
}

export function runKey(file: TrackioFile, run: string): string {
  return file.rel === '' ? run : `${file.rel}/${run}`;
}

/** The file and the trackio run of a source run's key. */
export function resolveRunKey(path: string, key: string): { file: TrackioFile; run: string } {
  if (!isFolder(path)) return { file: { path, rel: '', label: basename(path) }, run: key };
  const cut = key.indexOf('.db/');
  if (cut < 0) throw new ImportSourceError(`${path}: source run "${key}" does not name a project file (<project>.db/<run id>)`, path);
  const rel = key.slice(0, cut + 3);
  return { file: { path: join(path, rel), rel, label: join(basename(path), rel) }, run: key.slice(cut + 4) };
}
