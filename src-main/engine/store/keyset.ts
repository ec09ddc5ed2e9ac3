/**
 * Keyset paging shared by the store's list queries: fetch one row more than the page holds, so
 * that whether a next page exists is known without a COUNT, and the cursor is the last row's key.
 */
import type { KeysetPage } from './types';

/** The page size asked for, clamped to 1…max (default when absent). */
export function pageLimit(requested: number | undefined, fallback: number, max: number): number {
  return Math.min(Math.max(requested ?? fallback, 1), max);
}

/** `rows` were fetched with LIMIT limit + 1: the page, and the key of its last row when more follow. */
export function keysetPage<T>(rows: T[], limit: number, keyOf: (row: T) => number): KeysetPage<T> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return { items, nextCursor: hasMore ? keyOf(items[items.length - 1]) : null };
}

/**
 * Adds `column = @name` to `where` (and the value to `params`) for each filter that is set; an
 * undefined value means "no filter". Values go through as bound parameters, never into the SQL.
 */
export function equalityFilters(where: string[], params: Record<string, unknown>, filters: Record<string, { column: string; value: unknown }>): void {
  for (const [name, { column, value }] of Object.entries(filters)) {
    if (value === undefined) continue;
    where.push(`${column} = @${name}`);
    params[name] = typeof value === 'boolean' ? (value ? 1 : 0) : value;
  }
}

/**
 * Adds `column op @name` (a lower or upper bound, `>=` or `<=`) for each bound that is set; null or
 * undefined means "no bound". Values go through as bound parameters, never into the SQL.
 */
export function rangeFilters(where: string[], params: Record<string, unknown>, bounds: Record<string, { column: string; op: '>=' | '<='; value: number | null | undefined }>): void {
  for (const [name, { column, op, value }] of Object.entries(bounds)) {
    if (value === null || value === undefined) continue;
    where.push(`${column} ${op} @${name}`);
    params[name] = value;
  }
}
