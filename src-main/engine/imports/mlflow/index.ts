/**
 * MLflow (mlflow/mlflow): the file store (an `mlruns` folder or one experiment folder of it) and
 * the SQL store in SQLite (`mlflow.db`). A source run is an MLflow run, keyed by its run id.
 */
import { statSync } from 'node:fs';
import type { ImportFormat } from '../types';
import { scanFileStore, readFileStore } from './file-scan';
import { detectFileStore } from './file-store';
import { detectSqliteStore, readSqliteStore, scanSqliteStore } from './sqlite-store';

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export const mlflowFormat: ImportFormat = {
  id: 'mlflow',
  label: 'MLflow tracking (mlruns folder or mlflow.db)',
  detect: (path) => (isFile(path) ? detectSqliteStore(path) : detectFileStore(path)),
  scan: async (path, options) => (isFile(path) ? scanSqliteStore(path) : scanFileStore(path, options.signal)),
  read: (path, runKey, cursor, options) => (isFile(path) ? readSqliteStore(path, runKey, cursor, options) : readFileStore(path, runKey, cursor, options)),
};
