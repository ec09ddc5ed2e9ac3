/**
 * Which environment variables may be sent as an endpoint's API key, and to which hosts (issue
 * #36). A run config names the *variable* (`api_key_env`) and the *URL*; both travel with the
 * config (a shared YAML, a config posted to `marsrl serve`'s API), so a config alone must never
 * decide that a variable's value leaves the machine: `api_key_env: HF_TOKEN` with a listener's
 * `base_url` would otherwise send the user's Hugging Face token to whoever wrote the config.
 *
 * The person running the Studio approves each variable for the hosts it serves, on this machine:
 * `marsrl secrets allow JUDGE_API_KEY --host 10.0.0.5:8000`. The approvals live in a per-user file
 * of the Studio's data folder (`key-approvals.json`, mode 0600; names and hosts only, never a
 * value), which no config, request or export can write. A key goes only to an approved host; any
 * other request is refused before it is sent, naming the field and the command that approves it.
 *
 * A host entry is `HOST` (any port) or `HOST:PORT`; HOST is a name or an IP address as the URL
 * writes it (`[::1]` for IPv6), compared case-insensitively and without resolving names: a key
 * approved for `localhost` is not sent to `127.0.0.1`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultDataDir } from '../paths';
import { LIMITS, readTextFile } from '../util/bounded-read';

export const KEY_APPROVALS_FILE = 'key-approvals.json';
const FORMAT = 'marsrl-key-approvals';

/** The approvals file of this user (MARSRL_HOME moves it with the data folder). */
export function keyApprovalsFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(defaultDataDir(env), KEY_APPROVALS_FILE);
}

/** `host` and `port` of an http(s) URL as the approvals compare them; null when it does not parse. */
export function urlHost(url: string): { host: string; port: string } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  return { host: u.hostname.toLowerCase(), port: u.port || (u.protocol === 'https:' ? '443' : '80') };
}

/**
 * A host entry from what a user typed: `HOST`, `HOST:PORT` or a whole URL (its host and port are
 * kept). Throws with the fix when it is none of these.
 */
