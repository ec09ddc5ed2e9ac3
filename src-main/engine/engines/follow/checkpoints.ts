/**
 * Checkpoints in `trainer.default_local_dir` (veRL `_save_checkpoint`, v0.7.1 ray_trainer.py:854-921;
 * DrMAS ray_trainer.py:1012-1044):
 *
 *   latest_checkpointed_iteration.txt     the step, written last (after actor, critic and data.pt)
 *   global_step_N/actor/                  veRL: FSDP shards, huggingface/ (weights with 'hf_model')
 *   global_step_N/actor/{wg_id}/          DrMAS: one folder per worker group (may contain a space),
 *                                         config and tokenizer in it, huggingface/ with 'hf_model'
 *
 * A step is complete once the tracker reached it (`max_actor_ckpt_to_keep` deletes older folders,
 * so a folder can also disappear).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CheckpointPolicy } from './records';
import { numberedEntries } from '../../util/numbered-entries';
import type { EngineAgent } from './spec';

export const TRACKER_FILE = 'latest_checkpointed_iteration.txt';

export function readTracker(dir: string): number | null {
  try {
    const text = fs.readFileSync(path.join(dir, TRACKER_FILE), 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

export function listStepFolders(dir: string): number[] {
  return numberedEntries(dir, /^global_step_(\d+)$/);
}

/** A Hugging Face folder with weights: config.json and a safetensors file or index. */
export function hfFolderWithWeights(dir: string): boolean {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return false;
  }
  return names.includes('config.json') && names.some((n) => n.endsWith('.safetensors') || n === 'model.safetensors.index.json');
}

/** The policies saved at one step, by worker group. */
export function checkpointPolicies(stepDir: string, engine: 'verl' | 'drmas', agents: readonly EngineAgent[]): CheckpointPolicy[] {
  const actor = path.join(stepDir, 'actor');
  const hf = (dir: string) => (hfFolderWithWeights(path.join(dir, 'huggingface')) ? path.join(dir, 'huggingface') : hfFolderWithWeights(dir) ? dir : null);
  if (engine === 'verl') {
    return fs.existsSync(actor) ? [{ roles: agents.map((a) => a.role).filter((r) => r !== null), wgId: 'actor', dir: actor, hfDir: hf(actor) }] : [];
  }
  const groups = [...new Set(agents.map((a) => a.wgId))];
  return groups
    .map((wgId) => ({ wgId, dir: path.join(actor, wgId) }))
    .filter((g) => fs.existsSync(g.dir))
    .map((g) => ({ roles: agents.filter((a) => a.wgId === g.wgId && a.role !== null).map((a) => a.role!), wgId: g.wgId, dir: g.dir, hfDir: hf(g.dir) }));
}
