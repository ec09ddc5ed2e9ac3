/**
 * Id blocks. A worker assembles a whole episode in memory (turn → parent turn, reward → turn)
 * before any of it is written, so it needs ids before insert. Each process reserves a block of
 * ids per table in one short transaction; blocks never overlap across processes because the
 * reservation is an atomic UPDATE … RETURNING under SQLite's write lock.
 */
import type { Database, Statement } from 'better-sqlite3';

export type IdTable = 'turns' | 'episodes' | 'segments' | 'problems';

export class IdAllocator {
  private readonly reserveStmt: Statement;
  private readonly blocks = new Map<IdTable, { next: number; end: number }>();

  constructor(
    private readonly db: Database,
    private readonly blockSize = 4096,
  ) {
    this.reserveStmt = db.prepare('UPDATE id_blocks SET next_id = next_id + ? WHERE name = ? RETURNING next_id');
  }

  /** Reserve `count` consecutive ids; returns the first. */
  reserve(table: IdTable, count: number): number {
    const row = this.db.transaction(() => this.reserveStmt.get(count, table) as { next_id: number } | undefined).immediate();
    if (!row) throw new Error(`id_blocks has no row for ${table}: the database was not migrated`);
    return row.next_id - count;
  }

  next(table: IdTable): number {
    let block = this.blocks.get(table);
    if (!block || block.next >= block.end) {
      const start = this.reserve(table, this.blockSize);
      block = { next: start, end: start + this.blockSize };
      this.blocks.set(table, block);
    }
    return block.next++;
  }
}
