/**
 * Hydra overrides as veRL and DrMAS receive them (`python3 -m verl.trainer.main_ppo key=value …`),
 * and the shell line Ray runs them through.
 *
 * Hydra's override grammar (hydra/_internal/config_loader_impl.py, 1.3): `key=value` needs `key` in
 * the composed config (struct mode); `+key=value` adds a key that is absent or null; `++key=value`
 * adds or replaces; `~key` deletes. A value with spaces, commas, `=`, `:`, brackets or quotes is
 * quoted; a string that reads as another type (`true`, `null`, `1.5`) is quoted to stay a string.
 * Ray runs the entrypoint with `subprocess.Popen(entrypoint, shell=True)` (job_supervisor.py
 * `_exec_entrypoint`), so each argv element is then shell-quoted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { resourcesDir } from '../resources';

/** A number that the engine's config types as a float: written with a decimal point (`1.0`, `1e-06`). */
export class HydraFloat {
  constructor(readonly value: number) {}
}

export const float = (value: number): HydraFloat => new HydraFloat(value);

export type HydraValue = string | number | boolean | null | HydraFloat | readonly HydraValue[];
export type OverrideMode = '' | '+' | '++' | '~';

export interface Override {
  mode: OverrideMode;
  key: string;
  /** The value as Hydra reads it (already formatted); absent for `~key`. */
  value?: string;
}

/** An unquoted Hydra string: no character the grammar treats specially. */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./@~+-]*$/;
/** Words Hydra would read as another type. */
const TYPED_WORDS = /^(true|false|null|nan|inf|-inf|\+inf)$/i;

/**
 * Python's float repr (shortest round-trip digits; exponent below 1e-4 and from 1e16, else fixed
 * with at least one decimal): what a Python user reads in veRL's own logs, and a float to Hydra.
 */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const [mantissa, expText] = x.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = x < 0 ? '-' : '';
  if (exp >= 0) return `${sign}${digits.slice(0, exp + 1).padEnd(exp + 1, '0')}.${digits.slice(exp + 1) || '0'}`;
  return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
}

/** A number as Hydra reads it back: integers stay integers, floats keep a decimal point or exponent. */
function formatNumber(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`cannot pass ${n} to Hydra`);
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return String(n);
  return pythonFloatRepr(n);
}

function quote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** A value in Hydra's override grammar. */
export function formatValue(value: HydraValue): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return formatNumber(value);
  if (value instanceof HydraFloat) {
    if (!Number.isFinite(value.value)) throw new Error(`cannot pass ${value.value} to Hydra`);
    return pythonFloatRepr(value.value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => formatValue(v)).join(',')}]`;
  const text = value as string;
  if (PLAIN.test(text) && !TYPED_WORDS.test(text)) return text;
  return quote(text);
}

export function override(key: string, value: HydraValue, mode: Exclude<OverrideMode, '~'> = ''): Override {
  return { mode, key, value: formatValue(value) };
}

export function overrideText(o: Override): string {
  return o.mode === '~' ? `~${o.key}` : `${o.mode}${o.key}=${o.value}`;
}

const OVERRIDE = /^(\+\+|\+|~)?([A-Za-z_][A-Za-z0-9_.@/-]*)(?:=([\s\S]*))?$/;

/** Parses a raw override a user typed; throws with the form expected. */
export function parseOverride(text: string): Override {
  const m = OVERRIDE.exec(text.trim());
  if (!m) throw new Error(`${JSON.stringify(text)} is not a Hydra override; write key=value, +key=value, ++key=value or ~key`);
  const mode = (m[1] ?? '') as OverrideMode;
  if (mode === '~') {
    if (m[3] !== undefined && m[3] !== '') throw new Error(`${JSON.stringify(text)}: a deletion (~key) takes no value`);
    return { mode, key: m[2] };
  }
  if (m[3] === undefined) throw new Error(`${JSON.stringify(text)} has no value; write ${mode}${m[2]}=VALUE`);
  return { mode, key: m[2], value: m[3] };
}

/** Single-quotes an argument for /bin/sh unless it is made of characters the shell leaves alone. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_./:=@%+,-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function shellLine(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}

// ── The keys an engine's config accepts ─────────────────────────────────────────────────────

/** n: null (accepts `+`), s: scalar, l: list, d: empty mapping (children need `+`). */
export type KeyKind = 'n' | 's' | 'l' | 'd';

export interface KeySet {
  version: string;
  source: string;
  keys: ReadonlyMap<string, KeyKind>;
}

const keySetCache = new Map<string, KeySet>();

/** The vendored key set of resources/engines/<engine>/keys-<version>.json (scripts/engine-config-keys.mjs). */
export function loadKeySet(engine: 'verl' | 'drmas', version: string): KeySet {
  const file = path.join(resourcesDir(), 'engines', engine, `keys-${version}.json`);
  const cached = keySetCache.get(file);
  if (cached) return cached;
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string; source: string; keys: Record<string, KeyKind> };
  const set = { version: json.version, source: json.source, keys: new Map(Object.entries(json.keys)) };
  keySetCache.set(file, set);
  return set;
}

function parentKinds(keys: KeySet['keys'], key: string): KeyKind | 'branch' | null {
  // The nearest existing ancestor: a leaf (n/s/l/d) or an inner node that has other children.
  const parts = key.split('.');
  for (let i = parts.length - 1; i > 0; i--) {
    const prefix = parts.slice(0, i).join('.');
    const kind = keys.get(prefix);
    if (kind) return kind;
    for (const k of keys.keys()) if (k.startsWith(`${prefix}.`)) return 'branch';
  }
  return null;
}

function isBranch(keys: KeySet['keys'], key: string): boolean {
  for (const k of keys.keys()) if (k.startsWith(`${key}.`)) return true;
  return false;
}

/**
 * Hydra's refusal of an override against the engine's composed config, in Hydra's own words
 * (the first line of `_apply_overrides_to_config`'s error), or null when Hydra accepts it.
 * `hydra.*` keys are Hydra's own and always accepted.
 */
export function hydraRefusal(o: Override, keys: KeySet['keys']): string | null {
  if (o.key === 'hydra' || o.key.startsWith('hydra.') || o.mode === '++') return null;
  const kind = keys.get(o.key);
  const exists = kind !== undefined || isBranch(keys, o.key);
  if (o.mode === '') {
    if (exists) return null;
    return `Could not override '${o.key}'. To append to your config use +${o.key}=${o.value ?? '…'} (Key '${o.key.split('.').pop()}' is not in struct)`;
  }
  if (o.mode === '~') return exists ? null : `Could not delete from config. '${o.key}' does not exist.`;
  // `+`: refused only on a key that holds a value (a null or absent key is fine).
  if (kind === 'n' || (!exists && parentKinds(keys, o.key) !== 's' && parentKinds(keys, o.key) !== 'l')) return null;
  if (!exists) return `Could not append to config: '${o.key}' is under a value that is not a mapping`;
  return `Could not append to config. An item is already at '${o.key}'. Either remove + prefix: '${o.key}=${o.value ?? ''}' Or add a second + to add or override '${o.key}': '++${o.key}=${o.value ?? ''}'`;
}