export function normaliseHostEntry(given: string): string {
  const text = given.trim();
  const asUrl = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let u: URL;
  try {
    u = new URL(asUrl);
  } catch {
    throw new Error(`--host ${JSON.stringify(given)} is not a host: give HOST, HOST:PORT or the endpoint's URL (e.g. 10.0.0.5:8000)`);
  }
  const explicitPort = /^[a-z][a-z0-9+.-]*:\/\/(\[[^\]]*\]|[^/:?#]*):(\d+)/i.exec(asUrl)?.[2];
  if (u.hostname === '' || u.username || u.password) throw new Error(`--host ${JSON.stringify(given)} is not a host: give HOST, HOST:PORT or the endpoint's URL`);
  const host = u.hostname.toLowerCase();
  if (explicitPort !== undefined) return `${host}:${Number(explicitPort)}`;
  // A URL without a port means its scheme's port; a bare host means any port.
  return text === asUrl ? `${host}:${u.protocol === 'https:' ? 443 : 80}` : host;
}

/** The approvals of one machine: variable name → host entries. */
export class KeyApprovals {
  constructor(
    private readonly entries: ReadonlyMap<string, readonly string[]>,
    /** Where they were read from (named in refusals); null for approvals made in code. */
    readonly file: string | null = null,
    /** Why the file could not be used (then nothing is approved). */
    readonly problem: string | null = null,
  ) {}

  /** Approvals given in code (tests, embedding): `{ VAR: ['127.0.0.1', 'h:8000'] }`. */
  static of(entries: Record<string, string[]>): KeyApprovals {
    return new KeyApprovals(new Map(Object.entries(entries).map(([v, hosts]) => [v, hosts.map(normaliseHostEntry)])));
  }

  /** Whether `variable`'s value may be sent to `url`'s host. */
  allows(variable: string, url: string): boolean {
    const target = urlHost(url);
    if (!target) return false;
    return (this.entries.get(variable) ?? []).some((entry) => entry === target.host || entry === `${target.host}:${target.port}`);
  }

  list(): Array<{ variable: string; hosts: string[] }> {
    return [...this.entries].map(([variable, hosts]) => ({ variable, hosts: [...hosts] })).sort((a, b) => a.variable.localeCompare(b.variable));
  }

  /**
   * Why `variable` is not sent to `url`, naming the config field and the command that approves
   * it (the message names the variable and host, never a value).
   */
  refusal(variable: string, url: string, field: string): string {
    const target = urlHost(url);
    // URL.hostname keeps an IPv6 address's brackets, so host:port reads as a URL writes it.
    const hostPort = target ? `${target.host}:${target.port}` : url;
    const where = this.problem ? ` (${this.problem})` : '';
    return (
      `${field}: the API key variable ${variable} is not approved for ${hostPort}${where}; a key is sent only to hosts its variable is approved for on this machine, ` +
      `never because a config names them. If ${hostPort} is yours, approve it with: marsrl secrets allow ${variable} --host ${hostPort}`
    );
  }
}

/**
 * This machine's approvals (an absent file approves nothing). A file that cannot be read or
 * parsed approves nothing either, and the refusals say why.
 */
export function loadKeyApprovals(env: NodeJS.ProcessEnv = process.env): KeyApprovals {
  const file = keyApprovalsFile(env);
  if (!fs.existsSync(file)) return new KeyApprovals(new Map(), file);
  try {
    return new KeyApprovals(parseApprovals(readTextFile(file, { maxBytes: LIMITS.settings, what: 'key approvals file' }), file), file);
  } catch (error) {
    return new KeyApprovals(new Map(), file, `${(error as Error).message}; fix or delete it and approve again`);
  }
}

function parseApprovals(text: string, file: string): Map<string, string[]> {
  const json = JSON.parse(text) as { format?: unknown; approvals?: unknown };
  if (json?.format !== FORMAT || json.approvals === null || typeof json.approvals !== 'object' || Array.isArray(json.approvals)) throw new Error(`${file} is not a MarsRL key approvals file`);
  const out = new Map<string, string[]>();
  for (const [variable, hosts] of Object.entries(json.approvals as Record<string, unknown>)) {
    if (!Array.isArray(hosts) || !hosts.every((h) => typeof h === 'string')) throw new Error(`${file}: approvals.${variable} must be a list of hosts`);
    out.set(variable, hosts.map(normaliseHostEntry));
  }
  return out;
}

function saveApprovals(entries: Map<string, string[]>, env: NodeJS.ProcessEnv): string {
  const file = keyApprovalsFile(env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const approvals = Object.fromEntries([...entries].filter(([, hosts]) => hosts.length > 0).sort(([a], [b]) => a.localeCompare(b)));
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ format: FORMAT, version: 1, approvals }, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  return file;
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

function editable(env: NodeJS.ProcessEnv): Map<string, string[]> {
  const current = loadKeyApprovals(env);
  if (current.problem) throw new Error(current.problem);
  return new Map(current.list().map((e) => [e.variable, e.hosts]));
}

/** Approve `variable` for `host`; returns the file written and the host entry as stored. */
export function allowKey(variable: string, host: string, env: NodeJS.ProcessEnv = process.env): { file: string; host: string } {
  if (!VARIABLE.test(variable)) throw new Error(`${JSON.stringify(variable)} is not the name of an environment variable (e.g. JUDGE_API_KEY)`);
  const entry = normaliseHostEntry(host);
  const entries = editable(env);
  const hosts = entries.get(variable) ?? [];
  if (!hosts.includes(entry)) hosts.push(entry);
  entries.set(variable, hosts);
  return { file: saveApprovals(entries, env), host: entry };
}

/** Withdraw `variable`'s approval for `host`, or for every host when none is given; returns what was removed. */
export function revokeKey(variable: string, host: string | undefined, env: NodeJS.ProcessEnv = process.env): { file: string; removed: string[] } {
  const entries = editable(env);
  const hosts = entries.get(variable) ?? [];
  const entry = host === undefined ? undefined : normaliseHostEntry(host);
  const removed = entry === undefined ? hosts : hosts.filter((h) => h === entry);
  entries.set(variable, entry === undefined ? [] : hosts.filter((h) => h !== entry));
  return { file: saveApprovals(entries, env), removed };
}
