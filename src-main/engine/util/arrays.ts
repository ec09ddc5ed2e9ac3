/**
 * Extremes and appends over arrays of any length. `Math.max(...xs)` and `target.push(...xs)` pass
 * every element as an argument, and V8 throws `RangeError: Maximum call stack size exceeded` past
 * about 10^5 of them: a step of problems_per_step 4096 × solver_group 256 died that way instead of
 * saying it was too large (issue #36). These loops have no such limit.
 */

/** The largest of `values` (mapped by `of`), or `empty` when there are none (Math.max gives -Infinity). */
export function maxOf<T>(values: readonly T[], of: (value: T) => number, empty = -Infinity): number {
  let best = empty;
  for (let i = 0; i < values.length; i++) {
    const x = of(values[i]);
    if (i === 0 || x > best || Number.isNaN(x)) best = x;
    if (Number.isNaN(best)) return NaN;
  }
  return best;
}

/** The smallest of `values` (mapped by `of`), or `empty` when there are none. */
export function minOf<T>(values: readonly T[], of: (value: T) => number, empty = Infinity): number {
  let best = empty;
  for (let i = 0; i < values.length; i++) {
    const x = of(values[i]);
    if (i === 0 || x < best || Number.isNaN(x)) best = x;
    if (Number.isNaN(best)) return NaN;
  }
  return best;
}

/** Math.max / Math.min of plain numbers, NaN-propagating as they are. */
export const maxNumber = (xs: readonly number[]): number => maxOf(xs, (x) => x);
export const minNumber = (xs: readonly number[]): number => minOf(xs, (x) => x);

/** Append `items` to `target` in place (`target.push(...items)` without the argument limit). */
export function pushAll<T>(target: T[], items: readonly T[]): T[] {
  for (let i = 0; i < items.length; i++) target.push(items[i]);
  return target;
}
