/**
 * Study matrix files: which config values to cross, over which seeds, on which base.
 *
 * ```yaml
 * name: quick-2x2                 # required: names the study and its runs
 * preset: quick                   # optional base preset
 * base: { optimization: { steps: 30 } }   # optional fragment merged over the preset
 * axes:                           # required: config key path → values (crossed in order)
 *   reward.scheme: [decoupled, shared]
 *   advantage.mode: [agentwise, global]
 *   # a value may also be a labelled fragment, for changes that touch several fields:
 *   # sharing: [{ label: shared, set: { agents: { solver: p, verifier: p, corrector: p }, policies: {...} } }, ...]
 * seeds: [1, 2]                   # required: a list, or a count N meaning 1..N
 * concurrency: 2                  # optional: runs at a time (default 1)
 * baseline: { reward.scheme: decoupled, advantage.mode: agentwise }   # optional: the group deltas are against
 * ```
 *
 * Every cell is expanded and validated against the run config schema before anything is
 * launched: a typo in the eighth cell must not be found after seven runs have finished.
 */
import YAML from 'yaml';
import { ConfigError, deepMerge, formatConfigIssues, presetDocument, type ConfigIssue } from '../config/load';
import { resolveConfig } from '../preflight';
import type { RunConfig } from '../config/schema';
import type { CellValue } from '../store/studies';

export interface AxisValue {
  /** What tables and charts call this value. */
  label: string;
  /** The config fragment this value sets. */
  set: Record<string, unknown>;
}

export interface StudyAxis {
  /** A config key path (`reward.scheme`) or, for fragment values, any name (`sharing`). */
  key: string;
  values: AxisValue[];
}

export interface StudyMatrix {
  name: string;
  description: string;
  preset: string | null;
  base: Record<string, unknown>;
  axes: StudyAxis[];
  seeds: number[];
  concurrency: number;
  /** Axis key → value label of the baseline group (defaults to the first value of every axis). */
  baseline: Record<string, string>;
}

export interface StudyCell {
  cellIndex: number;
  label: string;
  values: Record<string, CellValue>;
  seed: number;
  /** Fragment merged over the preset: base, then each axis value, then seed and name. */
  overrides: Record<string, unknown>;
  config: RunConfig;
}

export class MatrixError extends Error {
  constructor(
    readonly issues: ConfigIssue[],
    readonly source?: string,
  ) {
    super(`invalid study matrix${source ? ` ${source}` : ''}:\n${formatConfigIssues(issues).replace(/^.*\n/, '')}`);
    this.name = 'MatrixError';
  }
}

export const MAX_CELLS = 512;
export const MAX_CONCURRENCY = 32;
const TOP_LEVEL = ['name', 'description', 'preset', 'base', 'axes', 'seeds', 'concurrency', 'baseline'];

const isMapping = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isScalar = (v: unknown): v is CellValue => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** `a.b.c` + value → `{a: {b: {c: value}}}`. */
export function fragmentAt(keyPath: string, value: unknown): Record<string, unknown> {
  return keyPath
    .split('.')
    .reverse()
    .reduce<unknown>((inner, segment) => ({ [segment]: inner }), value) as Record<string, unknown>;
}

