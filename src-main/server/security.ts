/**
 * Who may talk to `marsrl serve`. The threat model is a researcher's browser that also visits
 * other sites, and a shared network:
 * - Off loopback, anyone on the network can connect, so every request must carry the access
 *   token (Authorization: Bearer, or the cookie the printed URL sets).
 * - On loopback, no other machine can connect, but any web page the user opens can make the
 *   browser send requests to 127.0.0.1. Cross-origin writes (CSRF) are stopped by the Origin
 *   check and by requiring a JSON content type (which a plain form cannot send); DNS rebinding
 *   (evil.example resolving to 127.0.0.1, making the attacker's page "same-origin") is stopped by
 *   accepting only loopback names in the Host header.
 * Everything here is a pure function of the request's headers, so the tests pin each rule.
 */
import crypto from 'node:crypto';
import net from 'node:net';

/** Names and addresses that only ever reach this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (net.isIPv4(bare)) return bare.startsWith('127.');
  if (net.isIPv6(bare)) return bare === '::1' || bare.startsWith('::ffff:127.');
  return false;
}

/** Binding every interface is the least loopback of all. */
export function isWildcardHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === '0.0.0.0' || bare === '::';
}

/** A fresh token: 24 random bytes, URL-safe, so it can sit in the printed URL unescaped. */
export function generateToken(): string {
  return crypto.randomBytes(24).toString('base64url');
}

/** Tokens too short to resist guessing over a network are refused at start. */
export function checkTokenStrength(token: string): string | null {
  if (token.length < 16) return 'the token must be at least 16 characters (leave it out to have one generated)';
  if (!/^[\x21-\x7e]+$/.test(token)) return 'the token must be printable ASCII without spaces';
  return null;
}

/** Compares in constant time (over digests, so lengths leak nothing either). */
export function tokensMatch(given: string | null | undefined, expected: string): boolean {
  if (typeof given !== 'string' || given.length === 0) return false;
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

/** Cookies are shared by every port of a host, so the name carries the port. */
export function tokenCookieName(port: number): string {
  return `marsrl_token_${port}`;
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const raw = part.slice(eq + 1).trim();
    try {
      out.set(name, decodeURIComponent(raw));
    } catch {
      out.set(name, raw);
    }
  }
  return out;
}

export interface RequestHeaders {
  host?: string;
  origin?: string;
  authorization?: string;
  cookie?: string;
  'sec-fetch-site'?: string;
}

export interface SecurityPolicy {
  /** The address the server is bound to. */
  host: string;
  /** The port it listens on (after binding, so port 0 has been resolved). */
  port: number;
  /** When set, every API and WebSocket request must present it. */
  token: string | null;
}

/** Splits `name:port` / `[v6]:port`; the port is null when absent. */
export function splitHostHeader(value: string): { name: string; port: number | null } | null {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!match) return null;
  return { name: match[1].replace(/^\[|\]$/g, '').toLowerCase(), port: match[2] === undefined ? null : Number(match[2]) };
}

/**
 * The Host header must name this server. Bound to loopback, only loopback names are accepted
 * (the DNS-rebinding defence). Bound elsewhere, the token is the defence (a rebound name has no
 * cookie), and the user may reach the box by any name, an SSH tunnel's localhost included.
 */
export function hostAllowed(headers: RequestHeaders, policy: SecurityPolicy): boolean {
  if (!headers.host) return false;
  const parsed = splitHostHeader(headers.host);
  if (!parsed) return false;
  const port = parsed.port ?? 80;
  if (port !== policy.port) return false;
  if (isLoopbackHost(policy.host)) return isLoopbackHost(parsed.name);
  return true;
}

/**
 * Writes and WebSocket upgrades must come from the page this server served. Browsers always
 * send Origin on both; a client that sends none (curl, a script) is not a browser acting for
 * some other site, so it is let through to the token check.
 */
export function originAllowed(headers: RequestHeaders): boolean {
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  if (!headers.host) return false;
  return origin.toLowerCase() === `http://${headers.host.toLowerCase()}`;
}

/** The token from `Authorization: Bearer …` or this port's cookie. */
export function presentedToken(headers: RequestHeaders, port: number): string | null {
  const auth = headers.authorization;
  if (auth) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (match) return match[1];
  }
  return parseCookies(headers.cookie).get(tokenCookieName(port)) ?? null;
}

export function authorized(headers: RequestHeaders, policy: SecurityPolicy): boolean {
  if (policy.token === null) return true;
  return tokensMatch(presentedToken(headers, policy.port), policy.token);
}

/** The cookie the login redirect sets: unreadable by scripts and never sent cross-site. */
export function tokenCookie(token: string, port: number): string {
  return `${tokenCookieName(port)}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`;
}
