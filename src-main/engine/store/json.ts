/** JSON columns: parse defensively so one bad row cannot break a whole page. */
export function parseJsonColumn<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export function toJsonColumn(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

export function boolColumn(value: number | null): boolean | null {
  return value === null ? null : value !== 0;
}

export function fromBool(value: boolean | null | undefined): number | null {
  return value === null || value === undefined ? null : value ? 1 : 0;
}
