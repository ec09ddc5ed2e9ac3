/**
 * The MLflow file store's layout (mlflow/mlflow, mlflow/store/tracking/file_store.py, FileStore):
 * `<root>/<experiment id>/meta.yaml` per experiment, `<experiment>/<run id>/meta.yaml` per run
 * (`_make_persisted_run_info_dict`: run_id, run_uuid, run_name, experiment_id, start_time,
 * end_time in ms, lifecycle_stage, status…), and in each run folder `metrics/<key>`,
 * `params/<key>`, `tags/<key>` (META_DATA_FILE_NAME, METRICS_FOLDER_NAME, PARAMS_FOLDER_NAME,
 * TAGS_FOLDER_NAME). A key with `/` is a path: `val/acc` is the file `metrics/val/acc`
 * (`_get_resource_files` walks the folder and joins the relative path). The root also holds
 * `.trash` (deleted experiments) and `models` (the model registry), which are not experiments;
 * an experiment folder also holds `tags`, `datasets`, `traces` (RESERVED_EXPERIMENT_FOLDERS).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import YAML from 'yaml';
import type { ImportIssue } from '#shared/contract';
import { isFolder } from '../../util/is-folder';
import { ImportSourceError } from '../types';

const META = 'meta.yaml';
const NOT_EXPERIMENTS = new Set(['.trash', 'models']);
const NOT_RUNS = new Set(['tags', 'datasets', 'traces']);

export interface FileRun {
  id: string;
  /** The run folder, absolute. */
  dir: string;
  /** The run folder relative to the imported path. */
  rel: string;
  meta: Record<string, unknown>;
}

function subdirs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

function hasMeta(dir: string): boolean {
  return existsSync(join(dir, META));
}

/** Run folders of an experiment folder: subfolders with a meta.yaml, reserved names aside. */
function runDirsOf(experiment: string): string[] {
  return subdirs(experiment)
    .filter((name) => !NOT_RUNS.has(name))
    .map((name) => join(experiment, name))
    .filter(hasMeta);
}

/** Experiment folders of a path: the path itself when it has a meta.yaml, else its subfolders that do (an `mlruns` root). */
export function experimentDirs(path: string): string[] {
  if (!isFolder(path)) return [];
  if (hasMeta(path)) return [path];
  return subdirs(path)
    .filter((name) => !NOT_EXPERIMENTS.has(name))
    .map((name) => join(path, name))
    .filter(hasMeta);
}

/** True for an `mlruns` root or an experiment folder with at least one run (meta.yaml at both levels). */
export function detectFileStore(path: string): boolean {
  try {
    return experimentDirs(path).some((experiment) => runDirsOf(experiment).length > 0);
  } catch {
    return false;
  }
}

function readMeta(file: string): Record<string, unknown> {
  const parsed: unknown = YAML.parse(readFileSync(file, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null) throw new Error('meta.yaml is not a mapping');
  return parsed as Record<string, unknown>;
}

/** The runs of a file store; a run whose meta.yaml cannot be read is an issue. */
export function fileRuns(path: string, issues: ImportIssue[]): FileRun[] {
  const experiments = experimentDirs(path);
  if (experiments.length === 0) throw new ImportSourceError(`${path}: no MLflow experiment (a folder with meta.yaml, or an mlruns folder of them) here`, path);
  const runs: FileRun[] = [];
  for (const dir of experiments.flatMap(runDirsOf)) {
    const rel = relative(path, dir).split(sep).join('/');
    try {
      const meta = readMeta(join(dir, META));
      const id = String(meta.run_id ?? meta.run_uuid ?? dir.split(sep).pop());
      // A deleted run stays in place with lifecycle_stage "deleted" (FileStore.delete_run); MLflow lists only active runs by default.
      if (meta.lifecycle_stage === 'deleted') issues.push({ file: `${rel}/${META}`, position: '', message: `${rel}: run ${id} is deleted in MLflow (lifecycle_stage: deleted); not imported` });
      else runs.push({ id, dir, rel, meta });
    } catch (error) {
      issues.push({ file: `${rel}/${META}`, position: '', message: `${rel}/${META}: ${error instanceof Error ? error.message : String(error)}; run not imported` });
    }
  }
  if (runs.length === 0 && issues.length === 0) throw new ImportSourceError(`${path}: MLflow experiment folder(s) without any run (no <run id>/meta.yaml)`, path);
  return runs;
}

/** The files under a run's `metrics`, `params` or `tags`, keyed by their path relative to that folder (`val/acc`). */
export function resourceFiles(run: FileRun, folder: 'metrics' | 'params' | 'tags'): Array<{ key: string; file: string }> {
  const root = join(run.dir, folder);
  if (!isFolder(root)) return [];
  const found: Array<{ key: string; file: string }> = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) found.push({ key: relative(root, full).split(sep).join('/'), file: full });
    }
  };
  walk(root);
  return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** A run's params or tags: file name → content (`_writeable_value` writes the value as the file's whole text). */
export function keyValues(run: FileRun, folder: 'params' | 'tags'): Record<string, string> {
  const values: Record<string, string> = {};
  for (const { key, file } of resourceFiles(run, folder)) values[key] = readFileSync(file, 'utf8');
  return values;
}

export function findRun(path: string, key: string): FileRun {
  const run = fileRuns(path, []).find((candidate) => candidate.id === key);
  if (!run) throw new ImportSourceError(`${path}: no MLflow run "${key}" (no <experiment>/${key}/meta.yaml)`, path);
  return run;
}
