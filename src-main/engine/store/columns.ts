/**
 * Rows in the contract's camelCase straight from SQLite: a select list that names each snake_case
 * column by its field (`run_id AS "runId"`), so a repo reads typed rows without a hand-written
 * per-row mapper in JS. The renaming costs SQLite nothing, so hot readers (the timeline) can use it.
 */
const camel = (column: string): string => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** `camelColumns(['id', 'run_id'], 'r')` → `r.id AS "id", r.run_id AS "runId"`. */
export function camelColumns(columns: readonly string[], table?: string): string {
  const prefix = table ? `${table}.` : '';
  return columns.map((c) => `${prefix}${c} AS "${camel(c)}"`).join(', ');
}
