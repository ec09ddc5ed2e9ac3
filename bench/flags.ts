/** The benches' numeric flags, read one way: a whole number at or above a floor, else a message naming the flag. */
export function intFlag(value: string, flag: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be an integer ≥ ${min} (got ${value})`);
  return n;
}
