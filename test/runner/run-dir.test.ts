import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_FILE, runDir } from '../../src-main/engine/paths';

describe('runDir: where a run keeps its checkpoints', () => {
  it('uses runs/<id> beside the default database, as the app always has', () => {
    expect(runDir(path.join('/data', DATABASE_FILE), 7)).toBe(path.join('/data', 'runs', '7'));
  });

  it('gives every other database file in the same folder its own folder (run ids restart at 1 in each)', () => {
    const a = runDir('/tmp/exp/a1.db', 1);
    const b = runDir('/tmp/exp/b1.db', 1);
    expect(a).toBe(path.join('/tmp/exp', 'a1.runs', '1'));
    expect(b).toBe(path.join('/tmp/exp', 'b1.runs', '1'));
    expect(runDir('/tmp/exp/study.sqlite3', 2)).toBe(path.join('/tmp/exp', 'study.runs', '2'));
  });
});
