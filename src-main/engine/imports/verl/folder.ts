/**
 * Where a finished veRL or DrMAS run keeps its files, found in the folder a researcher hands the
 * Studio (issue 39). The config says where the trainer wrote (paths as the cluster saw them); the
 * folder is where they are now, so each configured path is looked for inside the folder: as given
 * when relative (relative to the launch folder, see hydra-config.ts), else by its trailing parts
 * (`/home/me/runs/x/rollout` → `rollout`). Without a config, the names veRL uses by default.
 *
 *  - metrics: the `file` logger's JSONL, `VERL_FILE_LOGGER_PATH` or by default
 *    `{VERL_FILE_LOGGER_ROOT=.}/{project_name}/{experiment_name}.jsonl` (veRL v0.7.0
 *    verl/utils/tracking.py:234-250); DrMAS has no file logger (its tracking.py), only console lines
 *    (a saved stdout: `step:N - key:value …`) or TensorBoard files;
 *  - dumps: `trainer.rollout_data_dir` / `trainer.validation_data_dir`, `{global_step}.jsonl` each
 *    (veRL v0.7.0 ray_trainer.py:440-466; DrMAS ray_trainer.py:689-711, rollout only);
 *  - checkpoints: `trainer.default_local_dir`, default `checkpoints/${trainer.project_name}/${trainer.experiment_name}`
 *    (veRL v0.7.0 ppo_trainer.yaml:196; DrMAS ppo_trainer.yaml:282), `global_step_N/` and
 *    `latest_checkpointed_iteration.txt` (veRL ray_trainer.py:938-1005; DrMAS ray_trainer.py:1012-1044);
 *  - TensorBoard: `TENSORBOARD_DIR` or `tensorboard_log/{project}/{experiment}` (tracking.py:256-265).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ImportIssue } from '#shared/contract';
import { isFolder } from '../../util/is-folder';
import { configString, configValue, findHydraConfig, readHydraConfig, type HydraConfig } from './hydra-config';

export type EngineKind = 'verl' | 'drmas';

export interface RunFolder {
  /** The folder imported (absolute); a metrics file given alone: its folder. */
  root: string;
  engine: EngineKind;
  hydra: HydraConfig | null;
  /** Paths relative to `root`; null when the run has none. */
  metricsFile: string | null;
  consoleLog: string | null;
  tensorboardDir: string | null;
  rolloutDir: string | null;
  validationDir: string | null;
  checkpointsDir: string | null;
  /** The first line of a dump, to tell DrMAS dumps (agent ids from the Studio's hook) apart. */
  dumpSample: Record<string, unknown> | null;
  /** DrMAS: the agent ids (and worker groups) the Studio's hook wrote in the first dump, in order of appearance. */
  dumpAgents: { agentId: string; wgId: string }[];
  issues: ImportIssue[];
}

const SNIFF_BYTES = 64 * 1024;

export function exists(file: string): boolean {
  return fs.existsSync(file);
}

