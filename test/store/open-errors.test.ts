/**
 * A database that cannot be used says which file and what to do (issue #36), instead of SQLite's
 * bare "file is not a database"; the file is left as it was.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src-main/cli/main';
import { describeStoreFailure, openStore, StoreOpenError } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';

describe('opening a damaged or read-only database', () => {
  it('a file of random bytes: StoreOpenError naming the file and the fix, the file unchanged; marsrl runs says the same', async () => {
    const tmp = tempDir();
    try {
      const file = path.join(tmp.dir, 'damaged.db');
      fs.writeFileSync(file, crypto.randomBytes(8192));
      const before = fs.readFileSync(file);
      expect(() => openStore(file)).toThrow(StoreOpenError);
      expect(() => openStore(file)).toThrow(new RegExp(`the database ${file} is damaged or is not a MarsRL Studio database \\(SQLite: file is not a database\\); it was left as it is: restore it from a backup, or move it aside`));
      expect(fs.readFileSync(file).equals(before)).toBe(true);
      const lines: string[] = [];
      expect(await main(['runs', '--db', file], { env: {}, out: (t) => lines.push(t), err: (t) => lines.push(t) })).toBe(1);
      expect(lines.join('\n')).toMatch(/marsrl runs: the database .*damaged\.db is damaged/);
      expect(fs.readdirSync(tmp.dir)).toEqual(['damaged.db']);
    } finally {
      tmp.cleanup();
    }
  });

  it('a read-only one (SQLITE_READONLY, EROFS, EACCES) and one that cannot be opened name the file and how to fix it', () => {
    const failure = (code: string, message: string) => Object.assign(new Error(message), { code });
    expect(describeStoreFailure(failure('SQLITE_READONLY', 'attempt to write a readonly database'), '/data/x.db')).toMatch(/the database \/data\/x\.db cannot be written .* make the file and its folder writable \(SQLite writes \/data\/x\.db-wal and -shm beside it\), or copy it/);
    expect(describeStoreFailure(failure('EROFS', 'read-only file system'), '/data/x.db')).toMatch(/cannot be written/);
    expect(describeStoreFailure(failure('SQLITE_CANTOPEN', 'unable to open database file'), '/data/x.db')).toMatch(/cannot be opened/);
    expect(describeStoreFailure(failure('SQLITE_CORRUPT', 'database disk image is malformed'), '/data/x.db')).toMatch(/is damaged .*\.recover/);
    expect(describeStoreFailure(new Error('something else'), '/data/x.db')).toBeNull();
  });
});
