import type { Database, Statement } from 'better-sqlite3';

/**
 * Queries whose WHERE clause depends on which filters are set are prepared once per shape and
 * reused: preparing costs more than running a keyset page.
 */
export class StatementCache {
  private readonly cache = new Map<string, Statement>();
  constructor(private readonly db: Database) {}

  get(sql: string): Statement {
    let stmt = this.cache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.cache.set(sql, stmt);
    }
    return stmt;
  }
}