export function entries(dir: string): fs.Dirent[] {
  try {
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** The first bytes of a file as text (never the whole of a large file). */
export function head(file: string, bytes = SNIFF_BYTES): string {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const buf = Buffer.alloc(bytes);
    const n = fs.readSync(fd, buf, 0, bytes, 0);
    return buf.toString('utf8', 0, n);
  } finally {
    fs.closeSync(fd);
  }
}

function firstJson(file: string): Record<string, unknown> | null {
  const text = head(file);
  const end = text.indexOf('\n');
  if (end < 0) return null;
  try {
    const v: unknown = JSON.parse(text.slice(0, end).replace(/\bNaN\b|-?Infinity\b/g, 'null'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A `{"step": N, "data": {…}}` first line: the file logger's (tracking.py:248-250). */
export function isMetricsJsonl(file: string): boolean {
  const first = firstJson(file);
  return first !== null && typeof first.step === 'number' && first.data !== null && typeof first.data === 'object';
}

/** A folder of `{N}.jsonl` dumps. */
export function isDumpDir(dir: string): boolean {
  return entries(dir).some((e) => e.isFile() && /^\d+\.jsonl$/.test(e.name));
}

export function isCheckpointDir(dir: string): boolean {
  return entries(dir).some((e) => (e.isDirectory() && /^global_step_\d+$/.test(e.name)) || e.name === 'latest_checkpointed_iteration.txt');
}

/** A configured path (absolute on the machine that trained, or relative to its launch folder) inside `root`, relative; null when not there. */
export function locate(root: string, configured: string, isWanted: (abs: string) => boolean): string | null {
  const norm = path.posix.normalize(configured.replace(/\\/g, '/'));
  if (!path.posix.isAbsolute(norm) && !norm.startsWith('..') && isWanted(path.join(root, norm))) return norm.replace(/\/$/, '');
  const parts = norm.split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
  for (let i = 0; i < parts.length; i++) {
    const rel = parts.slice(i).join('/');
    if (isWanted(path.join(root, rel))) return rel;
  }
  return null;
}

const DUMP_NAMES = { rollout: ['rollout', 'rollout_data', 'rollouts'], validation: ['validation', 'validation_data', 'val'] };

function findDumpDir(root: string, hydra: HydraConfig | null, key: 'rollout' | 'validation', issues: ImportIssue[]): string | null {
  const configured = hydra ? configString(hydra.config, `trainer.${key}_data_dir`) : null;
  if (configured !== null) {
    const found = locate(root, configured, isDumpDir);
    if (found !== null) return found;
    if (hydra) issues.push({ file: hydra.file, position: `trainer.${key}_data_dir`, message: `the config says ${key} dumps went to ${configured}; no {step}.jsonl files were found there inside the folder` });
    return null;
  }
  // Set in the config to null: the run dumped none (unless the folder holds the usual name anyway).
  return DUMP_NAMES[key].find((name) => isDumpDir(path.join(root, name))) ?? null;
}

function findCheckpoints(root: string, hydra: HydraConfig | null): string | null {
  const configured = hydra ? configString(hydra.config, 'trainer.default_local_dir') : null;
  if (configured !== null) {
    const found = locate(root, configured, isCheckpointDir);
    if (found !== null) return found;
  }
  if (isCheckpointDir(path.join(root, 'checkpoints'))) return 'checkpoints';
  for (const project of entries(path.join(root, 'checkpoints')).filter((e) => e.isDirectory())) {
    for (const exp of entries(path.join(root, 'checkpoints', project.name)).filter((e) => e.isDirectory())) {
      const rel = `checkpoints/${project.name}/${exp.name}`;
      if (isCheckpointDir(path.join(root, rel))) return rel;
    }
  }
  return isCheckpointDir(root) ? '.' : null;
}

/** The file logger's JSONL: the default `{project}/{experiment}.jsonl`, else any `{"step","data"}` JSONL at the top or one folder down. */
function findMetricsFile(root: string, hydra: HydraConfig | null): string | null {
  const project = hydra ? configString(hydra.config, 'trainer.project_name') : null;
  const experiment = hydra ? configString(hydra.config, 'trainer.experiment_name') : null;
  if (project && experiment) {
    const rel = `${project}/${experiment}.jsonl`;
    if (isMetricsJsonl(path.join(root, rel))) return rel;
  }
  const candidates: string[] = [];
  for (const e of entries(root)) {
    if (e.isFile() && e.name.endsWith('.jsonl')) candidates.push(e.name);
    else if (e.isDirectory() && !e.name.startsWith('.')) for (const f of entries(path.join(root, e.name))) if (f.isFile() && f.name.endsWith('.jsonl') && !/^\d+\.jsonl$/.test(f.name)) candidates.push(`${e.name}/${f.name}`);
  }
  return candidates.sort().find((rel) => isMetricsJsonl(path.join(root, rel))) ?? null;
}

/** A saved console output (`tee train.log`): a `.log`/`.out`/`.txt` at the top whose start has a `step:N - ` line (console.ts). */
function findConsoleLog(root: string): string | null {
  const logs = entries(root)
    .filter((e) => e.isFile() && /\.(log|out|txt)$/.test(e.name))
    .map((e) => e.name)
    .sort();
  return logs.find((name) => /(?:^|[^A-Za-z0-9_/])step:\d+ - /m.test(head(path.join(root, name), 1 << 20))) ?? null;
}

function findTensorBoard(root: string, hydra: HydraConfig | null): string | null {
  const project = hydra ? configString(hydra.config, 'trainer.project_name') : null;
  const experiment = hydra ? configString(hydra.config, 'trainer.experiment_name') : null;
  const hasEvents = (dir: string) => entries(dir).some((e) => e.isFile() && e.name.startsWith('events.out.tfevents.'));
  const rel = project && experiment ? `tensorboard_log/${project}/${experiment}` : null;
  if (rel !== null && hasEvents(path.join(root, rel))) return rel;
  return hasEvents(root) ? '.' : null;
}

/** DrMAS's config has its `agent` block (DrMAS ppo_trainer.yaml:293-306); its dumps with the Studio's hook carry agent ids. */
function engineOf(hydra: HydraConfig | null, dumpSample: Record<string, unknown> | null): EngineKind {
  if (hydra) return Array.isArray(configValue(hydra.config, 'agent.agent_ids')) ? 'drmas' : 'verl';
  return dumpSample !== null && ('agent_id' in dumpSample || 'wg_id' in dumpSample || 'traj_uid' in dumpSample) ? 'drmas' : 'verl';
}

function firstDump(root: string, dir: string | null): string | null {
  if (dir === null) return null;
  const first = entries(path.join(root, dir))
    .map((e) => /^(\d+)\.jsonl$/.exec(e.name))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))[0];
  return first ? path.join(root, dir, first[0]) : null;
}

/** The distinct `agent_id`/`wg_id` pairs of the first MiB of a dump (the hook writes both on every line). */
function agentsOfDump(file: string | null): { agentId: string; wgId: string }[] {
  const seen = new Map<string, string>();
  if (file === null) return [];
  for (const m of head(file, 1 << 20).matchAll(/"agent_id": ("(?:[^"\\]|\\.)*")/g)) {
    const agentId = JSON.parse(m[1]) as string;
    if (seen.has(agentId)) continue;
    const line = m.input.slice(m.input.lastIndexOf('\n', m.index) + 1, m.input.indexOf('\n', m.index));
    const wg = /"wg_id": ("(?:[^"\\]|\\.)*")/.exec(line);
    seen.set(agentId, wg ? (JSON.parse(wg[1]) as string) : agentId);
  }
  return [...seen].map(([agentId, wgId]) => ({ agentId, wgId }));
}

/** What the folder (or a metrics file given alone) holds. Throws when it holds nothing of a veRL or DrMAS run. */
export function inspectRunFolder(input: string): RunFolder {
  const given = path.resolve(input);
  if (!isFolder(given)) {
    if (!isMetricsJsonl(given)) throw new Error(`${given}: not a folder, nor a {"step", "data"} JSONL of veRL's file logger`);
    return { root: path.dirname(given), engine: 'verl', hydra: null, metricsFile: path.basename(given), consoleLog: null, tensorboardDir: null, rolloutDir: null, validationDir: null, checkpointsDir: null, dumpSample: null, dumpAgents: [], issues: [] };
  }
  const root = given;
  const issues: ImportIssue[] = [];
  const configFile = findHydraConfig(root);
  let hydra: HydraConfig | null = null;
  if (configFile !== null) {
    try {
      hydra = readHydraConfig(root, configFile);
    } catch (error) {
      issues.push({ file: configFile, position: '', message: `${(error as Error).message}; the folder is read without its config` });
    }
  }
  const rolloutDir = findDumpDir(root, hydra, 'rollout', issues);
  const validationDir = findDumpDir(root, hydra, 'validation', issues);
  const dump = firstDump(root, rolloutDir) ?? firstDump(root, validationDir);
  const dumpSample = dump === null ? null : firstJson(dump);
  return {
    root,
    engine: engineOf(hydra, dumpSample),
    hydra,
    metricsFile: findMetricsFile(root, hydra),
    consoleLog: findConsoleLog(root),
    tensorboardDir: findTensorBoard(root, hydra),
    rolloutDir,
    validationDir,
    checkpointsDir: findCheckpoints(root, hydra),
    dumpSample,
    dumpAgents: agentsOfDump(dump),
    issues,
  };
}

/** Whether the folder holds anything of a run: a config, metrics, dumps or checkpoints. */
export function holdsRun(folder: RunFolder): boolean {
  // A Hydra config alone counts only when it is a PPO trainer's (veRL's and DrMAS's have `actor_rollout_ref`).
  const ppoConfig = folder.hydra !== null && 'actor_rollout_ref' in folder.hydra.config;
  return ppoConfig || folder.metricsFile !== null || folder.rolloutDir !== null || folder.validationDir !== null || folder.checkpointsDir !== null || folder.consoleLog !== null;
}
