import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src-main/engine/store';
import { openDatabase } from '../../src-main/engine/store/db';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const newImported = { name: 'from mlflow', config: { source: { lr: 0.1 } }, codeVersion: 'import', seed: 0, format: 'mlflow' as const, path: '/data/mlruns', sourceKey: 'abc', startedAt: 1_000, endedAt: 5_000 };

describe('schema v10: import sources', () => {
  it('migrates a version-9 database: its runs keep every column and read as not imported', () => {
    const file = path.join(tmp.dir, 'v9.db');
    const db = openDatabase(file, { targetVersion: 9 });
    db.exec(`INSERT INTO runs (id, name, status, config_json, code_version, seed, created_at) VALUES (4, 'old', 'done', '{"task":{"family":"sort"}}', '0.1', 3, 77)`);
    db.close();
    const store = openStore(file);
    // v10 or any later version (v11 adds replays, issue 40): the v10 table is what this checks.
    expect(store.schemaVersion).toBeGreaterThanOrEqual(10);
    const run = store.runs.get(4)!;
    expect(run).toMatchObject({ name: 'old', status: 'done', seed: 3, createdAt: 77, imported: null });
    expect(store.integrityCheck()).toEqual(['ok']);
    store.close();
  });

  it('creates a done run with its origin in one step; the run reads as imported wherever runs are read', () => {
    const store = openStore(path.join(tmp.dir, 'a.db'));
    const runId = store.imports.createRun(newImported, 9_000);
    const run = store.runs.get(runId)!;
    expect(run.status).toBe('done');
    expect(run.startedAt).toBe(1_000);
    expect(run.endedAt).toBe(5_000);
    expect(run.imported).toEqual({ format: 'mlflow', path: '/data/mlruns', sourceKey: 'abc', digest: '', importedAt: 9_000, updatedAt: 9_000 });
    expect(store.runs.list().items[0].imported?.sourceKey).toBe('abc');
    expect(store.runs.find('from mlflow')?.imported?.format).toBe('mlflow');
    store.imports.saveCursor(runId, { file: 'a', offset: 12 }, 12, 9_500);
    store.imports.finish(runId, 'ff', 9_600);
    expect(store.imports.find('mlflow', '/data/mlruns', 'abc')).toMatchObject({ runId, cursor: { file: 'a', offset: 12 }, bytes: 12, digest: 'ff', updatedAt: 9_600 });
    expect(store.imports.find('mlflow', '/data/mlruns', 'other')).toBeNull();
    store.close();
  });

  it('one source run maps to one Studio run; deleting the run deletes its import row', () => {
    const store = openStore(path.join(tmp.dir, 'b.db'));
    const runId = store.imports.createRun(newImported);
    expect(() => store.imports.createRun(newImported)).toThrow(/UNIQUE/);
    // The failed second import left no run behind (one transaction).
    expect(store.runs.list().items.map((r) => r.id)).toEqual([runId]);
    store.runs.delete(runId);
    expect(store.imports.ofRun(runId)).toBeNull();
    expect(store.imports.find('mlflow', '/data/mlruns', 'abc')).toBeNull();
    const again = store.imports.createRun(newImported);
    expect(store.imports.ofRun(again)?.sourceKey).toBe('abc');
    store.close();
  });

  it('keeps the start unknown until the records say it, and never moves a known start', () => {
    const store = openStore(path.join(tmp.dir, 'c.db'));
    const runId = store.imports.createRun({ ...newImported, startedAt: null, endedAt: null }, 9_000);
    expect(store.runs.get(runId)!.startedAt).toBeNull();
    expect(store.runs.get(runId)!.endedAt).toBe(9_000);
    store.imports.setStartIfUnknown(runId, 2_000);
    store.imports.setStartIfUnknown(runId, 1_000);
    expect(store.runs.get(runId)!.startedAt).toBe(2_000);
    store.close();
  });
});
