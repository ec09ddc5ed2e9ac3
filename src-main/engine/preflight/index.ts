/**
 * Preflight (issue 37): every check of a run config that needs this machine — the files it names
 * (a math or jsonl task file, a Hugging Face model folder and its LoRA targets), and whether the
 * run fits this machine's memory — kept out of the schema, which stays pure (config/schema.ts).
 * It runs where a config enters from outside (the CLI, the API's validate and launch, a study):
 * `resolveConfig` / `validateConfig` parse with the schema and these rules in one pass, so every
 * problem is reported at once and at the field it is about (issue 18); `taskFileIssues` and
 * `endpointEnvIssues` (served/config.ts) are what is checked of a parsed config before a run is
 * created. A stored run's config passed them when it was launched: the worker only parses it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runConfigSchema, type HfModelConfig, type MachineRules, type RefinementContext, type RunConfig } from '../config/schema';
import { checkRunConfig, ConfigError, parseRunConfig, runConfigDocument, type ConfigIssue, type ConfigSources } from '../config/load';
import type { HfArchConfig } from '../hf/config';
import { loraSettingsFromBlock, loraSettingsProblems } from '../hf/lora-settings';
import { endpointEnvIssues } from '../served/config';
import { parseJsonlRecords, type JsonlChecker } from '../tasks/jsonl';
import { checkMathFile } from '../tasks/math-data';
import { FileRefusedError, readTextFile } from '../util/bounded-read';
import { checkHfModelFolder } from './model-folder';
import { runSizeProblems } from './run-size';

/** The schema's hooks, filled in with this machine's answers. */
const MACHINE_RULES: MachineRules = {
  mathFile: (file) => checkMathFile(file),
  modelFolder(id: string, model: HfModelConfig, ctx: RefinementContext) {
    const checked = checkHfModelFolder(model.path);
    if (!checked.ok) {
      ctx.addIssue({ code: 'custom', path: ['policies', id, 'model', 'path'], message: checked.message });
      return null;
    }
    if (model.lora) {
      for (const p of loraSettingsProblems(checked.config, loraSettingsFromBlock(model.lora))) {
        ctx.addIssue({ code: 'custom', path: ['policies', id, 'model', 'lora', p.field], message: p.message });
      }
    }
    return { context: checked.context, detail: checked.config };
  },
  runSize(cfg, folders, ctx) {
    for (const issue of runSizeProblems(cfg as RunConfig, folders as ReadonlyMap<string, HfArchConfig>)) ctx.addIssue({ code: 'custom', path: issue.path.split('.'), message: issue.message });
  },
};

/** The run-config schema with this machine's rules: the same fields, defaults and messages. */
export const CheckedRunConfigSchema = runConfigSchema(MACHINE_RULES);

/** Validate a document as the schema does, and against this machine, in one pass; the resolved config. */
export function resolveConfig(input: unknown, source?: string): RunConfig {
  return parseRunConfig(input, source, CheckedRunConfigSchema);
}

/** `resolveConfig` as a verdict: the config, or every issue. */
export function validateConfig(input: unknown): { ok: true; config: RunConfig } | { ok: false; issues: ConfigIssue[] } {
  return checkRunConfig(input, CheckedRunConfigSchema);
}

/**
 * What is checked of a parsed config before a run is created (the API's validate and launch):
 * its task file (`taskFileIssues`), then each endpoint's API key variable, set and approved for
 * its hosts on this machine (served/config.ts, issue #36).
 */
export function machineIssues(config: RunConfig, env: NodeJS.ProcessEnv = process.env): ConfigIssue[] {
  return [...taskFileIssues(config), ...endpointEnvIssues(config, env)];
}

/** preset → file → overrides (config/load.ts, `runConfigDocument`), then validated once, task file included. */
export function loadRunConfig(sources: ConfigSources): { config: RunConfig; preset: string | null } {
  const { doc, preset, source } = runConfigDocument(sources);
  const config = resolveConfig(doc, source);
  const fileIssues = taskFileIssues(config);
  if (fileIssues.length) throw new ConfigError(fileIssues, source);
  return { config, preset };
}

/**
 * The files a config names, checked before a run is created (issue 18: a missing jsonl file
 * passed validation, created a run, then killed the rollout worker with a stack trace): the
 * jsonl task file exists, is a readable file and every line is a {"question","answer"} object.
 * Relative paths are read from the working directory, as the run reads them (see
 * `withAbsoluteTaskPaths`).
 */
export function taskFileIssues(config: Pick<RunConfig, 'task'>): ConfigIssue[] {
  const { family, jsonl_path: file, checker } = config.task;
  if (family !== 'jsonl' || !file) return [];
  const full = path.resolve(file);
  const issue = (message: string): ConfigIssue[] => [{ path: 'task.jsonl_path', message, value: file }];
  const stat = fs.statSync(full, { throwIfNoEntry: false });
  if (!stat) return issue(`no file at ${full}; give the path of a {"question","answer"} JSONL file`);
  if (stat.isDirectory()) return issue(`${full} is a folder, not a JSONL file`);
  let text: string;
  try {
    text = readTextFile(full, { what: 'task file' });
  } catch (error) {
    return issue(error instanceof FileRefusedError ? error.message : `cannot read ${full} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  try {
    parseJsonlRecords(text, full, checker as JsonlChecker);
  } catch (error) {
    return issue((error as Error).message);
  }
  return [];
}
