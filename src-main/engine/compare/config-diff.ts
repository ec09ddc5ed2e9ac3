/**
 * Config tables that show only what differs. Configs are flattened to dotted paths
 * (`advantage.mode`), values compared by their JSON text (so `1` and `"1"` differ, and arrays
 * compare by content); a path missing from some runs differs from one that is present.
 */
import { ROLES } from '#shared/agents';

export type FlatConfig = Record<string, string | number | boolean | null>;

const isMapping = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Nested config → { 'a.b.c': scalar }. Arrays are kept whole as their JSON text. */
export function flattenConfig(config: Record<string, unknown>, prefix = '', out: FlatConfig = {}): FlatConfig {
  for (const [key, value] of Object.entries(config)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isMapping(value)) flattenConfig(value, path, out);
    else if (Array.isArray(value)) out[path] = JSON.stringify(value);
    else if (value === undefined) continue;
    else out[path] = value as string | number | boolean | null;
  }
  return out;
}

/**
 * Derived keys a researcher groups by that are not one config field:
 * - `sharing`: `shared` when every role uses one policy id, `separate` when each role has its
 *   own, `partial` otherwise (Dr. MAS's shared vs non-shared weights).
 */
export const DERIVED_KEYS = ['sharing'] as const;

export function derivedValue(config: Record<string, unknown>, key: string): string | undefined {
  if (key === 'sharing') {
    const agents = isMapping(config.agents) ? config.agents : {};
    const ids = ROLES.map((r) => (typeof agents[r] === 'string' ? agents[r] : r));
    const distinct = new Set(ids).size;
    return distinct === 1 ? 'shared' : distinct === ids.length ? 'separate' : 'partial';
  }
  return undefined;
}

/** The value of a config path or derived key, as text (for group labels); `—` when absent. */
export function configValue(config: Record<string, unknown>, key: string): string {
  const derived = derivedValue(config, key);
  if (derived !== undefined) return derived;
  const value = flattenConfig(config)[key];
  return value === undefined ? '—' : String(value);
}

export interface ConfigDiff {
  /** Paths whose value is not the same in every run, in path order. */
  keys: string[];
  /** One row per run: path → value (undefined when the run lacks the path). */
  rows: { runId: number; values: Record<string, string | number | boolean | null | undefined> }[];
  /** How many paths were compared in all (so the UI can say "3 of 214 differ"). */
  totalKeys: number;
}

/** Only the paths that differ. Paths in `ignore` (the run name, say) never count. */
export function diffConfigs(runs: readonly { runId: number; config: Record<string, unknown> }[], ignore: readonly string[] = ['name']): ConfigDiff {
  const flats = runs.map((r) => flattenConfig(r.config));
  const all = new Set<string>();
  for (const f of flats) for (const k of Object.keys(f)) all.add(k);
  for (const k of ignore) all.delete(k);
  const keys = [...all]
    .filter((k) => new Set(flats.map((f) => (k in f ? JSON.stringify(f[k]) : '<missing>'))).size > 1)
    .sort();
  return {
    keys,
    rows: runs.map((r, i) => ({ runId: r.runId, values: Object.fromEntries(keys.map((k) => [k, flats[i][k]])) })),
    totalKeys: all.size,
  };
}
