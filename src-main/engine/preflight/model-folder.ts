/**
 * The check a run config makes of a Hugging Face policy's folder (`policies.<id>.model.path`,
 * issue #13) before anything runs: the folder exists, holds config.json, and config.json describes
 * an architecture the Studio runs. Weights and tokenizer are read when the run starts (they are
 * large); what the config's cross-field rules need from here is the model's context.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseHfConfig, type HfArchConfig } from '../hf/config';
import { resourcesDir } from '../resources';
import { FileRefusedError, LIMITS, readTextFile } from '../util/bounded-read';

export type HfFolderCheck = { ok: true; dir: string; config: HfArchConfig; context: number } | { ok: false; message: string };

/**
 * A model folder as written in a config: `~/…` is the home folder, a relative path starts at the
 * working directory, or else at the shipped resources folder (how a preset names its shipped
 * models, e.g. tiny-qwen's `checkpoints/tiny-qwen/solver`, as `init` names checkpoints).
 */
export function resolveModelFolder(folder: string): string {
  if (folder === '~' || folder.startsWith('~/') || folder.startsWith(`~${path.sep}`)) return path.join(os.homedir(), folder.slice(1));
  const local = path.resolve(folder);
  if (path.isAbsolute(folder) || fs.existsSync(local)) return local;
  const shipped = path.join(resourcesDir(), folder);
  return fs.existsSync(shipped) ? shipped : local;
}

/** Check a model folder (see resolveModelFolder). */
export function checkHfModelFolder(folder: string): HfFolderCheck {
  const dir = resolveModelFolder(folder);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch {
    return { ok: false, message: `no folder at ${dir}; give the folder of a downloaded Hugging Face model (the one holding config.json)` };
  }
  if (!stat.isDirectory()) return { ok: false, message: `${dir} is a file, not a folder; give the folder that holds config.json` };
  const file = path.join(dir, 'config.json');
  if (!fs.existsSync(file)) return { ok: false, message: `${dir} has no config.json; give the folder of a Hugging Face model (config.json, model.safetensors, tokenizer.json)` };
  let json: unknown;
  try {
    json = JSON.parse(readTextFile(file, { maxBytes: LIMITS.settings, what: 'config.json' }));
  } catch (error) {
    if (error instanceof FileRefusedError) return { ok: false, message: error.message };
    return { ok: false, message: `${file} is not valid JSON (${(error as Error).message}); re-download the model` };
  }
  try {
    const config = parseHfConfig(json, file);
    return { ok: true, dir, config, context: config.maxPositions };
  } catch (error) {
    return { ok: false, message: `${(error as Error).message}; use a Llama, Qwen2 or Qwen3 checkpoint` };
  }
}
