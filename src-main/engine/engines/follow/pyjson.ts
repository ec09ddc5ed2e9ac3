/**
 * JSON as Python writes it. `json.dumps` (allow_nan=True by default) writes `NaN`, `Infinity` and
 * `-Infinity` as bare tokens, which JSON.parse rejects: veRL's dumps (`_dump_generations`,
 * `json.dumps(entry, ensure_ascii=False)`) and its file logger before 0.7.1 (`json.dumps(data)`).
 * orjson (the file logger since 0.7.1) writes `null` for them instead.
 */

const NAN = '\u0000py:NaN';
const INF = '\u0000py:Infinity';
const NINF = '\u0000py:-Infinity';

function revive(_key: string, value: unknown): unknown {
  if (typeof value === 'string' && value.charCodeAt(0) === 0) {
    if (value === NAN) return Number.NaN;
    if (value === INF) return Number.POSITIVE_INFINITY;
    if (value === NINF) return Number.NEGATIVE_INFINITY;
  }
  return value;
}

/** Replaces the bare tokens outside strings with sentinel strings the reviver turns back into numbers. */
function withSentinels(text: string): string {
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) {
      inString = true;
      continue;
    }
    let token: string | null = null;
    let sentinel = '';
    if (c === 78 && text.startsWith('NaN', i)) [token, sentinel] = ['NaN', NAN];
    else if (c === 73 && text.startsWith('Infinity', i)) [token, sentinel] = ['Infinity', INF];
    else if (c === 45 && text.startsWith('-Infinity', i)) [token, sentinel] = ['-Infinity', NINF];
    if (token !== null) {
      out += `${text.slice(last, i)}${JSON.stringify(sentinel)}`;
      i += token.length - 1;
      last = i + 1;
    }
  }
  return out + text.slice(last);
}

/** Parses one JSON value written by Python's json (NaN/Infinity tokens) or orjson. Throws SyntaxError like JSON.parse. */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (!/NaN|Infinity/.test(text)) throw error;
    return JSON.parse(withSentinels(text), revive);
  }
}
