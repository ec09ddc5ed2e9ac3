/**
 * What `marsrl serve` and `marsrl serve-model` print about who can connect, and how both wait for
 * Ctrl-C: the same security story (loopback by default, a token otherwise) told the same way.
 */
import os from 'node:os';
import { checkTokenStrength, generateToken, isLoopbackHost } from '../server/security';
import { intFlag, UsageError, type OptionSpec } from './args';
import type { CommandContext } from './context';

/** The flags saying where a server listens and what it requires, the same for both servers. */
export const SERVER_OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  token: { type: 'string' },
} as const satisfies OptionSpec;

/** Where a server listens: --host (default loopback only) and --port (0 picks a free one). */
export function listenAddress(values: { host?: string; port?: string }, defaultPort: number, usage: string): { host: string; port: number } {
  return { host: values.host ?? '127.0.0.1', port: intFlag('port', values.port, 0, 65535, usage) ?? defaultPort };
}

/**
 * The token a server requires: --token, else MARSRL_TOKEN (either refused when weak), else one
 * generated for this session when the server is bound off loopback; null on loopback without one.
 */
export function serverToken(host: string, flag: string | undefined, env: NodeJS.ProcessEnv, usage: string): { token: string | null; generated: boolean } {
  const given = flag ?? env.MARSRL_TOKEN ?? null;
  if (given !== null) {
    const weakness = checkTokenStrength(given);
    if (weakness) throw new UsageError(`--token: ${weakness}`, usage);
  }
  const generated = given === null && !isLoopbackHost(host);
  return { token: generated ? generateToken() : given, generated };
}

/** The access lines under a server's banner: the token when one is required, else the SSH tunnel. */
export function accessLines(opts: { host: string; port: number; token: string | null; generated: boolean; tokenLine: (token: string, generated: boolean) => string }): string[] {
  if (opts.token === null) return [`  Only this machine can connect. From another one: ssh -L ${opts.port}:127.0.0.1:${opts.port} ${os.hostname()}`];
  const lines = [opts.tokenLine(opts.token, opts.generated)];
  if (!isLoopbackHost(opts.host)) lines.push('  Traffic is plain HTTP: on a network you do not trust, prefer the loopback default and an SSH tunnel.');
  return lines;
}

/** Resolves on the first SIGINT or SIGTERM, saying which stopped the server. */
export function untilStopped(ctx: Pick<CommandContext, 'err'>): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      ctx.err(`\n${signal === 'SIGINT' ? 'Ctrl-C' : signal}: stopping…`);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
