/**
 * Reading run configurations: YAML or JSON files, presets shipped in resources/presets,
 * `--set a.b=value` overrides, and validation errors that name every offending field, the value
 * given and what is allowed.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { resourcesDir } from '../resources';
import { RunConfigSchema, type RunConfig } from './schema';
import { ROLES } from '#shared/agents';
import { FileRefusedError, LIMITS, readTextFile } from '../util/bounded-read';

export interface ConfigIssue {
  /** Dotted field path, e.g. `rollout.solver_group`; empty for the whole document. */
  path: string;
  message: string;
  value?: unknown;
}

/** A configuration that cannot be used; `issues` lists every problem found, not just the first. */
export class ConfigError extends Error {
  constructor(
    readonly issues: ConfigIssue[],
    readonly source?: string,
  ) {
    super(formatConfigIssues(issues, source));
    this.name = 'ConfigError';
  }
}

export function formatConfigIssues(issues: readonly ConfigIssue[], source?: string): string {
  const header = `Invalid configuration${source ? ` (${source})` : ''}: ${issues.length} problem${issues.length === 1 ? '' : 's'}`;
  const lines = issues.map((issue) => {
    const where = issue.path || '(document)';
    const given = issue.value === undefined ? '' : ` (got ${describeValue(issue.value)})`;
    return `  ${where}: ${issue.message}${given}`;
  });
  return [header, ...lines].join('\n');
}

function describeValue(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function valueAt(root: unknown, segments: readonly PropertyKey[]): unknown {
  let node = root;
  for (const segment of segments) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[segment];
  }
  return node;
}

/** Turn zod's issues into field paths, messages that say what is allowed, and the values given. */
export function issuesFromZod(error: z.ZodError, input: unknown): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  collectIssues(error.issues, [], input, out);
  return out;
}

type ZodIssue = z.core.$ZodIssue;

/** Whether a union branch's issues say the value's `kind` is not this branch's. */
function rejectsKind(branch: readonly ZodIssue[]): boolean {
  return branch.some((i) => i.code === 'invalid_value' && i.path.length === 1 && i.path[0] === 'kind');
}

function collectIssues(issues: readonly ZodIssue[], prefix: readonly PropertyKey[], input: unknown, out: ConfigIssue[]): void {
  for (const raw of issues) {
    const issue = { ...raw, path: [...prefix, ...raw.path] } as ZodIssue;
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // A union told apart by `kind` (a policy's model: gpt or hf): report the issues of the branch
      // the value's kind selects, not zod's "Invalid input" over every branch.
      const fitting = issue.errors.filter((branch) => !rejectsKind(branch));
      if (fitting.length > 0) {
        collectIssues(fitting[0], issue.path, input, out);
        continue;
      }
      if (issue.errors.every(rejectsKind)) {
        const kinds = issue.errors.flatMap((branch) => branch.flatMap((i) => (i.code === 'invalid_value' && i.path[0] === 'kind' ? i.values : [])));
        out.push({ path: [...issue.path, 'kind'].map(String).join('.'), message: `must be one of ${kinds.map((v) => JSON.stringify(v)).join(', ')}`, value: valueAt(input, [...issue.path, 'kind']) });
        continue;
      }
    }
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const full = [...issue.path, key];
        const parentValue = valueAt(input, issue.path);
        const allowed = parentValue && typeof parentValue === 'object' ? allowedKeysAt(issue.path, input) : [];
        out.push({
          path: full.map(String).join('.'),
          message: `unknown key${allowed.length ? `; allowed keys here: ${allowed.join(', ')}` : ''}`,
        });
      }
      continue;
    }
    // A key pasted where its variable's name belongs must not be echoed into an error or a log.
    const secret = issue.path.some((p) => p === 'api_key_env');
    const value = secret ? undefined : valueAt(input, issue.path);
    out.push({ path: issue.path.map(String).join('.'), message: missingModelFolder(issue, value) ?? explain(issue), value });
  }
}

/**
 * A Hugging Face policy without its folder (the qwen-lora preset leaves it to the user, issue #14):
 * say which setting to give rather than zod's "must be a string".
 */
function missingModelFolder(issue: z.core.$ZodIssue, value: unknown): string | null {
  const [root, id, model, field] = issue.path;
  if (issue.code !== 'invalid_type' || value !== undefined || issue.path.length !== 4 || root !== 'policies' || model !== 'model' || field !== 'path') return null;
  const key = `policies.${String(id)}.model.path`;
  return `missing: set ${key} (or --set ${key}=DIR) to your downloaded Qwen folder (or another Hugging Face model: the folder holding config.json, model.safetensors and tokenizer.json)`;
}

