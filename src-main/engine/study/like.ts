/**
 * A study made from runs that already exist (`marsrl study --like 3,4 --seeds 3`, issue 35): each
 * run's config is one side, run over several seeds, so a difference Compare showed between one
 * run and another can be tested against the spread from seed to seed.
 *
 * The axis is what tells the runs apart: the one config path whose value differs (the common
 * case, e.g. reward.scheme), so the study's groups read "decoupled", "shared" and Compare groups
 * them by that path; when several paths differ, one axis `variant` whose values are the runs'
 * whole configs, labelled by what differs.
 */
import { diffConfigs } from '../compare/config-diff';

export interface LikeRun {
  id: number;
  name: string;
  preset: string | null;
  config: Record<string, unknown>;
}

function valueAt(config: Record<string, unknown>, dotted: string): unknown {
  let node: unknown = config;
  for (const key of dotted.split('.')) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
  return node;
}

/** Paths that tell runs apart without being a setting of the comparison. */
const NOT_SETTINGS = ['name', 'seed'];

export function likeRunsMatrix(runs: readonly LikeRun[], seeds: number): Record<string, unknown> {
  if (runs.length < 2) throw new RangeError('give at least two runs (the sides to compare), e.g. --like 3,4');
  const strip = (config: Record<string, unknown>) => Object.fromEntries(Object.entries(config).filter(([k]) => !NOT_SETTINGS.includes(k)));
  const diff = diffConfigs(runs.map((r) => ({ runId: r.id, config: r.config })), NOT_SETTINGS);
  if (diff.keys.length === 0) throw new RangeError(`runs ${runs.map((r) => r.id).join(', ')} have the same config (they differ only in seed): compare them as seeds of one side instead`);
  const name = `like-${runs.map((r) => r.id).join('-')}`;
  const presets = [...new Set(runs.map((r) => r.preset))];
  const preset = presets.length === 1 && presets[0] ? presets[0] : null;
  if (diff.keys.length === 1) {
    const key = diff.keys[0];
    const values = runs.map((r) => valueAt(r.config, key));
    const scalar = (v: unknown): v is string | number | boolean => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
    if (values.every(scalar) && new Set(values.map(String)).size === runs.length) {
      return { name, preset, base: strip(runs[0].config), axes: { [key]: values }, seeds, baseline: { [key]: String(values[0]) } };
    }
  }
  const label = (i: number) => {
    const parts = diff.keys.slice(0, 3).map((k) => `${k}=${String(diff.rows[i].values[k] ?? '—')}`);
    return `run ${runs[i].id}: ${parts.join(', ')}${diff.keys.length > 3 ? ', …' : ''}`;
  };
  return {
    name,
    preset,
    axes: { variant: runs.map((r, i) => ({ label: label(i), set: strip(r.config) })) },
    seeds,
    baseline: { variant: label(0) },
  };
}
