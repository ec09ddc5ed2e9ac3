/**
 * The new-run form's engine block (issue 38), its pure parts: which engine a document trains
 * with, which of the block's fields apply to that engine, where each field is laid out, the
 * engine's refusals merged with the schema's, and the preview's one-line note of the version the
 * command was planned for.
 */
import type { ConfigField, ConfigIssue, EnginePreview } from '#shared/contract';
import type { ConfigDoc } from './configDoc';

export type EngineKind = 'studio' | 'verl' | 'drmas';

const ENGINE_NAMES: Record<string, string> = { studio: 'the Studio', verl: 'veRL', drmas: 'DrMAS' };

/** An engine's name as a researcher writes it (veRL, DrMAS). */
export function engineName(kind: string): string {
  return ENGINE_NAMES[kind] ?? kind;
}

/** Who trains the document: absent (or anything else) is the Studio's own trainer. */
export function engineKindOf(doc: ConfigDoc): EngineKind {
  const engine = doc.engine;
  const kind = engine !== null && typeof engine === 'object' ? (engine as Record<string, unknown>).kind : undefined;
  return kind === 'verl' || kind === 'drmas' ? kind : 'studio';
}

/** Whether the document trains on Ray, so there is a command to preview. */
export function isRayEngine(doc: ConfigDoc): boolean {
  return engineKindOf(doc) !== 'studio';
}

/** The engine block's fields only DrMAS reads (its checkout, its orchestra and hook). */
const DRMAS_ONLY = /^engine\.(working_dir|drmas\.)/;

/**
 * Whether a field of the engine block is shown for `kind`: none but the kind for the Studio's own
 * trainer, DrMAS's own only for DrMAS; a field with a problem is shown whatever the kind, so
 * every refusal stands at its field. (A value alone does not show one: a document read back from
 * a preset or a run has every default filled in, DrMAS's included.)
 */
export function engineFieldShown(path: string, kind: EngineKind, hasIssue: boolean): boolean {
  if (path === 'engine.kind' || hasIssue) return true;
  if (kind === 'studio') return false;
  return kind === 'drmas' || !DRMAS_ONLY.test(path);
}

export interface EngineSection {
  id: string;
  title: string;
  fields: ConfigField[];
}

/** Where each engine field is laid out, by its key after `engine.`; the rest go to "more". */
const SECTIONS: { id: string; title: string; keys: string[] }[] = [
  { id: 'where', title: 'where it runs', keys: ['address', 'token_env', 'python', 'version', 'model', 'nodes', 'gpus_per_node'] },
  { id: 'rollout', title: 'rollouts and batches', keys: ['rollout_engine', 'tensor_parallel', 'gpu_memory_utilization', 'micro_batch_per_gpu', 'max_prompt_tokens', 'truncation', 'tensorboard'] },
  { id: 'files', title: 'folders and data', keys: ['run_root', 'mount', 'working_dir', 'dataset.train', 'dataset.test'] },
  { id: 'drmas', title: 'DrMAS', keys: ['drmas.orchestra', 'drmas.hook'] },
  { id: 'overrides', title: 'Hydra overrides', keys: ['overrides'] },
];

/** The engine block's fields (all but `engine.kind`) in labelled sections, empty sections left out. */
export function engineSections(fields: readonly ConfigField[]): EngineSection[] {
  const own = fields.filter((f) => f.path.startsWith('engine.') && f.path !== 'engine.kind');
  const placed = new Set<string>();
  const out: EngineSection[] = SECTIONS.map((s) => {
    const list = s.keys.map((k) => own.find((f) => f.path === `engine.${k}`)).filter((f): f is ConfigField => f !== undefined);
    for (const f of list) placed.add(f.path);
    return { id: s.id, title: s.title, fields: list };
  });
  const rest = own.filter((f) => !placed.has(f.path));
  if (rest.length) out.splice(out.length - 1, 0, { id: 'more', title: 'more', fields: rest });
  return out.filter((s) => s.fields.length > 0);
}

/**
 * The form's problems: the schema's (validateConfig) and the engine's refusals (previewEngineRun),
 * each once. The preview checks the schema too, so its schema messages repeat validation's.
 */
export function mergedIssues(validation: readonly ConfigIssue[], preview: EnginePreview | null): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const seen = new Set<string>();
  for (const issue of [...validation, ...(preview && !preview.ok ? preview.issues : [])]) {
    const key = `${issue.path}\n${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(issue);
  }
  return out;
}

/** Where the preview's engine version came from, in one line under the command. */
export function versionNote(preview: Extract<EnginePreview, { ok: true }>): string {
  const name = `${engineName(preview.engine)} ${preview.engineVersion}`;
  if (preview.versionFrom === 'assumed') return `Planned for ${name}, the newest the Studio knows; the launch asks engine.python for its version.`;
  if (preview.versionFrom === 'engine.version') return `Planned for ${name}, as engine.version says; the launch still asks engine.python what it has.`;
  return `Planned for ${name}, the version engine.python reported.`;
}

/** The job's environment variables as `NAME=value` lines, by name. */
export function envLines(env: Record<string, string>): string[] {
  return Object.keys(env)
    .sort()
    .map((name) => `${name}=${env[name]}`);
}

/** The policy ids the document's agents use, in role order, each once (engine.model's per-policy keys). */
export function policiesInUse(doc: ConfigDoc, roles: readonly string[]): string[] {
  const agents = (doc.agents ?? {}) as Record<string, unknown>;
  const policies = Object.keys((doc.policies ?? {}) as Record<string, unknown>);
  const used = roles.map((r) => agents[r]).filter((p): p is string => typeof p === 'string');
  const list = used.length ? used : policies;
  return [...new Set(list)];
}

/**
 * engine.model switched between one model for every policy and one per policy: the per-policy
 * map starts with the single model for each policy, and the single model is the map's first.
 */
export function engineModelSwitched(value: unknown, perPolicy: boolean, policies: readonly string[]): unknown {
  if (perPolicy) {
    if (value !== null && typeof value === 'object') return value;
    const one = typeof value === 'string' && value !== '' ? value : undefined;
    return one === undefined ? {} : Object.fromEntries(policies.map((p) => [p, one]));
  }
  if (typeof value === 'string') return value;
  const first = value !== null && typeof value === 'object' ? Object.values(value as Record<string, unknown>).find((v) => typeof v === 'string' && v !== '') : undefined;
  return first;
}
