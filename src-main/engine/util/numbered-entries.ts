import fs from 'node:fs';

/**
 * The numbers in the names of a folder's entries that match `pattern` (one capture group of
 * digits), ascending; none when the folder is not there (yet). Engines number what they write by
 * folder and file name: `global_step_12`, `rollout/12.jsonl`, the Studio's `attempt-2`.
 */
export function numberedEntries(dir: string | null, pattern: RegExp): number[] {
  if (dir === null) return [];
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .map((n) => pattern.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}
