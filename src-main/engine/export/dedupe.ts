/**
 * Duplicate detection in constant memory: a 20-byte digest per distinct row goes into a private,
 * temporary on-disk SQLite database (deleted when closed). A JS Set of a million digests would cost
 * ~100 MB of heap; this costs SQLite's page cache (capped below) and some temporary disk.
 */
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import type { Database as DatabaseHandle, Statement } from 'better-sqlite3';

export class Deduper {
  private readonly db: DatabaseHandle;
  private readonly insert: Statement;
  dropped = 0;

  constructor() {
    // An empty file name is SQLite's anonymous temporary database: on disk, private, removed on close.
    this.db = new Database('');
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    this.db.pragma('cache_size = -8192');
    this.db.exec('CREATE TABLE seen (digest BLOB PRIMARY KEY) WITHOUT ROWID');
    this.insert = this.db.prepare('INSERT OR IGNORE INTO seen (digest) VALUES (?)');
    // One transaction for the whole export: a commit per row would write the file once per row.
    // It is never committed; the database is thrown away on close.
    this.db.exec('BEGIN');
  }

  /** True the first time these parts are seen; false (and counted as dropped) afterwards. */
  firstTime(parts: readonly (string | null)[]): boolean {
    const hash = crypto.createHash('sha1');
    // Length-prefixed so ("ab", "c") and ("a", "bc") differ; null differs from "".
    for (const part of parts) hash.update(part === null ? '\u0000N;' : `${part.length}:${part};`);
    const isNew = this.insert.run(hash.digest()).changes === 1;
    if (!isNew) this.dropped++;
    return isNew;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
