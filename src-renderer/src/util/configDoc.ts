/**
 * Reading and writing a configuration document by dotted path, and turning what a user typed
 * into the value the schema should judge. Pure, so the form's behaviour is tested directly.
 */
import type { ConfigField } from '#shared/contract';

export type ConfigDoc = Record<string, unknown>;

const UNSAFE = new Set(['__proto__', 'constructor', 'prototype']);

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function getPath(doc: ConfigDoc, path: string): unknown {
  let node: unknown = doc;
  for (const part of path.split('.')) {
    if (!isObject(node)) return undefined;
    node = node[part];
  }
  return node;
}

/** Sets (or, with undefined, removes) the value at `path`, creating objects on the way. */
export function setPath(doc: ConfigDoc, path: string, value: unknown): void {
  const parts = path.split('.');
  if (parts.some((p) => UNSAFE.has(p) || p === '')) throw new Error(`invalid config path ${path}`);
  let node: Record<string, unknown> = doc;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
}

const NUMBER_TEXT = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

/**
 * The value a typed text stands for. Text that is not a number is passed on as text, so the
 * schema (the same one the CLI uses) says what is wrong, in its own words; an emptied optional
 * field is left out.
 */
export function valueFromText(field: Pick<ConfigField, 'kind' | 'optional' | 'default'>, text: string): unknown {
  const trimmed = text.trim();
  if (field.kind === 'integer' || field.kind === 'number') {
    if (trimmed === '') return field.optional ? undefined : '';
    return NUMBER_TEXT.test(trimmed) ? Number(trimmed) : text;
  }
  if (field.kind === 'string') return trimmed === '' && field.optional ? undefined : text;
  return text;
}

export function textOfValue(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') return String(value);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The fields of one policy (`policies.*.model.d_model` …) as a nested object of their defaults. */
export function policyDefaults(fields: readonly ConfigField[]): ConfigDoc {
  const out: ConfigDoc = {};
  for (const field of fields) {
    if (!field.path.startsWith('policies.*.') || field.default === undefined) continue;
    // Only the default kind's fields (a new policy's model is a GPT, without the hf folder's).
    if (field.whenKind !== undefined && field.whenKind !== kindDefault(fields, field.path)) continue;
    setPath(out, field.path.slice('policies.*.'.length), structuredClone(field.default));
  }
  return out;
}

/** Paths whose value differs between two documents (leaves only), for "changed" markers. */
export function changedPaths(base: ConfigDoc, doc: ConfigDoc, prefix = ''): Set<string> {
  const out = new Set<string>();
  const keys = new Set([...Object.keys(base), ...Object.keys(doc)]);
  for (const key of keys) {
    const path = prefix ? `${prefix}.${key}` : key;
    const a = base[key];
    const b = doc[key];
    if (isObject(a) && isObject(b)) {
      for (const p of changedPaths(a, b, path)) out.add(p);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.add(path);
    }
  }
  return out;
}

/** The default of the `kind` beside a field (`policies.*.model.kind` for `policies.*.model.d_model`). */
export function kindDefault(fields: readonly ConfigField[], path: string): unknown {
  const kindPath = `${path.slice(0, path.lastIndexOf('.'))}.kind`;
  return fields.find((f) => f.path === kindPath)?.default;
}