function explain(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'too_small':
      return `must be ${issue.inclusive === false ? 'greater than' : 'at least'} ${String(issue.minimum)}`;
    case 'too_big':
      return `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_key':
      return `invalid key: ${issue.issues.map((inner) => inner.message).join('; ')}`;
    case 'invalid_type':
      return `must be ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}`;
    default:
      return issue.message;
  }
}

/** Keys the schema accepts at a path, for "did you mean" style messages. */
function allowedKeysAt(segments: readonly PropertyKey[], input: unknown): string[] {
  let schema: z.ZodType = RunConfigSchema as unknown as z.ZodType;
  const pick = (at: number): z.ZodType => {
    const inner = unwrap(schema);
    if (!(inner instanceof z.ZodUnion)) return inner;
    // The branch whose `kind` literal is the value's (a policy's model), else the first.
    const kind = valueAt(input, [...segments.slice(0, at), 'kind']);
    const options = inner.options as z.ZodType[];
    const match = options.find((o) => {
      const shape = unwrap(o) instanceof z.ZodObject ? ((unwrap(o) as z.ZodObject).shape as Record<string, z.ZodType>) : {};
      const literal = shape.kind ? unwrap(shape.kind) : null;
      return literal instanceof z.ZodLiteral && literal.values.has(kind as never);
    });
    return unwrap(match ?? options[0]);
  };
  for (let at = 0; at < segments.length; at++) {
    const inner = pick(at);
    const segment = segments[at];
    if (inner instanceof z.ZodObject) {
      const next = (inner.shape as Record<string, z.ZodType>)[String(segment)];
      if (!next) return [];
      schema = next;
    } else if (inner instanceof z.ZodRecord) {
      schema = inner.valueType as z.ZodType;
    } else {
      return [];
    }
  }
  const inner = pick(segments.length);
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  for (let i = 0; i < 10; i++) {
    const def = (current as unknown as { def: { type: string; innerType?: z.ZodType; in?: z.ZodType; schema?: z.ZodType } }).def;
    if ((def.type === 'default' || def.type === 'prefault' || def.type === 'optional' || def.type === 'nullable') && def.innerType) {
      current = def.innerType;
    } else if (def.type === 'pipe' && def.in) {
      current = def.in;
    } else {
      return current;
    }
  }
  return current;
}

/**
 * `--set policies.solver.optimizer.lr=3e-4` alone must not make the Verifier's and Corrector's
 * default policies disappear: a role whose agent entry is left at its default id gets a
 * default policy of that id when `policies` does not define it. A custom id that is not
 * defined still fails validation with the list of defined ones.
 */
function withRolePolicies(input: unknown): unknown {
  if (!isPlainObject(input) || !isPlainObject(input.policies)) return input ?? {};
  const agents = isPlainObject(input.agents) ? input.agents : {};
  const policies: Record<string, unknown> = { ...input.policies };
  for (const role of ROLES) {
    if (agents[role] === undefined && policies[role] === undefined) policies[role] = {};
  }
  return { ...input, policies };
}

/**
 * Validate a parsed document against the schema alone; returns the fully resolved config (every
 * default filled in). Reads nothing: where a config enters from outside, preflight/'s
 * `resolveConfig` adds what only this machine can say, in the same pass. `schema`: the schema to
 * parse with (preflight's adds its rules).
 */
export function parseRunConfig(input: unknown, source?: string, schema: typeof RunConfigSchema = RunConfigSchema): RunConfig {
  const result = schema.safeParse(withRolePolicies(input));
  if (!result.success) throw new ConfigError(issuesFromZod(result.error, input), source);
  return result.data;
}

/** `parseRunConfig` as a verdict: the config, or every issue. */
export function checkRunConfig(input: unknown, schema: typeof RunConfigSchema = RunConfigSchema): { ok: true; config: RunConfig } | { ok: false; issues: ConfigIssue[] } {
  const result = schema.safeParse(withRolePolicies(input));
  return result.success ? { ok: true, config: result.data } : { ok: false, issues: issuesFromZod(result.error, input) };
}

/** Parse YAML or JSON text (JSON is YAML, but JSON files get JSON's stricter errors). */
export function parseConfigText(text: string, source: string): unknown {
  if (source.endsWith('.json')) {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new ConfigError([{ path: '', message: `malformed JSON: ${(error as Error).message}` }], source);
    }
  }
  const doc = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.map((e) => ({ path: '', message: `malformed YAML: ${e.message.split('\n')[0]}${e.linePos ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : ''}` })),
      source,
    );
  }
  const value = doc.toJS() as unknown;
  if (value !== null && value !== undefined && (typeof value !== 'object' || Array.isArray(value))) {
    throw new ConfigError([{ path: '', message: 'a configuration must be a mapping of fields (e.g. `seed: 1`)', value }], source);
  }
  return value ?? {};
}

export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    // A regular file of bounded size (issue #36): a FIFO would block this thread forever.
    text = readTextFile(file, { maxBytes: LIMITS.settings, what: 'config file' });
  } catch (error) {
    const refused = error instanceof FileRefusedError ? error : null;
    const reason = refused?.code === 'ENOENT' ? 'no such file' : refused ? refused.message.replace(`${file}: `, '') : (error as Error).message;
    throw new ConfigError([{ path: '', message: `cannot read config file: ${reason}` }], file);
  }
  return parseConfigText(text, file) as Record<string, unknown>;
}

/**
 * Apply `a.b=value` overrides. Values are read as YAML scalars/flow values, so numbers,
 * booleans, `null` and `[1, 2]` mean what they look like; quote to force a string.
 */
export function applyOverrides(base: Record<string, unknown>, overrides: readonly string[]): Record<string, unknown> {
  const result = structuredClone(base);
  const issues: ConfigIssue[] = [];
  for (const override of overrides) {
    const eq = override.indexOf('=');
    if (eq <= 0) {
      issues.push({ path: override, message: 'an override must look like key.path=value, e.g. --set rollout.solver_group=4' });
      continue;
    }
    const keyPath = override.slice(0, eq).trim();
    const rawValue = override.slice(eq + 1);
    const segments = keyPath.split('.');
    if (segments.some((s) => s === '' || s === '__proto__' || s === 'constructor' || s === 'prototype')) {
      issues.push({ path: keyPath, message: 'invalid key path in override' });
      continue;
    }
    let value: unknown;
    try {
      value = rawValue === '' ? '' : YAML.parse(rawValue);
    } catch {
      value = rawValue;
    }
    let node: Record<string, unknown> = result;
    for (const segment of segments.slice(0, -1)) {
      const next = node[segment];
      if (next === undefined || next === null) {
        node[segment] = {};
      } else if (typeof next !== 'object' || Array.isArray(next)) {
        issues.push({ path: keyPath, message: `cannot set a field inside ${segment}, which is not a mapping` });
        node = {};
        break;
      }
      node = node[segment] as Record<string, unknown>;
    }
    node[segments[segments.length - 1]] = value;
  }
  if (issues.length) throw new ConfigError(issues, '--set');
  return result;
}

export interface PresetEntry {
  name: string;
  description: string;
  file: string;
}

export function presetsDir(): string {
  return path.join(resourcesDir(), 'presets');
}

/** Presets are YAML files; the first comment line is the one-line description. */
export function listPresets(): PresetEntry[] {
  const dir = presetsDir();
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => {
      const file = path.join(dir, f);
      const firstLine = fs.readFileSync(file, 'utf8').split('\n')[0] ?? '';
      return { name: f.replace(/\.yaml$/, ''), description: firstLine.startsWith('#') ? firstLine.replace(/^#\s*/, '') : '', file };
    });
}

export function presetDocument(name: string): Record<string, unknown> {
  const preset = listPresets().find((p) => p.name === name);
  if (!preset) {
    throw new ConfigError([{ path: '', message: `unknown preset "${name}"; known presets: ${listPresets().map((p) => p.name).join(', ')}` }], '--preset');
  }
  return readConfigFile(preset.file);
}

export interface ConfigSources {
  preset?: string;
  file?: string;
  overrides?: readonly string[];
}

/**
 * preset → file → overrides, each layer deep-merged over the last: the document a run's config is
 * resolved from (preflight/loadRunConfig validates it once). A file may name its base with
 * `preset: NAME`.
 */
export function runConfigDocument(sources: ConfigSources): { doc: Record<string, unknown>; preset: string | null; source: string | undefined } {
  let doc: Record<string, unknown> = {};
  let preset = sources.preset ?? null;
  let fileDoc: Record<string, unknown> | null = null;
  if (sources.file) {
    fileDoc = readConfigFile(sources.file);
    if (typeof fileDoc.preset === 'string') {
      if (preset && preset !== fileDoc.preset) {
        throw new ConfigError([{ path: 'preset', message: `the file names preset "${fileDoc.preset}" but --preset ${preset} was given; use one`, value: fileDoc.preset }], sources.file);
      }
      preset = fileDoc.preset;
    }
    delete fileDoc.preset;
  }
  if (preset) doc = presetDocument(preset);
  if (fileDoc) doc = deepMerge(doc, fileDoc);
  if (sources.overrides?.length) doc = applyOverrides(doc, sources.overrides);
  return { doc, preset, source: sources.file ?? (preset ? `preset ${preset}` : undefined) };
}

/** The config with the jsonl task path made absolute, so a worker started elsewhere reads the same file. */
export function withAbsoluteTaskPaths(config: RunConfig): RunConfig {
  if (config.task.family !== 'jsonl' || !config.task.jsonl_path) return config;
  return { ...config, task: { ...config.task, jsonl_path: path.resolve(config.task.jsonl_path) } };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isPlainObject(value) && isPlainObject(out[key]) ? deepMerge(out[key] as Record<string, unknown>, value) : value;
  }
  return out;
}

/** A resolved config written back as YAML (for `config print` and run folders). */
export function configToYaml(config: RunConfig): string {
  return YAML.stringify(config, { lineWidth: 0 });
}