/** Parse a matrix document (already read from YAML/JSON). Collects every problem, then throws one MatrixError. */
export function parseMatrix(doc: unknown, source?: string): StudyMatrix {
  const issues: ConfigIssue[] = [];
  const issue = (path: string, message: string, value?: unknown) => issues.push({ path, message, value });
  if (!isMapping(doc)) throw new MatrixError([{ path: '', message: 'a study matrix is a mapping with name, axes and seeds (see resources/studies/quick-2x2.yaml)', value: doc }], source);

  for (const key of Object.keys(doc)) {
    if (!TOP_LEVEL.includes(key)) issue(key, `unknown field; a matrix has ${TOP_LEVEL.join(', ')}`);
  }

  const name = doc.name;
  if (typeof name !== 'string' || name.trim() === '' || name.length > 120) issue('name', 'required: a name of 1–120 characters, e.g. `name: quick-2x2`', name);
  const description = typeof doc.description === 'string' ? doc.description : '';
  if (doc.description !== undefined && typeof doc.description !== 'string') issue('description', 'must be text', doc.description);

  let preset: string | null = null;
  if (doc.preset !== undefined && doc.preset !== null) {
    if (typeof doc.preset !== 'string') issue('preset', 'must be a preset name such as `quick` (see `marsrl presets`)', doc.preset);
    else {
      try {
        presetDocument(doc.preset);
        preset = doc.preset;
      } catch (error) {
        issue('preset', error instanceof ConfigError ? error.issues[0].message : String(error), doc.preset);
      }
    }
  }

  let base: Record<string, unknown> = {};
  if (doc.base !== undefined && doc.base !== null) {
    if (!isMapping(doc.base)) issue('base', 'must be a mapping of config fields merged over the preset, e.g. `base: { optimization: { steps: 10 } }`', doc.base);
    else base = doc.base;
  }

  const axes: StudyAxis[] = [];
  if (!isMapping(doc.axes) || Object.keys(doc.axes).length === 0) {
    issue('axes', 'required: a mapping of config key → list of values, e.g. `axes: { reward.scheme: [decoupled, shared] }`', doc.axes);
  } else {
    for (const [key, rawValues] of Object.entries(doc.axes)) {
      const at = `axes.${key}`;
      if (!/^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/.test(key)) {
        issue(at, 'an axis key is a config path such as `advantage.mode`');
        continue;
      }
      if (!Array.isArray(rawValues) || rawValues.length === 0) {
        issue(at, 'must be a non-empty list of values, e.g. [agentwise, global]', rawValues);
        continue;
      }
      const values: AxisValue[] = [];
      rawValues.forEach((raw, i) => {
        if (isScalar(raw)) values.push({ label: String(raw), set: fragmentAt(key, raw) });
        else if (isMapping(raw) && typeof raw.label === 'string' && isMapping(raw.set)) values.push({ label: raw.label, set: raw.set });
        else issue(`${at}[${i}]`, 'a value is a scalar (set at the axis key) or { label: TEXT, set: { config fragment } }', raw);
      });
      const labels = values.map((v) => v.label);
      const dup = labels.find((l, i) => labels.indexOf(l) !== i);
      if (dup !== undefined) issue(at, `value "${dup}" appears twice; each value is one group`);
      axes.push({ key, values });
    }
  }

  let seeds: number[] = [];
  const rawSeeds = doc.seeds;
  if (typeof rawSeeds === 'number' && Number.isInteger(rawSeeds) && rawSeeds >= 1 && rawSeeds <= 100) seeds = Array.from({ length: rawSeeds }, (_, i) => i + 1);
  else if (Array.isArray(rawSeeds) && rawSeeds.length > 0 && rawSeeds.every((s) => Number.isInteger(s) && s >= 0 && s <= 2 ** 31 - 1)) {
    seeds = rawSeeds as number[];
    if (new Set(seeds).size !== seeds.length) issue('seeds', 'seeds repeat; a repeated seed reruns the same run', rawSeeds);
  } else issue('seeds', 'required: a list of integer seeds such as [1, 2, 3], or a count from 1 to 100', rawSeeds);

  let concurrency = 1;
  if (doc.concurrency !== undefined) {
    if (typeof doc.concurrency === 'number' && Number.isInteger(doc.concurrency) && doc.concurrency >= 1 && doc.concurrency <= MAX_CONCURRENCY) concurrency = doc.concurrency;
    else issue('concurrency', `must be an integer from 1 to ${MAX_CONCURRENCY} (runs at a time; about one per CPU core)`, doc.concurrency);
  }

  const baseline: Record<string, string> = {};
  for (const axis of axes) if (axis.values.length) baseline[axis.key] = axis.values[0].label;
  if (doc.baseline !== undefined && doc.baseline !== null) {
    if (!isMapping(doc.baseline)) issue('baseline', 'must map axis keys to one of their values, e.g. `baseline: { reward.scheme: decoupled }`', doc.baseline);
    else {
      for (const [key, value] of Object.entries(doc.baseline)) {
        const axis = axes.find((a) => a.key === key);
        if (!axis) issue(`baseline.${key}`, `not an axis; axes are ${axes.map((a) => a.key).join(', ')}`);
        else if (!axis.values.some((v) => v.label === String(value))) issue(`baseline.${key}`, `"${String(value)}" is not one of ${axis.values.map((v) => v.label).join(', ')}`, value);
        else baseline[key] = String(value);
      }
    }
  }

  const cells = axes.reduce((n, a) => n * Math.max(a.values.length, 1), 1) * Math.max(seeds.length, 1);
  if (cells > MAX_CELLS) issue('axes', `the matrix has ${cells} runs; at most ${MAX_CELLS} are allowed in one study — split it`);

  if (issues.length) throw new MatrixError(issues, source);
  return { name: (name as string).trim(), description, preset, base, axes, seeds, concurrency, baseline };
}

/** Read YAML (or JSON) text into a matrix. */
export function parseMatrixText(text: string, source: string): StudyMatrix {
  const doc = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length) {
    throw new MatrixError(doc.errors.map((e) => ({ path: '', message: `malformed YAML: ${e.message.split('\n')[0]}` })), source);
  }
  return parseMatrix(doc.toJS(), source);
}

/**
 * Every axis value × every seed, axes varying slowest-first (the first axis is the outer loop,
 * seeds innermost), each resolved to a full run config. Fails with every invalid cell named.
 */
export function expandMatrix(matrix: StudyMatrix): StudyCell[] {
  const presetDoc = matrix.preset ? presetDocument(matrix.preset) : {};
  let combos: { values: Record<string, CellValue>; fragment: Record<string, unknown> }[] = [{ values: {}, fragment: {} }];
  for (const axis of matrix.axes) {
    combos = combos.flatMap((c) => axis.values.map((v) => ({ values: { ...c.values, [axis.key]: v.label }, fragment: deepMerge(c.fragment, v.set) })));
  }
  const cells: StudyCell[] = [];
  const issues: ConfigIssue[] = [];
  for (const combo of combos) {
    for (const seed of matrix.seeds) {
      const label = [...Object.entries(combo.values).map(([k, v]) => `${k}=${v}`), `seed=${seed}`].join(', ');
      const overrides = deepMerge(deepMerge(matrix.base, combo.fragment), { seed, name: `${matrix.name} ${label}` });
      try {
        const config = resolveConfig(deepMerge(presetDoc, overrides));
        cells.push({ cellIndex: cells.length, label, values: combo.values, seed, overrides, config });
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        for (const i of error.issues) issues.push({ ...i, path: `cell [${label}] ${i.path}`.trim() });
      }
    }
  }
  if (issues.length) throw new MatrixError(issues);
  return cells;
}

/** A matrix as stored with its study: JSON-safe and re-parseable by parseMatrix (values in {label, set} form). */
export function matrixToDocument(matrix: StudyMatrix): Record<string, unknown> {
  return {
    name: matrix.name,
    description: matrix.description,
    preset: matrix.preset,
    base: matrix.base,
    axes: Object.fromEntries(matrix.axes.map((a) => [a.key, a.values.map((v) => ({ label: v.label, set: v.set }))])),
    seeds: matrix.seeds,
    concurrency: matrix.concurrency,
    baseline: matrix.baseline,
  };
}
