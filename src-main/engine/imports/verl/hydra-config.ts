/**
 * The Hydra config a veRL or DrMAS run leaves (issue 39). `verl.trainer.main_ppo` runs under
 * `@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)` (veRL v0.7.0
 * main_ppo.py:35; DrMAS main_ppo.py the same), so Hydra writes `.hydra/config.yaml` (the composed
 * config, `OmegaConf.to_yaml` unresolved: `${trainer.project_name}` stays as written),
 * `.hydra/overrides.yaml` and `.hydra/hydra.yaml` into its run folder — `outputs/{date}/{time}/`
 * under the launch folder by default, the folder itself with `hydra.run.dir=.`. `version_base=None`
 * keeps the working directory (no chdir), so the trainer's relative paths (`rollout_data_dir`,
 * `default_local_dir`, the file logger's `{project}/{experiment}.jsonl`) are relative to the
 * launch folder, which is the folder imported.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export interface HydraConfig {
  /** The config file, relative to the imported folder (`outputs/2026-11-02/10-15-07/.hydra/config.yaml`). */
  file: string;
  config: Record<string, unknown>;
  /** `.hydra/overrides.yaml` beside it: the `key=value` lines the run was launched with. */
  overrides: string[];
}

/** `.hydra/config.yaml` at the folder, else the newest `outputs/{date}/{time}/.hydra/config.yaml` (a resumed run launches again: a new time folder). */
export function findHydraConfig(folder: string): string | null {
  const direct = path.join('.hydra', 'config.yaml');
  if (fs.existsSync(path.join(folder, direct))) return direct;
  const found: string[] = [];
  for (const day of listDirs(path.join(folder, 'outputs'))) {
    for (const time of listDirs(path.join(folder, 'outputs', day))) {
      const rel = path.join('outputs', day, time, '.hydra', 'config.yaml');
      if (fs.existsSync(path.join(folder, rel))) found.push(rel);
    }
  }
  return found.sort().pop() ?? null;
}

function listDirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
}

/** Reads the config; throws with the file named when it is not a YAML mapping. */
export function readHydraConfig(folder: string, file: string): HydraConfig {
  const parsed: unknown = YAML.parse(fs.readFileSync(path.join(folder, file), 'utf8'));
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${file}: not a YAML mapping`);
  let overrides: string[] = [];
  try {
    const o: unknown = YAML.parse(fs.readFileSync(path.join(folder, path.dirname(file), 'overrides.yaml'), 'utf8'));
    if (Array.isArray(o)) overrides = o.map(String);
  } catch {
    // overrides.yaml is informative only.
  }
  return { file, config: parsed as Record<string, unknown>, overrides };
}

/** A dotted key of the config (`trainer.rollout_data_dir`), with OmegaConf's `${a.b}` interpolations resolved; undefined when absent. */
export function configValue(config: Record<string, unknown>, key: string, depth = 0): unknown {
  let node: unknown = config;
  for (const part of key.split('.')) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  if (typeof node !== 'string' || depth > 8) return node;
  // Only plain references (`${trainer.project_name}`) are resolved; resolvers (`${oc.env:…}`) stay as written.
  return node.replace(/\$\{([A-Za-z0-9_.]+)\}/g, (whole, ref: string) => {
    const value = configValue(config, ref, depth + 1);
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : whole;
  });
}

export function configString(config: Record<string, unknown>, key: string): string | null {
  const v = configValue(config, key);
  return typeof v === 'string' && v !== '' ? v : null;
}

export function configNumber(config: Record<string, unknown>, key: string): number | null {
  const v = configValue(config, key);
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

export function configStrings(config: Record<string, unknown>, key: string): string[] | null {
  const v = configValue(config, key);
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
}
